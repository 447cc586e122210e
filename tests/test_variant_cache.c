/* SPDX-License-Identifier: Apache-2.0 */
/* The variant cache of a kernel: two variants that differ anywhere (here in
 * the accumulate flag of the last of 64 gradient slots) are two kernels,
 * never one served for the other; past its cap the least recently used
 * variant goes, and comes back the same when used again. */
#include "bcast_support.h"
#include "internal.h" /* clmad__variant_cap, clmad__kernel_variants */

#include <stdio.h>

#define N_IN 64
#define N_EL 5

/* f(x0..x63) = sum_j (j + 1) x_j^2, so d f / d x_j = 2 (j + 1) x_j. */
static char *sum_of_squares_source(void)
{
    size_t cap = 16384, u = 0;
    char *src = malloc(cap);
    cr_assert_not_null(src);
    u += (size_t)snprintf(src + u, cap - u, "T f(");
    for (int j = 0; j < N_IN; j++)
        u += (size_t)snprintf(src + u, cap - u, "T x%d%s", j, j < N_IN - 1 ? ", " : ")\n{\n");
    u += (size_t)snprintf(src + u, cap - u, "    T s = ad_const(0);\n");
    for (int j = 0; j < N_IN; j++)
        u += (size_t)snprintf(src + u, cap - u, "    s = ad_add(s, ad_mulr(ad_square(x%d), (real)%d));\n",
                              j, j + 1);
    snprintf(src + u, cap - u, "    return s;\n}\n");
    return src;
}

static double x_value(int j, int e)
{
    return 0.25 + 0.125 * (double)((j * 7 + e * 3) % 11) - 0.5 * (double)(e % 2);
}

/* sum(f(x)), plus sum(3 * x63) when with_extra. */
static clmad_tensor *loss_of(clmad_context *ctx, clmad_kernel *k, clmad_tensor **x, clmad_tensor *three,
                             int with_extra)
{
    clmad_tensor *y = NULL, *loss = NULL;
    CHECK_OK(ctx, clmad_broadcast(ctx, k, x, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    clmad_tensor_release(y);
    if (!with_extra)
        return loss;
    clmad_tensor *m = NULL, *s = NULL, *total = NULL;
    CHECK_OK(ctx, clmad_mul(ctx, three, x[N_IN - 1], &m));
    CHECK_OK(ctx, clmad_sum(ctx, m, 0, NULL, 0, &s));
    CHECK_OK(ctx, clmad_add(ctx, loss, s, &total));
    clmad_tensor_release(m);
    clmad_tensor_release(s);
    clmad_tensor_release(loss);
    return total;
}

static void check_grads(clmad_context *ctx, clmad_tensor **x, int with_extra, const char *what)
{
    size_t shape[1] = {N_EL};
    for (int j = 0; j < N_IN; j++) {
        clmad_tensor *g = NULL;
        CHECK_OK(ctx, clmad_tensor_grad(x[j], &g));
        cr_assert_not_null(g, "%s: x%d has no gradient", what, j);
        double *v = bs_read(ctx, g, CLMAD_F32, 1, shape);
        for (int e = 0; e < N_EL; e++) {
            double want = 2.0 * (j + 1) * (double)(float)x_value(j, e);
            if (with_extra && j == N_IN - 1)
                want += 3;
            cr_assert(bs_close(v[e], want, 1e-5), "%s: d/dx%d at %d = %.9g, expected %.9g", what, j, e,
                      v[e], want);
        }
        free(v);
        clmad_tensor_release(g);
    }
}

/* The second backward forms x63's gradient on top of the 3 that the
 * 3 * x63 branch left in it (accumulate), while the first wrote every
 * gradient (overwrite): the two VJP variants differ only in the flag of
 * slot 63, and with 64 slots in one chunk the second must not be served
 * the first. */
Test(variant_cache, accumulate_flag_of_the_last_slot)
{
    clmad_context *ctx = test_context();
    char *src = sum_of_squares_source();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, src, "f", N_IN, 1, &k));
    free(src);
    CHECK_OK(ctx, clmad_set_chunk_cap(ctx, N_IN));
    const clmad_partials_policy policies[2] = {CLMAD_PARTIALS_RECOMPUTE, CLMAD_PARTIALS_STORE};
    for (int p = 0; p < 2; p++) {
        CHECK_OK(ctx, clmad_set_partials_policy(ctx, policies[p]));
        size_t shape[1] = {N_EL};
        clmad_tensor *x[N_IN];
        for (int j = 0; j < N_IN; j++) {
            double h[N_EL];
            for (int e = 0; e < N_EL; e++)
                h[e] = x_value(j, e);
            x[j] = bs_tensor(ctx, CLMAD_F32, 1, shape, h);
            CHECK_OK(ctx, clmad_tensor_set_requires_grad(x[j], 1));
        }
        double three_h = 3;
        clmad_tensor *three = bs_tensor(ctx, CLMAD_F32, 0, NULL, &three_h);
        char what[64];

        /* An explicit seed: STORE then runs its kernel (overwrite) too,
         * rather than taking the stored partials as the gradients. */
        double one_h = 1;
        clmad_tensor *one = bs_tensor(ctx, CLMAD_F32, 0, NULL, &one_h);
        clmad_tensor *loss = loss_of(ctx, k, x, three, 0);
        CHECK_OK(ctx, clmad_backward(ctx, loss, one));
        clmad_tensor_release(loss);
        clmad_tensor_release(one);
        snprintf(what, sizeof what, "policy %d, sum(f)", (int)policies[p]);
        check_grads(ctx, x, 0, what);

        for (int j = 0; j < N_IN; j++)
            clmad_tensor_zero_grad(x[j]);
        loss = loss_of(ctx, k, x, three, 1);
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        clmad_tensor_release(loss);
        snprintf(what, sizeof what, "policy %d, sum(f) + sum(3 x63)", (int)policies[p]);
        check_grads(ctx, x, 1, what);

        clmad_tensor_release(three);
        bs_release_all(x, N_IN);
    }
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* x's gradient of sum(f(x, y)) under policy, into g (N_EL floats). */
static void gradient(clmad_context *ctx, clmad_kernel *k, clmad_partials_policy policy, float *g)
{
    size_t shape[1] = {N_EL};
    double hx[N_EL], hy[N_EL];
    for (int e = 0; e < N_EL; e++)
        hx[e] = x_value(0, e), hy[e] = x_value(1, e);
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, policy));
    clmad_tensor *in[2] = {bs_tensor(ctx, CLMAD_F32, 1, shape, hx), bs_tensor(ctx, CLMAD_F32, 1, shape, hy)};
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(in[0], 1));
    clmad_tensor *y = NULL, *loss = NULL, *dx = NULL;
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(in[0], &dx));
    CHECK_OK(ctx, clmad_tensor_read(dx, g, N_EL * sizeof *g));
    clmad_tensor *all[] = {in[0], in[1], y, loss, dx};
    bs_release_all(all, 5);
}

/* With a cap of 2 variants: recomputing (the primal and the VJP variant),
 * storing (the partials and STORED variants: the first two go),
 * recomputing again (both built again); the gradients each time those of
 * a kernel that keeps every variant, bitwise. */
Test(variant_cache, least_recently_used_variants_go)
{
    clmad_options opt = {0};
    opt.disable_fusion = 1; /* one variant per call: no loss kernel */
    clmad_context *ctx = test_context_with(&opt), *all = test_context_with(&opt);
    clmad__variant_cap(ctx, 2);
    static const char *SOURCE = "T f(T x, T y) { return sin(x) * y; }";
    clmad_kernel *k = NULL, *k_all = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, SOURCE, "f", 2, 1, &k));
    CHECK_OK(all, clmad_kernel_create(all, SOURCE, "f", 2, 1, &k_all));
    const clmad_partials_policy steps[3] = {CLMAD_PARTIALS_RECOMPUTE, CLMAD_PARTIALS_STORE, CLMAD_PARTIALS_RECOMPUTE};
    for (int s = 0; s < 3; s++) {
        float g[N_EL], want[N_EL];
        gradient(ctx, k, steps[s], g);
        gradient(all, k_all, steps[s], want);
        cr_assert(memcmp(g, want, sizeof g) == 0, "step %d: the gradients differ", s);
        cr_assert_eq(clmad__kernel_variants(k), 2, "step %d: %d variants kept", s, clmad__kernel_variants(k));
    }
    cr_assert_gt(clmad__kernel_variants(k_all), 2, "%d variants without a cap", clmad__kernel_variants(k_all));
    clmad_kernel_release(k);
    clmad_kernel_release(k_all);
    clmad_context_release(ctx);
    clmad_context_release(all);
}
