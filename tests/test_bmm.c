/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_bmm: values against a host product, gradients against central
 * finite differences in f64 for the four transpose combinations, errors. */
#include "gradcheck.h"

#include <math.h>

typedef struct bmm_env {
    int ta, tb;
} bmm_env;

/* loss = sum(tanh(bmm(p0, p1))): tanh so that the product's adjoint is not
 * one everywhere. */
static clmad_status bmm_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    bmm_env *e = user;
    clmad_tensor *c = NULL, *t = NULL;
    clmad_status st = clmad_bmm(ctx, p[0], p[1], e->ta, e->tb, &c);
    if (st == CLMAD_OK)
        st = clmad_tanh(ctx, c, &t);
    if (st == CLMAD_OK)
        st = clmad_sum(ctx, t, 0, NULL, 0, loss);
    clmad_tensor_release(c);
    clmad_tensor_release(t);
    return st;
}

/* One test for the four combinations: CLBlast's GEMM compiles once per
 * test process. Batch 3, op(a[i]) 2 x 4, op(b[i]) 4 x 3. */
Test(bmm, values_and_gradients_all_transposes)
{
    clmad_context *ctx = test_context();
    const size_t B = 3, m = 2, k = 4, n = 3;
    for (int combo = 0; combo < 4; combo++) {
        bmm_env e = {combo & 1, combo >> 1};
        unsigned seed = 40 + (unsigned)combo;
        size_t as[3] = {B, e.ta ? k : m, e.ta ? m : k}, bs[3] = {B, e.tb ? n : k, e.tb ? k : n};
        clmad_tensor *p[2] = {gc_random(ctx, 3, as, -1, 1, &seed), gc_random(ctx, 3, bs, -1, 1, &seed)};
        double a[24], b[36], c[18];
        CHECK_OK(ctx, clmad_tensor_read(p[0], a, sizeof a));
        CHECK_OK(ctx, clmad_tensor_read(p[1], b, sizeof b));
        clmad_tensor *tc;
        CHECK_OK(ctx, clmad_bmm(ctx, p[0], p[1], e.ta, e.tb, &tc));
        cr_assert(clmad_tensor_dim(tc, 0) == B && clmad_tensor_dim(tc, 1) == m && clmad_tensor_dim(tc, 2) == n);
        CHECK_OK(ctx, clmad_tensor_read(tc, c, sizeof c));
        clmad_tensor_release(tc);
        for (size_t i = 0; i < B; i++)
            for (size_t r = 0; r < m; r++)
                for (size_t col = 0; col < n; col++) {
                    double want = 0;
                    for (size_t q = 0; q < k; q++) {
                        double av = e.ta ? a[i * k * m + q * m + r] : a[i * m * k + r * k + q];
                        double bv = e.tb ? b[i * n * k + col * k + q] : b[i * k * n + q * n + col];
                        want += av * bv;
                    }
                    double got = c[i * m * n + r * n + col];
                    cr_expect(fabs(got - want) < 1e-12, "ta %d tb %d: c[%zu][%zu][%zu] = %g, host %g", e.ta,
                              e.tb, i, r, col, got, want);
                }
        gc_check(ctx, bmm_loss, &e, 2, p, 1e-6);
        clmad_tensor_release(p[0]);
        clmad_tensor_release(p[1]);
    }
    clmad_context_release(ctx);
}

Test(bmm, errors)
{
    clmad_context *ctx = test_context();
    size_t s234[3] = {2, 3, 4}, s243[3] = {2, 4, 3}, s334[3] = {3, 3, 4}, s34[2] = {3, 4};
    clmad_tensor *a, *b, *c, *d, *f, *out = NULL;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 3, s234, &a));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 3, s243, &b));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 3, s334, &c));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, s34, &d));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F64, 3, s243, &f));
    cr_expect_eq(clmad_bmm(ctx, a, a, 0, 0, &out), CLMAD_ERR_SHAPE);
    cr_expect(test_contains(clmad_last_error(ctx), "op(a[i]) is 3 x 4 and op(b[i]) is 3 x 4"), "%s",
              clmad_last_error(ctx));
    cr_expect_eq(clmad_bmm(ctx, a, c, 0, 1, &out), CLMAD_ERR_SHAPE);
    cr_expect(test_contains(clmad_last_error(ctx), "batches of 2 and 3"), "%s", clmad_last_error(ctx));
    cr_expect_eq(clmad_bmm(ctx, a, d, 0, 1, &out), CLMAD_ERR_SHAPE);
    cr_expect_eq(clmad_bmm(ctx, a, f, 0, 0, &out), CLMAD_ERR_DTYPE);
    cr_expect_eq(clmad_bmm(ctx, a, NULL, 0, 0, &out), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_null(out);
    /* An empty inner size: zeros, whatever the pooled buffer held. */
    size_t s230[3] = {2, 3, 0}, s204[3] = {2, 0, 4};
    clmad_tensor *e0, *e1;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 3, s230, &e0));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 3, s204, &e1));
    CHECK_OK(ctx, clmad_bmm(ctx, e0, e1, 0, 0, &out));
    float z[24];
    CHECK_OK(ctx, clmad_tensor_read(out, z, sizeof z));
    for (int i = 0; i < 24; i++)
        cr_expect_eq(z[i], 0.0f);
    clmad_tensor_release(out);
    clmad_tensor_release(e0);
    clmad_tensor_release(e1);
    clmad_tensor *all[] = {a, b, c, d, f};
    for (int i = 0; i < 5; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}

/* z = tanh(w) feeds a product (clmad_matmul or clmad_bmm) and then
 * clmad_dot(z, v), which hands its adjoint on lazily (v times the seed,
 * v itself held). Backward meets the dot first: the product must add its
 * gradient to a settled adjoint, not with beta = 1 into v. */
typedef struct lazy_env {
    int batched;
    clmad_tensor *m, *v;
} lazy_env;

static clmad_status lazy_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    lazy_env *e = user;
    clmad_tensor *z = NULL, *c = NULL, *s = NULL, *d = NULL;
    clmad_status st = clmad_tanh(ctx, p[0], &z);
    if (st == CLMAD_OK)
        st = e->batched ? clmad_bmm(ctx, z, e->m, 0, 0, &c) : clmad_matmul(ctx, z, e->m, 0, 0, &c);
    if (st == CLMAD_OK)
        st = clmad_sum(ctx, c, 0, NULL, 0, &s);
    if (st == CLMAD_OK)
        st = clmad_dot(ctx, z, e->v, &d);
    if (st == CLMAD_OK)
        st = clmad_add(ctx, s, d, loss);
    clmad_tensor *all[] = {z, c, s, d};
    for (int i = 0; i < 4; i++)
        clmad_tensor_release(all[i]);
    return st;
}

Test(bmm, product_gradient_meets_a_lazy_adjoint)
{
    clmad_context *ctx = test_context();
    for (int batched = 0; batched < 2; batched++) {
        unsigned seed = 70 + (unsigned)batched;
        size_t ws[3] = {1, 2, 3}, ms[3] = {1, 3, 2};
        const size_t *wsh = batched ? ws : ws + 1, *msh = batched ? ms : ms + 1;
        int nd = batched ? 3 : 2;
        clmad_tensor *w = gc_random(ctx, nd, wsh, -1, 1, &seed);
        lazy_env e = {batched, gc_random(ctx, nd, msh, -1, 1, &seed), gc_random(ctx, nd, wsh, -1, 1, &seed)};
        double v0[6], v1[6];
        CHECK_OK(ctx, clmad_tensor_read(e.v, v0, sizeof v0));
        gc_check(ctx, lazy_loss, &e, 1, &w, 1e-6);
        CHECK_OK(ctx, clmad_tensor_read(e.v, v1, sizeof v1));
        for (int i = 0; i < 6; i++)
            cr_expect_eq(v1[i], v0[i], "%s: backward wrote into dot's operand v[%d]: %g, was %g",
                         batched ? "clmad_bmm" : "clmad_matmul", i, v1[i], v0[i]);
        clmad_tensor_release(w);
        clmad_tensor_release(e.m);
        clmad_tensor_release(e.v);
    }
    clmad_context_release(ctx);
}
