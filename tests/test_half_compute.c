/* SPDX-License-Identifier: Apache-2.0 */
/* Computing on 16-bit tensors (CLMAD_F16, CLMAD_BF16): broadcasts and their
 * gradients, control flow included, against f64 references evaluated on
 * the same (widened) 16-bit inputs; sums accumulated in f32; adjoints
 * added in place; gradients through clmad_cast.
 *
 * The bounds: a kernel computes in f32 and rounds once on store, so a value
 * or a gradient v of reference r is within
 *     |v - r| <= R u |r| + n 2^-23 M
 * where u is the format's unit roundoff (2^-11 for f16, 2^-8 for bf16), R
 * the roundings on the way (1 for a value, 2 for a gradient: the partial
 * or its product with the adjoint, then the store), n the kernel's
 * operation count and M the sum of the magnitudes of the terms (the f32
 * arithmetic's error, a running-error bound). */
#include "support.h"

#include <math.h>
#include <string.h>

static const clmad_dtype HALVES[2] = {CLMAD_F16, CLMAD_BF16};

static double unit_roundoff(clmad_dtype dt)
{
    return dt == CLMAD_F16 ? 0x1p-11 : 0x1p-8;
}

static double widen(clmad_dtype dt, uint16_t h)
{
    return dt == CLMAD_F16 ? clmad_f16_to_float(h) : clmad_bf16_to_float(h);
}

static uint16_t narrow(clmad_dtype dt, double x)
{
    return dt == CLMAD_F16 ? clmad_f16_from_float((float)x) : clmad_bf16_from_float((float)x);
}

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 11;
}

/* n values in [lo, hi), rounded to dt: host[i] is exactly the device's. */
static clmad_tensor *random_tensor(clmad_context *ctx, clmad_dtype dt, size_t n, double lo, double hi,
                                   uint64_t seed, double *host)
{
    uint16_t *bits = malloc(n * sizeof *bits);
    cr_assert_not_null(bits);
    for (size_t i = 0; i < n; i++) {
        bits[i] = narrow(dt, lo + (hi - lo) * (double)next(&seed) / 0x1p53);
        host[i] = widen(dt, bits[i]);
    }
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, dt, 1, &n, bits, &t));
    free(bits);
    return t;
}

static void read_wide(clmad_context *ctx, clmad_tensor *t, double *host, size_t n)
{
    uint16_t *bits = malloc(n * sizeof *bits);
    cr_assert_not_null(bits);
    CHECK_OK(ctx, clmad_tensor_read(t, bits, n * sizeof *bits));
    for (size_t i = 0; i < n; i++)
        host[i] = widen(clmad_tensor_dtype(t), bits[i]);
    free(bits);
}

static void within(const char *what, size_t i, double got, double ref, double rounds, double u, double ops,
                   double magnitude)
{
    double bound = rounds * u * fabs(ref) + ops * 0x1p-23 * magnitude;
    cr_assert(fabs(got - ref) <= bound, "%s[%zu]: %.9g, reference %.9g (bound %.3g)", what, i, got, ref, bound);
}

/* f(x, w) = tanh(x) w + x x, 5 operations (tanh counted as 2); its
 * gradient of sum(f * v), v a fixed 16-bit tensor. */
static const char *const SMOOTH = "T f(T x, T w) { return tanh(x) * w + x * x; }";

static void smooth_case(clmad_context *ctx, clmad_dtype dt, clmad_partials_policy policy)
{
    enum { N = 4096 };
    static double x[N], w[N], v[N], y[N], gx[N], gw[N];
    size_t n = test_small() ? 256 : N; /* Oclgrind simulates every work-item */
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, policy));
    CHECK_OK(ctx, clmad_kernel_create(ctx, SMOOTH, "f", 2, 1, &k));
    clmad_tensor *tx = random_tensor(ctx, dt, n, -3, 3, 1, x), *tw = random_tensor(ctx, dt, n, -2, 2, 2, w);
    clmad_tensor *tv = random_tensor(ctx, dt, n, -1, 1, 3, v), *ty, *tyv, *loss, *g;
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(tx, 1));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(tw, 1));
    clmad_tensor *in[2] = {tx, tw};
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &ty));
    cr_assert_eq(clmad_tensor_dtype(ty), dt);
    CHECK_OK(ctx, clmad_mul(ctx, ty, tv, &tyv));
    CHECK_OK(ctx, clmad_sum(ctx, tyv, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    read_wide(ctx, ty, y, n);
    CHECK_OK(ctx, clmad_tensor_grad(tx, &g));
    cr_assert_eq(clmad_tensor_dtype(g), dt);
    read_wide(ctx, g, gx, n);
    clmad_tensor_release(g);
    CHECK_OK(ctx, clmad_tensor_grad(tw, &g));
    read_wide(ctx, g, gw, n);
    clmad_tensor_release(g);
    const double u = unit_roundoff(dt);
    double sum = 0, magnitude = 0;
    for (size_t i = 0; i < n; i++) {
        const double t = tanh(x[i]), f = t * w[i] + x[i] * x[i];
        within("y", i, y[i], f, 1, u, 5, fabs(t * w[i]) + x[i] * x[i]);
        /* the adjoint v is exact (a product with 1, rounded to v itself) */
        const double dx = v[i] * ((1 - t * t) * w[i] + 2 * x[i]), dw = v[i] * t;
        within("grad x", i, gx[i], dx, 2, u, 8, fabs(v[i]) * (fabs(w[i]) + 2 * fabs(x[i]) + 1));
        within("grad w", i, gw[i], dw, 2, u, 3, fabs(v[i]));
        /* the loss sums the rounded products y v in f32 */
        const double yv = widen(dt, narrow(dt, y[i] * v[i]));
        sum += yv;
        magnitude += fabs(yv);
    }
    double got;
    CHECK_OK(ctx, clmad_tensor_item(loss, &got));
    within("loss", 0, got, sum, 1, u, (double)n, magnitude);
    clmad_tensor *wide[] = {tx, tw, tv, ty, tyv, loss};
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        clmad_tensor_release(wide[i]);
    clmad_kernel_release(k);
}

Test(half_compute, broadcast_gradients_within_roundoff)
{
    clmad_context *ctx = test_context();
    for (int k = 0; k < 2; k++) {
        test_set_case("%s, partials stored", clmad_dtype_name(HALVES[k]));
        smooth_case(ctx, HALVES[k], CLMAD_PARTIALS_STORE);
        test_set_case("%s, partials recomputed", clmad_dtype_name(HALVES[k]));
        smooth_case(ctx, HALVES[k], CLMAD_PARTIALS_RECOMPUTE);
    }
    test_set_case(NULL);
    clmad_context_release(ctx);
}

/* A branch and a loop on the data: x's sign picks the form, then three
 * halvings while above 1 (each exact); the reference takes the same path
 * (it branches on the same 16-bit x). */
static const char *const BRANCHY = "T g(T x) {\n"
                                   "    T r;\n"
                                   "    if (x > 0)\n"
                                   "        r = exp(x);\n"
                                   "    else\n"
                                   "        r = x * x + 1;\n"
                                   "    for (int i = 0; i < 3; i++)\n"
                                   "        if (r > 1)\n"
                                   "            r = r * 0.5;\n"
                                   "    return r;\n"
                                   "}\n";

Test(half_compute, control_flow)
{
    clmad_context *ctx = test_context();
    enum { N = 2048 };
    static double x[N], y[N], gx[N];
    for (int k = 0; k < 2; k++) {
        clmad_dtype dt = HALVES[k];
        test_set_case("%s", clmad_dtype_name(dt));
        clmad_kernel *kern;
        CHECK_OK(ctx, clmad_kernel_create(ctx, BRANCHY, "g", 1, 1, &kern));
        const size_t n = test_small() ? 256 : N;
        clmad_tensor *tx = random_tensor(ctx, dt, n, -2.5, 2.5, 7 + (uint64_t)k, x), *ty, *loss, *g;
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(tx, 1));
        CHECK_OK(ctx, clmad_broadcast(ctx, kern, &tx, &ty));
        CHECK_OK(ctx, clmad_sum(ctx, ty, 0, NULL, 0, &loss));
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        read_wide(ctx, ty, y, n);
        CHECK_OK(ctx, clmad_tensor_grad(tx, &g));
        read_wide(ctx, g, gx, n);
        const double u = unit_roundoff(dt);
        for (size_t i = 0; i < n; i++) {
            double r = x[i] > 0 ? exp(x[i]) : x[i] * x[i] + 1, d = x[i] > 0 ? exp(x[i]) : 2 * x[i];
            /* the loop's test on r computed in f32: away from 1 by far more than its error */
            for (int it = 0; it < 3; it++)
                if ((float)r > 1)
                    r *= 0.5, d *= 0.5;
            within("y", i, y[i], r, 1, u, 4, fabs(r) + 1);
            within("grad", i, gx[i], d, 2, u, 4, fabs(d) + 1);
        }
        clmad_tensor_release(g);
        clmad_tensor_release(loss);
        clmad_tensor_release(ty);
        clmad_tensor_release(tx);
        clmad_kernel_release(kern);
    }
    test_set_case(NULL);
    clmad_context_release(ctx);
}

/* 32,768 ones sum to 32,768, which 16-bit accumulation cannot reach (bf16
 * stops at 256, where 256 + 1 rounds back to 256, f16 at 2048); sums along
 * an axis and means equal the exact sums of the widened values, rounded
 * once. */
Test(half_compute, sums_accumulate_in_f32)
{
    clmad_context *ctx = test_context();
    for (int k = 0; k < 2; k++) {
        clmad_dtype dt = HALVES[k];
        test_set_case("%s", clmad_dtype_name(dt));
        size_t n = 32768;
        clmad_tensor *ones, *s;
        double got;
        CHECK_OK(ctx, clmad_tensor_fill(ctx, dt, 1, &n, 1.0, &ones));
        CHECK_OK(ctx, clmad_sum(ctx, ones, 0, NULL, 0, &s));
        cr_assert_eq(clmad_tensor_dtype(s), dt);
        CHECK_OK(ctx, clmad_tensor_item(s, &got));
        cr_assert_eq(got, 32768.0, "%s: a sum of 32768 ones is %g", clmad_dtype_name(dt), got);
        clmad_tensor_release(s);
        CHECK_OK(ctx, clmad_mean(ctx, ones, 0, NULL, 0, &s));
        CHECK_OK(ctx, clmad_tensor_item(s, &got));
        cr_assert_eq(got, 1.0);
        clmad_tensor_release(s);
        clmad_tensor_release(ones);
        /* 300 x 7, summed over the rows: each column's 300 values are
         * multiples of 2^-8 below 4 (exact in either format), so its sum in f32
         * is exact, and the result is that sum rounded once. */
        enum { R = 300, C = 7 };
        static double m[R * C];
        size_t shape[2] = {R, C};
        uint16_t bits[R * C];
        uint64_t seed = 11;
        for (size_t i = 0; i < R * C; i++) {
            bits[i] = narrow(dt, (double)(next(&seed) % 1024) / 256.0 - 2.0);
            m[i] = widen(dt, bits[i]);
        }
        clmad_tensor *t;
        CHECK_OK(ctx, clmad_tensor_create(ctx, dt, 2, shape, bits, &t));
        int axis = 0;
        CHECK_OK(ctx, clmad_sum(ctx, t, 1, &axis, 0, &s));
        double col[C];
        read_wide(ctx, s, col, C);
        for (size_t c = 0; c < C; c++) {
            double exact = 0;
            for (size_t r = 0; r < R; r++)
                exact += m[r * C + c];
            cr_assert_eq(col[c], widen(dt, narrow(dt, exact)), "column %zu: %g, exact %g", c, col[c], exact);
        }
        clmad_tensor_release(s);
        clmad_tensor_release(t);
    }
    test_set_case(NULL);
    clmad_context_release(ctx);
}

/* x read by two operations and by a slice: its gradient adds three
 * contributions in place (clmad_accumulate and the strided copies in f32,
 * each sum rounded once). */
Test(half_compute, adjoints_accumulate)
{
    clmad_context *ctx = test_context();
    enum { N = 1024 };
    static double x[N], gx[N];
    for (int k = 0; k < 2; k++) {
        clmad_dtype dt = HALVES[k];
        test_set_case("%s", clmad_dtype_name(dt));
        clmad_tensor *tx = random_tensor(ctx, dt, N, -2, 2, 21 + (uint64_t)k, x), *a, *b, *part, *la, *lb, *lp, *l1,
                     *loss, *g;
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(tx, 1));
        CHECK_OK(ctx, clmad_exp(ctx, tx, &a));
        CHECK_OK(ctx, clmad_mul(ctx, tx, tx, &b));
        CHECK_OK(ctx, clmad_slice(ctx, tx, 0, 0, N / 2, &part));
        CHECK_OK(ctx, clmad_sum(ctx, a, 0, NULL, 0, &la));
        CHECK_OK(ctx, clmad_sum(ctx, b, 0, NULL, 0, &lb));
        CHECK_OK(ctx, clmad_sum(ctx, part, 0, NULL, 0, &lp));
        CHECK_OK(ctx, clmad_add(ctx, la, lb, &l1));
        CHECK_OK(ctx, clmad_add(ctx, l1, lp, &loss));
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        CHECK_OK(ctx, clmad_tensor_grad(tx, &g));
        read_wide(ctx, g, gx, N);
        const double u = unit_roundoff(dt);
        for (size_t i = 0; i < N; i++) {
            /* Each of the three contributions rounded, then each of the two
             * additions: five roundings, each within u of the magnitudes
             * (they may cancel: the bound is on M, not on the sum). */
            const double d = exp(x[i]) + 2 * x[i] + (i < N / 2 ? 1 : 0), m = exp(x[i]) + 2 * fabs(x[i]) + 1;
            cr_assert(fabs(gx[i] - d) <= 5 * u * m + 4 * 0x1p-23 * m, "grad[%zu]: %.9g, reference %.9g", i, gx[i],
                      d);
        }
        clmad_tensor *all[] = {tx, a, b, part, la, lb, lp, l1, loss, g};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            clmad_tensor_release(all[i]);
    }
    test_set_case(NULL);
    clmad_context_release(ctx);
}

/* Gradients cross clmad_cast both ways: f32 master weights cast to 16 bits
 * get the 16-bit gradient widened, and a 16-bit leaf gets its gradient
 * rounded to its dtype. */
Test(half_compute, gradients_through_casts)
{
    clmad_context *ctx = test_context();
    enum { N = 512 };
    for (int k = 0; k < 2; k++) {
        clmad_dtype dt = HALVES[k];
        test_set_case("%s", clmad_dtype_name(dt));
        float master[N], g32[N];
        for (size_t i = 0; i < N; i++)
            master[i] = (float)sin(0.1 * (double)i) * 3.0f;
        size_t n = N;
        clmad_tensor *m, *h, *sq, *wide, *loss, *g;
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, master, &m));
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(m, 1));
        CHECK_OK(ctx, clmad_cast(ctx, m, dt, &h));
        cr_assert(clmad_tensor_requires_grad(h));
        CHECK_OK(ctx, clmad_mul(ctx, h, h, &sq));
        CHECK_OK(ctx, clmad_cast(ctx, sq, CLMAD_F32, &wide));
        CHECK_OK(ctx, clmad_sum(ctx, wide, 0, NULL, 0, &loss));
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        CHECK_OK(ctx, clmad_tensor_grad(m, &g));
        cr_assert_eq(clmad_tensor_dtype(g), CLMAD_F32);
        CHECK_OK(ctx, clmad_tensor_read(g, g32, sizeof g32));
        for (size_t i = 0; i < N; i++) {
            const double hv = widen(dt, narrow(dt, master[i]));
            /* d(h h)/dh = 2h, rounded once to dt, then widened exactly */
            cr_assert_eq(g32[i], (float)widen(dt, narrow(dt, 2 * hv)), "%zu: %g", i, g32[i]);
        }
        clmad_tensor *all[] = {m, h, sq, wide, loss, g};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            clmad_tensor_release(all[i]);
    }
    test_set_case(NULL);
    clmad_context_release(ctx);
}

/* A builtin over an f32 and a 16-bit tensor computes in f32 (promotion by
 * a recorded cast): each input's gradient comes back in its own dtype. */
Test(half_compute, promotion_carries_gradients)
{
    clmad_context *ctx = test_context();
    enum { N = 64 };
    static double hx[N], hw[N];
    for (int k = 0; k < 2; k++) {
        clmad_dtype dt = HALVES[k];
        test_set_case("%s", clmad_dtype_name(dt));
        clmad_tensor *w16 = random_tensor(ctx, dt, N, -2, 2, 41, hw), *x16 = random_tensor(ctx, dt, N, -2, 2, 42, hx);
        clmad_tensor *x, *y, *loss, *gx, *gw;
        CHECK_OK(ctx, clmad_cast(ctx, x16, CLMAD_F32, &x)); /* exact: the same values in f32 */
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(w16, 1));
        CHECK_OK(ctx, clmad_mul(ctx, x, w16, &y));
        cr_assert_eq(clmad_tensor_dtype(y), CLMAD_F32);
        CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        CHECK_OK(ctx, clmad_tensor_grad(x, &gx));
        CHECK_OK(ctx, clmad_tensor_grad(w16, &gw));
        cr_assert_eq(clmad_tensor_dtype(gx), CLMAD_F32);
        cr_assert_eq(clmad_tensor_dtype(gw), dt);
        float g32[N];
        double g16[N];
        CHECK_OK(ctx, clmad_tensor_read(gx, g32, sizeof g32));
        read_wide(ctx, gw, g16, N);
        for (size_t i = 0; i < N; i++) /* d(x w)/dx = w, d/dw = x: both exact in either dtype */
            cr_assert(g32[i] == (float)hw[i] && g16[i] == hx[i], "%zu: %g %g", i, g32[i], g16[i]);
        clmad_tensor *all[] = {w16, x16, x, y, loss, gx, gw};
        for (size_t i = 0; i < 7; i++)
            clmad_tensor_release(all[i]);
    }
    test_set_case(NULL);
    clmad_context_release(ctx);
}

/* The operations that compute in f32 only (products, axis operations,
 * losses) take 16-bit operands widened, and round their result once:
 * C = A B within u |C| + k 2^-23 sum |a||b|; the cross-entropy's gradient
 * to A, through the rounded dC, within u |ref| + (u + n 2^-21) sum |dC||b|;
 * argmax and accuracy on the 16-bit C as on its widened values. An
 * optimizer refuses 16-bit parameters, naming the master-weight pattern. */
Test(half_compute, products_and_losses_widen)
{
    clmad_context *ctx = test_context();
    enum { M = 24, K = 40, N = 10 };
    static double a[M * K], b[K * N], c[M * N], ga[M * K];
    for (int kk = 0; kk < 2; kk++) {
        clmad_dtype dt = HALVES[kk];
        test_set_case("%s", clmad_dtype_name(dt));
        const double u = unit_roundoff(dt);
        clmad_tensor *ta = random_tensor(ctx, dt, M * K, -1, 1, 31, a), *tb = random_tensor(ctx, dt, K * N, -1, 1, 32, b);
        size_t sa[2] = {M, K}, sb[2] = {K, N};
        clmad_tensor *A, *B, *C, *labels, *loss, *g, *pred;
        CHECK_OK(ctx, clmad_reshape(ctx, ta, 2, sa, &A));
        CHECK_OK(ctx, clmad_reshape(ctx, tb, 2, sb, &B));
        clmad_tensor_release(ta);
        clmad_tensor_release(tb);
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(A, 1));
        CHECK_OK(ctx, clmad_matmul(ctx, A, B, 0, 0, &C));
        cr_assert_eq(clmad_tensor_dtype(C), dt);
        read_wide(ctx, C, c, M * N);
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                double ref = 0, mag = 0;
                for (size_t l = 0; l < K; l++)
                    ref += a[i * K + l] * b[l * N + j], mag += fabs(a[i * K + l] * b[l * N + j]);
                within("C", i * N + j, c[i * N + j], ref, 1, u, K, mag);
            }
        int64_t lab[M];
        for (size_t i = 0; i < M; i++)
            lab[i] = (int64_t)((i * 7) % N);
        size_t m = M;
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I64, 1, &m, lab, &labels));
        CHECK_OK(ctx, clmad_cross_entropy_index(ctx, C, labels, &loss));
        cr_assert_eq(clmad_tensor_dtype(loss), dt);
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        CHECK_OK(ctx, clmad_tensor_grad(A, &g));
        read_wide(ctx, g, ga, M * K);
        double dc[M * N], loss_ref = 0;
        for (size_t i = 0; i < M; i++) {
            double mx = -INFINITY, se = 0;
            for (size_t j = 0; j < N; j++)
                mx = fmax(mx, c[i * N + j]);
            for (size_t j = 0; j < N; j++)
                se += exp(c[i * N + j] - mx);
            loss_ref -= (c[i * N + (size_t)lab[i]] - mx - log(se)) / M;
            for (size_t j = 0; j < N; j++) /* rounded to dt, as the cast's backward does */
                dc[i * N + j] = widen(dt, narrow(dt, (exp(c[i * N + j] - mx) / se - (j == (size_t)lab[i])) / M));
        }
        double got;
        CHECK_OK(ctx, clmad_tensor_item(loss, &got));
        within("loss", 0, got, loss_ref, 1, u, 4 * N, loss_ref + 1);
        for (size_t i = 0; i < M; i++)
            for (size_t l = 0; l < K; l++) {
                double ref = 0, mag = 0;
                for (size_t j = 0; j < N; j++)
                    ref += dc[i * N + j] * b[l * N + j], mag += fabs(dc[i * N + j] * b[l * N + j]);
                cr_assert(fabs(ga[i * K + l] - ref) <= u * fabs(ref) + (u + N * 0x1p-21) * mag,
                          "grad A[%zu][%zu]: %.9g, reference %.9g", i, l, ga[i * K + l], ref);
            }
        /* argmax of the 16-bit C, against the widened values (first of equals) */
        int64_t arg[M];
        CHECK_OK(ctx, clmad_argmax(ctx, C, 1, 0, &pred));
        CHECK_OK(ctx, clmad_tensor_read(pred, arg, sizeof arg));
        size_t right = 0;
        for (size_t i = 0; i < M; i++) {
            size_t best = 0;
            for (size_t j = 1; j < N; j++)
                if (c[i * N + j] > c[i * N + best])
                    best = j;
            cr_assert_eq(arg[i], (int64_t)best, "argmax row %zu", i);
            right += best == (size_t)lab[i];
        }
        double acc;
        CHECK_OK(ctx, clmad_accuracy(ctx, C, labels, &acc));
        cr_assert_eq(acc, (double)right / M);
        clmad_optimizer *opt = NULL;
        REFUSED(ctx, clmad_optimizer_sgd(ctx, &A, 1, 0.1, 0, &opt), CLMAD_ERR_DTYPE, "master weights");
        clmad_tensor *all[] = {A, B, C, labels, loss, g, pred};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            clmad_tensor_release(all[i]);
    }
    test_set_case(NULL);
    clmad_context_release(ctx);
}

/* Second order does not run through 16-bit tensors: clmad_hvp refuses the
 * tape before anything runs, naming the operation and the dtype. */
Test(half_compute, second_order_refused)
{
    clmad_context *ctx = test_context();
    size_t n = 4;
    clmad_tensor *w, *v, *h, *y, *loss, *hv = NULL;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 0.5, &w));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(w, 1));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 1.0, &v));
    CHECK_OK(ctx, clmad_cast(ctx, w, CLMAD_BF16, &h));
    CHECK_OK(ctx, clmad_tanh(ctx, h, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    REFUSED(ctx, clmad_hvp(ctx, loss, &w, 1, &v, &hv), CLMAD_ERR_UNSUPPORTED, "over bf16 tensors");
    cr_assert_null(hv);
    clmad_tensor *all[] = {w, v, h, y, loss};
    for (size_t i = 0; i < 5; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}

/* Forward mode over 16-bit tensors: a JVP's tangent is stored in the
 * inputs' dtype (rounded once), clmad_broadcast_partials' partials in f32
 * (unrounded: within the f32 arithmetic's error of the f64 derivative). */
Test(half_compute, forward_mode)
{
    clmad_context *ctx = test_context();
    enum { N = 256 };
    static double x[N], t[N], ty[N];
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T f(T x) { return sin(x) * x; }", "f", 1, 1, &k));
    for (int kk = 0; kk < 2; kk++) {
        clmad_dtype dt = HALVES[kk];
        test_set_case("%s", clmad_dtype_name(dt));
        const double u = unit_roundoff(dt);
        clmad_tensor *tx = random_tensor(ctx, dt, N, -3, 3, 51, x), *tt = random_tensor(ctx, dt, N, -1, 1, 52, t);
        clmad_tensor *y, *yt, *values, *partial;
        CHECK_OK(ctx, clmad_broadcast_jvp(ctx, k, &tx, &tt, &y, &yt));
        cr_assert_eq(clmad_tensor_dtype(yt), dt);
        read_wide(ctx, yt, ty, N);
        for (size_t i = 0; i < N; i++) {
            const double d = cos(x[i]) * x[i] + sin(x[i]);
            within("tangent", i, ty[i], d * t[i], 1, u, 6, (fabs(x[i]) + 1) * fabs(t[i]));
        }
        CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, &tx, NULL, &values, &partial));
        cr_assert_eq(clmad_tensor_dtype(values), dt);
        cr_assert_eq(clmad_tensor_dtype(partial), CLMAD_F32);
        float p[N];
        CHECK_OK(ctx, clmad_tensor_read(partial, p, sizeof p));
        for (size_t i = 0; i < N; i++)
            within("partial", i, p[i], cos(x[i]) * x[i] + sin(x[i]), 0, u, 6, fabs(x[i]) + 1);
        clmad_tensor *all[] = {tx, tt, y, yt, values, partial};
        for (size_t i = 0; i < 6; i++)
            clmad_tensor_release(all[i]);
    }
    test_set_case(NULL);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}
