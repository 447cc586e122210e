/* SPDX-License-Identifier: Apache-2.0 */
/* Programs live as long as what uses them: a user kernel's programs (all
 * its variants) leave the context's cache when the kernel is released and
 * no tape node holds it, so a long-running process that makes and drops
 * distinct kernels stays bounded (about 0.46 MB of POCL program each was
 * kept before); the library's own programs (builtins, internal kernels)
 * stay cached for the context's life. */
#include "support.h"

#include <math.h>
#include <stdio.h>

enum { KERNELS = 12, N = 5 };

/* loss = sum(f_i(x)), f_i(x) = x * x * c_i; d loss / dx = 2 x c_i. */
static void one_kernel(clmad_context *ctx, clmad_tensor *x, const double *xs, int i, uint64_t live_before)
{
    char src[128];
    const double c = 1.5 + i;
    snprintf(src, sizeof src, "T f(T x) { return x * x * %.1f; }\n", c);
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, src, "f", 1, 1, &k));
    cr_assert_gt(test_stats(ctx).programs_live, live_before, "kernel %d compiled nothing", i);
    clmad_tensor *y = NULL, *loss = NULL, *g = NULL;
    CHECK_OK(ctx, clmad_broadcast(ctx, k, &x, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    /* Released by the user while its tape node still needs it for backward. */
    clmad_kernel_release(k);
    cr_assert_gt(test_stats(ctx).programs_live, live_before, "the tape's kernel %d lost its programs", i);
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    double gx[N];
    CHECK_OK(ctx, clmad_tensor_read(g, gx, sizeof gx));
    for (int e = 0; e < N; e++)
        cr_assert(fabs(gx[e] - 2 * xs[e] * c) <= 1e-12, "kernel %d: dx[%d] = %.17g, expected %.17g", i, e, gx[e],
                  2 * xs[e] * c);
    clmad_tensor_release(g);
    clmad_tensor_release(y);
    clmad_tensor_release(loss);
    clmad_tensor_zero_grad(x);
}

Test(program_lifetime, released_kernels_release_their_programs, .timeout = 600)
{
    if (!test_device_fp64())
        cr_skip_test("the test device has no fp64, which this test computes in");
    clmad_context *ctx = test_context();
    const double xs[N] = {-1.5, -0.25, 0.5, 1, 2};
    size_t shape[1] = {N};
    clmad_tensor *x = NULL, *a = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, shape, xs, &x));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    /* The library's own programs first (a builtin, the sum, the gradients' fill). */
    one_kernel(ctx, x, xs, -1, 0);
    CHECK_OK(ctx, clmad_add(ctx, x, x, &a));
    clmad_tensor_release(a);
    const uint64_t live = test_stats(ctx).programs_live;
    for (int i = 0; i < KERNELS; i++) {
        one_kernel(ctx, x, xs, i, live);
        cr_assert_eq(test_stats(ctx).programs_live, live,
                     "after kernel %d and its backward: %llu programs live, %llu before", i,
                     (unsigned long long)test_stats(ctx).programs_live, (unsigned long long)live);
    }
    /* The builtins' programs stayed: the add is served from memory. */
    clmad_stats before = test_stats(ctx);
    CHECK_OK(ctx, clmad_add(ctx, x, x, &a));
    clmad_stats after = test_stats(ctx);
    cr_assert_eq(after.programs_compiled, before.programs_compiled, "a builtin's program was built again");
    cr_assert_eq(after.programs_from_disk, before.programs_from_disk, "a builtin's program was loaded again");
    clmad_tensor_release(a);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}

/* Two kernels of one source share its programs: releasing one leaves the
 * other's working. */
Test(program_lifetime, a_shared_program_stays_with_its_other_kernel)
{
    clmad_context *ctx = test_context();
    const char *src = "T g(T x) { return x + 0.25; }\n";
    clmad_kernel *k1 = NULL, *k2 = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, src, "g", 1, 1, &k1));
    const uint64_t live = test_stats(ctx).programs_live;
    CHECK_OK(ctx, clmad_kernel_create(ctx, src, "g", 1, 1, &k2));
    cr_assert_eq(test_stats(ctx).programs_live, live, "the second kernel shares the first's programs");
    clmad_kernel_release(k1);
    cr_assert_eq(test_stats(ctx).programs_live, live, "k2 still uses the programs");
    float host[3] = {1, 2, 3}, out[3];
    size_t shape[1] = {3};
    clmad_tensor *x = NULL, *y = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, shape, host, &x));
    CHECK_OK(ctx, clmad_broadcast(ctx, k2, &x, &y));
    CHECK_OK(ctx, clmad_tensor_read(y, out, sizeof out));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(out[i], host[i] + 0.25f);
    const uint64_t with_primal = test_stats(ctx).programs_live;
    clmad_kernel_release(k2);
    cr_assert_lt(test_stats(ctx).programs_live, with_primal, "k2's programs stayed after its release");
    clmad_tensor_release(x);
    clmad_tensor_release(y);
    clmad_context_release(ctx);
}
