/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every function of the vocabulary (cl/clmad_ad.clh), f32 and f64: values
 * against libm in double, partials against the analytic derivative written
 * here independently, and that analytic derivative against central finite
 * differences in double. Kinks check the documented conventions exactly.
 * All functions run in ONE broadcast kernel that dispatches on an inactive
 * selector input: per-element control flow, and three compilations in all.
 */
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef double (*fn2)(double x, double w);

typedef struct vcase {
    const char *call;   /* OpenCL C over T a (and b) */
    int arity;
    fn2 f, da, db;      /* host value and analytic partials; db NULL for arity 1 */
    double pts[8][2];
    int npts;
    int mode;           /* 0, or KINK, or NO_FD_B */
} vcase;

/* KINK: the points are kinks: no finite differences, the convention exactly.
 * NO_FD_B: d/db is a convention without finite differences (pow at a < 0). */
enum { KINK = 1, NO_FD_B = 2 };

static const double PI = 3.14159265358979323846;
static double sgm(double x) { return 1 / (1 + exp(-x)); }

#define F(name, expr) static double name(double x, double w) { (void)x; (void)w; return expr; }
F(f_add, x + w) F(one, 1) F(mone, -1) F(zero, 0)
F(f_sub, x - w) F(f_mul, x * w) F(f_w, w) F(f_x, x)
F(f_div, x / w) F(d_div_a, 1 / w) F(d_div_b, -x / (w * w))
F(f_neg, -x)
F(f_fma, x * w + 0.5 * x) F(d_fma_a, w + 0.5)
F(f_addr, x + 0.75) F(f_subr, x - 0.75) F(f_rsub, 0.75 - x)
F(f_mulr, x * 0.75) F(c075, 0.75) F(f_divr, x / 0.75) F(d_divr, 1 / 0.75)
F(f_rdiv, 0.75 / x) F(d_rdiv, -0.75 / (x * x))
F(f_powr, pow(x, 2.5)) F(d_powr, 2.5 * pow(x, 1.5))
F(f_rpow, pow(2.5, x)) F(d_rpow, pow(2.5, x) * log(2.5))
F(f_pown, x * x * x) F(d_pown, 3 * x * x)
F(f_exp, exp(x)) F(f_exp2, exp2(x)) F(d_exp2, exp2(x) * log(2.0))
F(f_expm1, expm1(x)) F(d_expm1, exp(x))
F(f_log, log(x)) F(d_log, 1 / x) F(f_log2, log2(x)) F(d_log2, 1 / (x * log(2.0)))
F(f_log10, log10(x)) F(d_log10, 1 / (x * log(10.0))) F(f_log1p, log1p(x)) F(d_log1p, 1 / (1 + x))
F(f_sqrt, sqrt(x)) F(d_sqrt, 0.5 / sqrt(x)) F(f_rsqrt, 1 / sqrt(x)) F(d_rsqrt, -0.5 * pow(x, -1.5))
F(f_cbrt, cbrt(x)) F(d_cbrt, 1 / (3 * cbrt(x) * cbrt(x)))
F(f_sin, sin(x)) F(f_cos, cos(x)) F(d_cos, -sin(x)) F(f_tan, tan(x)) F(d_tan, 1 / (cos(x) * cos(x)))
F(f_asin, asin(x)) F(d_asin, 1 / sqrt(1 - x * x)) F(f_acos, acos(x)) F(d_acos, -1 / sqrt(1 - x * x))
F(f_atan, atan(x)) F(d_atan, 1 / (1 + x * x))
F(f_sinh, sinh(x)) F(f_cosh, cosh(x)) F(f_tanh, tanh(x)) F(d_tanh, 1 / (cosh(x) * cosh(x)))
F(f_asinh, asinh(x)) F(d_asinh, 1 / sqrt(x * x + 1)) F(f_acosh, acosh(x)) F(d_acosh, 1 / sqrt(x * x - 1))
F(f_atanh, atanh(x)) F(d_atanh, 1 / (1 - x * x))
F(f_erf, erf(x)) F(d_erf, 2 / sqrt(PI) * exp(-x * x)) F(f_erfc, erfc(x)) F(d_erfc, -2 / sqrt(PI) * exp(-x * x))
F(f_fabs, fabs(x)) F(d_fabs, x > 0 ? 1 : x < 0 ? -1 : 0)
F(f_sigmoid, sgm(x)) F(d_sigmoid, sgm(x) * (1 - sgm(x)))
F(f_softplus, log1p(exp(-fabs(x))) + fmax(x, 0)) F(d_softplus, sgm(x))
F(f_relu, x > 0 ? x : 0) F(d_relu, x > 0 ? 1 : 0)
F(f_square, x * x) F(d_square, 2 * x) F(f_recip, 1 / x) F(d_recip, -1 / (x * x))
F(f_clamp, fmin(fmax(x, -0.5), 0.5)) F(d_clamp, x >= -0.5 && x <= 0.5 ? 1 : 0)
F(f_pow, pow(x, w)) F(d_pow_a, w * pow(x, w - 1)) F(d_pow_b, x > 0 ? pow(x, w) * log(x) : 0)
F(f_atan2, atan2(x, w)) F(d_atan2_a, x == 0 && w == 0 ? 0 : w / (x * x + w * w))
F(d_atan2_b, x == 0 && w == 0 ? 0 : -x / (x * x + w * w))
F(f_hypot, hypot(x, w)) F(d_hypot_a, hypot(x, w) == 0 ? 0 : x / hypot(x, w))
F(d_hypot_b, hypot(x, w) == 0 ? 0 : w / hypot(x, w))
F(f_fmin, fmin(x, w)) F(d_fmin_a, x <= w ? 1 : 0) F(d_fmin_b, x <= w ? 0 : 1)
F(f_fmax, fmax(x, w)) F(d_fmax_a, x >= w ? 1 : 0) F(d_fmax_b, x >= w ? 0 : 1)
F(f_copysign, copysign(x, w)) F(d_copysign_a, signbit(x) == signbit(w) ? 1 : -1)
F(f_select, x > 0 ? x * w : w - x) F(d_select_a, x > 0 ? w : -1) F(d_select_b, x > 0 ? x : 1)
#undef F

static const vcase CASES[] = {
    {"ad_add(a, b)", 2, f_add, one, one, {{0.3, -1.2}, {-2, 5}}, 2, 0},
    {"ad_sub(a, b)", 2, f_sub, one, mone, {{0.3, -1.2}, {-2, 5}}, 2, 0},
    {"ad_mul(a, b)", 2, f_mul, f_w, f_x, {{0.3, -1.2}, {-2, 5}, {0, 3}}, 3, 0},
    {"ad_div(a, b)", 2, f_div, d_div_a, d_div_b, {{0.3, -1.2}, {-2, 5}, {1e-3, 0.5}}, 3, 0},
    {"ad_neg(a)", 1, f_neg, mone, NULL, {{0.3}, {-7}}, 2, 0},
    {"ad_fma(a, b, ad_mulr(a, (real)0.5))", 2, f_fma, d_fma_a, f_x, {{0.3, -1.2}, {-2, 5}}, 2, 0},
    {"ad_addr(a, (real)0.75)", 1, f_addr, one, NULL, {{0.3}, {-7}}, 2, 0},
    {"ad_subr(a, (real)0.75)", 1, f_subr, one, NULL, {{0.3}, {-7}}, 2, 0},
    {"ad_rsub((real)0.75, a)", 1, f_rsub, mone, NULL, {{0.3}, {-7}}, 2, 0},
    {"ad_mulr(a, (real)0.75)", 1, f_mulr, c075, NULL, {{0.3}, {-7}}, 2, 0},
    {"ad_divr(a, (real)0.75)", 1, f_divr, d_divr, NULL, {{0.3}, {-7}}, 2, 0},
    {"ad_rdiv((real)0.75, a)", 1, f_rdiv, d_rdiv, NULL, {{0.3}, {-7}, {1e-2}}, 3, 0},
    {"ad_powr(a, (real)2.5)", 1, f_powr, d_powr, NULL, {{0.3}, {4}, {1e-3}}, 3, 0},
    {"ad_rpow((real)2.5, a)", 1, f_rpow, d_rpow, NULL, {{0.3}, {-3}, {4}}, 3, 0},
    {"ad_pown(a, 3)", 1, f_pown, d_pown, NULL, {{0.3}, {-2.5}, {4}}, 3, 0},
    {"ad_exp(a)", 1, f_exp, f_exp, NULL, {{0.3}, {-20}, {20}, {-1}}, 4, 0},
    {"ad_exp2(a)", 1, f_exp2, d_exp2, NULL, {{0.3}, {-10}, {10}}, 3, 0},
    {"ad_expm1(a)", 1, f_expm1, d_expm1, NULL, {{1e-4}, {-3}, {2}}, 3, 0},
    {"ad_log(a)", 1, f_log, d_log, NULL, {{1e-3}, {0.5}, {30}}, 3, 0},
    {"ad_log2(a)", 1, f_log2, d_log2, NULL, {{1e-3}, {0.5}, {30}}, 3, 0},
    {"ad_log10(a)", 1, f_log10, d_log10, NULL, {{1e-3}, {0.5}, {30}}, 3, 0},
    {"ad_log1p(a)", 1, f_log1p, d_log1p, NULL, {{1e-4}, {-0.9}, {30}}, 3, 0},
    {"ad_sqrt(a)", 1, f_sqrt, d_sqrt, NULL, {{1e-3}, {0.5}, {30}}, 3, 0},
    {"ad_rsqrt(a)", 1, f_rsqrt, d_rsqrt, NULL, {{1e-2}, {0.5}, {30}}, 3, 0},
    {"ad_cbrt(a)", 1, f_cbrt, d_cbrt, NULL, {{1e-3}, {-0.5}, {30}}, 3, 0},
    {"ad_sin(a)", 1, f_sin, f_cos, NULL, {{0.3}, {-2}, {3}}, 3, 0},
    {"ad_cos(a)", 1, f_cos, d_cos, NULL, {{0.3}, {-2}, {3}}, 3, 0},
    {"ad_tan(a)", 1, f_tan, d_tan, NULL, {{0.3}, {-1.2}, {1.4}}, 3, 0},
    {"ad_asin(a)", 1, f_asin, d_asin, NULL, {{0.3}, {-0.99}, {0.99}}, 3, 0},
    {"ad_acos(a)", 1, f_acos, d_acos, NULL, {{0.3}, {-0.99}, {0.99}}, 3, 0},
    {"ad_atan(a)", 1, f_atan, d_atan, NULL, {{0.3}, {-20}, {5}}, 3, 0},
    {"ad_sinh(a)", 1, f_sinh, f_cosh, NULL, {{0.3}, {-3}, {5}}, 3, 0},
    {"ad_cosh(a)", 1, f_cosh, f_sinh, NULL, {{0.3}, {-3}, {5}}, 3, 0},
    {"ad_tanh(a)", 1, f_tanh, d_tanh, NULL, {{0.3}, {-3}, {5}}, 3, 0},
    {"ad_asinh(a)", 1, f_asinh, d_asinh, NULL, {{0.3}, {-3}, {50}}, 3, 0},
    {"ad_acosh(a)", 1, f_acosh, d_acosh, NULL, {{1.01}, {2}, {50}}, 3, 0},
    {"ad_atanh(a)", 1, f_atanh, d_atanh, NULL, {{0.3}, {-0.99}, {0.99}}, 3, 0},
    {"ad_erf(a)", 1, f_erf, d_erf, NULL, {{0.3}, {-2}, {3}}, 3, 0},
    {"ad_erfc(a)", 1, f_erfc, d_erfc, NULL, {{0.3}, {-2}, {3}}, 3, 0},
    {"ad_fabs(a)", 1, f_fabs, d_fabs, NULL, {{0.3}, {-2}}, 2, 0},
    {"ad_sigmoid(a)", 1, f_sigmoid, d_sigmoid, NULL, {{0.3}, {-30}, {30}, {-3}}, 4, 0},
    {"ad_softplus(a)", 1, f_softplus, d_softplus, NULL, {{0.3}, {-30}, {30}, {-3}}, 4, 0},
    {"ad_relu(a)", 1, f_relu, d_relu, NULL, {{0.3}, {-2}}, 2, 0},
    {"ad_square(a)", 1, f_square, d_square, NULL, {{0.3}, {-2}}, 2, 0},
    {"ad_recip(a)", 1, f_recip, d_recip, NULL, {{0.3}, {-2}}, 2, 0},
    {"ad_clamp(a, (real)-0.5, (real)0.5)", 1, f_clamp, d_clamp, NULL, {{0.3}, {-2}, {0.7}}, 3, 0},
    {"ad_pow(a, b)", 2, f_pow, d_pow_a, d_pow_b, {{0.3, 1.7}, {2, -0.5}, {1e-3, 2}}, 3, 0},
    /* A negative base with an integer exponent: d/da is finite, d/db is 0 by convention. */
    {"ad_pow(a, b)", 2, f_pow, d_pow_a, d_pow_b, {{-2, 3}, {-1.5, -2}}, 2, NO_FD_B},
    {"ad_atan2(a, b)", 2, f_atan2, d_atan2_a, d_atan2_b, {{0.5, 1}, {0.5, -1}, {-0.5, -1}, {-0.5, 1}, {1e-3, -2}}, 5, 0},
    {"ad_hypot(a, b)", 2, f_hypot, d_hypot_a, d_hypot_b, {{0.3, -1.2}, {-2, 5}}, 2, 0},
    {"ad_fmin(a, b)", 2, f_fmin, d_fmin_a, d_fmin_b, {{0.3, -1.2}, {-2, 5}}, 2, 0},
    {"ad_fmax(a, b)", 2, f_fmax, d_fmax_a, d_fmax_b, {{0.3, -1.2}, {-2, 5}}, 2, 0},
    {"ad_copysign(a, b)", 2, f_copysign, d_copysign_a, zero, {{0.3, -1.2}, {-2, 5}, {2, 3}}, 3, 0},
    {"ad_select(ad_val(a) > 0, ad_mul(a, b), ad_sub(b, a))", 2, f_select, d_select_a, d_select_b,
     {{0.3, -1.2}, {-2, 5}}, 2, 0},
    /* Kinks: the documented conventions, exactly. */
    {"ad_relu(a)", 1, f_relu, d_relu, NULL, {{0}}, 1, KINK},
    {"ad_fabs(a)", 1, f_fabs, d_fabs, NULL, {{0}}, 1, KINK},
    {"ad_fmin(a, b)", 2, f_fmin, one, zero, {{1.5, 1.5}}, 1, KINK},
    {"ad_fmax(a, b)", 2, f_fmax, one, zero, {{1.5, 1.5}}, 1, KINK},
    {"ad_clamp(a, (real)-0.5, (real)0.5)", 1, f_clamp, one, NULL, {{-0.5}, {0.5}}, 2, KINK},
    {"ad_hypot(a, b)", 2, f_hypot, zero, zero, {{0, 0}}, 1, KINK},
    {"ad_atan2(a, b)", 2, f_atan2, zero, zero, {{0, 0}}, 1, KINK},
    {"ad_copysign(a, b)", 2, f_copysign, mone, zero, {{0, -2}}, 1, KINK},
};
#define N_CASES ((int)(sizeof CASES / sizeof *CASES))

static char *dispatch_source(void)
{
    size_t cap = 16384, used = 0;
    char *s = malloc(cap);
    used += (size_t)snprintf(s + used, cap - used,
                             "T vocab(T sel, T a, T b)\n{\n    switch ((int)ad_val(sel)) {\n");
    for (int c = 0; c < N_CASES; c++)
        used += (size_t)snprintf(s + used, cap - used, "    case %d: return %s;\n", c, CASES[c].call);
    snprintf(s + used, cap - used, "    }\n    return ad_const(0);\n}\n");
    return s;
}

static double rel_err(double got, double want)
{
    if (isinf(want))
        return got == want ? 0 : INFINITY;
    return fabs(got - want) / fmax(1.0, fabs(want));
}

static void run(clmad_dtype dtype)
{
    clmad_context *ctx = test_context();
    char *src = dispatch_source();
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, src, "vocab", 3, 1, &k));
    free(src);

    size_t n = 0;
    for (int c = 0; c < N_CASES; c++)
        n += (size_t)CASES[c].npts;
    double *sel = malloc(n * sizeof *sel), *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    size_t e = 0;
    for (int c = 0; c < N_CASES; c++)
        for (int p = 0; p < CASES[c].npts; p++, e++) {
            sel[e] = c;
            a[e] = CASES[c].pts[p][0];
            b[e] = CASES[c].arity == 2 ? CASES[c].pts[p][1] : 0.0;
        }
    int f32 = dtype == CLMAD_F32;
    size_t es = clmad_dtype_size(dtype);
    void *bufs[3] = {malloc(n * es), malloc(n * es), malloc(n * es)};
    double *host[3] = {sel, a, b};
    clmad_tensor *in[3];
    for (int j = 0; j < 3; j++) {
        for (size_t i = 0; i < n; i++) {
            if (f32)
                ((float *)bufs[j])[i] = (float)host[j][i];
            else
                ((double *)bufs[j])[i] = host[j][i];
        }
        CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, 1, &n, bufs[j], &in[j]));
    }
    const int active[3] = {0, 1, 1};
    clmad_tensor *y, *p[3];
    CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, in, active, &y, p));
    cr_assert_null(p[0], "the selector is inactive");
    double *out[3];
    clmad_tensor *src_t[3] = {y, p[1], p[2]};
    for (int j = 0; j < 3; j++) {
        out[j] = malloc(n * sizeof(double));
        CHECK_OK(ctx, clmad_tensor_read(src_t[j], bufs[j], n * es));
        for (size_t i = 0; i < n; i++)
            out[j][i] = f32 ? ((float *)bufs[j])[i] : ((double *)bufs[j])[i];
    }

    /* Tolerances: f64 close to rounding; f32 a few ulps of float after the
     * inputs were rounded to float (the reference uses the rounded inputs). */
    double tol = f32 ? 2e-5 : 1e-12;
    e = 0;
    for (int c = 0; c < N_CASES; c++) {
        const vcase *v = &CASES[c];
        for (int q = 0; q < v->npts; q++, e++) {
            double x = f32 ? (double)(float)a[e] : a[e], w = f32 ? (double)(float)b[e] : b[e];
            double want[3] = {v->f(x, w), v->da(x, w), v->arity == 2 ? v->db(x, w) : 0.0};
            const char *what[3] = {"value", "d/da", "d/db"};
            for (int j = 0; j < 3; j++) {
                if (v->mode == KINK && j > 0)
                    cr_expect_eq(out[j][e], want[j], "%s at (%g, %g): %s %.17g, convention %.17g",
                                 v->call, x, w, what[j], out[j][e], want[j]);
                else
                    cr_expect(rel_err(out[j][e], want[j]) <= tol, "%s %s at (%g, %g): got %.17g, want %.17g",
                              dtype == CLMAD_F32 ? "f32" : "f64", v->call, x, w, out[j][e], want[j]);
            }
            if (v->mode == KINK || f32)
                continue;
            /* The analytic formulas themselves against central differences. */
            for (int j = 0; j < v->arity - (v->mode == NO_FD_B); j++) {
                double h = 1e-6 * fmax(1.0, fabs(j ? w : x));
                double fp = j ? v->f(x, w + h) : v->f(x + h, w);
                double fm = j ? v->f(x, w - h) : v->f(x - h, w);
                double fd = (fp - fm) / (2 * h);
                cr_expect(fabs(fd - want[j + 1]) <= 1e-5 * fmax(1.0, fabs(fd)),
                          "%s %s at (%g, %g): analytic %.12g, finite differences %.12g", v->call,
                          what[j + 1], x, w, want[j + 1], fd);
                cr_expect(fabs(fd - out[j + 1][e]) <= 1e-5 * fmax(1.0, fabs(fd)),
                          "%s %s at (%g, %g): device %.12g, finite differences %.12g", v->call,
                          what[j + 1], x, w, out[j + 1][e], fd);
            }
        }
    }
    for (int j = 0; j < 3; j++) {
        free(out[j]);
        free(bufs[j]);
        clmad_tensor_release(in[j]);
    }
    clmad_tensor_release(y);
    clmad_tensor_release(p[1]);
    clmad_tensor_release(p[2]);
    clmad_kernel_release(k);
    free(sel);
    free(a);
    free(b);
    clmad_context_release(ctx);
}

Test(vocabulary, every_function_f32) { run(CLMAD_F32); }
Test(vocabulary, every_function_f64) { run(CLMAD_F64); }

/* ad_tanh is clmad's own (cl/clmad_ad.clh says why): its value in ulps of
 * the result against the host's tanh in higher precision (double for f32,
 * long double for f64), over both branches of its definition, the switch
 * at |x| = 0.55, tiny and huge arguments and the special values. The
 * OpenCL spec allows 5 ulp; the derivative follows from the value. */
static double ulp_error(double got, long double want, int f32)
{
    if (isnan(want))
        return isnan(got) ? 0 : INFINITY;
    if (got == want)
        return 0;
    int ex;
    frexpl(want, &ex);
    const int mant = f32 ? 24 : 53, min_ex = f32 ? -125 : -1021;
    long double ulp = ldexpl(1.0L, (ex < min_ex ? min_ex : ex) - mant);
    return (double)(fabsl((long double)got - want) / ulp);
}

static void tanh_ulp(clmad_dtype dtype)
{
    const int f32 = dtype == CLMAD_F32;
    clmad_context *ctx = test_context();
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T th(T a) { return ad_tanh(a); }\n", "th", 1, 1, &k));
    enum { DENSE = 200000 };
    static const double special[] = {0.0, -0.0, 1e-30, -1e-30, 1e-300, 1e-8, 0.55, -0.55, 9, 20, 44, 45,
                                     400, 1e30, INFINITY, -INFINITY, NAN};
    const size_t ns = sizeof special / sizeof *special, n = DENSE + 2000 + ns;
    long double *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < DENSE; i++) /* [-12, 12] */
        x[i] = -12 + 24 * (long double)i / DENSE;
    for (size_t i = 0; i < 2000; i++) /* around the switch, in steps of a few ulps */
        x[DENSE + i] = 0.55L + ((long double)i - 1000) * (f32 ? 1e-7L : 1e-16L);
    for (size_t i = 0; i < ns; i++)
        x[DENSE + 2000 + i] = special[i];
    const size_t es = clmad_dtype_size(dtype);
    void *buf = malloc(n * es);
    for (size_t i = 0; i < n; i++) {
        if (f32) {
            ((float *)buf)[i] = (float)x[i];
            x[i] = ((float *)buf)[i];
        } else {
            ((double *)buf)[i] = (double)x[i];
            x[i] = ((double *)buf)[i];
        }
    }
    clmad_tensor *in, *y;
    CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, 1, &n, buf, &in));
    CHECK_OK(ctx, clmad_broadcast(ctx, k, &in, &y));
    CHECK_OK(ctx, clmad_tensor_read(y, buf, n * es));
    double worst = 0, at = 0;
    for (size_t i = 0; i < n; i++) {
        double got = f32 ? ((float *)buf)[i] : ((double *)buf)[i];
        long double want = f32 ? tanh((double)x[i]) : tanhl(x[i]);
        double u = ulp_error(got, want, f32);
        if (u > worst) {
            worst = u;
            at = (double)x[i];
        }
        if (want == 0)
            cr_expect_eq(!signbit(got), !signbit(want), "tanh(%g) keeps the sign of zero", (double)x[i]);
    }
    cr_log_info("%s tanh: worst %.2f ulp at x = %.17g", f32 ? "f32" : "f64", worst, at);
    cr_expect(worst <= 5, "%s tanh: %.2f ulp at x = %.17g (the spec allows 5)", f32 ? "f32" : "f64", worst, at);
    clmad_tensor_release(in);
    clmad_tensor_release(y);
    clmad_kernel_release(k);
    free(buf);
    free(x);
    clmad_context_release(ctx);
}

Test(vocabulary, tanh_ulp_f32) { tanh_ulp(CLMAD_F32); }
Test(vocabulary, tanh_ulp_f64) { tanh_ulp(CLMAD_F64); }

/* ---- infinite points: PyTorch's figures ------------------------------------
 * A zero partial stays 0 where a local derivative is infinite, so that a
 * derivative that is finite (d(a * b)/db at a = inf is b) is not NaN. The
 * figures are PyTorch 2.15's autograd, in f32 and f64 alike:
 *
 *   import torch
 *   inf = float("inf")
 *   for dt in (torch.float32, torch.float64):
 *       for f, x, y in [(lambda a, b: a * b, inf, 2.0), ...]:  # the table
 *           a = torch.tensor(x, dtype=dt, requires_grad=True)
 *           b = torch.tensor(y, dtype=dt, requires_grad=True)
 *           f(a, b).backward()
 *           print(a.grad.item(), b.grad.item())
 *
 * with, per row, the PyTorch expression in the comment. */
typedef struct {
    const char *call;
    double a, b, da, db;
} inf_case;

#define INF INFINITY
static const inf_case INF_CASES[] = {
    {"ad_mul(a, b)", INF, 2, 2, INF},                                /* a * b */
    {"ad_mul(a, b)", 2, -INF, -INF, 2},                              /* a * b */
    {"ad_mul(ad_mul(a, b), b)", INF, 2, 4, INF},                     /* a * b * b */
    {"ad_fma(a, b, ad_const(1))", INF, 2, 2, INF},                   /* a * b + 1 */
    {"ad_div(a, b)", INF, 2, 0.5, -INF},                             /* a / b */
    {"ad_add(ad_square(a), b)", INF, 1, INF, 1},                     /* a * a + b */
    {"ad_add(ad_mulr(a, INFINITY), b)", 1, 1, INF, 1},               /* a * inf + b */
    {"ad_add(ad_divr(a, 0), b)", 1, 1, INF, 1},                      /* a / 0.0 + b */
    {"ad_add(ad_rpow(2, a), b)", INF, 1, INF, 1},                    /* 2.0 ** a + b */
    {"ad_add(ad_pow(a, ad_const(2)), b)", INF, 1, INF, 1},           /* a ** 2 + b */
    {"ad_add(ad_exp(a), b)", INF, 1, INF, 1},                        /* torch.exp(a) + b */
    {"ad_add(ad_exp2(a), b)", INF, 1, INF, 1},                       /* torch.exp2(a) + b */
    {"ad_add(ad_expm1(a), b)", INF, 1, INF, 1},                      /* torch.expm1(a) + b */
    {"ad_add(ad_log(a), b)", 0, 1, INF, 1},                          /* torch.log(a) + b */
    {"ad_add(ad_log2(a), b)", 0, 1, INF, 1},                         /* torch.log2(a) + b */
    {"ad_add(ad_log10(a), b)", 0, 1, INF, 1},                        /* torch.log10(a) + b */
    {"ad_add(ad_log1p(a), b)", -1, 1, INF, 1},                       /* torch.log1p(a) + b */
    {"ad_add(ad_sinh(a), b)", 1000, 1, INF, 1},                      /* torch.sinh(a) + b */
    {"ad_add(ad_cosh(a), b)", 1000, 1, INF, 1},                      /* torch.cosh(a) + b */
    {"ad_add(ad_atanh(a), b)", 1, 1, INF, 1},                        /* torch.atanh(a) + b */
};
#define N_INF_CASES ((int)(sizeof INF_CASES / sizeof *INF_CASES))

static void infinite_points(clmad_dtype dtype)
{
    clmad_context *ctx = test_context();
    char src[4096];
    size_t used = (size_t)snprintf(src, sizeof src, "T inf_vocab(T sel, T a, T b)\n{\n    switch ((int)ad_val(sel)) {\n");
    for (int c = 0; c < N_INF_CASES; c++)
        used += (size_t)snprintf(src + used, sizeof src - used, "    case %d: return %s;\n", c, INF_CASES[c].call);
    snprintf(src + used, sizeof src - used, "    }\n    return ad_const(0);\n}\n");
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, src, "inf_vocab", 3, 1, &k));
    size_t n = N_INF_CASES;
    double host[3][N_INF_CASES];
    for (int c = 0; c < N_INF_CASES; c++)
        host[0][c] = c, host[1][c] = INF_CASES[c].a, host[2][c] = INF_CASES[c].b;
    const int f32 = dtype == CLMAD_F32;
    const size_t es = clmad_dtype_size(dtype);
    char buf[N_INF_CASES * sizeof(double)];
    clmad_tensor *in[3];
    for (int j = 0; j < 3; j++) {
        for (int c = 0; c < N_INF_CASES; c++) {
            if (f32)
                ((float *)buf)[c] = (float)host[j][c];
            else
                ((double *)buf)[c] = host[j][c];
        }
        CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, 1, &n, buf, &in[j]));
    }
    const int active[3] = {0, 1, 1};
    clmad_tensor *y, *p[3];
    CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, in, active, &y, p));
    for (int j = 1; j < 3; j++) {
        CHECK_OK(ctx, clmad_tensor_read(p[j], buf, n * es));
        for (int c = 0; c < N_INF_CASES; c++) {
            const double got = f32 ? ((float *)buf)[c] : ((double *)buf)[c];
            const double want = j == 1 ? INF_CASES[c].da : INF_CASES[c].db;
            cr_expect(got == want, "%s %s at (%g, %g): d/d%c = %g, PyTorch %g", f32 ? "f32" : "f64",
                      INF_CASES[c].call, INF_CASES[c].a, INF_CASES[c].b, j == 1 ? 'a' : 'b', got, want);
        }
        clmad_tensor_release(p[j]);
    }
    clmad_tensor_release(y);
    for (int j = 0; j < 3; j++)
        clmad_tensor_release(in[j]);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

Test(vocabulary, infinite_points_f32) { infinite_points(CLMAD_F32); }
Test(vocabulary, infinite_points_f64) { infinite_points(CLMAD_F64); }

/* The wrapper's adjoint-times-partial products: y0 = a, y1 = b, then
 * L = sum(exp(y0) + y1) at a = 1000: the adjoint of y0 is inf, and
 * d y0 / d b = 0 must give b the gradient 1, not inf * 0 = NaN. PyTorch:
 *   a = torch.tensor(1000., requires_grad=True); b = torch.tensor(1., requires_grad=True)
 *   (torch.exp(a) + b).backward()   # a.grad = inf, b.grad = 1 (f32 and f64) */
Test(vocabulary, infinite_adjoint_times_zero_partial)
{
    clmad_context *ctx = test_context();
    clmad_kernel *two, *loss_k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "void two(T a, T b, T *y0, T *y1) { *y0 = a; *y1 = b; }\n", "two", 2, 2,
                                      &two));
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T L(T p, T q) { return exp(p) + q; }\n", "L", 2, 1, &loss_k));
    for (int dt = 0; dt < 2; dt++)
        for (int policy = CLMAD_PARTIALS_STORE; policy <= CLMAD_PARTIALS_RECOMPUTE; policy++) {
            const clmad_dtype dtype = dt ? CLMAD_F64 : CLMAD_F32;
            CHECK_OK(ctx, clmad_set_partials_policy(ctx, (clmad_partials_policy)policy));
            size_t n = 3;
            clmad_tensor *a, *b, *y[2], *l, *loss, *ga, *gb;
            CHECK_OK(ctx, clmad_tensor_fill(ctx, dtype, 1, &n, 1000, &a));
            CHECK_OK(ctx, clmad_tensor_fill(ctx, dtype, 1, &n, 1, &b));
            CHECK_OK(ctx, clmad_tensor_set_requires_grad(a, 1));
            CHECK_OK(ctx, clmad_tensor_set_requires_grad(b, 1));
            clmad_tensor *in[2] = {a, b};
            CHECK_OK(ctx, clmad_broadcast(ctx, two, in, y));
            CHECK_OK(ctx, clmad_broadcast(ctx, loss_k, y, &l));
            CHECK_OK(ctx, clmad_sum(ctx, l, 0, NULL, 0, &loss));
            CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
            CHECK_OK(ctx, clmad_tensor_grad(a, &ga));
            CHECK_OK(ctx, clmad_tensor_grad(b, &gb));
            double buf[3];
            float fbuf[3];
            clmad_tensor *g[2] = {ga, gb};
            for (int j = 0; j < 2; j++) {
                CHECK_OK(ctx, clmad_tensor_read(g[j], dt ? (void *)buf : (void *)fbuf, n * clmad_dtype_size(dtype)));
                for (size_t e = 0; e < n; e++) {
                    const double got = dt ? buf[e] : fbuf[e], want = j ? 1 : INF;
                    cr_expect(got == want, "%s, policy %d: d/d%c at %zu = %g, PyTorch %g", dt ? "f64" : "f32",
                              policy, j ? 'b' : 'a', e, got, want);
                }
            }
            clmad_tensor *all[] = {a, b, y[0], y[1], l, loss, ga, gb};
            for (int i = 0; i < 8; i++)
                clmad_tensor_release(all[i]);
        }
    clmad_kernel_release(two);
    clmad_kernel_release(loss_k);
    clmad_context_release(ctx);
}
