/* SPDX-License-Identifier: Apache-2.0 */
/* The kernels of the examples, benchmarks and tests, each in plain syntax
 * and in its ad_ form (copied verbatim from where it lives), for
 * test_plain_syntax.c. The plain form is written so that the canonical
 * rules of the front end (README, "Plain syntax") lower it to exactly the
 * ad_ form; where a natural spelling lowers to another, equivalent form, a
 * comment says which and why the values are still the same bits.
 * Kernels that exist to fail (the error tests) are not here. */
#ifndef CLMAD_TEST_PLAIN_PAIRS_H
#define CLMAD_TEST_PLAIN_PAIRS_H

#include "bcast_support.h"

#include <stdio.h>

#define PAIR_MAX_IN 6

/* The domain of one input: uniform in [lo, hi), or an integer in [lo, hi]. */
typedef struct pair_dom {
    double lo, hi;
    int ints;
} pair_dom;
#define U(lo, hi) {lo, hi, 0}
#define I(lo, hi) {lo, hi, 1}

typedef struct plain_pair {
    const char *name, *fn;
    int n_in, n_out;
    const char *plain, *ad;
    /* Per input, the shape against an output of ROWS x COLS: 'f' the full
     * shape, 'r' a row (COLS,), 'c' a column (ROWS, 1), 's' a 0-d scalar. */
    const char *shapes;
    pair_dom dom[PAIR_MAX_IN];
    /* When set, the value of input j at flat element e (every shape 'f'). */
    double (*value)(int j, size_t e, uint64_t *rng);
} plain_pair;

/* ---- test_vocabulary: every function, one kernel that switches on sel ---- */

typedef struct vocab_fn {
    const char *plain, *ad;
    double lo, hi; /* domain of a; b is in [0.5, 2) */
} vocab_fn;

/* The cases of test_vocabulary.c in its order, kinks left out (their points
 * are values, not kernels). ad_select has no operator spelling: its plain
 * form keeps the call and writes its arguments plainly. */
static const vocab_fn VOCAB[] = {
    {"a + b", "ad_add(a, b)", -2, 2},
    {"a - b", "ad_sub(a, b)", -2, 2},
    {"a * b", "ad_mul(a, b)", -2, 2},
    {"a / b", "ad_div(a, b)", -2, 2},
    {"-a", "ad_neg(a)", -2, 2},
    {"fma(a, b, a * (real)0.5)", "ad_fma(a, b, ad_mulr(a, (real)0.5))", -2, 2},
    {"a + (real)0.75", "ad_addr(a, (real)0.75)", -2, 2},
    {"a - (real)0.75", "ad_subr(a, (real)0.75)", -2, 2},
    {"(real)0.75 - a", "ad_rsub((real)0.75, a)", -2, 2},
    {"a * (real)0.75", "ad_mulr(a, (real)0.75)", -2, 2},
    {"a / (real)0.75", "ad_divr(a, (real)0.75)", -2, 2},
    {"(real)0.75 / a", "ad_rdiv((real)0.75, a)", 0.2, 2},
    {"pow(a, (real)2.5)", "ad_powr(a, (real)2.5)", 0.1, 3},
    {"pow((real)2.5, a)", "ad_rpow((real)2.5, a)", -2, 2},
    {"pown(a, 3)", "ad_pown(a, 3)", -2, 2},
    {"exp(a)", "ad_exp(a)", -2, 2},
    {"exp2(a)", "ad_exp2(a)", -2, 2},
    {"expm1(a)", "ad_expm1(a)", -2, 2},
    {"log(a)", "ad_log(a)", 0.1, 3},
    {"log2(a)", "ad_log2(a)", 0.1, 3},
    {"log10(a)", "ad_log10(a)", 0.1, 3},
    {"log1p(a)", "ad_log1p(a)", -0.5, 2},
    {"sqrt(a)", "ad_sqrt(a)", 0.1, 3},
    {"rsqrt(a)", "ad_rsqrt(a)", 0.1, 3},
    {"cbrt(a)", "ad_cbrt(a)", 0.1, 3},
    {"sin(a)", "ad_sin(a)", -2, 2},
    {"cos(a)", "ad_cos(a)", -2, 2},
    {"tan(a)", "ad_tan(a)", -1.2, 1.2},
    {"asin(a)", "ad_asin(a)", -0.9, 0.9},
    {"acos(a)", "ad_acos(a)", -0.9, 0.9},
    {"atan(a)", "ad_atan(a)", -2, 2},
    {"sinh(a)", "ad_sinh(a)", -2, 2},
    {"cosh(a)", "ad_cosh(a)", -2, 2},
    {"tanh(a)", "ad_tanh(a)", -2, 2},
    {"asinh(a)", "ad_asinh(a)", -2, 2},
    {"acosh(a)", "ad_acosh(a)", 1.1, 3},
    {"atanh(a)", "ad_atanh(a)", -0.9, 0.9},
    {"erf(a)", "ad_erf(a)", -2, 2},
    {"erfc(a)", "ad_erfc(a)", -2, 2},
    {"fabs(a)", "ad_fabs(a)", -2, 2},
    {"sigmoid(a)", "ad_sigmoid(a)", -2, 2},
    {"softplus(a)", "ad_softplus(a)", -2, 2},
    {"relu(a)", "ad_relu(a)", -2, 2},
    {"square(a)", "ad_square(a)", -2, 2},
    {"recip(a)", "ad_recip(a)", 0.2, 2},
    {"clamp(a, (real)-0.5, (real)0.5)", "ad_clamp(a, (real)-0.5, (real)0.5)", -1, 1},
    {"pow(a, b)", "ad_pow(a, b)", 0.1, 3},
    {"atan2(a, b)", "ad_atan2(a, b)", -2, 2},
    {"hypot(a, b)", "ad_hypot(a, b)", -2, 2},
    {"fmin(a, b)", "ad_fmin(a, b)", -2, 2},
    {"fmax(a, b)", "ad_fmax(a, b)", -2, 2},
    {"copysign(a, b)", "ad_copysign(a, b)", -2, 2},
    {"ad_select(a > 0, a * b, b - a)", "ad_select(ad_val(a) > 0, ad_mul(a, b), ad_sub(b, a))", -2, 2},
};
#define N_VOCAB ((int)(sizeof VOCAB / sizeof *VOCAB))

/* Filled by vocab_sources(): the dispatch kernel of test_vocabulary.c (the
 * selector stays ad_val: T is no switch value). */
static char VOCAB_PLAIN[8192], VOCAB_AD[8192];

static void vocab_sources(void)
{
    char *dst[2] = {VOCAB_PLAIN, VOCAB_AD};
    for (int form = 0; form < 2; form++) {
        size_t cap = sizeof VOCAB_PLAIN, u = 0;
        u += (size_t)snprintf(dst[form] + u, cap - u,
                              "T vocab(T sel, T a, T b)\n{\n    switch ((int)ad_val(sel)) {\n");
        for (int c = 0; c < N_VOCAB; c++)
            u += (size_t)snprintf(dst[form] + u, cap - u, "    case %d: return %s;\n", c,
                                  form ? VOCAB[c].ad : VOCAB[c].plain);
        snprintf(dst[form] + u, cap - u, "    }\n    return %s;\n}\n", form ? "ad_const(0)" : "0");
    }
}

/* sel cycles through the cases; a is in its case's domain. */
static double vocab_value(int j, size_t e, uint64_t *rng)
{
    const vocab_fn *v = &VOCAB[e % (size_t)N_VOCAB];
    return j == 0 ? (double)(e % (size_t)N_VOCAB) : j == 1 ? bs_uniform(rng, v->lo, v->hi) : bs_uniform(rng, 0.5, 2);
}

/* ---- the pairs ------------------------------------------------------------- */

#define HM_CELL_PLAIN                                                               \
    "T cell_update(T z, T zb, T c, T f, T i, T g)\n"                                \
    "{\n"                                                                           \
    "    if (z == 1)  return sigmoid(i) * tanh(g);          /* FLUSH  */\n"        \
    "    if (zb == 0) return c;                              /* COPY   */\n"        \
    "    return sigmoid(f) * c + sigmoid(i) * tanh(g);       /* UPDATE */\n"        \
    "}\n"

static const plain_pair PAIRS[] = {
    /* tests/test_broadcast_cell.c; the same cell in bench/, test_tape.c,
     * test_lean_pipeline.c and examples/hmlstm.c. */
    {"hm_cell", "cell_update", 6, 1, HM_CELL_PLAIN,
     "T cell_update(T z, T zb, T c, T f, T i, T g)\n"
     "{\n"
     "    if (ad_val(z) == 1)  return ad_mul(ad_sigmoid(i), ad_tanh(g));                 /* FLUSH  */\n"
     "    if (ad_val(zb) == 0) return c;                                                    /* COPY   */\n"
     "    return ad_add(ad_mul(ad_sigmoid(f), c), ad_mul(ad_sigmoid(i), ad_tanh(g)));       /* UPDATE */\n"
     "}\n",
     "crffff", {I(0, 1), I(0, 1), U(-2, 2), U(-3, 3), U(-3, 3), U(-3, 3)}, NULL},
    /* tests/test_tape.c */
    {"lstm_c", "lstm_c", 4, 1,
     "T lstm_c(T c, T f, T i, T g)\n"
     "{\n"
     "    return sigmoid(f) * c + sigmoid(i) * tanh(g);\n"
     "}\n",
     "T lstm_c(T c, T f, T i, T g)\n"
     "{\n"
     "    return ad_add(ad_mul(ad_sigmoid(f), c), ad_mul(ad_sigmoid(i), ad_tanh(g)));\n"
     "}\n",
     "ffrf", {U(-2, 2), U(-3, 3), U(-3, 3), U(-3, 3)}, NULL},
    /* examples/hmlstm.c: the Adam step. */
    {"adam", "adam", 5, 3,
     "void adam(T p, T g, T m, T v, T lr, T *p_out, T *m_out, T *v_out)\n"
     "{\n"
     "    T m2 = m * (real)0.9 + g * (real)0.1;\n"
     "    T v2 = v * (real)0.999 + g * g * (real)0.001;\n"
     "    *p_out = p - lr * m2 / (sqrt(v2) + (real)1e-8);\n"
     "    *m_out = m2;\n"
     "    *v_out = v2;\n"
     "}\n",
     "void adam(T p, T g, T m, T v, T lr, T *p_out, T *m_out, T *v_out)\n"
     "{\n"
     "    T m2 = ad_add(ad_mulr(m, (real)0.9), ad_mulr(g, (real)0.1));\n"
     "    T v2 = ad_add(ad_mulr(v, (real)0.999), ad_mulr(ad_mul(g, g), (real)0.001));\n"
     "    *p_out = ad_sub(p, ad_div(ad_mul(lr, m2), ad_addr(ad_sqrt(v2), (real)1e-8)));\n"
     "    *m_out = m2;\n"
     "    *v_out = v2;\n"
     "}\n",
     "ffffs", {U(-1, 1), U(-1, 1), U(-0.5, 0.5), U(0.01, 1), U(0.001, 0.1)}, NULL},
    /* tests/test_broadcast_kepler.c. `fabs(dE) < 1e-12f` lowers to
     * ad_val(ad_fabs(dE)) < 1e-12f, not fabs(ad_val(dE)): the same value. */
    {"kepler", "kepler", 2, 2,
     "/* Newton's method for E - e sin E = M, from E0 = M + e sin M. */\n"
     "void kepler(T M, T e, T *E_out, T *steps)\n"
     "{\n"
     "    T E = M + e * sin(M);\n"
     "    int it = 0;\n"
     "    while (it < 100) {\n"
     "        T f = E - e * sin(E) - M;\n"
     "        T fp = 1 - e * cos(E);\n"
     "        T dE = f / fp;\n"
     "        E -= dE;\n"
     "        it++;\n"
     "        if (fabs(dE) < 1e-12f)\n"
     "            break;\n"
     "    }\n"
     "    *E_out = E;\n"
     "    *steps = (real)it;\n"
     "}\n",
     "/* Newton's method for E - e sin E = M, from E0 = M + e sin M. */\n"
     "void kepler(T M, T e, T *E_out, T *steps)\n"
     "{\n"
     "    T E = ad_add(M, ad_mul(e, ad_sin(M)));\n"
     "    int it = 0;\n"
     "    while (it < 100) {\n"
     "        T f = ad_sub(ad_sub(E, ad_mul(e, ad_sin(E))), M);\n"
     "        T fp = ad_rsub(1, ad_mul(e, ad_cos(E)));\n"
     "        T dE = ad_div(f, fp);\n"
     "        E = ad_sub(E, dE);\n"
     "        it++;\n"
     "        if (fabs(ad_val(dE)) < 1e-12f)\n"
     "            break;\n"
     "    }\n"
     "    *E_out = E;\n"
     "    *steps = ad_const((real)it);\n"
     "}\n",
     "cr", {U(0, 3.14), U(0, 0.9)}, NULL},
    /* examples/kepler.c, as the example writes it: *iters = it lowers to
     * ad_const(it), which converts it to real as ad_const((real)it) does. */
    {"kepler_example", "kepler", 2, 2,
     "/* Newton's method for E - e sin E = M, from E0 = M + e sin M. */\n"
     "void kepler(T M, T e, T *E_out, T *iters)\n"
     "{\n"
     "    T E = M + e * sin(M);\n"
     "    int it = 0;\n"
     "    while (it < 50) {\n"
     "        T f  = E - e * sin(E) - M;   /* E - e sin E - M */\n"
     "        T fp = 1 - e * cos(E);       /* 1 - e cos E     */\n"
     "        T dE = f / fp;\n"
     "        E -= dE;\n"
     "        it++;\n"
     "        if (fabs(dE) < (real)1e-12)\n"
     "            break;\n"
     "    }\n"
     "    *E_out = E;\n"
     "    *iters = it;   /* an int: a constant, zero partials */\n"
     "}\n",
     "/* Newton's method for E - e sin E = M, from E0 = M + e sin M. */\n"
     "void kepler(T M, T e, T *E_out, T *iters)\n"
     "{\n"
     "    T E = ad_add(M, ad_mul(e, ad_sin(M)));\n"
     "    int it = 0;\n"
     "    while (it < 50) {\n"
     "        T f  = ad_sub(ad_sub(E, ad_mul(e, ad_sin(E))), M);   /* E - e sin E - M */\n"
     "        T fp = ad_rsub(1, ad_mul(e, ad_cos(E)));              /* 1 - e cos E     */\n"
     "        T dE = ad_div(f, fp);\n"
     "        E = ad_sub(E, dE);\n"
     "        it++;\n"
     "        if (fabs(ad_val(dE)) < (real)1e-12)\n"
     "            break;\n"
     "    }\n"
     "    *E_out = E;\n"
     "    *iters = ad_const((real)it);   /* a constant: zero partials */\n"
     "}\n",
     "cr", {U(0, 3.14), U(0, 0.9)}, NULL},
    /* tests/test_broadcast_paper_p.c */
    {"paper_p", "p", 3, 2,
     "void p(T A, T alpha, T a, T *y0, T *y1)\n"
     "{\n"
     "    *y0 = alpha * A + sin(a);\n"
     "    *y1 = exp(A * a) * alpha;\n"
     "    if (A < 0)\n"
     "        *y1 = -*y1;\n"
     "}\n",
     "void p(T A, T alpha, T a, T *y0, T *y1)\n"
     "{\n"
     "    *y0 = ad_add(ad_mul(alpha, A), ad_sin(a));\n"
     "    *y1 = ad_mul(ad_exp(ad_mul(A, a)), alpha);\n"
     "    if (ad_val(A) < 0)\n"
     "        *y1 = ad_neg(*y1);\n"
     "}\n",
     "fsr", {U(-2, 2), U(0.2, 1.5), U(-1, 1)}, NULL},
    /* examples/paper_p.c */
    {"paper_p_example", "p", 3, 2,
     "void p(T A, T alpha, T a, T *y0, T *y1)\n"
     "{\n"
     "    T d = A - a;\n"
     "    if (d > 0)\n"
     "        *y0 = alpha * (d * d);\n"
     "    else\n"
     "        *y0 = 0;\n"
     "    *y1 = a * tanh(alpha * A);\n"
     "}\n",
     "void p(T A, T alpha, T a, T *y0, T *y1)\n"
     "{\n"
     "    T d = ad_sub(A, a);\n"
     "    if (ad_val(d) > 0)\n"
     "        *y0 = ad_mul(alpha, ad_mul(d, d));\n"
     "    else\n"
     "        *y0 = ad_const(0);\n"
     "    *y1 = ad_mul(a, ad_tanh(ad_mul(alpha, A)));\n"
     "}\n",
     "fsr", {U(-2, 2), U(0.2, 1.5), U(-1, 1)}, NULL},
    /* examples/quickstart.c, canonically: x + x and (T)1 as the ad_ form has them. */
    {"quickstart", "f", 2, 1,
     "T f(T x, T a)\n"
     "{\n"
     "    if (x < 1)\n"
     "        return a * (x * x);\n"
     "    return a * (x + x - (T)1);\n"
     "}\n",
     "T f(T x, T a)\n"
     "{\n"
     "    if (ad_val(x) < 1)\n"
     "        return ad_mul(a, ad_mul(x, x));\n"
     "    return ad_mul(a, ad_sub(ad_add(x, x), ad_const(1)));\n"
     "}\n",
     "fs", {U(-2, 3), U(0.2, 2)}, NULL},
    /* ... and as the example writes it: a * (2 * x - 1) lowers to
     * ad_mul(a, ad_subr(ad_mulr(x, 2), 1)); 2x = x + x and d - 0 = d exactly. */
    {"quickstart_example", "f", 2, 1,
     "T f(T x, T a)\n"
     "{\n"
     "    if (x < 1)\n"
     "        return a * (x * x);\n"
     "    return a * (2 * x - 1);\n"
     "}\n",
     "T f(T x, T a)\n"
     "{\n"
     "    if (ad_val(x) < 1)\n"
     "        return ad_mul(a, ad_mul(x, x));\n"
     "    return ad_mul(a, ad_sub(ad_add(x, x), ad_const(1)));\n"
     "}\n",
     "fs", {U(-2, 3), U(0.2, 2)}, NULL},
    /* tests/test_gradcheck.c: a helper, a branch, two outputs ... */
    {"gradcheck_good", "f", 3, 2,
     "T softclip(T x, T c) { return c * tanh(x / c); }\n"
     "void f(T x, T c, T w, T *y0, T *y1)\n"
     "{\n"
     "    T s = softclip(x, c);\n"
     "    if (x > 0)\n"
     "        *y0 = s * w;\n"
     "    else\n"
     "        *y0 = exp(x) * square(w);\n"
     "    *y1 = log1p(square(x)) + atan2(w, c);\n"
     "}\n",
     "T softclip(T x, T c) { return ad_mul(c, ad_tanh(ad_div(x, c))); }\n"
     "void f(T x, T c, T w, T *y0, T *y1)\n"
     "{\n"
     "    T s = softclip(x, c);\n"
     "    if (ad_val(x) > 0)\n"
     "        *y0 = ad_mul(s, w);\n"
     "    else\n"
     "        *y0 = ad_mul(ad_exp(x), ad_square(w));\n"
     "    *y1 = ad_add(ad_log1p(ad_square(x)), ad_atan2(w, c));\n"
     "}\n",
     "frf", {U(-2, 2), U(0.5, 2), U(-2, 2)}, NULL},
    /* ... the helper alone, as the kernel function ... */
    {"gradcheck_softclip", "softclip", 2, 1,
     "T softclip(T x, T c) { return c * tanh(x / c); }\n",
     "T softclip(T x, T c) { return ad_mul(c, ad_tanh(ad_div(x, c))); }\n",
     "fc", {U(-2, 2), U(0.5, 2)}, NULL},
    /* ... and the kernel with a dropped partial: (T)ad_val(x) is ad_const(ad_val(x)). */
    {"gradcheck_bad", "g", 2, 1,
     "T g(T x, T w) { return x * (T)ad_val(x) + w * x; }\n",
     "T g(T x, T w) { return ad_add(ad_mul(x, ad_const(ad_val(x))), ad_mul(w, x)); }\n",
     "fr", {U(-2, 2), U(-2, 2)}, NULL},
    /* tests/test_tape_random.c */
    {"tape_rk1", "rk1", 1, 1,
     "T rk1(T x)\n"
     "{\n"
     "    if (x > 0)\n"
     "        return 1 / (exp(-x) + 1);\n"
     "    T e = exp(x);\n"
     "    return e / (e + 1);\n"
     "}\n",
     "T rk1(T x)\n"
     "{\n"
     "    if (ad_val(x) > 0)\n"
     "        return ad_rdiv(1, ad_addr(ad_exp(ad_neg(x)), 1));\n"
     "    T e = ad_exp(x);\n"
     "    return ad_div(e, ad_addr(e, 1));\n"
     "}\n",
     "f", {U(-4, 4)}, NULL},
    {"tape_rk2", "rk2", 2, 1,
     "T rk2(T x, T y) { return x * sin(y) + tanh(y) * 0.5; }\n",
     "T rk2(T x, T y) { return ad_add(ad_mul(x, ad_sin(y)), ad_mulr(ad_tanh(y), 0.5)); }\n",
     "fr", {U(-2, 2), U(-2, 2)}, NULL},
    {"tape_rk3", "rk3", 3, 2,
     "void rk3(T a, T b, T c, T *y0, T *y1)\n"
     "{\n"
     "    *y0 = tanh(a * b + c);\n"
     "    *y1 = a * sigmoid(c) - b * 0.5;\n"
     "}\n",
     "void rk3(T a, T b, T c, T *y0, T *y1)\n"
     "{\n"
     "    *y0 = ad_tanh(ad_add(ad_mul(a, b), c));\n"
     "    *y1 = ad_sub(ad_mul(a, ad_sigmoid(c)), ad_mulr(b, 0.5));\n"
     "}\n",
     "fcs", {U(-2, 2), U(-2, 2), U(-2, 2)}, NULL},
    {"tape_rk4", "rk4", 4, 1,
     "T rk4(T a, T b, T c, T d) { return a * cos(b) + c * 0.5 * tanh(d); }\n",
     "T rk4(T a, T b, T c, T d) { return ad_add(ad_mul(a, ad_cos(b)), ad_mul(ad_mulr(c, 0.5), ad_tanh(d))); }\n",
     "frcf", {U(-2, 2), U(-2, 2), U(-2, 2), U(-2, 2)}, NULL},
    /* tests/test_threads.c */
    {"threads_cell", "cell", 3, 1,
     "T cell(T h, T b, T m)\n"
     "{\n"
     "    T z = h + b;\n"
     "    if (m > 0)\n"
     "        return tanh(z);\n"
     "    return sigmoid(z) * z;\n"
     "}\n",
     "T cell(T h, T b, T m)\n"
     "{\n"
     "    T z = ad_add(h, b);\n"
     "    if (ad_val(m) > 0)\n"
     "        return ad_tanh(z);\n"
     "    return ad_mul(ad_sigmoid(z), z);\n"
     "}\n",
     "frr", {U(-2, 2), U(-1, 1), U(-1, 1)}, NULL},
    /* tests/test_lean_pipeline.c (its hm_cell is hm_cell above) */
    {"lean_two", "two", 2, 2,
     "void two(T a, T b, T *y0, T *y1)\n"
     "{\n"
     "    *y0 = a * b;\n"
     "    *y1 = a + exp(b);\n"
     "}\n",
     "void two(T a, T b, T *y0, T *y1)\n"
     "{\n"
     "    *y0 = ad_mul(a, b);\n"
     "    *y1 = ad_add(a, ad_exp(b));\n"
     "}\n",
     "fr", {U(-2, 2), U(-2, 2)}, NULL},
    {"lean_axpy", "axpy", 3, 1,
     "T axpy(T a, T b, T c) { return a * b + sin(c); }\n",
     "T axpy(T a, T b, T c) { return ad_add(ad_mul(a, b), ad_sin(c)); }\n",
     "cfr", {U(-2, 2), U(-2, 2), U(-2, 2)}, NULL},
    /* tests/test_context_misuse.c (test_bad_input.c has it on four lines) */
    {"sq_plus", "sq_plus", 2, 1,
     "T sq_plus(T a, T b) { return a * a + b; }\n",
     "T sq_plus(T a, T b) { return ad_add(ad_mul(a, a), b); }\n",
     "fr", {U(-2, 2), U(-2, 2)}, NULL},
    /* tests/test_limits.c */
    {"sq", "sq", 1, 1, "T sq(T x) { return x * x; }", "T sq(T x) { return ad_mul(x, x); }", "f", {U(-2, 2)}, NULL},
    /* tests/sanitizers/leak_probe.c */
    {"twice", "twice", 1, 1, "T twice(T x) { return x + x; }\n", "T twice(T x) { return ad_add(x, x); }\n", "f",
     {U(-2, 2)}, NULL},
    /* tests/test_bad_input.c: a branch on a special value */
    {"bad_input_branch", "f", 2, 1,
     "T f(T x, T w)\n"
     "{\n"
     "    if (x > 100) return w * (T)2;\n"
     "    return x * w;\n"
     "}\n",
     "T f(T x, T w)\n"
     "{\n"
     "    if (ad_val(x) > 100) return ad_mul(w, ad_const(2));\n"
     "    return ad_mul(x, w);\n"
     "}\n",
     "fs", {U(0, 200), U(-2, 2)}, NULL},
    /* tests/test_broadcast_errors.c */
    {"add2", "add2", 2, 1,
     "T add2(T a, T b)\n"
     "{\n"
     "    return a * b + sin(a);\n"
     "}\n",
     "T add2(T a, T b)\n"
     "{\n"
     "    return ad_add(ad_mul(a, b), ad_sin(a));\n"
     "}\n",
     "fr", {U(-2, 2), U(-2, 2)}, NULL},
    {"two_neg", "two", 1, 2, "void two(T a, T *y0, T *y1) { *y0 = a; *y1 = -a; }\n",
     "void two(T a, T *y0, T *y1) { *y0 = a; *y1 = ad_neg(a); }\n", "f", {U(-2, 2)}, NULL},
    /* tests/test_broadcast_random.c: make_source(3 inputs, 2 outputs) */
    {"random_rk3", "rk3", 3, 2,
     "void rk3(T x0, T x1, T x2, T *y0, T *y1)\n"
     "{\n"
     "    T s = x0 * 0.25f;\n"
     "    s += x1 * -0.28125f;\n"
     "    s += x2 * 0.3125f;\n"
     "    T r;\n"
     "    if (x0 > 0)\n"
     "        r = sin(s) * exp(x2 * 0.25f);\n"
     "    else\n"
     "        r = x0 * cos(s) + x2 * 0.5f;\n"
     "    *y0 = r;\n"
     "    *y1 = tanh(x2) * s;\n"
     "}\n",
     "void rk3(T x0, T x1, T x2, T *y0, T *y1)\n"
     "{\n"
     "    T s = ad_mulr(x0, 0.25f);\n"
     "    s = ad_add(s, ad_mulr(x1, -0.28125f));\n"
     "    s = ad_add(s, ad_mulr(x2, 0.3125f));\n"
     "    T r;\n"
     "    if (ad_val(x0) > 0)\n"
     "        r = ad_mul(ad_sin(s), ad_exp(ad_mulr(x2, 0.25f)));\n"
     "    else\n"
     "        r = ad_add(ad_mul(x0, ad_cos(s)), ad_mulr(x2, 0.5f));\n"
     "    *y0 = r;\n"
     "    *y1 = ad_mul(ad_tanh(x2), s);\n"
     "}\n",
     "crf", {U(-2, 2), U(-2, 2), U(-2, 2)}, NULL},
    /* tests/test_variant_cache.c: sum_of_squares_source with 4 inputs */
    {"variant_cache", "f", 4, 1,
     "T f(T x0, T x1, T x2, T x3)\n"
     "{\n"
     "    T s = 0;\n"
     "    s += square(x0) * (real)1;\n"
     "    s += square(x1) * (real)2;\n"
     "    s += square(x2) * (real)3;\n"
     "    s += square(x3) * (real)4;\n"
     "    return s;\n"
     "}\n",
     "T f(T x0, T x1, T x2, T x3)\n"
     "{\n"
     "    T s = ad_const(0);\n"
     "    s = ad_add(s, ad_mulr(ad_square(x0), (real)1));\n"
     "    s = ad_add(s, ad_mulr(ad_square(x1), (real)2));\n"
     "    s = ad_add(s, ad_mulr(ad_square(x2), (real)3));\n"
     "    s = ad_add(s, ad_mulr(ad_square(x3), (real)4));\n"
     "    return s;\n"
     "}\n",
     "ffff", {U(-2, 2), U(-2, 2), U(-2, 2), U(-2, 2)}, NULL},
    /* bench/bench_arity.c: kernel_source(4) */
    {"bench_arity", "f", 4, 1,
     "T f(T x0, T x1, T x2, T x3)\n"
     "{\n"
     "    T y = 0;\n"
     "    y += sin(x0) * x1;\n"
     "    y += sin(x1) * x2;\n"
     "    y += sin(x2) * x3;\n"
     "    y += sin(x3) * x0;\n"
     "    return y;\n"
     "}\n",
     "T f(T x0, T x1, T x2, T x3)\n"
     "{\n"
     "    T y = ad_const(0);\n"
     "    y = ad_add(y, ad_mul(ad_sin(x0), x1));\n"
     "    y = ad_add(y, ad_mul(ad_sin(x1), x2));\n"
     "    y = ad_add(y, ad_mul(ad_sin(x2), x3));\n"
     "    y = ad_add(y, ad_mul(ad_sin(x3), x0));\n"
     "    return y;\n"
     "}\n",
     "ffrc", {U(-2, 2), U(-2, 2), U(-2, 2), U(-2, 2)}, NULL},
    /* tests/test_disk_cache_trust.c, FACTOR defined here instead of in an
     * included header. */
    {"times_factor", "times_factor", 1, 1,
     "#define FACTOR 3\n"
     "T times_factor(T x) { return (T)FACTOR * x; }\n",
     "#define FACTOR 3\n"
     "T times_factor(T x) { return ad_mul(ad_const(FACTOR), x); }\n",
     "f", {U(-2, 2)}, NULL},
    /* tests/test_kernel_names.c: user macros (one of them function-like,
     * named min) and functions named like the wrapper's names. */
    {"names_macros", "f", 2, 1,
     "#define e 2.718f\n"
     "#define r 3\n"
     "#define n 2\n"
     "#define v 0.5f\n"
     "#define k 1\n"
     "#define cl 4\n"
     "#define first 0\n"
     "#define last 1\n"
     "#define c0 1\n"
     "#define c1 1\n"
     "#define d0 1\n"
     "#define a0 1\n"
     "#define a1 1\n"
     "#define b0 1\n"
     "#define x0 1\n"
     "#define x1 1\n"
     "#define y0 1\n"
     "#define g0 1\n"
     "#define g1 1\n"
     "#define p0_0 1\n"
     "#define adj0 1\n"
     "#define dim0 1\n"
     "#define dim1 1\n"
     "#define s1_0 1\n"
     "#define s1_1 1\n"
     "#define col0 1\n"
     "#define next_row 1\n"
     "#define row0_1 1\n"
     "#define row1_1 1\n"
     "#define row0_r 1\n"
     "#define min(p, q) p_is_not_q\n"
     "#define pop 1\n"
     "#define vectorize 1\n"
     "#define vectorize_width 1\n"
     "#define assume_safety 1\n"
     "#define interleave 1\n"
     "#define disable 1\n"
     "T f(T x, T y) { return x * y * (real)r + e * v * n; }\n",
     "#define e 2.718f\n"
     "#define r 3\n"
     "#define n 2\n"
     "#define v 0.5f\n"
     "#define k 1\n"
     "#define cl 4\n"
     "#define first 0\n"
     "#define last 1\n"
     "#define c0 1\n"
     "#define c1 1\n"
     "#define d0 1\n"
     "#define a0 1\n"
     "#define a1 1\n"
     "#define b0 1\n"
     "#define x0 1\n"
     "#define x1 1\n"
     "#define y0 1\n"
     "#define g0 1\n"
     "#define g1 1\n"
     "#define p0_0 1\n"
     "#define adj0 1\n"
     "#define dim0 1\n"
     "#define dim1 1\n"
     "#define s1_0 1\n"
     "#define s1_1 1\n"
     "#define col0 1\n"
     "#define next_row 1\n"
     "#define row0_1 1\n"
     "#define row1_1 1\n"
     "#define row0_r 1\n"
     "#define min(p, q) p_is_not_q\n"
     "#define pop 1\n"
     "#define vectorize 1\n"
     "#define vectorize_width 1\n"
     "#define assume_safety 1\n"
     "#define interleave 1\n"
     "#define disable 1\n"
     "T f(T x, T y) { return ad_addr(ad_mulr(ad_mul(x, y), (real)r), e * v * n); }\n",
     "fr", {U(-2, 2), U(-2, 2)}, NULL},
    {"names_e", "e", 2, 1,
     "real a0(real q) { return q * 2; }\n"
     "real first(real q) { return q + 1; }\n"
     "T e(T x, T y) { return x * y * (real)3 + first(a0((real)0.25)); }\n",
     "real a0(real q) { return q * 2; }\n"
     "real first(real q) { return q + 1; }\n"
     "T e(T x, T y) { return ad_addr(ad_mulr(ad_mul(x, y), (real)3), first(a0((real)0.25))); }\n",
     "fr", {U(-2, 2), U(-2, 2)}, NULL},
    {"names_r", "r", 2, 1, "T r(T x, T y) { return x * y * (real)3; }\n",
     "T r(T x, T y) { return ad_mulr(ad_mul(x, y), (real)3); }\n", "fr", {U(-2, 2), U(-2, 2)}, NULL},
    {"names_n", "n", 2, 1, "T n(T x, T y) { return x * (real)3 * y + (real)-1; }\n",
     "T n(T x, T y) { return ad_addr(ad_mul(ad_mulr(x, (real)3), y), (real)-1); }\n", "fr",
     {U(-2, 2), U(-2, 2)}, NULL},
    /* tests/test_vocabulary.c, built by vocab_sources() */
    {"vocabulary", "vocab", 3, 1, VOCAB_PLAIN, VOCAB_AD, "fff", {U(0, 0), U(0, 0), U(0, 0)}, vocab_value},
};
#define N_PAIRS ((int)(sizeof PAIRS / sizeof *PAIRS))

#undef U
#undef I

#endif
