/* SPDX-License-Identifier: Apache-2.0 */
/* Index operations: argmax/argmin, index_select, gather, scatter_add,
 * embedding, one_hot, cast, where with an integer mask, cross entropy over
 * integer labels and accuracy: values against host references, gradients
 * against central finite differences in f64, and bad input (status,
 * message, context still usable). The cases are functions run by one
 * Criterion test (end of file): a test is a process, and a process per
 * case cost seconds each under valgrind. */
#include "gradcheck.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static clmad_tensor *i64_tensor(clmad_context *ctx, int ndim, const size_t *shape, const int64_t *v)
{
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I64, ndim, shape, v, &t));
    return t;
}

/* ---- argmax / argmin --------------------------------------------------- */

static void argmax_argmin_against_host(void)
{
    clmad_context *ctx = test_context();
    size_t shape[3] = {3, 4, 5};
    double x[60];
    for (int i = 0; i < 60; i++)
        x[i] = (double)((i * 7) % 11) - 5; /* many ties */
    x[17] = NAN;                           /* a NaN in some rows of each axis */
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 3, shape, x, &t));
    for (int axis = 0; axis < 3; axis++)
        for (int want_max = 0; want_max < 2; want_max++) {
            clmad_tensor *y;
            CHECK_OK(ctx, want_max ? clmad_argmax(ctx, t, axis - 3, 1, &y) : clmad_argmin(ctx, t, axis, 0, &y));
            cr_assert_eq(clmad_tensor_dtype(y), CLMAD_I64);
            cr_assert_eq(clmad_tensor_ndim(y), want_max ? 3 : 2);
            int64_t got[20];
            size_t n = 60 / shape[axis];
            CHECK_OK(ctx, clmad_tensor_read(y, got, n * sizeof got[0]));
            size_t inner = 1;
            for (int d = axis + 1; d < 3; d++)
                inner *= shape[d];
            for (size_t r = 0; r < n; r++) {
                size_t base = (r / inner) * shape[axis] * inner + r % inner;
                size_t best = 0;
                for (size_t k = 0; k < shape[axis]; k++) {
                    double v = x[base + k * inner], b = x[base + best * inner];
                    if (isnan(b))
                        break;
                    if (isnan(v) || (want_max ? v > b : v < b))
                        best = k;
                }
                cr_assert_eq(got[r], (int64_t)best, "%saxis %d max %d row %zu: %lld, host %zu", test_case(), axis,
                             want_max, r, (long long)got[r], best);
            }
            clmad_tensor_release(y);
        }
    /* integer input */
    int32_t xi[6] = {3, -9, 3, 7, 7, -1};
    size_t s2[2] = {2, 3};
    clmad_tensor *ti, *y;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I32, 2, s2, xi, &ti));
    CHECK_OK(ctx, clmad_argmax(ctx, ti, 1, 0, &y));
    int64_t got[2];
    CHECK_OK(ctx, clmad_tensor_read(y, got, sizeof got));
    cr_assert(got[0] == 0 && got[1] == 0, "%sargmax of i32 rows: %lld %lld", test_case(), (long long)got[0],
              (long long)got[1]);
    clmad_tensor_release(y);
    CHECK_OK(ctx, clmad_argmin(ctx, ti, 1, 0, &y));
    CHECK_OK(ctx, clmad_tensor_read(y, got, sizeof got));
    cr_assert(got[0] == 1 && got[1] == 2);
    clmad_tensor_release(y);
    clmad_tensor_release(ti);
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

/* ---- gradients ---------------------------------------------------------- */

typedef enum { OP_SELECT, OP_GATHER, OP_SCATTER, OP_EMBED, OP_CE, OP_WHERE, OP_CAST } op_kind;

typedef struct op_env {
    op_kind op;
    int axis;
    clmad_tensor *index, *w, *mask;
} op_env;

/* loss = sum(w * op(tanh(p0)[, p1])): tanh first so that the op's adjoint
 * is passed on through a node; weights so that no gradient is trivially 1. */
static clmad_status op_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    op_env *e = user;
    clmad_tensor *t = NULL, *y = NULL, *c = NULL;
    clmad_status st = clmad_tanh(ctx, p[0], &t);
    if (st != CLMAD_OK)
        return st;
    switch (e->op) {
    case OP_SELECT: st = clmad_index_select(ctx, t, e->axis, e->index, &y); break;
    case OP_GATHER: st = clmad_gather(ctx, t, e->axis, e->index, &y); break;
    case OP_SCATTER: st = clmad_scatter_add(ctx, t, e->axis, e->index, p[1], &y); break;
    case OP_EMBED: st = clmad_embedding(ctx, t, e->index, &y); break;
    case OP_CE: st = clmad_cross_entropy_index(ctx, t, e->index, loss); break;
    case OP_WHERE: st = clmad_where(ctx, e->mask, t, p[1], &y); break;
    case OP_CAST:
        st = clmad_cast(ctx, t, CLMAD_F32, &c);
        if (st == CLMAD_OK)
            st = clmad_cast(ctx, c, CLMAD_F64, &y);
        break;
    }
    if (st == CLMAD_OK && e->op != OP_CE)
        st = clmad_dot(ctx, y, e->w, loss);
    clmad_tensor_release(t);
    clmad_tensor_release(y);
    clmad_tensor_release(c);
    return st;
}

static clmad_tensor *weights_like(clmad_context *ctx, clmad_tensor *y, unsigned *seed)
{
    size_t shape[CLMAD_MAX_DIMS];
    for (int d = 0; d < clmad_tensor_ndim(y); d++)
        shape[d] = clmad_tensor_dim(y, d);
    return gc_random(ctx, clmad_tensor_ndim(y), shape, -1, 1, seed);
}

static void index_select_values_and_gradient(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 3;
    size_t xs[3] = {2, 4, 3}, is[1] = {5};
    const int64_t idx[5] = {2, 0, 2, 3, 2}; /* repeats: gradients add up */
    clmad_tensor *x = gc_random(ctx, 3, xs, -2, 2, &seed), *index = i64_tensor(ctx, 1, is, idx), *y;
    CHECK_OK(ctx, clmad_index_select(ctx, x, 1, index, &y));
    cr_assert(clmad_tensor_ndim(y) == 3 && clmad_tensor_dim(y, 1) == 5);
    double hx[24], hy[30];
    test_read_f64(ctx, x, hx, 24);
    test_read_f64(ctx, y, hy, 30);
    for (size_t o = 0; o < 2; o++)
        for (size_t k = 0; k < 5; k++)
            for (size_t i = 0; i < 3; i++)
                cr_assert_eq(hy[(o * 5 + k) * 3 + i], hx[(o * 4 + (size_t)idx[k]) * 3 + i]);
    op_env e = {OP_SELECT, 1, index, weights_like(ctx, y, &seed), NULL};
    gc_check(ctx, op_loss, &e, 1, &x, 1e-6);
    /* the untouched row 1 gets a zero gradient, not garbage */
    clmad_tensor *g;
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    test_read_f64(ctx, g, hx, 24);
    for (size_t o = 0; o < 2; o++)
        for (size_t i = 0; i < 3; i++)
            cr_assert_eq(hx[(o * 4 + 1) * 3 + i], 0.0);
    clmad_tensor_release(g);
    clmad_tensor_release(y);
    clmad_tensor_release(e.w);
    clmad_tensor_release(index);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}

static void gather_values_and_gradient(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 4;
    size_t xs[3] = {2, 3, 4}, is[3] = {2, 5, 4};
    int64_t idx[40];
    for (int i = 0; i < 40; i++)
        idx[i] = (i * 5 + i / 7) % 3;
    clmad_tensor *x = gc_random(ctx, 3, xs, -2, 2, &seed), *index = i64_tensor(ctx, 3, is, idx), *y;
    CHECK_OK(ctx, clmad_gather(ctx, x, 1, index, &y));
    double hx[24], hy[40];
    test_read_f64(ctx, x, hx, 24);
    test_read_f64(ctx, y, hy, 40);
    for (size_t o = 0; o < 2; o++)
        for (size_t k = 0; k < 5; k++)
            for (size_t i = 0; i < 4; i++)
                cr_assert_eq(hy[(o * 5 + k) * 4 + i], hx[(o * 3 + (size_t)idx[(o * 5 + k) * 4 + i]) * 4 + i]);
    op_env e = {OP_GATHER, 1, index, weights_like(ctx, y, &seed), NULL};
    gc_check(ctx, op_loss, &e, 1, &x, 1e-6);
    clmad_tensor_release(y);
    clmad_tensor_release(e.w);
    clmad_tensor_release(index);
    /* the last axis, by a negative number */
    size_t js[3] = {2, 3, 2};
    const int64_t jdx[12] = {3, 0, 1, 1, 2, 3, 0, 0, 3, 2, 1, 0};
    index = i64_tensor(ctx, 3, js, jdx);
    CHECK_OK(ctx, clmad_gather(ctx, x, -1, index, &y));
    op_env e2 = {OP_GATHER, -1, index, weights_like(ctx, y, &seed), NULL};
    gc_check(ctx, op_loss, &e2, 1, &x, 1e-6);
    clmad_tensor_release(y);
    clmad_tensor_release(e2.w);
    clmad_tensor_release(index);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}

static void scatter_add_values_and_gradients(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 5;
    size_t xs[2] = {3, 4}, ss[2] = {5, 4};
    int64_t idx[20];
    for (int i = 0; i < 20; i++)
        idx[i] = (i * 7) % 3;
    clmad_tensor *p[2] = {gc_random(ctx, 2, xs, -2, 2, &seed), gc_random(ctx, 2, ss, -2, 2, &seed)};
    clmad_tensor *index = i64_tensor(ctx, 2, ss, idx), *y;
    CHECK_OK(ctx, clmad_scatter_add(ctx, p[0], 0, index, p[1], &y));
    double hx[12], hs[20], hy[12];
    test_read_f64(ctx, p[0], hx, 12);
    test_read_f64(ctx, p[1], hs, 20);
    test_read_f64(ctx, y, hy, 12);
    double want[12];
    memcpy(want, hx, sizeof want);
    for (size_t k = 0; k < 5; k++)
        for (size_t i = 0; i < 4; i++)
            want[(size_t)idx[k * 4 + i] * 4 + i] += hs[k * 4 + i];
    for (int i = 0; i < 12; i++)
        cr_assert(fabs(hy[i] - want[i]) <= 1e-15 * fmax(1, fabs(want[i])), "%selement %d: %g, host %g", test_case(), i,
                  hy[i], want[i]);
    op_env e = {OP_SCATTER, 0, index, weights_like(ctx, y, &seed), NULL};
    gc_check(ctx, op_loss, &e, 2, p, 1e-6);
    clmad_tensor_release(y);
    clmad_tensor_release(e.w);
    clmad_tensor_release(index);
    clmad_tensor_release(p[0]);
    clmad_tensor_release(p[1]);
    clmad_context_release(ctx);
}

static void embedding_values_and_gradient(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 6;
    size_t ws[2] = {5, 3}, is[2] = {2, 3};
    const int64_t idx[6] = {4, 0, 4, 1, 1, 4};
    clmad_tensor *w = gc_random(ctx, 2, ws, -2, 2, &seed), *index = i64_tensor(ctx, 2, is, idx), *y;
    CHECK_OK(ctx, clmad_embedding(ctx, w, index, &y));
    cr_assert(clmad_tensor_ndim(y) == 3 && clmad_tensor_dim(y, 2) == 3 && clmad_tensor_dim(y, 1) == 3);
    double hw[15], hy[18];
    test_read_f64(ctx, w, hw, 15);
    test_read_f64(ctx, y, hy, 18);
    for (size_t n = 0; n < 6; n++)
        for (size_t d = 0; d < 3; d++)
            cr_assert_eq(hy[n * 3 + d], hw[(size_t)idx[n] * 3 + d]);
    op_env e = {OP_EMBED, 0, index, weights_like(ctx, y, &seed), NULL};
    gc_check(ctx, op_loss, &e, 1, &w, 1e-6);
    clmad_tensor_release(y);
    clmad_tensor_release(e.w);
    clmad_tensor_release(index);
    clmad_tensor_release(w);
    clmad_context_release(ctx);
}

/* The backward of a scatter sums in a fixed order: two runs, same bits. */
static void gradients_bitwise_reproducible(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 7;
    size_t ws[2] = {7, 33}, is[1] = {500};
    int64_t idx[500];
    for (int i = 0; i < 500; i++)
        idx[i] = (i * 13) % 7;
    clmad_tensor *w = gc_random(ctx, 2, ws, -2, 2, &seed), *index = i64_tensor(ctx, 1, is, idx), *y;
    CHECK_OK(ctx, clmad_embedding(ctx, w, index, &y));
    op_env e = {OP_EMBED, 0, index, weights_like(ctx, y, &seed), NULL};
    clmad_tensor_release(y);
    double **g1 = gc_backward(ctx, op_loss, &e, 1, &w), **g2 = gc_backward(ctx, op_loss, &e, 1, &w);
    cr_assert(memcmp(g1[0], g2[0], 7 * 33 * sizeof(double)) == 0);
    gc_free(g1, 1);
    gc_free(g2, 1);
    clmad_tensor_release(e.w);
    clmad_tensor_release(index);
    clmad_tensor_release(w);
    clmad_context_release(ctx);
}

static void one_hot_and_cast(void)
{
    clmad_context *ctx = test_context();
    size_t is[2] = {2, 2};
    const int64_t idx[4] = {2, 0, 3, 2};
    clmad_tensor *index = i64_tensor(ctx, 2, is, idx), *y, *z;
    CHECK_OK(ctx, clmad_one_hot(ctx, index, 4, CLMAD_F32, &y));
    cr_assert(clmad_tensor_ndim(y) == 3 && clmad_tensor_dim(y, 2) == 4);
    float h[16];
    CHECK_OK(ctx, clmad_tensor_read(y, h, sizeof h));
    for (int n = 0; n < 4; n++)
        for (int c = 0; c < 4; c++)
            cr_assert_eq(h[n * 4 + c], c == idx[n] ? 1.0f : 0.0f);
    /* to u8 and back to i32 */
    CHECK_OK(ctx, clmad_cast(ctx, y, CLMAD_U8, &z));
    uint8_t u[16];
    CHECK_OK(ctx, clmad_tensor_read(z, u, sizeof u));
    for (int n = 0; n < 16; n++)
        cr_assert_eq(u[n], (uint8_t)h[n]);
    clmad_tensor_release(y);
    CHECK_OK(ctx, clmad_cast(ctx, z, CLMAD_I32, &y));
    int32_t v[16];
    CHECK_OK(ctx, clmad_tensor_read(y, v, sizeof v));
    for (int n = 0; n < 16; n++)
        cr_assert_eq(v[n], (int32_t)u[n]);
    clmad_tensor_release(y);
    clmad_tensor_release(z);
    /* floats truncate toward zero; i64 to f64 */
    size_t s1[1] = {4};
    const double f[4] = {-2.7, -0.5, 0.5, 3.99};
    clmad_tensor *tf;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, s1, f, &tf));
    CHECK_OK(ctx, clmad_cast(ctx, tf, CLMAD_I64, &y));
    int64_t l[4];
    CHECK_OK(ctx, clmad_tensor_read(y, l, sizeof l));
    cr_assert(l[0] == -2 && l[1] == 0 && l[2] == 0 && l[3] == 3);
    CHECK_OK(ctx, clmad_cast(ctx, y, CLMAD_F64, &z));
    double d[4];
    CHECK_OK(ctx, clmad_tensor_read(z, d, sizeof d));
    cr_assert(d[0] == -2 && d[1] == 0 && d[2] == 0 && d[3] == 3);
    clmad_tensor_release(y);
    clmad_tensor_release(z);
    clmad_tensor_release(tf);
    clmad_tensor_release(index);
    clmad_context_release(ctx);
}

/* Through f32 and back: the gradient is the closed form w (1 - tanh^2 x)
 * (a cast passes its adjoint on, converted), to f32's precision; finite
 * differences would see f32's rounding steps instead. */
static void cast_between_floats_has_a_gradient(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 8;
    size_t xs[2] = {3, 2};
    clmad_tensor *x = gc_random(ctx, 2, xs, -1, 1, &seed);
    op_env e = {OP_CAST, 0, NULL, gc_random(ctx, 2, xs, -1, 1, &seed), NULL};
    double **g = gc_backward(ctx, op_loss, &e, 1, &x), hx[6], hw[6];
    test_read_f64(ctx, x, hx, 6);
    test_read_f64(ctx, e.w, hw, 6);
    for (int i = 0; i < 6; i++) {
        double t = tanh(hx[i]), want = hw[i] * (1 - t * t);
        cr_assert(fabs(g[0][i] - want) <= 1e-6, "%selement %d: %.9g, closed form %.9g", test_case(), i, g[0][i],
                  want);
        cr_assert(g[0][i] != 0);
    }
    gc_free(g, 1);
    clmad_tensor_release(e.w);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}

static void where_with_integer_masks(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 9;
    size_t xs[2] = {2, 3};
    const uint8_t m8[6] = {1, 0, 255, 0, 0, 7};
    const int64_t m64[6] = {0, -1, 0, (int64_t)1 << 40, 1, 0};
    clmad_tensor *p[2] = {gc_random(ctx, 2, xs, -1, 1, &seed), gc_random(ctx, 2, xs, -1, 1, &seed)};
    for (int which = 0; which < 2; which++) {
        clmad_tensor *mask, *y;
        CHECK_OK(ctx, clmad_tensor_create(ctx, which ? CLMAD_I64 : CLMAD_U8, 2, xs, which ? (const void *)m64 : m8,
                                          &mask));
        CHECK_OK(ctx, clmad_where(ctx, mask, p[0], p[1], &y));
        double ha[6], hb[6], hy[6];
        test_read_f64(ctx, p[0], ha, 6);
        test_read_f64(ctx, p[1], hb, 6);
        test_read_f64(ctx, y, hy, 6);
        for (int i = 0; i < 6; i++)
            cr_assert_eq(hy[i], (which ? m64[i] != 0 : m8[i] != 0) ? ha[i] : hb[i]);
        op_env e = {OP_WHERE, 0, NULL, weights_like(ctx, y, &seed), mask};
        /* p[0] goes through tanh in op_loss: the reference sees it too */
        gc_check(ctx, op_loss, &e, 2, p, 1e-6);
        clmad_tensor_release(e.w);
        clmad_tensor_release(y);
        clmad_tensor_release(mask);
    }
    clmad_tensor_release(p[0]);
    clmad_tensor_release(p[1]);
    clmad_context_release(ctx);
}

/* ---- cross entropy over labels, accuracy -------------------------------- */

static void cross_entropy_index_value_gradient_accuracy(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 10;
    size_t ls[3] = {2, 3, 4}, ts[2] = {2, 3};
    const int64_t lab[6] = {0, 3, 1, 2, 2, 0};
    clmad_tensor *x = gc_random(ctx, 3, ls, -3, 3, &seed), *labels = i64_tensor(ctx, 2, ts, lab), *loss;
    CHECK_OK(ctx, clmad_cross_entropy_index(ctx, x, labels, &loss));
    double hx[24], want = 0, got;
    test_read_f64(ctx, x, hx, 24);
    for (int r = 0; r < 6; r++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < 4; c++)
            m = fmax(m, hx[r * 4 + c]);
        for (int c = 0; c < 4; c++)
            s += exp(hx[r * 4 + c] - m);
        want -= hx[r * 4 + lab[r]] - m - log(s);
    }
    want /= 6;
    CHECK_OK(ctx, clmad_tensor_item(loss, &got));
    cr_assert(fabs(got - want) <= 1e-14 * fabs(want), "%sloss %.17g, host %.17g", test_case(), got, want);
    clmad_tensor_release(loss);
    /* clmad_cross_entropy takes the integer labels too, and i32 ones */
    clmad_tensor *l32;
    const int32_t lab32[6] = {0, 3, 1, 2, 2, 0};
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I32, 2, ts, lab32, &l32));
    CHECK_OK(ctx, clmad_cross_entropy(ctx, x, l32, &loss));
    CHECK_OK(ctx, clmad_tensor_item(loss, &got));
    cr_assert(fabs(got - want) <= 1e-14 * fabs(want));
    clmad_tensor_release(loss);
    clmad_tensor_release(l32);
    /* gradient: op_loss applies tanh first */
    op_env e = {OP_CE, 0, labels, NULL, NULL};
    gc_check(ctx, op_loss, &e, 1, &x, 1e-6);
    /* accuracy against the host's argmax */
    double acc, hits = 0;
    CHECK_OK(ctx, clmad_accuracy(ctx, x, labels, &acc));
    for (int r = 0; r < 6; r++) {
        int best = 0;
        for (int c = 1; c < 4; c++)
            if (hx[r * 4 + c] > hx[r * 4 + best])
                best = c;
        hits += best == lab[r];
    }
    cr_assert_eq(acc, hits / 6);
    clmad_tensor_release(labels);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}

/* A bad row (NaN logit) is NaN in the loss and in its own gradient only. */
static void cross_entropy_index_bad_row(void)
{
    clmad_context *ctx = test_context();
    size_t ls[2] = {2, 3}, ts[1] = {2};
    const double hx[6] = {0.5, NAN, -1, 0.25, 2, -0.5};
    const int64_t lab[2] = {0, 1};
    clmad_tensor *x, *labels = i64_tensor(ctx, 1, ts, lab), *loss, *g;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, ls, hx, &x));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_cross_entropy_index(ctx, x, labels, &loss));
    double v, hg[6];
    CHECK_OK(ctx, clmad_tensor_item(loss, &v));
    cr_assert(isnan(v));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    test_read_f64(ctx, g, hg, 6);
    for (int c = 0; c < 3; c++) {
        cr_assert(isnan(hg[c]));
        cr_assert(isfinite(hg[3 + c]));
    }
    clmad_tensor_release(g);
    clmad_tensor_release(loss);
    clmad_tensor_release(labels);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}

/* ---- bad input ------------------------------------------------------------ */

static void bad_input(void)
{
    clmad_context *ctx = test_context();
    size_t xs[2] = {3, 4}, is[1] = {2}, ws[2] = {3, 5};
    const int64_t bad[2] = {1, 4}, neg[2] = {-1, 0}, good[2] = {2, 0};
    const double fidx[2] = {1, 0};
    clmad_tensor *x, *ib = i64_tensor(ctx, 1, is, bad), *in = i64_tensor(ctx, 1, is, neg),
                     *ig = i64_tensor(ctx, 1, is, good), *fi, *out = NULL;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, xs, &x));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, is, fidx, &fi));
    REFUSED(ctx, clmad_index_select(ctx, x, 1, ib, &out), CLMAD_ERR_INVALID_ARGUMENT,
            "clmad_index_select: index[1] = 4 is outside [0, 4)");
    REFUSED(ctx, clmad_index_select(ctx, x, 0, in, &out), CLMAD_ERR_INVALID_ARGUMENT, "index[0] = -1");
    REFUSED(ctx, clmad_index_select(ctx, x, 0, fi, &out), CLMAD_ERR_DTYPE, "indices are i64");
    REFUSED(ctx, clmad_index_select(ctx, x, 2, ig, &out), CLMAD_ERR_INVALID_ARGUMENT, "axis 2 is out of range");
    REFUSED(ctx, clmad_embedding(ctx, x, ib, &out), CLMAD_ERR_INVALID_ARGUMENT, "outside [0, 3)");
    REFUSED(ctx, clmad_one_hot(ctx, ib, 3, CLMAD_F32, &out), CLMAD_ERR_INVALID_ARGUMENT, "index[1] = 4");
    REFUSED(ctx, clmad_gather(ctx, x, 1, ig, &out), CLMAD_ERR_SHAPE, "rank");
    size_t gs[2] = {3, 1};
    const int64_t g3[3] = {0, 9, 1};
    clmad_tensor *gi = i64_tensor(ctx, 2, gs, g3), *src;
    REFUSED(ctx, clmad_gather(ctx, x, 1, gi, &out), CLMAD_ERR_INVALID_ARGUMENT, "index[1] = 9");
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, ws, &src));
    REFUSED(ctx, clmad_scatter_add(ctx, x, 1, gi, src, &out), CLMAD_ERR_SHAPE, "one shape");
    /* cross entropy: label out of range, float labels, labels of another shape */
    const int64_t l3[3] = {0, 4, 1};
    size_t ts[1] = {3};
    clmad_tensor *lab = i64_tensor(ctx, 1, ts, l3);
    REFUSED(ctx, clmad_cross_entropy_index(ctx, x, lab, &out), CLMAD_ERR_INVALID_ARGUMENT,
            "labels[1] = 4 is outside [0, 4)");
    REFUSED(ctx, clmad_cross_entropy_index(ctx, x, fi, &out), CLMAD_ERR_DTYPE, "integer tensors");
    REFUSED(ctx, clmad_cross_entropy_index(ctx, x, ib, &out), CLMAD_ERR_SHAPE, "without its last axis");
    REFUSED(ctx, clmad_argmax(ctx, x, 5, 0, &out), CLMAD_ERR_INVALID_ARGUMENT, "axis 5");
    REFUSED(ctx, clmad_cast(ctx, x, (clmad_dtype)9, &out), CLMAD_ERR_INVALID_ARGUMENT, "unknown dtype");
    cr_assert_null(out);
    /* still usable: a good selection works */
    CHECK_OK(ctx, clmad_index_select(ctx, x, 1, ig, &out));
    cr_assert_eq(clmad_tensor_dim(out, 1), 2);
    clmad_tensor_release(out);
    clmad_tensor *items[] = {x, ib, in, ig, fi, gi, src, lab};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
        clmad_tensor_release(items[i]);
    clmad_context_release(ctx);
}

/* ---- a broadcast kernel that branches on an integer label --------------- */

/* Integer tensors are not inputs of broadcasts (their inputs are T); the
 * recipe is a float copy of the labels (clmad_cast), read with ad_val:
 * exact up to 2^24 in f32, and it needs no gradient. */
static const char *const PICK_SRC = "T pick(T x, T label)\n"
                                    "{\n"
                                    "    if (ad_val(label) == 1)\n"
                                    "        return x * x;\n"
                                    "    if (ad_val(label) == 2)\n"
                                    "        return exp(x);\n"
                                    "    return -x;\n"
                                    "}\n";

typedef struct pick_env {
    clmad_kernel *k;
    clmad_tensor *labels, *w;
} pick_env;

static clmad_status pick_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    pick_env *e = user;
    clmad_tensor *lf = NULL, *y = NULL;
    clmad_status st = clmad_cast(ctx, e->labels, CLMAD_F64, &lf);
    if (st == CLMAD_OK) {
        clmad_tensor *in[2] = {p[0], lf};
        st = clmad_broadcast(ctx, e->k, in, &y);
    }
    if (st == CLMAD_OK)
        st = clmad_dot(ctx, y, e->w, loss);
    clmad_tensor_release(lf);
    clmad_tensor_release(y);
    return st;
}

static void broadcast_branching_on_a_label(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 12;
    size_t xs[2] = {2, 3};
    const int64_t lab[6] = {0, 1, 2, 2, 1, 0};
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, PICK_SRC, "pick", 2, 1, &k));
    clmad_tensor *x = gc_random(ctx, 2, xs, -1, 1, &seed);
    pick_env e = {k, i64_tensor(ctx, 2, xs, lab), gc_random(ctx, 2, xs, -1, 1, &seed)};
    /* forward against the host */
    clmad_tensor *lf, *y;
    CHECK_OK(ctx, clmad_cast(ctx, e.labels, CLMAD_F64, &lf));
    clmad_tensor *in[2] = {x, lf};
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    double hx[6], hy[6];
    test_read_f64(ctx, x, hx, 6);
    test_read_f64(ctx, y, hy, 6);
    for (int i = 0; i < 6; i++) {
        double want = lab[i] == 1 ? hx[i] * hx[i] : lab[i] == 2 ? exp(hx[i]) : -hx[i];
        cr_assert(fabs(hy[i] - want) <= 1e-15 * fmax(1, fabs(want)), "%selement %d: %g, host %g", test_case(), i,
                  hy[i], want);
    }
    /* backward: each element's derivative follows its label's branch */
    gc_check(ctx, pick_loss, &e, 1, &x, 1e-6);
    clmad_tensor_release(y);
    clmad_tensor_release(lf);
    clmad_tensor_release(e.labels);
    clmad_tensor_release(e.w);
    clmad_tensor_release(x);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* ---- the test ------------------------------------------------------------- */

/* Every case needs fp64 but one_hot_and_cast, whose f32 half (one_hot, casts
 * to u8 and i32) comes first: a device without fp64 skips the rest at the
 * first f64 tensor. */
Test(index_ops, all_cases)
{
    RUN_CASE(one_hot_and_cast);
    RUN_CASE(argmax_argmin_against_host);
    RUN_CASE(index_select_values_and_gradient);
    RUN_CASE(gather_values_and_gradient);
    RUN_CASE(scatter_add_values_and_gradients);
    RUN_CASE(embedding_values_and_gradient);
    RUN_CASE(gradients_bitwise_reproducible);
    RUN_CASE(cast_between_floats_has_a_gradient);
    RUN_CASE(where_with_integer_masks);
    RUN_CASE(cross_entropy_index_value_gradient_accuracy);
    RUN_CASE(cross_entropy_index_bad_row);
    RUN_CASE(bad_input);
    RUN_CASE(broadcast_branching_on_a_label);
}
