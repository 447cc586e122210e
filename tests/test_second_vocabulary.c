/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Second order (clmad_broadcast_second): every function of the vocabulary
 * in one nested-dual kernel, f64 and f32. Per case and point, along the
 * direction t = (ta, tb):
 *   - the directional derivatives of the partials against the closed-form
 *     second derivatives written here (faa, fab, fbb);
 *   - the same against central differences of the kernel's own partials
 *     (clmad_broadcast_partials at x +- h t, f64): the closed forms are not
 *     trusted alone;
 *   - the values' tangent against the partials (sum_j p_j t_j), and the
 *     values and partials against clmad_broadcast_partials bitwise-close.
 * A data-dependent loop (Newton's iteration for a square root, the path
 * each element takes) checks the same way. Kinks: second derivative 0.
 */
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef double (*fn2)(double x, double w);

typedef struct scase {
    const char *call;  /* OpenCL C over T a (and b) */
    int arity;
    fn2 faa, fab, fbb; /* closed-form second derivatives; fab, fbb NULL for arity 1 */
    double pts[4][2];
    int npts;
    int kink;          /* the points are kinks: exact 0, no finite differences */
} scase;

static double sgm(double x) { return 1 / (1 + exp(-x)); }
static const double PI = 3.14159265358979323846;

#define F(name, expr) static double name(double x, double w) { (void)x; (void)w; return expr; }
F(zero, 0) F(one, 1) F(two, 2)
F(dd_div_ab, -1 / (w * w)) F(dd_div_bb, 2 * x / (w * w * w))
F(dd_recip, 2 / (x * x * x)) F(dd_rdiv, 2 * 0.75 / (x * x * x))
F(dd_powr, 2.5 * 1.5 * pow(x, 0.5)) F(dd_rpow, pow(2.5, x) * log(2.5) * log(2.5)) F(dd_pown, 6 * x)
F(dd_exp, exp(x)) F(dd_exp2, exp2(x) * log(2.0) * log(2.0)) F(dd_expm1, exp(x))
F(dd_log, -1 / (x * x)) F(dd_log2, -1 / (x * x * log(2.0))) F(dd_log10, -1 / (x * x * log(10.0)))
F(dd_log1p, -1 / ((1 + x) * (1 + x)))
F(dd_sqrt, -0.25 * pow(x, -1.5)) F(dd_rsqrt, 0.75 * pow(x, -2.5)) F(dd_cbrt, -2.0 / (9.0 * pow(cbrt(x), 5)))
F(dd_sin, -sin(x)) F(dd_cos, -cos(x)) F(dd_tan, 2 * tan(x) / (cos(x) * cos(x)))
F(dd_asin, x * pow(1 - x * x, -1.5)) F(dd_acos, -x * pow(1 - x * x, -1.5)) F(dd_atan, -2 * x / ((1 + x * x) * (1 + x * x)))
F(dd_sinh, sinh(x)) F(dd_cosh, cosh(x)) F(dd_tanh, -2 * tanh(x) / (cosh(x) * cosh(x)))
F(dd_asinh, -x * pow(x * x + 1, -1.5)) F(dd_acosh, -x * pow(x * x - 1, -1.5))
F(dd_atanh, 2 * x / ((1 - x * x) * (1 - x * x)))
F(dd_erf, -4 * x / sqrt(PI) * exp(-x * x)) F(dd_erfc, 4 * x / sqrt(PI) * exp(-x * x))
F(dd_sigmoid, sgm(x) * (1 - sgm(x)) * (1 - 2 * sgm(x))) F(dd_softplus, sgm(x) * (1 - sgm(x)))
F(dd_pow_aa, w * (w - 1) * pow(x, w - 2)) F(dd_pow_ab, pow(x, w - 1) * (1 + w * log(x)))
F(dd_pow_bb, pow(x, w) * log(x) * log(x))
F(dd_atan2_aa, -2 * x * w / ((x * x + w * w) * (x * x + w * w)))
F(dd_atan2_ab, (x * x - w * w) / ((x * x + w * w) * (x * x + w * w)))
F(dd_atan2_bb, 2 * x * w / ((x * x + w * w) * (x * x + w * w)))
F(dd_hypot_aa, w * w / pow(x * x + w * w, 1.5)) F(dd_hypot_ab, -x * w / pow(x * x + w * w, 1.5))
F(dd_hypot_bb, x * x / pow(x * x + w * w, 1.5))
F(dd_fma_ab, 1) /* fma(a, b, a/2): d2/da db = 1 */
F(dd_sel_ab, x > 0 ? 1 : 0)
F(dd_fmin_bb, x <= w * w ? 0 : 2) F(dd_fmax_aa, x * x >= w ? 2 : 0)
#undef F

static const scase CASES[] = {
    {"ad_add(a, b)", 2, zero, zero, zero, {{0.3, -1.2}}, 1, 0},
    {"ad_sub(a, b)", 2, zero, zero, zero, {{0.3, -1.2}}, 1, 0},
    {"ad_mul(a, b)", 2, zero, one, zero, {{0.3, -1.2}, {-2, 5}}, 2, 0},
    {"ad_div(a, b)", 2, zero, dd_div_ab, dd_div_bb, {{0.3, -1.2}, {-2, 5}}, 2, 0},
    {"ad_fma(a, b, ad_mulr(a, (real)0.5))", 2, zero, dd_fma_ab, zero, {{0.3, -1.2}}, 1, 0},
    {"ad_neg(a)", 1, zero, NULL, NULL, {{0.3}}, 1, 0},
    {"ad_square(a)", 1, two, NULL, NULL, {{0.3}, {-2}}, 2, 0},
    {"ad_recip(a)", 1, dd_recip, NULL, NULL, {{0.3}, {-2}}, 2, 0},
    {"ad_addr(a, (real)0.75)", 1, zero, NULL, NULL, {{0.3}}, 1, 0},
    {"ad_subr(a, (real)0.75)", 1, zero, NULL, NULL, {{0.3}}, 1, 0},
    {"ad_rsub((real)0.75, a)", 1, zero, NULL, NULL, {{0.3}}, 1, 0},
    {"ad_mulr(a, (real)0.75)", 1, zero, NULL, NULL, {{0.3}}, 1, 0},
    {"ad_divr(a, (real)0.75)", 1, zero, NULL, NULL, {{0.3}}, 1, 0},
    {"ad_rdiv((real)0.75, a)", 1, dd_rdiv, NULL, NULL, {{0.3}, {-7}}, 2, 0},
    {"ad_powr(a, (real)2.5)", 1, dd_powr, NULL, NULL, {{0.3}, {4}}, 2, 0},
    {"ad_rpow((real)2.5, a)", 1, dd_rpow, NULL, NULL, {{0.3}, {-3}}, 2, 0},
    {"ad_pown(a, 3)", 1, dd_pown, NULL, NULL, {{0.3}, {-2.5}}, 2, 0},
    {"ad_exp(a)", 1, dd_exp, NULL, NULL, {{0.3}, {-3}, {5}}, 3, 0},
    {"ad_exp2(a)", 1, dd_exp2, NULL, NULL, {{0.3}, {-3}}, 2, 0},
    {"ad_expm1(a)", 1, dd_expm1, NULL, NULL, {{1e-4}, {-3}, {2}}, 3, 0},
    {"ad_log(a)", 1, dd_log, NULL, NULL, {{0.05}, {0.5}, {30}}, 3, 0},
    {"ad_log2(a)", 1, dd_log2, NULL, NULL, {{0.05}, {30}}, 2, 0},
    {"ad_log10(a)", 1, dd_log10, NULL, NULL, {{0.05}, {30}}, 2, 0},
    {"ad_log1p(a)", 1, dd_log1p, NULL, NULL, {{1e-4}, {-0.9}, {30}}, 3, 0},
    {"ad_sqrt(a)", 1, dd_sqrt, NULL, NULL, {{0.05}, {0.5}, {30}}, 3, 0},
    {"ad_rsqrt(a)", 1, dd_rsqrt, NULL, NULL, {{0.05}, {30}}, 2, 0},
    {"ad_cbrt(a)", 1, dd_cbrt, NULL, NULL, {{0.05}, {-0.5}, {30}}, 3, 0},
    {"ad_sin(a)", 1, dd_sin, NULL, NULL, {{0.3}, {-2}}, 2, 0},
    {"ad_cos(a)", 1, dd_cos, NULL, NULL, {{0.3}, {-2}}, 2, 0},
    {"ad_tan(a)", 1, dd_tan, NULL, NULL, {{0.3}, {-1.2}}, 2, 0},
    {"ad_asin(a)", 1, dd_asin, NULL, NULL, {{0.3}, {-0.9}}, 2, 0},
    {"ad_acos(a)", 1, dd_acos, NULL, NULL, {{0.3}, {-0.9}}, 2, 0},
    {"ad_atan(a)", 1, dd_atan, NULL, NULL, {{0.3}, {-5}}, 2, 0},
    {"ad_sinh(a)", 1, dd_sinh, NULL, NULL, {{0.3}, {-3}}, 2, 0},
    {"ad_cosh(a)", 1, dd_cosh, NULL, NULL, {{0.3}, {-3}}, 2, 0},
    {"ad_tanh(a)", 1, dd_tanh, NULL, NULL, {{0.3}, {-2}, {0.6}}, 3, 0},
    {"ad_asinh(a)", 1, dd_asinh, NULL, NULL, {{0.3}, {-3}}, 2, 0},
    {"ad_acosh(a)", 1, dd_acosh, NULL, NULL, {{1.2}, {5}}, 2, 0},
    {"ad_atanh(a)", 1, dd_atanh, NULL, NULL, {{0.3}, {-0.9}}, 2, 0},
    {"ad_erf(a)", 1, dd_erf, NULL, NULL, {{0.3}, {-1.5}}, 2, 0},
    {"ad_erfc(a)", 1, dd_erfc, NULL, NULL, {{0.3}, {-1.5}}, 2, 0},
    {"ad_sigmoid(a)", 1, dd_sigmoid, NULL, NULL, {{0.3}, {-4}, {4}}, 3, 0},
    {"ad_softplus(a)", 1, dd_softplus, NULL, NULL, {{0.3}, {-4}, {4}}, 3, 0},
    {"ad_pow(a, b)", 2, dd_pow_aa, dd_pow_ab, dd_pow_bb, {{0.3, 1.7}, {2, -0.5}}, 2, 0},
    {"ad_atan2(a, b)", 2, dd_atan2_aa, dd_atan2_ab, dd_atan2_bb, {{0.5, 1}, {-0.5, -1}}, 2, 0},
    {"ad_hypot(a, b)", 2, dd_hypot_aa, dd_hypot_ab, dd_hypot_bb, {{0.3, -1.2}, {-2, 5}}, 2, 0},
    {"ad_fmin(a, ad_mul(b, b))", 2, zero, zero, dd_fmin_bb, {{2, -1.2}, {-2, 0.5}}, 2, 0},
    {"ad_fmax(ad_mul(a, a), b)", 2, dd_fmax_aa, zero, zero, {{0.3, -1.2}, {-2, 5}}, 2, 0},
    {"ad_select(ad_val(a) > 0, ad_mul(a, b), ad_sub(b, a))", 2, zero, dd_sel_ab, zero,
     {{0.3, -1.2}, {-2, 5}}, 2, 0},
    /* Non-smooth functions: second derivative 0, at kinks and away. */
    {"ad_fabs(a)", 1, zero, NULL, NULL, {{0.3}, {-2}, {0}}, 3, 1},
    {"ad_relu(a)", 1, zero, NULL, NULL, {{0.3}, {-2}, {0}}, 3, 1},
    {"ad_clamp(a, (real)-0.5, (real)0.5)", 1, zero, NULL, NULL, {{0.3}, {-2}, {0.5}}, 3, 1},
    {"ad_copysign(a, b)", 2, zero, zero, zero, {{0.3, -1.2}, {-2, 5}}, 2, 1},
    /* A data-dependent loop: Newton's iteration for sqrt(a) * b, the
     * number of steps depends on the element. d2/da2 = -b/(4 a^1.5). */
    {"newton_sqrt(a, b)", 2, NULL, NULL, NULL, {{0.7, 1.3}, {9, -0.4}, {30, 2}}, 3, 0},
};
#define N_CASES ((int)(sizeof CASES / sizeof *CASES))

static const char *HELPERS =
    "T newton_sqrt(T a, T b)\n"
    "{\n"
    "    T r = ad_const(1);\n"
    "    for (int i = 0; i < 60 && fabs(ad_val(r) * ad_val(r) - ad_val(a)) > 1e-15 * ad_val(a); i++)\n"
    "        r = ad_mulr(ad_add(r, ad_div(a, r)), (real)0.5);\n"
    "    return ad_mul(r, b);\n"
    "}\n";

/* Closed forms of the loop case (f = sqrt(a) b). */
static void newton_second(double x, double w, double *aa, double *ab, double *bb)
{
    *aa = -0.25 * w * pow(x, -1.5);
    *ab = 0.5 / sqrt(x);
    *bb = 0;
}

static char *dispatch_source(void)
{
    size_t cap = 16384, used = 0;
    char *s = malloc(cap);
    used += (size_t)snprintf(s + used, cap - used, "%sT vocab(T sel, T a, T b)\n{\n    switch ((int)ad_val(sel)) {\n",
                             HELPERS);
    for (int c = 0; c < N_CASES; c++)
        used += (size_t)snprintf(s + used, cap - used, "    case %d: return %s;\n", c, CASES[c].call);
    snprintf(s + used, cap - used, "    }\n    return ad_const(0);\n}\n");
    return s;
}

static const double TA = 0.7, TB = -0.4; /* the direction */

static clmad_tensor *upload(clmad_context *ctx, clmad_dtype dtype, const double *x, size_t n)
{
    clmad_tensor *t;
    if (dtype == CLMAD_F64) {
        CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, 1, &n, x, &t));
        return t;
    }
    float *f = malloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)x[i];
    CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, 1, &n, f, &t));
    free(f);
    return t;
}

static double *download(clmad_context *ctx, clmad_tensor *t, size_t n)
{
    double *x = malloc(n * sizeof *x);
    if (clmad_tensor_dtype(t) == CLMAD_F64) {
        CHECK_OK(ctx, clmad_tensor_read(t, x, n * sizeof *x));
        return x;
    }
    float *f = malloc(n * sizeof *f);
    CHECK_OK(ctx, clmad_tensor_read(t, f, n * sizeof *f));
    for (size_t i = 0; i < n; i++)
        x[i] = f[i];
    free(f);
    return x;
}

/* Runs the kernel at (sel, a, b): second order with tangents (TA, TB) when
 * second, else the first-order partials; out[0..6) = y, ty, pa, pb, pta, ptb
 * (the last three NULL for first order). */
static void evaluate(clmad_context *ctx, clmad_kernel *k, clmad_dtype dtype, const double *sel, const double *a,
                     const double *b, size_t n, int second, double **out)
{
    clmad_tensor *in[3] = {upload(ctx, dtype, sel, n), upload(ctx, dtype, a, n), upload(ctx, dtype, b, n)};
    const int active[3] = {0, 1, 1};
    clmad_tensor *y, *ty = NULL, *p[3], *pt[3] = {0};
    if (second) {
        double *ta = malloc(n * sizeof *ta), *tb = malloc(n * sizeof *tb);
        for (size_t i = 0; i < n; i++) {
            ta[i] = TA;
            tb[i] = TB;
        }
        clmad_tensor *tan[3] = {NULL, upload(ctx, dtype, ta, n), upload(ctx, dtype, tb, n)};
        CHECK_OK(ctx, clmad_broadcast_second(ctx, k, in, tan, active, &y, &ty, p, pt));
        cr_assert_null(p[0], "the selector is inactive");
        cr_assert_null(pt[0], "the selector is inactive");
        clmad_tensor_release(tan[1]);
        clmad_tensor_release(tan[2]);
        free(ta);
        free(tb);
    } else {
        CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, in, active, &y, p));
    }
    clmad_tensor *all[6] = {y, ty, p[1], p[2], pt[1], pt[2]};
    for (int i = 0; i < 6; i++) {
        out[i] = all[i] ? download(ctx, all[i], n) : NULL;
        clmad_tensor_release(all[i]);
    }
    for (int j = 0; j < 3; j++)
        clmad_tensor_release(in[j]);
}

static double rel_err(double got, double want) { return fabs(got - want) / fmax(1.0, fabs(want)); }

static void run(clmad_dtype dtype)
{
    const int f32 = dtype == CLMAD_F32;
    clmad_context *ctx = test_context();
    if (!f32 && !test_device_fp64())
        cr_skip_test("the device has no fp64");
    char *src = dispatch_source();
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, src, "vocab", 3, 1, &k));
    free(src);

    size_t n = 0;
    for (int c = 0; c < N_CASES; c++)
        n += (size_t)CASES[c].npts;
    /* Points x, then x + h t and x - h t (f64 finite differences). */
    double *sel = malloc(3 * n * sizeof *sel), *a = malloc(3 * n * sizeof *a), *b = malloc(3 * n * sizeof *b);
    double *h = malloc(n * sizeof *h);
    size_t e = 0;
    for (int c = 0; c < N_CASES; c++)
        for (int q = 0; q < CASES[c].npts; q++, e++) {
            double x = CASES[c].pts[q][0], w = CASES[c].arity == 2 ? CASES[c].pts[q][1] : 0.0;
            if (f32) {
                x = (float)x;
                w = (float)w;
            }
            h[e] = 1e-5 * fmin(1.0, fmax(1e-2, fmin(fabs(x), CASES[c].arity == 2 ? fabs(w) : 1.0)));
            for (int s = 0; s < 3; s++) {
                double sign = s == 0 ? 0 : s == 1 ? 1 : -1;
                sel[s * n + e] = c;
                a[s * n + e] = x + sign * h[e] * TA;
                b[s * n + e] = w + sign * h[e] * TB;
            }
        }
    double *sec[6], *first[6], *fd[6];
    evaluate(ctx, k, dtype, sel, a, b, n, 1, sec);
    evaluate(ctx, k, dtype, sel, a, b, n, 0, first);
    if (!f32)
        evaluate(ctx, k, dtype, sel, a, b, 3 * n, 0, fd);

    const double tol = f32 ? 2e-4 : 1e-11;
    e = 0;
    for (int c = 0; c < N_CASES; c++) {
        const scase *v = &CASES[c];
        for (int q = 0; q < v->npts; q++, e++) {
            const double x = a[e], w = b[e];
            double aa, ab = 0, bb = 0;
            if (!v->faa)
                newton_second(x, w, &aa, &ab, &bb);
            else {
                aa = v->faa(x, w);
                if (v->arity == 2) {
                    ab = v->fab(x, w);
                    bb = v->fbb(x, w);
                }
            }
            const double want_ta = aa * TA + ab * TB, want_tb = ab * TA + bb * TB;
            const char *dt = f32 ? "f32" : "f64";
            /* Values and partials: the first-order kernel's. */
            for (int i = 0; i < 3; i++) {
                const int j = i == 0 ? 0 : i + 1;
                cr_expect(rel_err(sec[j][e], first[j][e]) <= (f32 ? 1e-6 : 1e-15),
                          "%s %s at (%g, %g): second-order output %d %.17g, first-order %.17g", dt, v->call, x,
                          w, j, sec[j][e], first[j][e]);
            }
            const double want_ty = first[2][e] * TA + first[3][e] * TB;
            cr_expect(rel_err(sec[1][e], want_ty) <= tol, "%s %s at (%g, %g): value tangent %.17g, want %.17g",
                      dt, v->call, x, w, sec[1][e], want_ty);
            const double got[2] = {sec[4][e], sec[5][e]}, want[2] = {want_ta, want_tb};
            for (int j = 0; j < 2; j++) {
                if (v->kink)
                    cr_expect_eq(got[j], 0.0, "%s %s at (%g, %g): d/d%c tangent %.17g, want exactly 0", dt,
                                 v->call, x, w, "ab"[j], got[j]);
                else
                    cr_expect(rel_err(got[j], want[j]) <= (f32 ? 2e-4 : 1e-10),
                              "%s %s at (%g, %g): d/d%c tangent %.17g, closed form %.17g", dt, v->call, x, w,
                              "ab"[j], got[j], want[j]);
                if (f32 || v->kink)
                    continue;
                /* Central differences of the kernel's own partials along t. */
                const double diff = (fd[2 + j][n + e] - fd[2 + j][2 * n + e]) / (2 * h[e]);
                cr_expect(rel_err(got[j], diff) <= 1e-5, "%s at (%g, %g): d/d%c tangent %.12g, differences %.12g",
                          v->call, x, w, "ab"[j], got[j], diff);
            }
        }
    }
    for (int i = 0; i < 6; i++) {
        free(sec[i]);
        free(first[i]);
        if (!f32)
            free(fd[i]);
    }
    free(sel);
    free(a);
    free(b);
    free(h);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

Test(second_vocabulary, every_function_f64) { run(CLMAD_F64); }
Test(second_vocabulary, every_function_f32) { run(CLMAD_F32); }

/* More active inputs than the chunk cap: the chunks, each carrying every
 * tangent, give what one kernel gives. */
Test(second_vocabulary, chunks_carry_every_tangent)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T f(T a, T b, T c) { return ad_mul(ad_sin(ad_mul(a, b)), ad_exp(c)); }",
                                      "f", 3, 1, &k));
    const size_t n = 5;
    float xa[5] = {0.1f, -0.3f, 0.7f, 1.1f, -2}, xb[5] = {0.4f, 0.9f, -0.2f, 0.3f, 0.5f};
    float xc[5] = {0.2f, -0.1f, 0.3f, 0, 0.5f}, t[5] = {0.5f, -0.25f, 1, 0.75f, -1};
    clmad_tensor *in[3], *tan[3];
    float *xs[3] = {xa, xb, xc};
    for (int j = 0; j < 3; j++) {
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, xs[j], &in[j]));
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, t, &tan[j]));
    }
    float got[2][3][5], gotv[2][5];
    for (int cap = 3; cap >= 1; cap -= 2) {
        CHECK_OK(ctx, clmad_set_chunk_cap(ctx, cap));
        clmad_tensor *y, *ty, *p[3], *pt[3];
        CHECK_OK(ctx, clmad_broadcast_second(ctx, k, in, tan, NULL, &y, &ty, p, pt));
        const int r = cap == 3 ? 0 : 1;
        CHECK_OK(ctx, clmad_tensor_read(ty, gotv[r], sizeof gotv[r]));
        for (int j = 0; j < 3; j++) {
            CHECK_OK(ctx, clmad_tensor_read(pt[j], got[r][j], sizeof got[r][j]));
            clmad_tensor_release(p[j]);
            clmad_tensor_release(pt[j]);
        }
        clmad_tensor_release(y);
        clmad_tensor_release(ty);
    }
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(gotv[0][i], gotv[1][i], "value tangent %zu: %g in one kernel, %g in chunks", i, gotv[0][i],
                     gotv[1][i]);
        /* d2/da db of sin(ab) e^c = (cos(ab) - ab sin(ab)) e^c etc.: a closed form of one entry. */
        double A = xa[i], B = xb[i], C = xc[i], ab = A * B, T = t[i];
        double want_a = (-B * B * sin(ab) * T + (cos(ab) - ab * sin(ab)) * T + B * cos(ab) * T) * exp(C);
        for (int j = 0; j < 3; j++)
            cr_expect_eq(got[0][j][i], got[1][j][i], "partial tangent %d at %zu: %g, chunked %g", j, i,
                         got[0][j][i], got[1][j][i]);
        cr_expect(fabs(got[0][0][i] - want_a) <= 1e-5 * fmax(1, fabs(want_a)),
                  "d/da tangent at %zu: %g, closed form %g", i, got[0][0][i], want_a);
    }
    for (int j = 0; j < 3; j++) {
        clmad_tensor_release(in[j]);
        clmad_tensor_release(tan[j]);
    }
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

Test(second_vocabulary, bad_arguments)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T f(T a, T b) { return ad_mul(a, b); }", "f", 2, 1, &k));
    const size_t n = 3, m = 2;
    clmad_tensor *a, *b, *wrong;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 1.0, &a));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 2.0, &b));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &m, 2.0, &wrong));
    clmad_tensor *in[2] = {a, b}, *y, *ty, *p[2], *pt[2];
    clmad_tensor *tan_shape[2] = {wrong, NULL}, *tan_inactive[2] = {NULL, b};
    const int active[2] = {1, 0};
    cr_expect_eq(clmad_broadcast_second(ctx, k, in, tan_shape, NULL, &y, &ty, p, pt), CLMAD_ERR_SHAPE);
    cr_expect_eq(clmad_broadcast_second(ctx, k, in, tan_inactive, active, &y, &ty, p, pt),
                 CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect(test_contains(clmad_last_error(ctx), "not active"), "message: %s", clmad_last_error(ctx));
    cr_expect_eq(clmad_broadcast_second(ctx, k, in, NULL, NULL, &y, &ty, p, pt), CLMAD_ERR_INVALID_ARGUMENT);
    clmad_tensor_release(a);
    clmad_tensor_release(b);
    clmad_tensor_release(wrong);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}
