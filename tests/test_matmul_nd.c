/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_matmul by NumPy's rules (np.matmul): 1-d operands, batches that
 * broadcast, transposed operands. Values against a host product that
 * walks each element by its own indices (f64 and f32), gradients against
 * central finite differences in f64, bad shapes refused with the context
 * still usable, and two 2-d operands on their old path bitwise. */
#include "gradcheck.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct nd_case {
    int na;
    size_t as[4];
    int nb;
    size_t bs[4];
    int ta, tb;
    int nc;
    size_t cs[4]; /* the result's shape, as np.matmul gives it */
} nd_case;

/* Shapes of op(a) and op(b) as stored: ta swaps a's last two axes. */
static const nd_case cases[] = {
    {3, {2, 3, 4}, 2, {4, 5}, 0, 0, 3, {2, 3, 5}},             /* batch against one matrix */
    {3, {2, 3, 4}, 2, {5, 4}, 0, 1, 3, {2, 3, 5}},             /* ... b transposed */
    {3, {2, 4, 3}, 2, {4, 5}, 1, 0, 3, {2, 3, 5}},             /* ... a transposed */
    {2, {3, 4}, 3, {2, 4, 5}, 0, 0, 3, {2, 3, 5}},             /* one matrix against a batch */
    {2, {4, 3}, 3, {2, 5, 4}, 1, 1, 3, {2, 3, 5}},             /* ... both transposed */
    {4, {2, 1, 3, 4}, 3, {3, 4, 5}, 0, 0, 4, {2, 3, 3, 5}},    /* both batches broadcast */
    {4, {2, 1, 4, 3}, 3, {3, 4, 5}, 1, 0, 4, {2, 3, 3, 5}},
    {4, {2, 1, 3, 4}, 3, {3, 5, 4}, 0, 1, 4, {2, 3, 3, 5}},
    {4, {2, 1, 4, 3}, 3, {3, 5, 4}, 1, 1, 4, {2, 3, 3, 5}},
    {3, {1, 3, 4}, 3, {2, 4, 5}, 0, 0, 3, {2, 3, 5}},          /* a batch of one broadcast */
    {3, {2, 3, 4}, 3, {2, 4, 5}, 0, 0, 3, {2, 3, 5}},          /* as clmad_bmm */
    {4, {2, 1, 3, 4}, 4, {1, 2, 4, 2}, 0, 0, 4, {2, 2, 3, 2}}, /* 4-d both ways */
    {1, {4}, 1, {4}, 0, 0, 0, {0}},                            /* inner product: 0-d */
    {1, {4}, 2, {4, 5}, 0, 0, 1, {5}},                         /* row vector */
    {2, {3, 4}, 1, {4}, 0, 0, 1, {3}},                         /* column vector */
    {2, {4, 3}, 1, {4}, 1, 0, 1, {3}},
    {1, {4}, 3, {2, 4, 5}, 0, 0, 2, {2, 5}},                   /* vector against a batch */
    {3, {2, 3, 4}, 1, {4}, 0, 0, 2, {2, 3}},
    {1, {4}, 3, {2, 5, 4}, 1, 1, 2, {2, 5}},                   /* trans of a 1-d operand: none */
};
#define NCASES (sizeof cases / sizeof cases[0])

static size_t numel_of(int nd, const size_t *s)
{
    size_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= s[i];
    return n;
}

/* Element (batch index bi of the result, row r, col c) of op(x): batch
 * axes aligned from the right, an axis of size 1 read at 0; a 1-d x is a
 * row (is_a) or a column. */
static double host_elem(const double *x, int nd, const size_t *s, int trans, int is_a, int rank,
                        const size_t *bidx, size_t r, size_t c)
{
    if (nd == 1)
        return x[is_a ? c : r];
    size_t off = 0, stride = s[nd - 1] * s[nd - 2];
    for (int d = nd - 3; d >= 0; d--) {
        size_t i = bidx[rank - (nd - 2) + d];
        off += (s[d] == 1 ? 0 : i) * stride;
        stride *= s[d];
    }
    size_t rr = trans ? c : r, cc = trans ? r : c;
    return x[off + rr * s[nd - 1] + cc];
}

/* The product on the host, in the result's row-major order. */
static void host_matmul(const nd_case *t, const double *a, const double *b, double *c)
{
    size_t m = t->na == 1 ? 1 : t->ta ? t->as[t->na - 1] : t->as[t->na - 2];
    size_t k = t->na == 1 ? t->as[0] : t->ta ? t->as[t->na - 2] : t->as[t->na - 1];
    size_t n = t->nb == 1 ? 1 : t->tb ? t->bs[t->nb - 2] : t->bs[t->nb - 1];
    int rank = t->nc - (t->na >= 2) - (t->nb >= 2);
    size_t count = numel_of(rank, t->cs), bidx[4];
    for (size_t i = 0; i < count; i++) {
        size_t rest = i;
        for (int d = rank - 1; d >= 0; d--) {
            bidx[d] = rest % t->cs[d];
            rest /= t->cs[d];
        }
        for (size_t r = 0; r < m; r++)
            for (size_t col = 0; col < n; col++) {
                double s = 0;
                for (size_t q = 0; q < k; q++)
                    s += host_elem(a, t->na, t->as, t->ta, 1, rank, bidx, r, q) *
                         host_elem(b, t->nb, t->bs, t->tb, 0, rank, bidx, q, col);
                c[(i * m + r) * n + col] = s;
            }
    }
}

static void expect_shape(clmad_tensor *c, const nd_case *t, size_t ci)
{
    cr_assert_eq(clmad_tensor_ndim(c), t->nc, "case %zu: rank %d, np.matmul's %d", ci, clmad_tensor_ndim(c), t->nc);
    for (int d = 0; d < t->nc; d++)
        cr_assert_eq(clmad_tensor_dim(c, d), t->cs[d], "case %zu: axis %d is %zu, np.matmul's %zu", ci, d,
                     clmad_tensor_dim(c, d), t->cs[d]);
}

typedef struct nd_env {
    int ta, tb;
} nd_env;

/* loss = sum(tanh(matmul(p0, p1))): tanh so that the product's adjoint is
 * not one everywhere. */
static clmad_status nd_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    nd_env *e = user;
    clmad_tensor *c = NULL, *t = NULL;
    clmad_status st = clmad_matmul(ctx, p[0], p[1], e->ta, e->tb, &c);
    if (st == CLMAD_OK)
        st = clmad_tanh(ctx, c, &t);
    if (st == CLMAD_OK)
        st = clmad_sum(ctx, t, 0, NULL, 0, loss);
    clmad_tensor_release(c);
    clmad_tensor_release(t);
    return st;
}

/* f64: values and gradients of every case in one test (CLBlast's DGEMM
 * compiles once per process). */
Test(matmul_nd, f64_values_and_gradients_by_numpy_rules)
{
    clmad_context *ctx = test_context();
    for (size_t ci = 0; ci < NCASES; ci++) {
        const nd_case *t = &cases[ci];
        unsigned seed = 100 + (unsigned)ci;
        clmad_tensor *p[2] = {gc_random(ctx, t->na, t->as, -1, 1, &seed), gc_random(ctx, t->nb, t->bs, -1, 1, &seed)};
        size_t na = numel_of(t->na, t->as), nb = numel_of(t->nb, t->bs), nc = numel_of(t->nc, t->cs);
        double a[64], b[64], c[128], want[128];
        cr_assert(na <= 64 && nb <= 64 && nc <= 128);
        CHECK_OK(ctx, clmad_tensor_read(p[0], a, na * sizeof *a));
        CHECK_OK(ctx, clmad_tensor_read(p[1], b, nb * sizeof *b));
        clmad_tensor *tc;
        CHECK_OK(ctx, clmad_matmul(ctx, p[0], p[1], t->ta, t->tb, &tc));
        expect_shape(tc, t, ci);
        CHECK_OK(ctx, clmad_tensor_read(tc, c, nc * sizeof *c));
        clmad_tensor_release(tc);
        host_matmul(t, a, b, want);
        for (size_t i = 0; i < nc; i++)
            cr_expect(fabs(c[i] - want[i]) < 1e-12, "case %zu: c[%zu] = %.17g, host %.17g", ci, i, c[i], want[i]);
        nd_env e = {t->ta, t->tb};
        gc_check(ctx, nd_loss, &e, 2, p, 1e-6);
        clmad_tensor_release(p[0]);
        clmad_tensor_release(p[1]);
    }
    clmad_context_release(ctx);
}

static clmad_tensor *f32_of(clmad_context *ctx, int nd, const size_t *s, const double *x)
{
    float h[64];
    size_t n = numel_of(nd, s);
    for (size_t i = 0; i < n; i++)
        h[i] = (float)x[i];
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, nd, s, h, &t));
    return t;
}

Test(matmul_nd, f32_values_by_numpy_rules)
{
    clmad_context *ctx = test_context();
    for (size_t ci = 0; ci < NCASES; ci++) {
        const nd_case *t = &cases[ci];
        unsigned seed = 300 + (unsigned)ci;
        size_t na = numel_of(t->na, t->as), nb = numel_of(t->nb, t->bs), nc = numel_of(t->nc, t->cs);
        double a[64], b[64], want[128];
        for (size_t i = 0; i < na; i++)
            a[i] = (float)((seed = seed * 1103515245u + 12345u) % 2001) / 1000.0f - 1.0f;
        for (size_t i = 0; i < nb; i++)
            b[i] = (float)((seed = seed * 1103515245u + 12345u) % 2001) / 1000.0f - 1.0f;
        clmad_tensor *ta = f32_of(ctx, t->na, t->as, a), *tb = f32_of(ctx, t->nb, t->bs, b), *tc;
        CHECK_OK(ctx, clmad_matmul(ctx, ta, tb, t->ta, t->tb, &tc));
        expect_shape(tc, t, ci);
        cr_assert_eq(clmad_tensor_dtype(tc), CLMAD_F32);
        float c[128];
        CHECK_OK(ctx, clmad_tensor_read(tc, c, nc * sizeof *c));
        host_matmul(t, a, b, want);
        for (size_t i = 0; i < nc; i++)
            cr_expect(fabs(c[i] - want[i]) < 1e-5, "case %zu: c[%zu] = %.9g, host %.9g", ci, i, c[i], want[i]);
        clmad_tensor_release(ta);
        clmad_tensor_release(tb);
        clmad_tensor_release(tc);
    }
    clmad_context_release(ctx);
}

#define SENTINEL ((clmad_tensor *)(uintptr_t)0x5e17)

#define EXPECT_REFUSED(ctx, call, status, needle1, needle2)                                         \
    do {                                                                                            \
        clmad_tensor *out_ = SENTINEL;                                                              \
        clmad_status st_ = (call);                                                                  \
        const char *msg_ = clmad_last_error(ctx);                                                   \
        cr_expect_eq(st_, (status), "%s -> %s: %s", #call, clmad_status_string(st_), msg_);         \
        cr_expect(test_contains(msg_, needle1) && test_contains(msg_, needle2),                      \
                  "%s: message lacks \"%s\" or \"%s\": %s", #call, needle1, needle2, msg_);          \
        cr_expect_eq(out_, SENTINEL, "%s wrote *out on failure", #call);                            \
    } while (0)

Test(matmul_nd, bad_shapes_are_refused_and_the_context_goes_on)
{
    clmad_context *ctx = test_context();
    size_t s234[3] = {2, 3, 4}, s56[2] = {5, 6}, s345[3] = {3, 4, 5}, s5[1] = {5}, s45[2] = {4, 5};
    clmad_tensor *a, *b, *c, *v, *s, *w, *f;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 3, s234, &a));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, s56, &b));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 3, s345, &c));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, s5, &v));
    CHECK_OK(ctx, clmad_tensor_scalar(ctx, CLMAD_F32, 2.0, &s));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 2, s45, 1.0, &w));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F64, 2, s45, &f));
    EXPECT_REFUSED(ctx, clmad_matmul(ctx, a, b, 0, 0, &out_), CLMAD_ERR_SHAPE, "(2, 3, 4)", "inner sizes 4 and 5");
    EXPECT_REFUSED(ctx, clmad_matmul(ctx, a, c, 0, 0, &out_), CLMAD_ERR_SHAPE, "do not broadcast",
                   "(2 against 3)");
    EXPECT_REFUSED(ctx, clmad_matmul(ctx, a, v, 0, 0, &out_), CLMAD_ERR_SHAPE, "(5,)", "inner sizes 4 and 5");
    EXPECT_REFUSED(ctx, clmad_matmul(ctx, s, w, 0, 0, &out_), CLMAD_ERR_SHAPE, "rank 1 or more", "clmad_mul");
    EXPECT_REFUSED(ctx, clmad_matmul(ctx, a, f, 0, 0, &out_), CLMAD_ERR_DTYPE, "clmad_matmul", "dtypes");
    EXPECT_REFUSED(ctx, clmad_matmul(ctx, a, NULL, 0, 0, &out_), CLMAD_ERR_INVALID_ARGUMENT, "clmad_matmul", "b");
    /* Still usable: a product that fits, against the host. */
    clmad_tensor *half, *out;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 3, s234, 0.5, &half));
    CHECK_OK(ctx, clmad_matmul(ctx, half, w, 0, 0, &out));
    float got[30];
    CHECK_OK(ctx, clmad_tensor_read(out, got, sizeof got));
    for (int i = 0; i < 30; i++)
        cr_expect_eq(got[i], 2.0f, "after the errors: out[%d] = %g, want 4 * 0.5", i, got[i]);
    clmad_tensor *all[] = {a, b, c, v, s, w, f, half, out};
    for (int i = 0; i < 9; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}

/* Empty batches and inner sizes: zeros where the result or a gradient
 * has elements, whatever the pooled buffers held. */
Test(matmul_nd, empty_sizes_give_zeros)
{
    clmad_context *ctx = test_context();
    size_t s230[3] = {2, 3, 0}, s05[2] = {0, 5}, s134[3] = {1, 3, 4}, s045[3] = {0, 4, 5};
    clmad_tensor *a, *b, *c;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F64, 3, s230, 7.0, &a));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F64, 2, s05, 7.0, &b));
    CHECK_OK(ctx, clmad_matmul(ctx, a, b, 0, 0, &c));
    cr_assert_eq(clmad_tensor_numel(c), 30);
    double z[30];
    CHECK_OK(ctx, clmad_tensor_read(c, z, sizeof z));
    for (int i = 0; i < 30; i++)
        cr_expect_eq(z[i], 0.0, "inner size 0: c[%d] = %g", i, z[i]);
    clmad_tensor_release(a);
    clmad_tensor_release(b);
    clmad_tensor_release(c);
    /* (1, 3, 4) @ (0, 4, 5) is (0, 3, 5): a's gradient is zeros. */
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F64, 3, s134, 7.0, &a));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F64, 3, s045, 7.0, &b));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(a, 1));
    clmad_tensor *l;
    CHECK_OK(ctx, clmad_matmul(ctx, a, b, 0, 0, &c));
    cr_assert_eq(clmad_tensor_numel(c), 0);
    CHECK_OK(ctx, clmad_sum(ctx, c, 0, NULL, 0, &l));
    CHECK_OK(ctx, clmad_backward(ctx, l, NULL));
    clmad_tensor *g;
    CHECK_OK(ctx, clmad_tensor_grad(a, &g));
    cr_assert_not_null(g);
    double gz[12];
    CHECK_OK(ctx, clmad_tensor_read(g, gz, sizeof gz));
    for (int i = 0; i < 12; i++)
        cr_expect_eq(gz[i], 0.0, "empty batch: da[%d] = %g", i, gz[i]);
    clmad_tensor *all[] = {a, b, c, l, g};
    for (int i = 0; i < 5; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}

/* Two 2-d operands take clmad_matmul's old path: the result and the
 * gradients are bitwise those of one GEMM per matrix, as clmad_bmm
 * (unchanged) computes them on a batch of one, for the four transposes;
 * and a batch of one against a matrix (one stacked GEMM) is bitwise the
 * 2-d product. */
Test(matmul_nd, two_2d_operands_bitwise_as_before)
{
    clmad_context *ctx = test_context();
    const size_t m = 5, k = 7, n = 3;
    for (int combo = 0; combo < 4; combo++) {
        int ta = combo & 1, tb = combo >> 1;
        size_t as[3] = {1, ta ? k : m, ta ? m : k}, bs[3] = {1, tb ? n : k, tb ? k : n};
        float ha[35], hb[21];
        unsigned seed = 500 + (unsigned)combo;
        for (int i = 0; i < 35; i++)
            ha[i] = (float)((seed = seed * 1103515245u + 12345u) >> 8 & 0xFFFF) / 32768.0f - 1.0f;
        for (int i = 0; i < 21; i++)
            hb[i] = (float)((seed = seed * 1103515245u + 12345u) >> 8 & 0xFFFF) / 32768.0f - 1.0f;
        clmad_tensor *a2, *b2, *a3, *b3, *c2, *c3, *l2, *l3, *l, *ga2, *gb2, *ga3, *gb3;
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, as + 1, ha, &a2));
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, bs + 1, hb, &b2));
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 3, as, ha, &a3));
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 3, bs, hb, &b3));
        clmad_tensor *ps[4] = {a2, b2, a3, b3};
        for (int i = 0; i < 4; i++)
            CHECK_OK(ctx, clmad_tensor_set_requires_grad(ps[i], 1));
        CHECK_OK(ctx, clmad_matmul(ctx, a2, b2, ta, tb, &c2));
        CHECK_OK(ctx, clmad_bmm(ctx, a3, b3, ta, tb, &c3));
        /* A loss whose adjoint is not uniform: sum(c * c). */
        CHECK_OK(ctx, clmad_dot(ctx, c2, c2, &l2));
        CHECK_OK(ctx, clmad_dot(ctx, c3, c3, &l3));
        CHECK_OK(ctx, clmad_add(ctx, l2, l3, &l)); /* one tape, one backward */
        CHECK_OK(ctx, clmad_backward(ctx, l, NULL));
        CHECK_OK(ctx, clmad_tensor_grad(a2, &ga2));
        CHECK_OK(ctx, clmad_tensor_grad(b2, &gb2));
        CHECK_OK(ctx, clmad_tensor_grad(a3, &ga3));
        CHECK_OK(ctx, clmad_tensor_grad(b3, &gb3));
        clmad_tensor *pairs[3][2] = {{c2, c3}, {ga2, ga3}, {gb2, gb3}};
        const char *what[3] = {"c", "da", "db"};
        for (int q = 0; q < 3; q++) {
            float x[35], y[35];
            size_t cnt = clmad_tensor_numel(pairs[q][0]);
            cr_assert_eq(cnt, clmad_tensor_numel(pairs[q][1]));
            CHECK_OK(ctx, clmad_tensor_read(pairs[q][0], x, cnt * sizeof *x));
            CHECK_OK(ctx, clmad_tensor_read(pairs[q][1], y, cnt * sizeof *y));
            cr_expect(memcmp(x, y, cnt * sizeof *x) == 0, "ta %d tb %d: %s of the 2-d product differs bitwise", ta,
                      tb, what[q]);
        }
        if (!ta) { /* (1, m, k) @ 2-d b: the stacked GEMM, the 2-d product's call */
            clmad_tensor *c4;
            CHECK_OK(ctx, clmad_matmul(ctx, a3, b2, ta, tb, &c4));
            float x[15], y[15];
            CHECK_OK(ctx, clmad_tensor_read(c2, x, sizeof x));
            CHECK_OK(ctx, clmad_tensor_read(c4, y, sizeof y));
            cr_expect(memcmp(x, y, sizeof x) == 0, "tb %d: (1, m, k) @ (k, n) differs bitwise from 2-d", tb);
            clmad_tensor_release(c4);
        }
        clmad_tensor *all[] = {a2, b2, a3, b3, c2, c3, l2, l3, l, ga2, gb2, ga3, gb3};
        for (int i = 0; i < 13; i++)
            clmad_tensor_release(all[i]);
    }
    clmad_context_release(ctx);
}
