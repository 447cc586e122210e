/* SPDX-License-Identifier: Apache-2.0 */
/* The tape: gradients of composite programs against central finite
 * differences (f64), policies, chunking, determinism, memory, errors. */
#include "gradcheck.h"

#include <string.h>

static const char *HM_CELL =
    "T hm_cell(T z, T zb, T c, T f, T i, T g)\n"
    "{\n"
    "    if (ad_val(z) == 1)  return ad_mul(ad_sigmoid(i), ad_tanh(g));\n"
    "    if (ad_val(zb) == 0) return c;\n"
    "    return ad_add(ad_mul(ad_sigmoid(f), c), ad_mul(ad_sigmoid(i), ad_tanh(g)));\n"
    "}\n";

static const char *LSTM_CELL =
    "T lstm_c(T c, T f, T i, T g)\n"
    "{\n"
    "    return ad_add(ad_mul(ad_sigmoid(f), c), ad_mul(ad_sigmoid(i), ad_tanh(g)));\n"
    "}\n";

/* loss = sum(y * w) */
static clmad_status weighted_sum(clmad_context *ctx, clmad_tensor *y, clmad_tensor *w, clmad_tensor **loss)
{
    clmad_tensor *p;
    clmad_status st = clmad_mul(ctx, y, w, &p);
    if (st == CLMAD_OK) {
        st = clmad_sum(ctx, p, 0, NULL, 0, loss);
        clmad_tensor_release(p);
    }
    return st;
}

/* ---- dense layer: tanh(X W + b) ------------------------------------------ */

typedef struct dense_env {
    clmad_tensor *x, *w;
} dense_env;

static clmad_status dense_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    dense_env *e = user;
    clmad_tensor *xw = NULL, *z = NULL, *y = NULL;
    clmad_status st = clmad_matmul(ctx, e->x, p[0], 0, 0, &xw);
    if (st == CLMAD_OK)
        st = clmad_add(ctx, xw, p[1], &z);
    if (st == CLMAD_OK)
        st = clmad_tanh(ctx, z, &y);
    if (st == CLMAD_OK)
        st = weighted_sum(ctx, y, e->w, loss);
    clmad_tensor_release(xw);
    clmad_tensor_release(z);
    clmad_tensor_release(y);
    return st;
}

Test(tape, dense_layer_gradients)
{
    clmad_context *ctx = test_context();
    unsigned seed = 7;
    size_t xs[2] = {5, 3}, ws[2] = {3, 4}, bs[2] = {1, 4}, ys[2] = {5, 4};
    dense_env e = {gc_random(ctx, 2, xs, -1, 1, &seed), gc_random(ctx, 2, ys, -1, 1, &seed)};
    clmad_tensor *p[2] = {gc_random(ctx, 2, ws, -1, 1, &seed), gc_random(ctx, 2, bs, -1, 1, &seed)};
    gc_check(ctx, dense_loss, &e, 2, p, 1e-6);
    for (int i = 0; i < 2; i++)
        clmad_tensor_release(p[i]);
    clmad_tensor_release(e.x);
    clmad_tensor_release(e.w);
    clmad_context_release(ctx);
}

/* ---- LSTM cell: matmuls, slices into gates, broadcast cell update --------- */

typedef struct lstm_env {
    clmad_tensor *x, *h, *w1, *w2;
    clmad_kernel *cell;
} lstm_env;

static clmad_status lstm_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    lstm_env *e = user;
    clmad_tensor *a = NULL, *b = NULL, *ab = NULL, *gates = NULL, *gate[4] = {0}, *c2 = NULL,
                 *so = NULL, *tc = NULL, *h2 = NULL, *l1 = NULL, *l2 = NULL;
    clmad_status st = clmad_matmul(ctx, e->x, p[0], 0, 0, &a);
    if (st == CLMAD_OK)
        st = clmad_matmul(ctx, e->h, p[1], 0, 0, &b);
    if (st == CLMAD_OK)
        st = clmad_add(ctx, a, b, &ab);
    if (st == CLMAD_OK)
        st = clmad_add(ctx, ab, p[2], &gates);
    for (int k = 0; k < 4 && st == CLMAD_OK; k++)
        st = clmad_slice(ctx, gates, 1, (size_t)k * 4, (size_t)k * 4 + 4, &gate[k]);
    if (st == CLMAD_OK) {
        clmad_tensor *in[4] = {p[3], gate[1], gate[0], gate[2]};
        st = clmad_broadcast(ctx, e->cell, in, &c2);
    }
    if (st == CLMAD_OK)
        st = clmad_sigmoid(ctx, gate[3], &so);
    if (st == CLMAD_OK)
        st = clmad_tanh(ctx, c2, &tc);
    if (st == CLMAD_OK)
        st = clmad_mul(ctx, so, tc, &h2);
    if (st == CLMAD_OK)
        st = weighted_sum(ctx, h2, e->w1, &l1);
    if (st == CLMAD_OK)
        st = weighted_sum(ctx, c2, e->w2, &l2);
    if (st == CLMAD_OK)
        st = clmad_add(ctx, l1, l2, loss);
    clmad_tensor *all[] = {a, b, ab, gates, gate[0], gate[1], gate[2], gate[3], c2, so, tc, h2, l1, l2};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    return st;
}

static void lstm_setup(clmad_context *ctx, lstm_env *e, clmad_tensor **p)
{
    unsigned seed = 11;
    size_t xs[2] = {2, 3}, hs[2] = {2, 4}, w1s[2] = {3, 16}, w2s[2] = {4, 16}, bs[2] = {1, 16};
    e->x = gc_random(ctx, 2, xs, -1, 1, &seed);
    e->h = gc_random(ctx, 2, hs, -1, 1, &seed);
    e->w1 = gc_random(ctx, 2, hs, -1, 1, &seed);
    e->w2 = gc_random(ctx, 2, hs, -1, 1, &seed);
    CHECK_OK(ctx, clmad_kernel_create(ctx, LSTM_CELL, "lstm_c", 4, 1, &e->cell));
    p[0] = gc_random(ctx, 2, w1s, -0.7, 0.7, &seed);
    p[1] = gc_random(ctx, 2, w2s, -0.7, 0.7, &seed);
    p[2] = gc_random(ctx, 2, bs, -0.5, 0.5, &seed);
    p[3] = gc_random(ctx, 2, hs, -1, 1, &seed);
}

static void lstm_teardown(lstm_env *e, clmad_tensor **p)
{
    for (int i = 0; i < 4; i++)
        clmad_tensor_release(p[i]);
    clmad_tensor_release(e->x);
    clmad_tensor_release(e->h);
    clmad_tensor_release(e->w1);
    clmad_tensor_release(e->w2);
    clmad_kernel_release(e->cell);
}

Test(tape, lstm_cell_gradients)
{
    clmad_context *ctx = test_context();
    lstm_env e;
    clmad_tensor *p[4];
    lstm_setup(ctx, &e, p);
    gc_check(ctx, lstm_loss, &e, 4, p, 1e-6);
    lstm_teardown(&e, p);
    clmad_context_release(ctx);
}

/* ---- HM-LSTM cell update with a broadcast bias --------------------------- */

typedef struct hm_env {
    clmad_tensor *z, *zb, *w;
    clmad_kernel *cell;
    int unfused;
} hm_env;

/* The same function as a chain of builtins with where (the "TensorFlow" form). */
static clmad_status hm_unfused(clmad_context *ctx, hm_env *e, clmad_tensor *c, clmad_tensor *f,
                               clmad_tensor *i, clmad_tensor *g, clmad_tensor **out)
{
    clmad_tensor *one = NULL, *zero = NULL, *si = NULL, *tg = NULL, *flush = NULL, *sf = NULL,
                 *fc = NULL, *update = NULL, *mz = NULL, *mzb = NULL, *inner = NULL;
    clmad_status st = clmad_tensor_fill(ctx, CLMAD_F64, 0, NULL, 1.0, &one);
    if (st == CLMAD_OK)
        st = clmad_tensor_zeros(ctx, CLMAD_F64, 0, NULL, &zero);
    if (st == CLMAD_OK) st = clmad_sigmoid(ctx, i, &si);
    if (st == CLMAD_OK) st = clmad_tanh(ctx, g, &tg);
    if (st == CLMAD_OK) st = clmad_mul(ctx, si, tg, &flush);
    if (st == CLMAD_OK) st = clmad_sigmoid(ctx, f, &sf);
    if (st == CLMAD_OK) st = clmad_mul(ctx, sf, c, &fc);
    if (st == CLMAD_OK) st = clmad_add(ctx, fc, flush, &update);
    if (st == CLMAD_OK) st = clmad_compare(ctx, CLMAD_EQ, e->z, one, &mz);
    if (st == CLMAD_OK) st = clmad_compare(ctx, CLMAD_EQ, e->zb, zero, &mzb);
    if (st == CLMAD_OK) st = clmad_where(ctx, mzb, c, update, &inner);
    if (st == CLMAD_OK) st = clmad_where(ctx, mz, flush, inner, out);
    clmad_tensor *all[] = {one, zero, si, tg, flush, sf, fc, update, mz, mzb, inner};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clmad_tensor_release(all[k]);
    return st;
}

static clmad_status hm_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    hm_env *e = user;
    clmad_tensor *fb = NULL, *y = NULL;
    clmad_status st = clmad_add(ctx, p[1], p[4], &fb); /* f + bias, bias of shape (1, n) */
    if (st == CLMAD_OK && e->unfused)
        st = hm_unfused(ctx, e, p[0], fb, p[2], p[3], &y);
    else if (st == CLMAD_OK) {
        clmad_tensor *in[6] = {e->z, e->zb, p[0], fb, p[2], p[3]};
        st = clmad_broadcast(ctx, e->cell, in, &y);
    }
    if (st == CLMAD_OK)
        st = weighted_sum(ctx, y, e->w, loss);
    clmad_tensor_release(fb);
    clmad_tensor_release(y);
    return st;
}

static void hm_setup(clmad_context *ctx, hm_env *e, clmad_tensor **p)
{
    unsigned seed = 5;
    enum { M = 6, N = 7 };
    size_t ms[2] = {M, N}, vs[2] = {1, N};
    double z[N], zb[N];
    for (int k = 0; k < N; k++) {
        z[k] = k % 3 == 0;        /* FLUSH, COPY and UPDATE columns all present */
        zb[k] = k % 3 == 1 ? 0 : 1;
    }
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, vs, z, &e->z));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, vs, zb, &e->zb));
    e->w = gc_random(ctx, 2, ms, -1, 1, &seed);
    CHECK_OK(ctx, clmad_kernel_create(ctx, HM_CELL, "hm_cell", 6, 1, &e->cell));
    e->unfused = 0;
    for (int k = 0; k < 4; k++)
        p[k] = gc_random(ctx, 2, ms, -1.5, 1.5, &seed);
    p[4] = gc_random(ctx, 2, vs, -0.5, 0.5, &seed);
}

static void hm_teardown(hm_env *e, clmad_tensor **p)
{
    for (int k = 0; k < 5; k++)
        clmad_tensor_release(p[k]);
    clmad_tensor_release(e->z);
    clmad_tensor_release(e->zb);
    clmad_tensor_release(e->w);
    clmad_kernel_release(e->cell);
}

Test(tape, hm_lstm_with_broadcast_bias_gradients)
{
    clmad_context *ctx = test_context();
    hm_env e;
    clmad_tensor *p[5];
    hm_setup(ctx, &e, p);
    gc_check(ctx, hm_loss, &e, 5, p, 1e-6);
    e.unfused = 1;
    gc_check(ctx, hm_loss, &e, 5, p, 1e-6);
    hm_teardown(&e, p);
    clmad_context_release(ctx);
}

/* ---- policies, chunks, determinism, fused vs unfused --------------------- */

static void expect_bitwise(double **a, double **b, int n, clmad_tensor **p, const char *what)
{
    for (int k = 0; k < n; k++) {
        size_t m = clmad_tensor_numel(p[k]);
        cr_expect_eq(memcmp(a[k], b[k], m * sizeof(double)), 0, "%s: param %d differs", what, k);
    }
}

static void policies_agree(loss_builder build, void *env, clmad_context *ctx, int n, clmad_tensor **p)
{
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_STORE));
    double **store = gc_backward(ctx, build, env, n, p);
    double **again = gc_backward(ctx, build, env, n, p);
    expect_bitwise(store, again, n, p, "two runs (STORE)");
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_RECOMPUTE));
    double **recompute = gc_backward(ctx, build, env, n, p);
    expect_bitwise(store, recompute, n, p, "STORE vs RECOMPUTE");
    for (int cap = 1; cap <= 3; cap++) {
        CHECK_OK(ctx, clmad_set_chunk_cap(ctx, cap));
        for (int policy = CLMAD_PARTIALS_STORE; policy <= CLMAD_PARTIALS_RECOMPUTE; policy++) {
            CHECK_OK(ctx, clmad_set_partials_policy(ctx, (clmad_partials_policy)policy));
            double **chunked = gc_backward(ctx, build, env, n, p);
            expect_bitwise(store, chunked, n, p, "chunked vs unchunked");
            gc_free(chunked, n);
        }
    }
    CHECK_OK(ctx, clmad_set_chunk_cap(ctx, 0));
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_AUTO));
    gc_free(store, n);
    gc_free(again, n);
    gc_free(recompute, n);
}

Test(tape, hm_policies_chunks_and_runs_agree_bitwise)
{
    clmad_context *ctx = test_context();
    hm_env e;
    clmad_tensor *p[5];
    hm_setup(ctx, &e, p);
    policies_agree(hm_loss, &e, ctx, 5, p);
    hm_teardown(&e, p);
    clmad_context_release(ctx);
}

Test(tape, lstm_policies_chunks_and_runs_agree_bitwise)
{
    clmad_context *ctx = test_context();
    lstm_env e;
    clmad_tensor *p[4];
    lstm_setup(ctx, &e, p);
    policies_agree(lstm_loss, &e, ctx, 4, p);
    lstm_teardown(&e, p);
    clmad_context_release(ctx);
}

Test(tape, fused_and_unfused_hm_lstm_agree)
{
    clmad_context *ctx = test_context();
    hm_env e;
    clmad_tensor *p[5];
    hm_setup(ctx, &e, p);
    double **fused = gc_backward(ctx, hm_loss, &e, 5, p);
    e.unfused = 1;
    double **unfused = gc_backward(ctx, hm_loss, &e, 5, p);
    for (int k = 0; k < 5; k++)
        for (size_t i = 0; i < clmad_tensor_numel(p[k]); i++)
            cr_expect(fabs(fused[k][i] - unfused[k][i]) <= 1e-12 * fmax(1, fabs(unfused[k][i])),
                      "param %d element %zu: fused %.17g unfused %.17g", k, i, fused[k][i], unfused[k][i]);
    gc_free(fused, 5);
    gc_free(unfused, 5);
    hm_teardown(&e, p);
    clmad_context_release(ctx);
}

/* ---- memory: live bytes return after backward and release ---------------- */

Test(tape, live_bytes_return_after_backward)
{
    clmad_context *ctx = test_context();
    hm_env e;
    clmad_tensor *p[5];
    hm_setup(ctx, &e, p);
    for (int policy = CLMAD_PARTIALS_STORE; policy <= CLMAD_PARTIALS_RECOMPUTE; policy++) {
        CHECK_OK(ctx, clmad_set_partials_policy(ctx, (clmad_partials_policy)policy));
        for (int k = 0; k < 5; k++)
            CHECK_OK(ctx, clmad_tensor_set_requires_grad(p[k], 1));
        clmad_stats before, during, after;
        CHECK_OK(ctx, clmad_context_stats(ctx, &before));
        clmad_tensor *loss;
        CHECK_OK(ctx, hm_loss(ctx, p, &e, &loss));
        CHECK_OK(ctx, clmad_context_stats(ctx, &during));
        cr_expect_gt(during.tape_nodes, 0);
        if (policy == CLMAD_PARTIALS_STORE)
            cr_expect_gt(during.tape_saved_bytes, 0);
        else
            cr_expect_eq(during.tape_saved_bytes, 0);
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        clmad_tensor_release(loss);
        for (int k = 0; k < 5; k++)
            clmad_tensor_zero_grad(p[k]);
        CHECK_OK(ctx, clmad_context_stats(ctx, &after));
        cr_expect_eq(after.tape_nodes, 0);
        cr_expect_eq(after.tape_saved_bytes, 0);
        cr_expect_eq(after.live_tensor_bytes, before.live_tensor_bytes,
                     "live bytes before %llu, after %llu", (unsigned long long)before.live_tensor_bytes,
                     (unsigned long long)after.live_tensor_bytes);
    }
    hm_teardown(&e, p);
    clmad_context_release(ctx);
}

/* ---- the builtin operations, one program each ----------------------------- */

typedef struct ops_env {
    int which;
} ops_env;

static clmad_status ops_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    ops_env *e = user;
    clmad_tensor *t[24] = {0};
    int n = 0;
    clmad_status st = CLMAD_OK;
#define STEP(call) if (st == CLMAD_OK) st = (call)
    if (e->which == 0) {
        /* transpose, concat, reshape, slice, pow, div, exp, sqrt, log, sub, relu, neg, mean */
        static const int axis0[1] = {0};
        STEP(clmad_transpose(ctx, p[0], NULL, &t[0]));                  /* 3x2 */
        clmad_tensor *parts[2] = {t[0], p[1]};
        STEP(clmad_concat(ctx, 2, parts, 0, &t[1]));                    /* 6x2 */
        size_t s34[2] = {3, 4};
        STEP(clmad_reshape(ctx, t[1], 2, s34, &t[2]));                  /* 3x4 */
        STEP(clmad_slice(ctx, t[2], 1, 1, 3, &t[3]));                   /* 3x2 */
        STEP(clmad_pow(ctx, p[2], t[3], &t[4]));
        STEP(clmad_exp(ctx, t[3], &t[5]));
        STEP(clmad_div(ctx, t[4], t[5], &t[6]));
        STEP(clmad_sqrt(ctx, p[2], &t[7]));
        STEP(clmad_log(ctx, p[2], &t[8]));
        STEP(clmad_sub(ctx, t[7], t[8], &t[9]));
        STEP(clmad_mul(ctx, t[6], t[9], &t[10]));
        STEP(clmad_neg(ctx, t[3], &t[11]));
        STEP(clmad_relu(ctx, t[11], &t[12]));
        STEP(clmad_add(ctx, t[10], t[12], &t[13]));
        STEP(clmad_mean(ctx, t[13], 1, axis0, 0, &t[14]));              /* (2,) */
        STEP(clmad_mul(ctx, t[14], t[14], &t[15]));
        STEP(clmad_sum(ctx, t[15], 0, NULL, 0, loss));
        n = 16;
    } else {
        /* matmul with every transpose combination, a 3-d transpose, sums over axes */
        STEP(clmad_matmul(ctx, p[0], p[1], 0, 1, &t[0]));   /* (2x3)(2x3)^T = 2x2 */
        STEP(clmad_matmul(ctx, p[0], p[1], 1, 0, &t[1]));   /* (2x3)^T (2x3) = 3x3 */
        STEP(clmad_matmul(ctx, t[1], p[0], 0, 1, &t[2]));   /* (3x3)(2x3)^T = 3x2 */
        STEP(clmad_matmul(ctx, t[2], t[0], 0, 0, &t[3]));   /* (3x2)(2x2) = 3x2 */
        STEP(clmad_matmul(ctx, t[0], t[3], 1, 1, &t[4]));   /* (2x2)^T (3x2)^T = 2x3 */
        size_t s[3] = {2, 1, 3};
        STEP(clmad_reshape(ctx, t[4], 3, s, &t[5]));
        static const int perm[3] = {2, 0, 1};
        STEP(clmad_transpose(ctx, t[5], perm, &t[6]));      /* 3x2x1 */
        static const int axes[2] = {1, -1};
        STEP(clmad_sum(ctx, t[6], 2, axes, 1, &t[7]));      /* 3x1x1 */
        STEP(clmad_tanh(ctx, t[7], &t[8]));
        STEP(clmad_sum(ctx, t[8], 0, NULL, 0, loss));
        n = 9;
    }
#undef STEP
    for (int k = 0; k < n; k++)
        clmad_tensor_release(t[k]);
    return st;
}

Test(tape, shape_and_elementwise_builtins_gradients)
{
    clmad_context *ctx = test_context();
    unsigned seed = 3;
    size_t a[2] = {2, 3}, b[2] = {3, 2}, d[2] = {3, 2};
    clmad_tensor *p[3] = {gc_random(ctx, 2, a, -1, 1, &seed), gc_random(ctx, 2, b, -1, 1, &seed),
                          gc_random(ctx, 2, d, 0.5, 2.0, &seed)};
    ops_env e = {0};
    gc_check(ctx, ops_loss, &e, 3, p, 1e-6);
    for (int k = 0; k < 3; k++)
        clmad_tensor_release(p[k]);
    clmad_context_release(ctx);
}

Test(tape, matmul_transposes_and_axis_sums_gradients)
{
    clmad_context *ctx = test_context();
    unsigned seed = 9;
    size_t a[2] = {2, 3};
    clmad_tensor *p[2] = {gc_random(ctx, 2, a, -0.8, 0.8, &seed), gc_random(ctx, 2, a, -0.8, 0.8, &seed)};
    ops_env e = {1};
    gc_check(ctx, ops_loss, &e, 2, p, 1e-6);
    for (int k = 0; k < 2; k++)
        clmad_tensor_release(p[k]);
    clmad_context_release(ctx);
}

/* ---- errors and modes ----------------------------------------------------- */

Test(tape, backward_errors_and_modes)
{
    clmad_context *ctx = test_context();
    size_t s[1] = {3};
    double v[3] = {1, 2, 3};
    clmad_tensor *x, *y, *loss;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, s, v, &x));
    /* No tape behind a constant. */
    CHECK_OK(ctx, clmad_sum(ctx, x, 0, NULL, 0, &loss));
    cr_expect_eq(clmad_backward(ctx, loss, NULL), CLMAD_ERR_STATE);
    cr_expect(test_contains(clmad_last_error(ctx), "tape"), "%s", clmad_last_error(ctx));
    clmad_tensor_release(loss);

    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_exp(ctx, x, &y));
    cr_expect_eq(clmad_tensor_set_requires_grad(y, 0), CLMAD_ERR_STATE);
    /* A non-scalar loss needs a seed. */
    cr_expect_eq(clmad_backward(ctx, y, NULL), CLMAD_ERR_SHAPE);
    cr_expect(test_contains(clmad_last_error(ctx), "seed"), "%s", clmad_last_error(ctx));
    clmad_tensor *seed;
    double ones[3] = {1, 10, 100};
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, s, ones, &seed));
    CHECK_OK(ctx, clmad_set_retain_tape(ctx, 1));
    CHECK_OK(ctx, clmad_backward(ctx, y, seed));
    CHECK_OK(ctx, clmad_backward(ctx, y, seed)); /* kept tape: a second backward accumulates */
    CHECK_OK(ctx, clmad_set_retain_tape(ctx, 0));
    CHECK_OK(ctx, clmad_backward(ctx, y, seed));
    /* The tape is consumed now. */
    cr_expect_eq(clmad_backward(ctx, y, seed), CLMAD_ERR_STATE);
    clmad_tensor *g;
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    double gh[3];
    CHECK_OK(ctx, clmad_tensor_read(g, gh, sizeof gh));
    for (int i = 0; i < 3; i++)
        cr_expect(fabs(gh[i] - 3 * ones[i] * exp(v[i])) <= 1e-12 * gh[i], "%d: %g", i, gh[i]);
    clmad_tensor_release(g);

    /* No-grad mode records nothing. */
    CHECK_OK(ctx, clmad_set_grad_enabled(ctx, 0));
    clmad_tensor *z;
    CHECK_OK(ctx, clmad_exp(ctx, x, &z));
    cr_expect_eq(clmad_tensor_requires_grad(z), 0);
    clmad_stats st;
    CHECK_OK(ctx, clmad_context_stats(ctx, &st));
    cr_expect_eq(st.tape_nodes, 0);
    CHECK_OK(ctx, clmad_set_grad_enabled(ctx, 1));

    clmad_tensor_release(z);
    clmad_tensor_release(seed);
    clmad_tensor_release(y);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}

/* p's adjoint first arrives lazily from clmad_dot (the other operand x
 * itself, read-only), then the reshape's backward adds to it: the lazy
 * adjoint must be expanded first, or the reshape would add into x. */
Test(tape, shape_backward_expands_a_lazy_adjoint_before_adding)
{
    clmad_context *ctx = test_context();
    const double qv[4] = {0.1, -0.2, 0.3, 0.4}, xv[4] = {1.5, -2.0, 0.25, 3.0};
    size_t n = 4, sq[2] = {2, 2};
    clmad_tensor *q, *x, *p, *r, *s, *a, *loss, *g;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, qv, &q));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, xv, &x));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(q, 1));
    CHECK_OK(ctx, clmad_exp(ctx, q, &p));
    CHECK_OK(ctx, clmad_reshape(ctx, p, 2, sq, &r)); /* recorded before the dot: its backward runs after */
    CHECK_OK(ctx, clmad_sum(ctx, r, 0, NULL, 0, &s));
    CHECK_OK(ctx, clmad_dot(ctx, p, x, &a));
    CHECK_OK(ctx, clmad_add(ctx, s, a, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    double x_after[4], grad[4];
    CHECK_OK(ctx, clmad_tensor_read(x, x_after, sizeof x_after));
    CHECK_OK(ctx, clmad_tensor_grad(q, &g));
    CHECK_OK(ctx, clmad_tensor_read(g, grad, sizeof grad));
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(x_after[i], xv[i], "x[%d] changed by backward: %g, was %g", i, x_after[i], xv[i]);
        double expected = exp(qv[i]) * (1 + xv[i]); /* d/dq (sum e^q + e^q . x) */
        cr_assert_float_eq(grad[i], expected, 1e-12, "dq[%d] = %.17g, expected %.17g", i, grad[i], expected);
    }
    clmad_tensor *all[] = {q, x, p, r, s, a, loss, g};
    for (int i = 0; i < 8; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}
