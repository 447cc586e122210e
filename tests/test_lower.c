/* SPDX-License-Identifier: Apache-2.0 */
/* The plain-syntax front end (clmad_lower_source): the canonical rules, the
 * bytes and lines it leaves alone, its errors at the user's line and
 * column, and the sources it leaves to the compiler. Values and partials of
 * plain kernels against their ad_ forms are in test_plain_syntax and
 * test_plain_random. The cases are functions run by one Criterion test (end
 * of file): a test is a process, and a process per case cost seconds each
 * under valgrind. */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lowered text of `return EXPR;` in a function of T a, b; real r; int n. */
static char *lowered_return(const char *expr)
{
    char src[512], *out = NULL;
    snprintf(src, sizeof src, "T f(T a, T b, real r, int n)\n{\n    return %s;\n}\n", expr);
    clmad_status st = clmad_lower_source(src, &out);
    cr_assert_eq(st, CLMAD_OK, "%s%s: %s", test_case(), expr, clmad_last_error(NULL));
    const char *ret = strstr(out, "return ");
    cr_assert(ret, "%s%s: no return in\n%s", test_case(), expr, out);
    ret += strlen("return ");
    char *copy = strndup(ret, (size_t)(strchr(ret, ';') - ret));
    clmad_string_free(out);
    return copy;
}

static const struct {
    const char *plain, *lowered;
} RULES[] = {
    {"a + b", "ad_add(a, b)"},
    {"a - b", "ad_sub(a, b)"},
    {"a * b", "ad_mul(a, b)"},
    {"a / b", "ad_div(a, b)"},
    {"a + r", "ad_addr(a, r)"},
    {"r + a", "ad_addr(a, r)"},
    {"a - 0.5f", "ad_subr(a, 0.5f)"},
    {"1 - a", "ad_rsub(1, a)"},
    {"2 * a", "ad_mulr(a, 2)"},
    {"a * n", "ad_mulr(a, n)"},
    {"a / 3.0f", "ad_divr(a, 3.0f)"},
    {"r / a", "ad_rdiv(r, a)"},
    {"-a", "ad_neg(a)"},
    {"+a", "a"},
    {"(a + b) * r", "ad_mulr(ad_add(a, b), r)"},
    {"a * b + 0.5", "ad_addr(ad_mul(a, b), 0.5)"},
    {"r * 2", "ad_const(r * 2)"},
    {"n", "ad_const(n)"},
    {"exp(a)", "ad_exp(a)"},
    {"tanh(a * b)", "ad_tanh(ad_mul(a, b))"},
    {"sigmoid(a)", "ad_sigmoid(a)"},
    {"sigmoid(r) * a", "ad_mulr(a, ad_val(ad_sigmoid(ad_const(r))))"},
    {"exp(r) * a", "ad_mulr(a, exp(r))"},
    {"pow(a, b)", "ad_pow(a, b)"},
    {"pow(a, 2.5f)", "ad_powr(a, 2.5f)"},
    {"pow(2, a)", "ad_rpow(2, a)"},
    {"pown(a, n)", "ad_pown(a, n)"},
    {"fmax(a, 0)", "ad_fmax(a, ad_const(0))"},
    {"min(r, b)", "ad_fmin(ad_const(r), b)"},
    {"atan2(a, b)", "ad_atan2(a, b)"},
    {"fma(a, b, r)", "ad_fma(a, b, ad_const(r))"},
    {"clamp(a, -1.0f, 1.0f)", "ad_clamp(a, -1.0f, 1.0f)"},
    {"floor(a)", "ad_const(floor(ad_val(a)))"},
    {"a > 0 ? a : r", "ad_val(a) > 0 ? a : ad_const(r)"},
    {"isnan(a) ? b : a", "isnan(ad_val(a)) ? b : a"},
    {"!a && b < r ? a : b", "!ad_val(a) && ad_val(b) < r ? a : b"},
    {"ad_mul(a, 2 * b)", "ad_mul(a, ad_mulr(b, 2))"},
    {"ad_mul(a, 2)", "ad_mul(a, ad_const(2))"},
    {"(T)r * a", "ad_mul(ad_const(r), a)"},
    {"M_PI_F * a", "ad_mulr(a, M_PI_F)"},
};

static void canonical_rules(void)
{
    for (size_t k = 0; k < sizeof RULES / sizeof *RULES; k++) {
        char *got = lowered_return(RULES[k].plain);
        cr_expect_str_eq(got, RULES[k].lowered, "%s%s: %s, expected %s", test_case(), RULES[k].plain, got,
                         RULES[k].lowered);
        free(got);
    }
}

static void expect_lowered(const char *src, const char *expected)
{
    char *out = NULL;
    clmad_status st = clmad_lower_source(src, &out);
    cr_assert_eq(st, CLMAD_OK, "%s%s", test_case(), clmad_last_error(NULL));
    cr_expect_str_eq(out, expected, "%slowered:\n%s\nexpected:\n%s", test_case(), out, expected);
    clmad_string_free(out);
}

static void statements_and_declarations(void)
{
    expect_lowered("T f(T x, T y)\n"
                   "{\n"
                   "    T s = 0, t = x;   /* a comment stays */\n"
                   "    real w = 0.5f;\n"
                   "    for (int k = 0; k < 3; k++)\n"
                   "        s += w * t;\n"
                   "    t *= y;\n"
                   "    while (fabs(t) > 1e-3f && s < 10)\n"
                   "        t /= 2;\n"
                   "    if (x) s -= 1;\n"
                   "    return s;\n"
                   "}\n",
                   "T f(T x, T y)\n"
                   "{\n"
                   "    T s = ad_const(0), t = x;   /* a comment stays */\n"
                   "    real w = 0.5f;\n"
                   "    for (int k = 0; k < 3; k++)\n"
                   "        s = ad_add(s, ad_mulr(t, w));\n"
                   "    t = ad_mul(t, y);\n"
                   "    while (ad_val(ad_fabs(t)) > 1e-3f && ad_val(s) < 10)\n"
                   "        t = ad_divr(t, 2);\n"
                   "    if (ad_val(x)) s = ad_subr(s, 1);\n"
                   "    return s;\n"
                   "}\n");
    /* Several outputs, a helper called before its definition (its real
     * parameter takes a real; its T parameter gets ad_const), an array. */
    expect_lowered("T h(T a, real w);\n"
                   "void g(T a, T b, T *y0, T *y1)\n"
                   "{\n"
                   "    T v[2] = {a, 1};\n"
                   "    *y0 = h(2, 0.5f) * v[1];\n"
                   "    y1[0] = -*y0;\n"
                   "}\n"
                   "T h(T a, real w) { return a * w; }\n",
                   "T h(T a, real w);\n"
                   "void g(T a, T b, T *y0, T *y1)\n"
                   "{\n"
                   "    T v[2] = {a, ad_const(1)};\n"
                   "    *y0 = ad_mul(h(ad_const(2), 0.5f), v[1]);\n"
                   "    y1[0] = ad_neg(*y0);\n"
                   "}\n"
                   "T h(T a, real w) { return ad_mulr(a, w); }\n");
}

/* Sources in the ad_ vocabulary, with macros, #if, pragmas and functions
 * named like the wrapper's old locals, come back byte for byte. */
static void ad_sources_unchanged(void)
{
    const char *sources[] = {
        "T cell_update(T z, T zb, T c, T f, T i, T g)\n"
        "{\n"
        "    if (ad_val(z) == 1)  return ad_mul(ad_sigmoid(i), ad_tanh(g));\n"
        "    if (ad_val(zb) == 0) return c;\n"
        "    return ad_add(ad_mul(ad_sigmoid(f), c), ad_mul(ad_sigmoid(i), ad_tanh(g)));\n"
        "}\n",
        "#define e 2.718f\n#define v 3\n#define n 1.5f\n"
        "T first(T x) { return x; }\n"
        "T f(T x, T y) { return ad_addr(ad_mulr(ad_mul(x, y), (real)2), e * v * n); }\n",
        "void kepler(T M, T e, T *E_out, T *steps)\n{\n    T E = ad_add(M, ad_mul(e, ad_sin(M)));\n"
        "    int it = 0;\n#pragma unroll 1\n    for (; it < 50; it++) {\n"
        "        T dE = ad_div(ad_sub(ad_sub(E, ad_mul(e, ad_sin(E))), M), ad_rsub(1, ad_mul(e, ad_cos(E))));\n"
        "        E = ad_sub(E, dE);\n        if (fabs(ad_val(dE)) < 1e-12f)\n            break;\n    }\n"
        "    *E_out = E;\n    *steps = ad_const((real)it);\n}\n",
        "#if CLMAD_REAL_DOUBLE\n#define EPS 1e-12\n#else\n#define EPS 1e-6f\n#endif\n"
        "__constant real W[3] = {0.25, 0.5, 0.25};\n"
        "typedef struct { real a, b; } pair;\n"
        "static real weight(int k) { return W[k % 3]; }\n"
        "T r(T x) { pair p = {1, 2}; return ad_addr(ad_mulr(x, weight(1) * p.a), EPS); }\n",
    };
    for (size_t k = 0; k < sizeof sources / sizeof *sources; k++)
        expect_lowered(sources[k], sources[k]);
}

/* Every line keeps its number: a multi-line expression gives its newlines
 * back after its rewrite. */
static void lines_kept(void)
{
    expect_lowered("T f(T x,\n      T y)\n{\n    return x *\n           y\n           + 1;\n}\nT g(T x) { return -x; }\n",
                   "T f(T x,\n      T y)\n{\n    return ad_addr(ad_mul(x, y), 1)\n\n;\n}\nT g(T x) { return ad_neg(x); }\n");
}

static void expect_error(const char *src, const char *position, const char *needle)
{
    char *out = (char *)"sentinel";
    clmad_status st = clmad_lower_source(src, &out);
    const char *msg = clmad_last_error(NULL);
    cr_assert_eq(st, CLMAD_ERR_BUILD, "%s%s -> %s", test_case(), src, clmad_status_string(st));
    cr_expect(out == NULL, "%s%s", test_case(), src);
    cr_expect(test_contains(msg, position), "%s%s\nlacks %s: %s", test_case(), src, position, msg);
    cr_expect(test_contains(msg, needle), "%s%s\nlacks %s: %s", test_case(), src, needle, msg);
}

static void errors_at_the_users_position(void)
{
    expect_error("T f(T x, T y)\n{\n    return x % y;\n}\n", "source:3:14: error:", "operator '%' on T");
    expect_error("T f(T x) { int n = 2; return x << n; }", "source:1:32: error:", "operator '<<' on T");
    expect_error("T f(T x) { return ~x; }", "source:1:19: error:", "operator '~' on T");
    expect_error("T f(T x) { x++; return x; }", "source:1:13: error:", "'++' on T");
    expect_error("T f(T x) { T y = x; --y; return y; }", "source:1:21: error:", "'--' on T");
    expect_error("T f(T x) { x |= 1; return x; }", "source:1:14: error:", "operator '|=' on T");
    expect_error("T f(T x)\n{\n    real v = x;\n    return v;\n}\n", "source:3:14: error:", "write ad_val");
    expect_error("T f(T x) { real v = 0; v += x; return x; }", "source:1:29: error:", "declare it T");
    expect_error("T f(T x) { return (float)x; }", "source:1:19: error:", "a cast of T");
    expect_error("real g(T x) { return x; }", "source:1:22: error:", "the value returned is T");
    expect_error("T g(real w) { return w; } T f(T x) { return g(x); }", "source:1:47: error:",
                 "argument 1 of g is T");
    expect_error("T f(T x) { real a[2] = {1, 2}; return a[x] * x; }", "source:1:41: error:", "T used as an index");
    expect_error("T f(T x) { switch (x) { default: return x; } }", "source:1:20: error:", "switch on T");
    expect_error("T f(T x) { return lgamma(x); }", "source:1:19: error:", "lgamma has no derivative rule");
    expect_error("T f(T x) { return native_exp(x); }", "source:1:19: error:", "no derivative rule");
    expect_error("T f(T x, T y) { return clamp(x, y, 1); }", "source:1:24: error:", "clamp applies to T");
    expect_error("T f(T x) { return pown(x, x); }", "source:1:27: error:", "needed here");
    expect_error("T f(T x) { return exp(x, x); }", "source:1:19: error:", "exp takes 1 argument");
    /* The line is quoted with a caret under the column. */
    expect_error("T f(T x) { return x ^ x; }", "T f(T x) { return x ^ x; }\n                    ^", "operator '^'");
}

/* k is x * y + 0.5: its values and d/dx = y, d/dy = x. */
static void expect_first_program(clmad_context *ctx, clmad_kernel *k)
{
    const double xs[3] = {1, -2, 0.25}, ys[3] = {3, 0.5, -4};
    double v[3], dx[3], dy[3];
    test_run2(ctx, k, xs, ys, 3, v, dx, dy);
    for (int e = 0; e < 3; e++) {
        cr_expect_eq(v[e], xs[e] * ys[e] + 0.5, "%svalue %d: %g, expected %g", test_case(), e, v[e],
                     xs[e] * ys[e] + 0.5);
        cr_expect_eq(dx[e], ys[e], "%sd/dx %d: %g, expected %g", test_case(), e, dx[e], ys[e]);
        cr_expect_eq(dy[e], xs[e], "%sd/dy %d: %g, expected %g", test_case(), e, dy[e], xs[e]);
    }
}

/* A UTF-8 byte order mark (written by some editors, invisible in them) is
 * skipped: the lowered source leaves it out, and lines and columns count
 * as the editor shows them. */
static void byte_order_mark_skipped(void)
{
    expect_lowered("\xEF\xBB\xBFT f(T x, T y)\n{\n    return x * y + 0.5;\n}\n",
                   "T f(T x, T y)\n{\n    return ad_addr(ad_mul(x, y), 0.5);\n}\n");
    expect_error("\xEF\xBB\xBFT f(T x) { return x % x; }", "source:1:21: error:", "operator '%' on T");
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "\xEF\xBB\xBFT f(T x, T y) { return x * y + 0.5; }\n", "f", 2, 1, &k));
    expect_first_program(ctx, k);
    clmad_kernel_release(k);
    /* The position of a compiler's error is the user's too. */
    const char *wrong = "\xEF\xBB\xBFT f(T x)\n{\n    real r = undeclared;\n    return x;\n}\n";
    cr_assert_eq(clmad_kernel_create(ctx, wrong, "f", 1, 1, &k), CLMAD_ERR_BUILD);
    cr_expect(test_contains(clmad_last_error(ctx), "source:3:14"), "%s%s", test_case(), clmad_last_error(ctx));
    clmad_context_release(ctx);
}

/* OpenCL C forbids recursion; POCL's compiler took a recursive kernel at
 * creation and killed the process later. The front end refuses it at the
 * call that closes the cycle, by clmad_kernel_create too. */
static void recursion_refused(void)
{
    expect_error("T f(T x)\n{\n    return x > 0 ? f(x - 1) : x;\n}\n", "source:3:20: error:",
                 "function f calls itself (recursion is not allowed in OpenCL C)");
    expect_error("T g(T x);\nT f(T x) { return g(x) * 2; }\nT g(T x) { return x > 0 ? f(x - 1) : x; }\n",
                 "source:3:27: error:", "function g calls itself through f (recursion");
    expect_error("T a(T x);\nT c(T x) { return a(x); }\nT b(T x) { return c(x); }\nT a(T x) { return b(x) + 1; }\n",
                 "source:4:19: error:", "function a calls itself through b, c (recursion");
    /* Calls that repeat without a cycle are fine. */
    expect_lowered("T h(T x) { return x; }\nT g(T x) { return h(x) + h(x); }\nT f(T x) { return g(x) * g(h(x)); }\n",
                   "T h(T x) { return x; }\nT g(T x) { return ad_add(h(x), h(x)); }\n"
                   "T f(T x) { return ad_mul(g(x), g(h(x))); }\n");
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    cr_assert_eq(clmad_kernel_create(ctx, "T f(T x) { return x > 0 ? f(x - 1) : x; }", "f", 1, 1, &k),
                 CLMAD_ERR_BUILD);
    cr_expect(test_contains(clmad_last_error(ctx), "source:1:27: error: function f calls itself"), "%s%s",
              test_case(), clmad_last_error(ctx));
    clmad_context_release(ctx);
}

/* A source outside the front end's subset is compiled as written: a kernel
 * in the ad_ vocabulary still works; clmad_lower_source says why. */
static void unparsed_sources_compile_as_written(void)
{
    const char *src = "T f(T (x)) { return ad_mul(x, x); }\n";
    expect_error(src, "source:1:7: note:", "does not parse");
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, src, "f", 1, 1, &k));
    clmad_kernel_release(k);
    /* ... and a plain one that it could not lower fails with the note. */
    cr_assert_eq(clmad_kernel_create(ctx, "T g(T (x)) { return x * x; }\n", "g", 1, 1, &k), CLMAD_ERR_BUILD);
    cr_expect(test_contains(clmad_last_error(ctx), "since it did not parse it"), "%s%s", test_case(),
              clmad_last_error(ctx));
    cr_expect(test_contains(clmad_last_error(ctx), "parenthesised declarators"), "%s%s", test_case(),
              clmad_last_error(ctx));
    clmad_context_release(ctx);
}

/* Deep nesting is refused (an error, not a note): the front end's stack
 * stays bounded (more shapes in test_lower_scale). */
static void deep_nesting(void)
{
    enum { DEPTH = 100000 };
    const char *shapes[] = {"(", "-", "{"};
    for (int j = 0; j < 3; j++) {
        char *src = malloc(3 * DEPTH + 64), *o = src;
        o += sprintf(o, "T f(T x) %s", j == 2 ? "" : "{ return ");
        for (int d = 0; d < DEPTH; d++)
            *o++ = shapes[j][0];
        o += sprintf(o, "x");
        for (int d = 0; d < DEPTH && j != 1; d++)
            *o++ = j == 0 ? ')' : '}';
        strcpy(o, j == 2 ? "" : "; }");
        char *out = NULL;
        cr_expect_eq(clmad_lower_source(src, &out), CLMAD_ERR_BUILD);
        cr_expect(test_contains(clmad_last_error(NULL), "error: nested more than"), "%sshape %d: %s", test_case(), j,
                  clmad_last_error(NULL));
        free(src);
    }
}

static void null_arguments(void)
{
    char *out = NULL;
    cr_assert_eq(clmad_lower_source(NULL, &out), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_lower_source("T f(T x) { return x; }", NULL), CLMAD_ERR_INVALID_ARGUMENT);
    clmad_string_free(NULL);
}

/* The first program a user writes: d/dx (x*y + 0.5) = y, d/dy = x. */
static void first_program_gradients(void)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T f(T x, T y) { return x * y + 0.5; }\n", "f", 2, 1, &k));
    expect_first_program(ctx, k);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* ---- the test ------------------------------------------------------------- */

/* The front end's cases first; the two that run a kernel read f64 values
 * (test_run2) last: a device without fp64 skips the rest at the first f64
 * tensor. */
Test(lower, all_cases)
{
    RUN_CASE(canonical_rules);
    RUN_CASE(statements_and_declarations);
    RUN_CASE(ad_sources_unchanged);
    RUN_CASE(lines_kept);
    RUN_CASE(errors_at_the_users_position);
    RUN_CASE(recursion_refused);
    RUN_CASE(unparsed_sources_compile_as_written);
    RUN_CASE(deep_nesting);
    RUN_CASE(null_arguments);
    RUN_CASE(byte_order_mark_skipped);
    RUN_CASE(first_program_gradients);
}
