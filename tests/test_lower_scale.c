/* SPDX-License-Identifier: Apache-2.0 */
/* The plain-syntax front end at scale: its cost grows linearly with the
 * length of an expression (it was quadratic: a 20,000-term expression took
 * 39 s and 4.2 GB, issue 24), a long expression lowers to the right values
 * and derivatives, and past its documented limits (include/clmad.h, before
 * clmad_kernel_create) a source is refused with the user's line. */
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- a long expression and its closed-form reference --------------------- */

/* A value with its partials in x and y. */
typedef struct {
    double v, dx, dy;
} dual;

static const char *const TERMS[] = {"x", "y * 0.5", "exp(x)", "(x - y)", "tanh(y)", "sigmoid(x)", "fmax(x, y)",
                                    "square(y)"};
enum { N_TERMS = sizeof TERMS / sizeof *TERMS };
static const char OPS[] = "+-*/";

static dual term(int k, double x, double y)
{
    double e = exp(x), t = tanh(y), s = 1 / (1 + exp(-x));
    switch (k % N_TERMS) {
    case 0: return (dual){x, 1, 0};
    case 1: return (dual){y * 0.5, 0, 0.5};
    case 2: return (dual){e, e, 0};
    case 3: return (dual){x - y, 1, -1};
    case 4: return (dual){t, 0, 1 - t * t};
    case 5: return (dual){s, s * (1 - s), 0};
    case 6: return x >= y ? (dual){x, 1, 0} : (dual){y, 0, 1};
    default: return (dual){y * y, 0, 2 * y};
    }
}

/* "T f(T x, T y) { return t0 + t1 - t2 * t3 / t4 + ...; }", n terms on
 * one line (malloc'd). */
static char *long_expression(int n)
{
    size_t cap = 64 + (size_t)n * 16;
    char *src = malloc(cap), *o = src;
    o += sprintf(o, "T f(T x, T y)\n{\n    return ");
    for (int i = 0; i < n; i++) {
        if (i)
            o += sprintf(o, " %c ", OPS[(i - 1) % 4]);
        o += sprintf(o, "%s", TERMS[i % N_TERMS]);
    }
    strcpy(o, ";\n}\n");
    return src;
}

/* The expression's value and partials with C's precedence, in the order
 * the kernel evaluates: a sum, left to right, of products, left to right. */
static dual long_expression_at(int n, double x, double y)
{
    dual sum = {0, 0, 0}, prod = term(0, x, y);
    for (int i = 1; i < n; i++) {
        dual t = term(i, x, y);
        char op = OPS[(i - 1) % 4];
        if (op == '*') {
            prod = (dual){prod.v * t.v, prod.dx * t.v + prod.v * t.dx, prod.dy * t.v + prod.v * t.dy};
        } else if (op == '/') {
            prod = (dual){prod.v / t.v, (prod.dx - prod.v / t.v * t.dx) / t.v, (prod.dy - prod.v / t.v * t.dy) / t.v};
        } else {
            sum = (dual){sum.v + prod.v, sum.dx + prod.dx, sum.dy + prod.dy};
            prod = op == '-' ? (dual){-t.v, -t.dx, -t.dy} : t;
        }
    }
    return (dual){sum.v + prod.v, sum.dx + prod.dx, sum.dy + prod.dy};
}

/* ---- cost ---------------------------------------------------------------- */

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The least CPU time of `reps` lowerings of src. */
static double lowering_time(const char *src, int reps)
{
    double best = INFINITY;
    for (int r = 0; r < reps; r++) {
        char *out = NULL;
        double t0 = cpu_seconds();
        clmad_status st = clmad_lower_source(src, &out);
        double t = cpu_seconds() - t0;
        cr_assert_eq(st, CLMAD_OK, "%s", clmad_last_error(NULL));
        cr_assert(strstr(out, "ad_"), "nothing was lowered");
        clmad_string_free(out);
        best = t < best ? t : best;
    }
    return best;
}

/* Ten times the terms should take about ten times as long: a bound of 30
 * leaves room for noise and fails a quadratic front end (100). */
Test(lower_scale, linear_in_expression_length)
{
    char *small = long_expression(2000), *large = long_expression(20000);
    double t_small = lowering_time(small, 7), t_large = lowering_time(large, 3);
    double ratio = t_large / fmax(t_small, 1e-6);
    cr_log_info("lowering 2,000 terms: %.4f s, 20,000 terms: %.4f s (ratio %.1f)", t_small, t_large, ratio);
    cr_expect_lt(ratio, 30, "2,000 terms: %.4f s, 20,000 terms: %.4f s: ratio %.1f, not linear", t_small, t_large,
                 ratio);
    free(small);
    free(large);
}

/* ---- a long expression compiles to the right values and derivatives ----- */

Test(lower_scale, long_expression_values_and_derivatives)
{
    enum { N = 150, E = 5 }; /* POCL compiles 2,000 terms in 24 s */
    char *src = long_expression(N);
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    double t0 = cpu_seconds();
    CHECK_OK(ctx, clmad_kernel_create(ctx, src, "f", 2, 1, &k));
    cr_log_info("kernel_create of %d terms: %.2f s", N, cpu_seconds() - t0);
    double xs[E], ys[E], v[E], dx[E], dy[E];
    for (int e = 0; e < E; e++) {
        xs[e] = 0.5 + 0.1 * e;   /* x > y everywhere: fmax is smooth there */
        ys[e] = -0.6 - 0.08 * e; /* no term, no divisor near 0 */
    }
    test_run2(ctx, k, xs, ys, E, v, dx, dy);
    for (int e = 0; e < E; e++) {
        dual want = long_expression_at(N, xs[e], ys[e]);
        double tol = 1e-9 * (1 + fabs(want.v) + fabs(want.dx) + fabs(want.dy));
        cr_expect(fabs(v[e] - want.v) < tol, "value at %d: %.17g, want %.17g", e, v[e], want.v);
        cr_expect(fabs(dx[e] - want.dx) < tol, "d/dx at %d: %.17g, want %.17g", e, dx[e], want.dx);
        cr_expect(fabs(dy[e] - want.dy) < tol, "d/dy at %d: %.17g, want %.17g", e, dy[e], want.dy);
    }
    clmad_kernel_release(k);
    clmad_context_release(ctx);
    free(src);
}

/* ---- limits -------------------------------------------------------------- */

static void expect_refused(const char *src, const char *position, const char *needle)
{
    char *out = NULL;
    cr_assert_eq(clmad_lower_source(src, &out), CLMAD_ERR_BUILD);
    const char *msg = clmad_last_error(NULL);
    cr_expect(test_contains(msg, position), "lacks %s: %.300s", position, msg);
    cr_expect(test_contains(msg, needle), "lacks %s: %.300s", needle, msg);
    cr_expect(!test_contains(msg, "does not parse"), "refused, not left to the compiler: %.300s", msg);
}

/* Sources nested deeper than the limit (parentheses, unary operators,
 * blocks, a ? b : c ? ..., a = b = ...) are refused at the line where the
 * limit is passed, and clmad_kernel_create does not hand them to the
 * compiler: the front end's recursion and the compiler's stay bounded. */
Test(lower_scale, deep_nesting_refused)
{
    enum { DEPTH = 100000 };
    const char *const open[] = {"(", "-", "exp(", "x > 0 ? x : ", "y = ", "if (x > 0) "};
    const char *const close[] = {")", "", ")", "", "", ""};
    for (size_t j = 0; j < sizeof open / sizeof *open; j++) {
        size_t len = strlen(open[j]) + strlen(close[j]);
        char *src = malloc(len * DEPTH + 64), *o = src;
        o += sprintf(o, "T f(T x)\n{\n    T y = x;\n    %s", j == 5 ? "" : "return ");
        for (int d = 0; d < DEPTH; d++)
            o += sprintf(o, "%s", open[j]);
        o += sprintf(o, "x");
        for (int d = 0; d < DEPTH; d++)
            o += sprintf(o, "%s", close[j]);
        strcpy(o, ";\n    return x;\n}\n");
        expect_refused(src, "source:4:", "error: nested more than 200 levels deep");
        free(src);
    }
    /* ... while 150 levels lower. */
    char src[1024], *o = src, *out = NULL;
    o += sprintf(o, "T f(T x) { return ");
    for (int d = 0; d < 150; d++)
        *o++ = '(';
    o += sprintf(o, "x * x");
    for (int d = 0; d < 150; d++)
        *o++ = ')';
    strcpy(o, "; }");
    cr_assert_eq(clmad_lower_source(src, &out), CLMAD_OK, "%s", clmad_last_error(NULL));
    cr_expect(test_contains(out, "ad_mul(x, x)"), "%s", out);
    clmad_string_free(out);
    /* clmad_kernel_create refuses too, before the compiler. */
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    char *deep = malloc(2 * DEPTH + 64);
    o = deep + sprintf(deep, "T f(T x) { return ");
    memset(o, '(', DEPTH), o += DEPTH;
    o += sprintf(o, "x");
    memset(o, ')', DEPTH), o += DEPTH;
    strcpy(o, "; }");
    cr_expect_eq(clmad_kernel_create(ctx, deep, "f", 1, 1, &k), CLMAD_ERR_BUILD);
    cr_expect(test_contains(clmad_last_error(ctx), "source:1:") &&
                  test_contains(clmad_last_error(ctx), "nested more than 200 levels deep") &&
                  !test_contains(clmad_last_error(ctx), "as written"),
              "%.300s", clmad_last_error(ctx));
    free(deep);
    clmad_context_release(ctx);
}

/* A source larger than 16 MiB is refused before it is read. */
Test(lower_scale, source_size_limit)
{
    size_t size = (16u << 20) + 1000;
    char *src = malloc(size + 1);
    const char *fn = "T f(T x) { return x * x; }\n";
    memset(src, ' ', size);
    memcpy(src, "/*", 2);
    memcpy(src + size - strlen(fn) - 3, "*/\n", 3);
    memcpy(src + size - strlen(fn), fn, strlen(fn));
    src[size] = 0;
    char *out = NULL;
    cr_assert_eq(clmad_lower_source(src, &out), CLMAD_ERR_BUILD);
    cr_expect(test_contains(clmad_last_error(NULL), "more than the 16 MiB"), "%s", clmad_last_error(NULL));
    /* Just under the limit, the same function lowers. */
    size_t at = 1000;
    memmove(src, src + at, size - at + 1);
    memcpy(src, "/*", 2);
    cr_assert_eq(clmad_lower_source(src, &out), CLMAD_OK, "%s", clmad_last_error(NULL));
    cr_expect(test_contains(out, "ad_mul(x, x)"));
    clmad_string_free(out);
    free(src);
}

/* A compound assignment repeats its left side (a[i] += x becomes
 * a[i] = ad_add(a[i], x)), so left sides nested in left sides double the
 * text per level: past 64 MiB it is refused, not built. */
Test(lower_scale, lowered_size_limit)
{
    enum { LEVELS = 24 };
    char src[2048], *o = src, *out = NULL;
    o += sprintf(o, "T f(T x, T *a) { ");
    for (int d = 0; d < LEVELS; d++)
        o += sprintf(o, "a[(int)ad_val(");
    o += sprintf(o, "a[0] += x");
    for (int d = 0; d < LEVELS; d++)
        o += sprintf(o, ")] += x");
    strcpy(o, "; return x; }");
    cr_assert_eq(clmad_lower_source(src, &out), CLMAD_ERR_BUILD);
    cr_expect(test_contains(clmad_last_error(NULL), "grows past 64 MiB"), "%s", clmad_last_error(NULL));
    cr_expect(test_contains(clmad_last_error(NULL), "source:1:"), "%s", clmad_last_error(NULL));
}
