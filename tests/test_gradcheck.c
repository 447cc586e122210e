/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_gradcheck, the public gradient checker: it passes a correct kernel
 * with a branch, two outputs and a helper function, and it catches a
 * derivative that a template gets wrong (a value taken through ad_val, which
 * drops its partials), naming the input. */
#include "support.h"

#include <math.h>

static const char *GOOD_SRC =
    "T softclip(T x, T c) { return ad_mul(c, ad_tanh(ad_div(x, c))); }\n"
    "void f(T x, T c, T w, T *y0, T *y1)\n"
    "{\n"
    "    T s = softclip(x, c);\n"
    "    if (ad_val(x) > 0)\n"
    "        *y0 = ad_mul(s, w);\n"
    "    else\n"
    "        *y0 = ad_mul(ad_exp(x), ad_square(w));\n"
    "    *y1 = ad_add(ad_log1p(ad_square(x)), ad_atan2(w, c));\n"
    "}\n";

/* d/dw is right; d/dx misses the x of x*x (ad_const(ad_val(x)) carries no
 * partial): the checker must report input 0 and only input 0. */
static const char *BAD_SRC = "T g(T x, T w) { return ad_add(ad_mul(x, ad_const(ad_val(x))), ad_mul(w, x)); }\n";

static const double POINTS[] = {
    /* x, c, w: both branches, away from x = 0 */
    0.7, 1.5, -0.4, -1.2, 0.8, 2.0, 2.5, 3.0, 0.3, -0.3, 1.1, -1.7, 0.05, 0.9, 1.0,
};
enum { N_POINTS = 5 };

Test(gradcheck, a_correct_kernel_passes_in_f64_and_f32)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, GOOD_SRC, "f", 3, 2, &k));
    double worst[3] = {-1, -1, -1};
    CHECK_OK(ctx, clmad_gradcheck(ctx, k, CLMAD_F64, N_POINTS, POINTS, worst));
    for (int j = 0; j < 3; j++)
        cr_assert(worst[j] >= 0 && worst[j] < 1e-8, "f64: input %d: worst relative error %g", j, worst[j]);
    double worst32[3] = {-1, -1, -1};
    CHECK_OK(ctx, clmad_gradcheck(ctx, k, CLMAD_F32, N_POINTS, POINTS, worst32));
    for (int j = 0; j < 3; j++)
        cr_assert(worst32[j] >= 0 && worst32[j] < 2e-3, "f32: input %d: worst relative error %g", j, worst32[j]);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

Test(gradcheck, a_wrong_derivative_is_reported_for_its_input)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, BAD_SRC, "g", 2, 1, &k));
    const double pts[] = {0.5, 2.0, -1.5, 0.25, 3.0, -1.0};
    double worst[2];
    CHECK_OK(ctx, clmad_gradcheck(ctx, k, CLMAD_F64, 3, pts, worst));
    /* d/dx is off by x at every point: |x| / max(1, |2x + w|) >= 0.125 here. */
    cr_assert(worst[0] > 0.1, "the wrong d/dx was not caught: worst %g", worst[0]);
    cr_assert(worst[1] < 1e-8, "d/dw is right but reported %g", worst[1]);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

Test(gradcheck, bad_arguments_leave_worst_untouched)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, BAD_SRC, "g", 2, 1, &k));
    double worst[2] = {42, 42};
    const double pts[] = {0.5, 2.0};
    cr_assert_eq(clmad_gradcheck(ctx, k, CLMAD_F64, 0, pts, worst), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_gradcheck(ctx, k, CLMAD_F64, 1, NULL, worst), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_gradcheck(ctx, NULL, CLMAD_F64, 1, pts, worst), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "clmad_gradcheck"), "%s", clmad_last_error(ctx));
    cr_assert(worst[0] == 42 && worst[1] == 42);
    /* NaN at a point: reported as +inf, not as a pass. */
    const double nan_pts[] = {NAN, 1.0};
    CHECK_OK(ctx, clmad_gradcheck(ctx, k, CLMAD_F64, 1, nan_pts, worst));
    cr_assert(isinf(worst[0]), "NaN partials reported as %g", worst[0]);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}
