/* SPDX-License-Identifier: Apache-2.0 */
/* The lean pipeline: clmad_dot, lazy adjoints (a sum's scalar adjoint and
 * dot's s * w handed on unexpanded), one backward kernel per broadcast node
 * under both policies, and the kernel and byte counts that show it. */
#include "gradcheck.h"

#include <string.h>

static const char *HM_CELL =
    "T hm_cell(T z, T zb, T c, T f, T i, T g)\n"
    "{\n"
    "    if (ad_val(z) == 1)  return ad_mul(ad_sigmoid(i), ad_tanh(g));\n"
    "    if (ad_val(zb) == 0) return c;\n"
    "    return ad_add(ad_mul(ad_sigmoid(f), c), ad_mul(ad_sigmoid(i), ad_tanh(g)));\n"
    "}\n";

/* Two outputs: (a * b, a + exp(b)). */
static const char *TWO_OUT =
    "void two(T a, T b, T *y0, T *y1)\n"
    "{\n"
    "    *y0 = ad_mul(a, b);\n"
    "    *y1 = ad_add(a, ad_exp(b));\n"
    "}\n";

static double *read_all(clmad_context *ctx, clmad_tensor *t, clmad_dtype dtype)
{
    size_t n = clmad_tensor_numel(t), bytes = n * clmad_dtype_size(dtype);
    double *h = malloc(n * sizeof *h);
    CHECK_OK(ctx, clmad_tensor_read(t, h, bytes));
    if (dtype == CLMAD_F32) /* widen in place, from the end */
        for (size_t i = n; i-- > 0;)
            h[i] = ((float *)h)[i];
    return h;
}

/* ---- clmad_dot: value ---------------------------------------------------- */

Test(lean, dot_is_bitwise_sum_of_mul_and_near_the_double_sum)
{
    clmad_context *ctx = test_context();
    const size_t sizes[] = {1, 7, 64, 65, 1000, 70001};
    for (int dt = 0; dt < 2; dt++) {
        clmad_dtype dtype = dt ? CLMAD_F64 : CLMAD_F32;
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            size_t n = sizes[s], shape[2] = {1, n};
            double *ha = malloc(n * sizeof *ha), *hb = malloc(n * sizeof *hb), ref = 0;
            float *fa = malloc(n * sizeof *fa), *fb = malloc(n * sizeof *fb);
            for (size_t i = 0; i < n; i++) {
                fa[i] = (float)(ha[i] = sin(0.37 * (double)i) * 3);
                fb[i] = (float)(hb[i] = cos(0.11 * (double)i) - 0.25);
                ref += dt ? ha[i] * hb[i] : (double)fa[i] * (double)fb[i];
            }
            clmad_tensor *a, *b, *d, *m, *sm;
            CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, 2, shape, dt ? (void *)ha : (void *)fa, &a));
            CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, 2, shape, dt ? (void *)hb : (void *)fb, &b));
            CHECK_OK(ctx, clmad_dot(ctx, a, b, &d));
            CHECK_OK(ctx, clmad_mul(ctx, a, b, &m));
            CHECK_OK(ctx, clmad_sum(ctx, m, 0, NULL, 0, &sm));
            cr_assert_eq(clmad_tensor_ndim(d), 0);
            double vd = 0, vs = 0;
            CHECK_OK(ctx, clmad_tensor_read(d, &vd, clmad_dtype_size(dtype)));
            CHECK_OK(ctx, clmad_tensor_read(sm, &vs, clmad_dtype_size(dtype)));
            cr_expect_eq(memcmp(&vd, &vs, clmad_dtype_size(dtype)), 0, "n %zu %s: dot and sum(mul) differ",
                         n, dt ? "f64" : "f32");
            float vf;
            memcpy(&vf, &vd, sizeof vf);
            double got = dt ? vd : (double)vf;
            cr_expect(fabs(got - ref) <= (dt ? 1e-12 : 1e-5) * fmax(1.0, (double)n),
                      "n %zu %s: dot %.17g, double sum %.17g", n, dt ? "f64" : "f32", got, ref);
            clmad_tensor *all[] = {a, b, d, m, sm};
            for (int k = 0; k < 5; k++)
                clmad_tensor_release(all[k]);
            free(ha), free(hb), free(fa), free(fb);
        }
    }
    clmad_context_release(ctx);
}

Test(lean, dot_errors_lose_nothing)
{
    clmad_context *ctx = test_context();
    size_t s23[2] = {2, 3}, s32[2] = {3, 2};
    clmad_tensor *a, *b, *c, *out = NULL;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, s23, &a));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, s32, &b));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F64, 2, s23, &c));
    cr_expect_eq(clmad_dot(ctx, a, b, &out), CLMAD_ERR_SHAPE);
    cr_expect(test_contains(clmad_last_error(ctx), "same shape"));
    cr_expect_eq(clmad_dot(ctx, a, c, &out), CLMAD_ERR_DTYPE);
    cr_expect_eq(clmad_dot(ctx, a, NULL, &out), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_null(out);
    clmad_tensor_release(a);
    clmad_tensor_release(b);
    clmad_tensor_release(c);
    clmad_context_release(ctx);
}

/* ---- gradients through lazy adjoints ------------------------------------- */

typedef struct lean_env {
    clmad_tensor *z, *zb, *w, *u;
    clmad_kernel *cell, *two;
    int form;
} lean_env;

enum {
    DOT_OF_CELL,        /* dot(cell(...), w): s * w lazily into the broadcast node */
    MUL_SUM_OF_CELL,    /* sum(cell * w): a lazy scalar into the mul, its full adjoint into the cell */
    SUM_OF_CELL,        /* sum(cell): a lazy scalar */
    MEAN_OF_CELL,       /* mean(cell): a lazy scalar, scaled */
    DOT_PLUS_SUM,       /* dot(y, w) + sum(y): a lazy adjoint, then a second contribution */
    DOT_OF_LEAF,        /* dot(c, w) + dot(f, f): lazy adjoints into leaves (expanded) */
    DOT_OF_MATMUL,      /* dot(c f^T, u): into a node that takes no lazy adjoints */
    TWO_OUTPUTS,        /* dot(y0, w) + sum(y1): a scaled and a scalar adjoint in one kernel */
    N_FORMS
};

static clmad_status lean_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    lean_env *e = user;
    clmad_tensor *y = NULL, *y1 = NULL, *l1 = NULL, *l2 = NULL;
    clmad_tensor *in[6] = {e->z, e->zb, p[0], p[1], p[2], p[3]};
    clmad_status st = CLMAD_OK;
    switch (e->form) {
    case DOT_OF_CELL:
        st = clmad_broadcast(ctx, e->cell, in, &y);
        if (st == CLMAD_OK)
            st = clmad_dot(ctx, y, e->w, loss);
        break;
    case MUL_SUM_OF_CELL:
        st = clmad_broadcast(ctx, e->cell, in, &y);
        if (st == CLMAD_OK)
            st = clmad_mul(ctx, y, e->w, &l1);
        if (st == CLMAD_OK)
            st = clmad_sum(ctx, l1, 0, NULL, 0, loss);
        break;
    case SUM_OF_CELL:
    case MEAN_OF_CELL:
        st = clmad_broadcast(ctx, e->cell, in, &y);
        if (st == CLMAD_OK)
            st = (e->form == SUM_OF_CELL ? clmad_sum : clmad_mean)(ctx, y, 0, NULL, 0, loss);
        break;
    case DOT_PLUS_SUM:
        st = clmad_broadcast(ctx, e->cell, in, &y);
        if (st == CLMAD_OK)
            st = clmad_dot(ctx, y, e->w, &l1);
        if (st == CLMAD_OK)
            st = clmad_sum(ctx, y, 0, NULL, 0, &l2);
        if (st == CLMAD_OK)
            st = clmad_add(ctx, l1, l2, loss);
        break;
    case DOT_OF_LEAF:
        st = clmad_dot(ctx, p[0], e->w, &l1);
        if (st == CLMAD_OK)
            st = clmad_dot(ctx, p[1], p[1], &l2);
        if (st == CLMAD_OK)
            st = clmad_add(ctx, l1, l2, loss);
        break;
    case DOT_OF_MATMUL:
        st = clmad_matmul(ctx, p[0], p[1], 0, 1, &y);
        if (st == CLMAD_OK)
            st = clmad_dot(ctx, y, e->u, loss);
        break;
    default: {
        clmad_tensor *outs[2] = {NULL, NULL};
        st = clmad_broadcast(ctx, e->two, p, outs);
        y = outs[0], y1 = outs[1];
        if (st == CLMAD_OK)
            st = clmad_dot(ctx, y, e->w, &l1);
        if (st == CLMAD_OK)
            st = clmad_sum(ctx, y1, 0, NULL, 0, &l2);
        if (st == CLMAD_OK)
            st = clmad_add(ctx, l1, l2, loss);
    }
    }
    clmad_tensor_release(y);
    clmad_tensor_release(y1);
    clmad_tensor_release(l1);
    clmad_tensor_release(l2);
    return st;
}

enum { M = 5, N = 6 };

static void lean_setup(clmad_context *ctx, lean_env *e, clmad_tensor **p)
{
    unsigned seed = 11;
    size_t ms[2] = {M, N}, vs[2] = {1, N}, us[2] = {M, M};
    double z[N], zb[N];
    for (int k = 0; k < N; k++) {
        z[k] = k % 3 == 0;
        zb[k] = k % 3 == 1 ? 0 : 1;
    }
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, vs, z, &e->z));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, vs, zb, &e->zb));
    e->w = gc_random(ctx, 2, ms, -1, 1, &seed);
    e->u = gc_random(ctx, 2, us, -1, 1, &seed);
    CHECK_OK(ctx, clmad_kernel_create(ctx, HM_CELL, "hm_cell", 6, 1, &e->cell));
    CHECK_OK(ctx, clmad_kernel_create(ctx, TWO_OUT, "two", 2, 2, &e->two));
    for (int k = 0; k < 4; k++)
        p[k] = gc_random(ctx, 2, ms, -1.5, 1.5, &seed);
}

static void lean_teardown(lean_env *e, clmad_tensor **p)
{
    for (int k = 0; k < 4; k++)
        clmad_tensor_release(p[k]);
    clmad_tensor *all[] = {e->z, e->zb, e->w, e->u};
    for (int k = 0; k < 4; k++)
        clmad_tensor_release(all[k]);
    clmad_kernel_release(e->cell);
    clmad_kernel_release(e->two);
}

static int form_params(int form)
{
    return form == DOT_OF_LEAF || form == DOT_OF_MATMUL || form == TWO_OUTPUTS ? 2 : 4;
}

Test(lean, gradients_through_lazy_adjoints_match_finite_differences)
{
    clmad_context *ctx = test_context();
    lean_env e;
    clmad_tensor *p[4];
    lean_setup(ctx, &e, p);
    for (e.form = 0; e.form < N_FORMS; e.form++)
        for (int policy = CLMAD_PARTIALS_STORE; policy <= CLMAD_PARTIALS_RECOMPUTE; policy++) {
            CHECK_OK(ctx, clmad_set_partials_policy(ctx, (clmad_partials_policy)policy));
            gc_check(ctx, lean_loss, &e, form_params(e.form), p, 1e-6);
        }
    lean_teardown(&e, p);
    clmad_context_release(ctx);
}

Test(lean, policies_and_chunks_agree_bitwise_with_lazy_adjoints)
{
    clmad_context *ctx = test_context();
    lean_env e;
    clmad_tensor *p[4];
    lean_setup(ctx, &e, p);
    for (e.form = 0; e.form < N_FORMS; e.form++) {
        int n = form_params(e.form);
        CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_STORE));
        double **ref = gc_backward(ctx, lean_loss, &e, n, p);
        for (int cap = 1; cap <= 4; cap += 3) {
            CHECK_OK(ctx, clmad_set_chunk_cap(ctx, cap));
            for (int policy = CLMAD_PARTIALS_STORE; policy <= CLMAD_PARTIALS_RECOMPUTE; policy++) {
                CHECK_OK(ctx, clmad_set_partials_policy(ctx, (clmad_partials_policy)policy));
                double **g = gc_backward(ctx, lean_loss, &e, n, p);
                for (int k = 0; k < n; k++)
                    cr_expect_eq(memcmp(g[k], ref[k], clmad_tensor_numel(p[k]) * sizeof(double)), 0,
                                 "form %d, cap %d, policy %d: param %d differs", e.form, cap, policy, k);
                gc_free(g, n);
            }
        }
        CHECK_OK(ctx, clmad_set_chunk_cap(ctx, 0));
        gc_free(ref, n);
    }
    lean_teardown(&e, p);
    clmad_context_release(ctx);
}

/* dot(y, w) and sum(mul(y, w)) give the cell's inputs bitwise the same
 * gradients: s * w read lazily rounds like the adjoint the mul formed. */
Test(lean, dot_and_mul_sum_losses_give_bitwise_equal_gradients)
{
    clmad_context *ctx = test_context();
    /* The eager pipeline: test_fusion counts the fused loss's kernels. */
    CHECK_OK(ctx, clmad_context_set_param(ctx, CLMAD_PARAM_DISABLE_FUSION, 1));
    lean_env e;
    clmad_tensor *p[4];
    lean_setup(ctx, &e, p);
    e.form = DOT_OF_CELL;
    double **lazy = gc_backward(ctx, lean_loss, &e, 4, p);
    e.form = MUL_SUM_OF_CELL;
    double **mul_sum = gc_backward(ctx, lean_loss, &e, 4, p);
    for (int k = 0; k < 4; k++)
        cr_expect_eq(memcmp(mul_sum[k], lazy[k], M * N * sizeof(double)), 0, "param %d differs", k);
    gc_free(lazy, 4);
    gc_free(mul_sum, 4);
    lean_teardown(&e, p);
    clmad_context_release(ctx);
}

/* ---- kernel and byte counts ---------------------------------------------- */

/* HM-LSTM fwd + bwd with loss dot(cell, w): under both policies the
 * backward is the seed (a one-element fill) and ONE kernel (all four
 * gradients), reading w, the seed and (STORE) the four stored partials,
 * writing four gradients. */
Test(lean, hm_lstm_backward_is_one_kernel)
{
    clmad_context *ctx = test_context();
    /* The eager pipeline: test_fusion counts the fused loss's kernels. */
    CHECK_OK(ctx, clmad_context_set_param(ctx, CLMAD_PARAM_DISABLE_FUSION, 1));
    lean_env e;
    clmad_tensor *p[4];
    lean_setup(ctx, &e, p);
    e.form = DOT_OF_CELL;
    const uint64_t n = M * N, real = sizeof(double);
    for (int policy = CLMAD_PARTIALS_STORE; policy <= CLMAD_PARTIALS_RECOMPUTE; policy++) {
        CHECK_OK(ctx, clmad_set_partials_policy(ctx, (clmad_partials_policy)policy));
        double **warm = gc_backward(ctx, lean_loss, &e, 4, p); /* builds every kernel */
        gc_free(warm, 4);
        for (int k = 0; k < 4; k++)
            clmad_tensor_zero_grad(p[k]);
        clmad_tensor *loss;
        clmad_stats s0, s1, s2;
        CHECK_OK(ctx, clmad_context_stats(ctx, &s0));
        CHECK_OK(ctx, lean_loss(ctx, p, &e, &loss));
        CHECK_OK(ctx, clmad_context_stats(ctx, &s1));
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        CHECK_OK(ctx, clmad_context_stats(ctx, &s2));
        clmad_tensor_release(loss);
        /* Forward: the cell (one chunk) and the dot (one pass at 30 elements). */
        cr_expect_eq(s1.kernels_launched - s0.kernels_launched, 2, "policy %d: forward launched %llu",
                     policy, (unsigned long long)(s1.kernels_launched - s0.kernels_launched));
        cr_expect_eq(s2.kernels_launched - s1.kernels_launched, 2, "policy %d: backward launched %llu",
                     policy, (unsigned long long)(s2.kernels_launched - s1.kernels_launched));
        /* Backward bytes: the seed written and read, w and the 4 gradients,
         * plus 4 stored partials (STORE) or the 4 inputs and the 2 controls
         * (RECOMPUTE). */
        uint64_t expect = policy == CLMAD_PARTIALS_STORE ? (9 * n + 2) * real : (9 * n + 2 + 2 * N) * real;
        cr_expect_eq(s2.bytes_moved - s1.bytes_moved, expect, "policy %d: backward moved %llu bytes, expected %llu",
                     policy, (unsigned long long)(s2.bytes_moved - s1.bytes_moved), (unsigned long long)expect);
    }
    lean_teardown(&e, p);
    clmad_context_release(ctx);
}

/* Runs the backward of form's loss (gradients zeroed first when `zero`);
 * returns the kernels the backward launched. */
static uint64_t backward_kernels(clmad_context *ctx, lean_env *e, clmad_tensor **p, int zero)
{
    for (int k = 0; k < 4 && zero; k++)
        clmad_tensor_zero_grad(p[k]);
    clmad_tensor *loss;
    clmad_stats s0, s1;
    CHECK_OK(ctx, lean_loss(ctx, p, e, &loss));
    CHECK_OK(ctx, clmad_context_stats(ctx, &s0));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_context_stats(ctx, &s1));
    clmad_tensor_release(loss);
    return s1.kernels_launched - s0.kernels_launched;
}

static void expect_grads(clmad_context *ctx, clmad_tensor **p, double **ref, double times, const char *what)
{
    for (int k = 0; k < 4; k++) {
        clmad_tensor *g;
        double h[M * N];
        CHECK_OK(ctx, clmad_tensor_grad(p[k], &g));
        CHECK_OK(ctx, clmad_tensor_read(g, h, sizeof h));
        clmad_tensor_release(g);
        for (int i = 0; i < M * N; i++)
            cr_expect_eq(h[i], times * ref[k][i], "%s: param %d element %d: %.17g, expected %.17g", what, k,
                         i, h[i], times * ref[k][i]);
    }
}

/* The gradient of sum(cell(z, zb, x, x, x, x)) for x under policy. */
static void summed_gradient(clmad_context *ctx, lean_env *e, clmad_tensor *x, clmad_partials_policy policy,
                            double *out)
{
    clmad_tensor *in[6] = {e->z, e->zb, x, x, x, x}, *y, *loss, *g;
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, policy));
    clmad_tensor_zero_grad(x);
    CHECK_OK(ctx, clmad_broadcast(ctx, e->cell, in, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    CHECK_OK(ctx, clmad_tensor_read(g, out, M * N * sizeof(double)));
    clmad_tensor_release(g);
    clmad_tensor_release(y);
    clmad_tensor_release(loss);
}

/* sum(cell) under STORE: the backward's adjoint is exactly 1, so the
 * stored partials become the gradients (the loss kernel's, fused: backward
 * launches nothing, not even the seed's fill, which nothing reads),
 * bitwise those RECOMPUTE forms; into gradients already there (the seed
 * written then), and on a retained tape (whose partials a second backward
 * reads), the kernel runs as before. */
Test(lean, summed_cell_takes_its_stored_partials_as_gradients)
{
    clmad_context *ctx = test_context();
    lean_env e;
    clmad_tensor *p[4];
    lean_setup(ctx, &e, p);
    e.form = SUM_OF_CELL;
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_RECOMPUTE));
    double **ref = gc_backward(ctx, lean_loss, &e, 4, p);
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_STORE));
    gc_free(gc_backward(ctx, lean_loss, &e, 4, p), 4); /* builds every kernel */

    cr_expect_eq(backward_kernels(ctx, &e, p, 1), 0, "no kernel: the gradients are the loss kernel's");
    expect_grads(ctx, p, ref, 1, "handed over");
    cr_expect_eq(backward_kernels(ctx, &e, p, 0), 2, "the seed and one kernel adding into the gradients");
    expect_grads(ctx, p, ref, 2, "added");

    CHECK_OK(ctx, clmad_set_retain_tape(ctx, 1));
    for (int k = 0; k < 4; k++)
        clmad_tensor_zero_grad(p[k]);
    clmad_tensor *loss;
    CHECK_OK(ctx, lean_loss(ctx, p, &e, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    clmad_tensor_release(loss);
    expect_grads(ctx, p, ref, 2, "retained tape, two backwards");
    CHECK_OK(ctx, clmad_set_retain_tape(ctx, 0));
    clmad_tape_clear(ctx);

    /* One tensor as four active inputs: a sum of their partials, not one of them. */
    double store[M * N], recompute[M * N];
    summed_gradient(ctx, &e, p[0], CLMAD_PARTIALS_STORE, store);
    summed_gradient(ctx, &e, p[0], CLMAD_PARTIALS_RECOMPUTE, recompute);
    cr_expect_eq(memcmp(store, recompute, sizeof store), 0, "one tensor as four inputs: STORE and RECOMPUTE differ");
    gc_free(ref, 4);
    lean_teardown(&e, p);
    clmad_context_release(ctx);
}

/* ---- runs of elements per work-item over broadcast inputs ---------------- */

/* On POCL a work-item computes a run of consecutive elements and indexes
 * broadcast inputs by rows when the last dimension is at least a run long
 * (codegen.c, row_runs); runs that cross rows, several leading dimensions,
 * and a last dimension shorter than a run (per-element coordinates) all
 * give the values and gradients of a host computation. */
static const char *AXPY = "T axpy(T a, T b, T c) { return ad_add(ad_mul(a, b), ad_sin(c)); }\n";

typedef struct runs_env {
    clmad_kernel *k;
} runs_env;

static clmad_status runs_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    runs_env *e = user;
    clmad_tensor *y;
    clmad_status st = clmad_broadcast(ctx, e->k, p, &y);
    if (st == CLMAD_OK) {
        st = clmad_dot(ctx, y, y, loss);
        clmad_tensor_release(y);
    }
    return st;
}

Test(lean, broadcast_runs_cross_rows_and_match_the_host)
{
    clmad_context *ctx = test_context();
    runs_env e;
    CHECK_OK(ctx, clmad_kernel_create(ctx, AXPY, "axpy", 3, 1, &e.k));
    /* (out shape; shapes of a, b, c) with last dimensions 70, 33, 5. */
    struct { int nd; size_t out[3], a[3], b[3], c[3]; } cases[] = {
        {2, {3, 70}, {3, 70}, {1, 70}, {3, 1}},
        {3, {2, 3, 33}, {2, 1, 33}, {3, 33}, {2, 3, 1}},
        {2, {9, 5}, {9, 5}, {1, 5}, {9, 1}},
    };
    unsigned seed = 3;
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        int nd = cases[t].nd;
        int bnd = t == 1 ? 2 : nd; /* b of case 1 has rank 2 */
        clmad_tensor *p[3];
        p[0] = gc_random(ctx, nd, cases[t].a, -1, 1, &seed);
        p[1] = gc_random(ctx, bnd, cases[t].b, -1, 1, &seed);
        p[2] = gc_random(ctx, nd, cases[t].c, -1, 1, &seed);
        clmad_tensor *y;
        CHECK_OK(ctx, clmad_broadcast(ctx, e.k, p, &y));
        double *ha = read_all(ctx, p[0], CLMAD_F64), *hb = read_all(ctx, p[1], CLMAD_F64),
               *hc = read_all(ctx, p[2], CLMAD_F64), *hy = read_all(ctx, y, CLMAD_F64);
        size_t n = clmad_tensor_numel(y), last = cases[t].out[nd - 1];
        for (size_t i = 0; i < n; i++) {
            size_t col = i % last, row = i / last, rows = n / last, inner = nd == 3 ? cases[t].out[1] : rows;
            /* Index of element i in each input (broadcast dimensions read at 0). */
            size_t ia = t == 1 ? (row / inner) * last + col : i;
            size_t ib = t == 1 ? (row % inner) * last + col : col;
            size_t ic = row;
            double want = ha[ia] * hb[ib] + sin(hc[ic]);
            cr_expect(fabs(hy[i] - want) <= 1e-15 * fmax(1, fabs(want)), "case %zu element %zu: %.17g, host %.17g",
                      t, i, hy[i], want);
        }
        free(ha), free(hb), free(hc), free(hy);
        clmad_tensor_release(y);
        for (int policy = CLMAD_PARTIALS_STORE; policy <= CLMAD_PARTIALS_RECOMPUTE; policy++) {
            CHECK_OK(ctx, clmad_set_partials_policy(ctx, (clmad_partials_policy)policy));
            gc_check(ctx, runs_loss, &e, 3, p, 1e-6);
        }
        for (int k = 0; k < 3; k++)
            clmad_tensor_release(p[k]);
    }
    clmad_kernel_release(e.k);
    clmad_context_release(ctx);
}
