/* SPDX-License-Identifier: Apache-2.0 */
/* Errors of kernel creation and of the broadcast calls: shapes that do not
 * broadcast, mixed dtypes, compile errors mapped to the user's source,
 * signatures that do not match, invalid and NULL arguments, and zero-sized
 * broadcasts (not an error: empty outputs). After every error the context
 * must still work, and out-parameters must be left untouched. */
#include "bcast_support.h"

#include <stdio.h>

static const char *ADD2_SRC =
    "T add2(T a, T b)\n"
    "{\n"
    "    return ad_add(ad_mul(a, b), ad_sin(a));\n"
    "}\n";

static clmad_kernel *add2_kernel(clmad_context *ctx)
{
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, ADD2_SRC, "add2", 2, 1, &k));
    cr_assert_not_null(k);
    return k;
}

/* A small valid broadcast on ctx: (2, 3) with (3,), checked value by value. */
static void still_works(clmad_context *ctx)
{
    clmad_kernel *k = add2_kernel(ctx);
    size_t sa[2] = {2, 3}, sb[1] = {3};
    double a[6] = {0.5, -1, 2, 0.25, 3, -0.75}, b[3] = {1.5, -2, 0.125};
    clmad_tensor *in[2] = {bs_tensor(ctx, CLMAD_F64, 2, sa, a), bs_tensor(ctx, CLMAD_F64, 1, sb, b)};
    clmad_tensor *y = NULL;
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    double *v = bs_read(ctx, y, CLMAD_F64, 2, sa);
    for (int e = 0; e < 6; e++) {
        double want = a[e] * b[e % 3] + sin(a[e]);
        cr_assert(bs_close(v[e], want, 1e-12), "after an error: element %d = %.17g, expected %.17g", e, v[e], want);
    }
    free(v);
    clmad_tensor_release(y);
    bs_release_all(in, 2);
    clmad_kernel_release(k);
}

static clmad_tensor *filled(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape, double v)
{
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, dtype, ndim, shape, v, &t));
    return t;
}

/* Sentinels: out-parameters must be left untouched on failure. */
#define SENTINEL ((clmad_tensor *)(uintptr_t)0x5e17)
#define KSENTINEL ((clmad_kernel *)(uintptr_t)0x5e17)

static void expect_untouched(clmad_tensor *const *t, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        cr_assert_eq(t[i], SENTINEL, "%s: out-parameter %d was written on failure", what, i);
}

static void set_sentinels(clmad_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        t[i] = SENTINEL;
}

/* ---- shapes --------------------------------------------------------------- */

/* The three broadcast calls all reject inputs a (sa) and b (sb), with
 * CLMAD_ERR_SHAPE and a message holding every needle. */
static void expect_shape_error(clmad_context *ctx, clmad_kernel *k, int na, const size_t *sa, int nb,
                               const size_t *sb, const char *const *needles, int n_needles)
{
    clmad_tensor *in[2] = {filled(ctx, CLMAD_F32, na, sa, 1), filled(ctx, CLMAD_F32, nb, sb, 2)};
    clmad_tensor *out[1], *parts[2], *tan[2] = {NULL, NULL}, *ot[1];
    for (int call = 0; call < 3; call++) {
        set_sentinels(out, 1);
        set_sentinels(parts, 2);
        set_sentinels(ot, 1);
        clmad_status st = call == 0   ? clmad_broadcast(ctx, k, in, out)
                          : call == 1 ? clmad_broadcast_partials(ctx, k, in, NULL, out, parts)
                                      : clmad_broadcast_jvp(ctx, k, in, tan, out, ot);
        const char *msg = clmad_last_error(ctx);
        cr_assert_eq(st, CLMAD_ERR_SHAPE, "call %d: %s: %s", call, clmad_status_string(st), msg);
        for (int i = 0; i < n_needles; i++)
            cr_assert(test_contains(msg, needles[i]), "call %d: message lacks \"%s\": %s", call, needles[i], msg);
        cr_assert(test_contains(msg, "add2"), "call %d: message does not name the kernel: %s", call, msg);
        expect_untouched(out, 1, "outputs");
        if (call == 1)
            expect_untouched(parts, 2, "partials");
        if (call == 2)
            expect_untouched(ot, 1, "out_tangents");
        still_works(ctx);
    }
    bs_release_all(in, 2);
}

Test(broadcast_errors, shapes_that_do_not_broadcast)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = add2_kernel(ctx);
    {
        size_t sa[2] = {3, 4}, sb[1] = {5};
        const char *needles[] = {"input 1", "(3, 4)", "(5,)"};
        expect_shape_error(ctx, k, 2, sa, 1, sb, needles, 3);
    }
    {
        /* A mismatch on a leading axis, the bad input first. */
        size_t sa[3] = {2, 3, 4}, sb[3] = {7, 1, 4};
        const char *needles[] = {"(2, 3, 4)", "(7, 1, 4)"};
        expect_shape_error(ctx, k, 3, sb, 3, sa, needles, 2);
    }
    {
        /* 0 does not broadcast with 5 (NumPy: only 1 stretches). */
        size_t sa[2] = {0, 3}, sb[2] = {5, 3};
        const char *needles[] = {"input 1", "(0, 3)", "(5, 3)"};
        expect_shape_error(ctx, k, 2, sa, 2, sb, needles, 3);
    }
    {
        /* Rank 8 against rank 8, differing in one middle axis. */
        size_t sa[8] = {1, 2, 1, 2, 3, 1, 2, 1}, sb[8] = {1, 2, 1, 3, 3, 1, 2, 1};
        const char *needles[] = {"input 1", "(1, 2, 1, 2, 3, 1, 2, 1)", "(1, 2, 1, 3, 3, 1, 2, 1)"};
        expect_shape_error(ctx, k, 8, sa, 8, sb, needles, 3);
    }
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* ---- dtypes --------------------------------------------------------------- */

Test(broadcast_errors, mixed_dtypes)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = add2_kernel(ctx);
    size_t s[1] = {4};
    clmad_tensor *in[2] = {filled(ctx, CLMAD_F32, 1, s, 1), filled(ctx, CLMAD_F64, 1, s, 2)};
    clmad_tensor *out[1], *parts[2], *ot[1], *tan[2] = {NULL, NULL};
    for (int call = 0; call < 3; call++) {
        set_sentinels(out, 1);
        set_sentinels(parts, 2);
        set_sentinels(ot, 1);
        clmad_status st = call == 0   ? clmad_broadcast(ctx, k, in, out)
                          : call == 1 ? clmad_broadcast_partials(ctx, k, in, NULL, out, parts)
                                      : clmad_broadcast_jvp(ctx, k, in, tan, out, ot);
        const char *msg = clmad_last_error(ctx);
        cr_assert_eq(st, CLMAD_ERR_DTYPE, "call %d: %s: %s", call, clmad_status_string(st), msg);
        cr_assert(test_contains(msg, "input 1"), "call %d: message does not name input 1: %s", call, msg);
        expect_untouched(out, 1, "outputs");
        expect_untouched(parts, 2, "partials");
        expect_untouched(ot, 1, "out_tangents");
        still_works(ctx);
    }
    bs_release_all(in, 2);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* A tangent must have its input's shape and dtype. */
Test(broadcast_errors, jvp_tangent_mismatch)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = add2_kernel(ctx);
    size_t sa[2] = {3, 4}, sb[1] = {4}, sbad[2] = {1, 4};
    clmad_tensor *in[2] = {filled(ctx, CLMAD_F32, 2, sa, 1), filled(ctx, CLMAD_F32, 1, sb, 2)};
    clmad_tensor *out[1], *ot[1];

    /* Tangent of input 1 of shape (1, 4): broadcastable, but not input 1's shape. */
    clmad_tensor *tan[2] = {NULL, filled(ctx, CLMAD_F32, 2, sbad, 1)};
    set_sentinels(out, 1);
    set_sentinels(ot, 1);
    clmad_status st = clmad_broadcast_jvp(ctx, k, in, tan, out, ot);
    cr_assert_eq(st, CLMAD_ERR_SHAPE, "%s: %s", clmad_status_string(st), clmad_last_error(ctx));
    expect_untouched(out, 1, "outputs");
    expect_untouched(ot, 1, "out_tangents");
    clmad_tensor_release(tan[1]);
    still_works(ctx);

    /* Tangent of input 0 in f64. */
    tan[0] = filled(ctx, CLMAD_F64, 2, sa, 1);
    tan[1] = NULL;
    st = clmad_broadcast_jvp(ctx, k, in, tan, out, ot);
    cr_assert_eq(st, CLMAD_ERR_DTYPE, "%s: %s", clmad_status_string(st), clmad_last_error(ctx));
    expect_untouched(out, 1, "outputs");
    expect_untouched(ot, 1, "out_tangents");
    clmad_tensor_release(tan[0]);
    still_works(ctx);

    bs_release_all(in, 2);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* ---- compile errors --------------------------------------------------------- */

/* Creating the kernel fails with CLMAD_ERR_BUILD, leaves *k alone, and the
 * message holds every needle. */
static void expect_build_error(clmad_context *ctx, const char *src, const char *fn, int n_in, int n_out,
                               const char *const *needles, int n_needles)
{
    clmad_kernel *k = KSENTINEL;
    clmad_status st = clmad_kernel_create(ctx, src, fn, n_in, n_out, &k);
    const char *msg = clmad_last_error(ctx);
    cr_assert_eq(st, CLMAD_ERR_BUILD, "%s: %s", clmad_status_string(st), msg);
    cr_assert_eq(k, KSENTINEL, "*k was written on failure");
    for (int i = 0; i < n_needles; i++)
        cr_assert(test_contains(msg, needles[i]), "message lacks \"%s\": %s", needles[i], msg);
    still_works(ctx);
}

Test(broadcast_errors, syntax_error_is_reported_at_its_line)
{
    clmad_context *ctx = test_context();
    /* A missing semicolon at the end of line 3. */
    const char *src = "T f(T a)\n"
                      "{\n"
                      "    T b = ad_mul(a, a)\n"
                      "    return ad_add(b, a);\n"
                      "}\n";
    const char *needles[] = {"source:3:", "f"};
    expect_build_error(ctx, src, "f", 1, 1, needles, 2);

    /* An undeclared identifier on line 5, in a helper function. */
    const char *src2 = "/* helper */\n"
                       "T helper(T a)\n"
                       "{\n"
                       "    T b = ad_exp(a);\n"
                       "    return ad_mul(b, not_declared);\n"
                       "}\n"
                       "T g(T a) { return helper(a); }\n";
    const char *needles2[] = {"source:5:", "not_declared"};
    expect_build_error(ctx, src2, "g", 1, 1, needles2, 2);

    /* An unknown vocabulary function on line 1. */
    const char *src3 = "T h(T a) { return ad_no_such_function(a); }\n";
    const char *needles3[] = {"source:1:", "ad_no_such_function"};
    expect_build_error(ctx, src3, "h", 1, 1, needles3, 2);
    clmad_context_release(ctx);
}

Test(broadcast_errors, unknown_function_name)
{
    clmad_context *ctx = test_context();
    const char *needles[] = {"add3"};
    expect_build_error(ctx, ADD2_SRC, "add3", 2, 1, needles, 1);
    clmad_context_release(ctx);
}

Test(broadcast_errors, wrong_signatures)
{
    clmad_context *ctx = test_context();
    const char *needles[] = {"add2"};
    /* Too many and too few inputs. */
    expect_build_error(ctx, ADD2_SRC, "add2", 3, 1, needles, 1);
    expect_build_error(ctx, ADD2_SRC, "add2", 1, 1, needles, 1);
    /* Two outputs asked of a function that returns one T. */
    expect_build_error(ctx, ADD2_SRC, "add2", 2, 2, needles, 1);
    /* A two-output function used as a one-output one. */
    const char *two = "void two(T a, T *y0, T *y1) { *y0 = a; *y1 = ad_neg(a); }\n";
    const char *needles2[] = {"two"};
    expect_build_error(ctx, two, "two", 1, 1, needles2, 1);
    expect_build_error(ctx, two, "two", 2, 1, needles2, 1);
    /* ... and correctly: it works. */
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, two, "two", 1, 2, &k));
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* Signature mistakes are said at create in the user's terms, at the line
 * of the function's definition, not as a compile error inside the
 * generated code ("clmad-generated:26:17: use of undeclared identifier"). */
static void expect_signature_error(clmad_context *ctx, const char *src, const char *fn, int n_in, int n_out,
                                   const char *needle)
{
    const char *needles[] = {needle};
    expect_build_error(ctx, src, fn, n_in, n_out, needles, 1);
    const char *msg = clmad_last_error(ctx);
    cr_assert(!test_contains(msg, "clmad-"), "a position in the generated code: %s", msg);
}

Test(broadcast_errors, signature_errors_in_the_users_terms)
{
    clmad_context *ctx = test_context();
    expect_signature_error(ctx, ADD2_SRC, "add3", 2, 1, "source: error: no function add3 in the source (it defines add2)");
    expect_signature_error(ctx, ADD2_SRC, "add2", 3, 1, "source:1:3: error: add2 takes 2 parameters, n_inputs is 3");
    expect_signature_error(ctx, ADD2_SRC, "add2", 2, 2,
                           "source:1:3: error: add2 takes 2 parameters; with n_inputs 2 and n_outputs 2 it takes 4: "
                           "the inputs as T, then a T * per output");
    expect_signature_error(ctx, "T f(T x, float y) { return ad_mulr(x, y); }\n", "f", 2, 1,
                           "source:1:10: error: every input of f must be T, or an integer parameter int, long or uchar: parameter 2 is \"float y\"");
    expect_signature_error(ctx,
                           "/* a helper */\n"
                           "real half_of(real q) { return q / 2; }\n"
                           "T f(T x,\n"
                           "    const real y)\n"
                           "{\n"
                           "    return ad_mulr(x, half_of(y));\n"
                           "}\n",
                           "f", 2, 1, "source:4:5: error: every input of f must be T, or an integer parameter int, long or uchar: parameter 2 is \"const real y\"");
    expect_signature_error(ctx, "T p(T *a) { return *a; }\n", "p", 1, 1,
                           "source:1:5: error: every input of p must be T, or an integer parameter int, long or uchar: parameter 1 is \"T *a\"");
    expect_signature_error(ctx, "float h(T a) { return ad_val(a); }\n", "h", 1, 1,
                           "source:1:7: error: h returns float: its one output must be T");
    const char *two = "\nvoid two(T a, T *y0, T *y1) { *y0 = a; *y1 = ad_neg(a); }\n";
    expect_signature_error(ctx, two, "two", 1, 1, "source:2:6: error: two returns void, the form of a function of "
                                                  "several outputs");
    expect_signature_error(ctx, two, "two", 2, 2, "source:2:6: error: two takes 3 parameters; with n_inputs 2 and "
                                                  "n_outputs 2 it takes 4");
    expect_signature_error(ctx, "void g(T a, T y0, T *y1) { *y1 = a; }\n", "g", 1, 2,
                           "source:1:13: error: every output of g must be T * (n_outputs is 2): parameter 2 is \"T y0\"");
    /* What the check cannot see through is left to the compiler, and works
     * when right: a type alias of T, a name made by a macro. */
    const char *fine[][2] = {{"typedef T dual;\ndual f(dual x, dual y) { return ad_mul(x, y); }\n", "f"},
                             {"T add2(T a, T b) { return ad_mul(a, b); }\n#define add3 add2\n", "add3"},
                             {"#define DEF(name) T name(T a, T b) { return ad_mul(a, b); }\nDEF(m)\n", "m"}};
    for (int i = 0; i < 3; i++) {
        clmad_kernel *k = NULL;
        CHECK_OK(ctx, clmad_kernel_create(ctx, fine[i][0], fine[i][1], 2, 1, &k));
        clmad_kernel_release(k);
    }
    clmad_context_release(ctx);
}

static const char *const OPERATOR_HINT = "T is a dual number in derivative variants: write ad_mul(x, y), ad_add(x, y)";

/* Plain syntax: operators and math names on T are rewritten to the
 * vocabulary, so these compile; an operator the front end cannot see (in a
 * function-like macro) compiles only in the values variant, and fails at
 * create with the hint. */
Test(broadcast_errors, operator_on_T_fails_at_create)
{
    clmad_context *ctx = test_context();
    const char *plain[] = {"T f(T x, T y) { return x * y + 0.5; }\n",
                           "T f(T x, T y) { return -x < y ? x : 2 * y; }\n"};
    for (int j = 0; j < 2; j++) {
        clmad_kernel *k = NULL;
        CHECK_OK(ctx, clmad_kernel_create(ctx, plain[j], "f", 2, 1, &k));
        clmad_kernel_release(k);
    }
    const char *src = "#define TWICE(a) ((a) * 2)\n"
                      "T twice(T a)\n"
                      "{\n"
                      "    return TWICE(a);   /* the macro's operator is not rewritten */\n"
                      "}\n";
    const char *needles[] = {"source:4:", OPERATOR_HINT, "function-like macro"};
    expect_build_error(ctx, src, "twice", 1, 1, needles, 3);
    /* Unary minus in a macro, in a function of two outputs. */
    const char *needles3[] = {"source:4:", OPERATOR_HINT};
    expect_build_error(ctx, "#define NEG(a) (-(a))\nvoid g(T a, T *y0, T *y1)\n{\n    *y0 = NEG(a);\n    *y1 = a;\n}\n",
                       "g", 1, 2, needles3, 2);
    /* A mistake that is not about operators gets no hint. */
    clmad_kernel *k = KSENTINEL;
    cr_assert_eq(clmad_kernel_create(ctx, "T u(T a) { return ad_mul(a, b); }\n", "u", 1, 1, &k), CLMAD_ERR_BUILD);
    cr_assert(!test_contains(clmad_last_error(ctx), OPERATOR_HINT), "%s", clmad_last_error(ctx));
    cr_assert_eq(k, KSENTINEL);
    clmad_context_release(ctx);
}

/* A variant built after creation (here: only the f64 dual variants fail)
 * reports CLMAD_ERR_BUILD from the call that needs it, at the user's line
 * and with the hint; outputs are left untouched and the kernel still works
 * where it compiles. */
Test(broadcast_errors, build_error_of_a_later_variant)
{
    clmad_context *ctx = test_context();
    const char *src = "#if CLMAD_REAL_DOUBLE\n"
                      "#define TWICE(a) ((a) * 2)   /* not valid on a dual number */\n"
                      "#else\n"
                      "#define TWICE(a) ad_mulr(a, (real)2)\n"
                      "#endif\n"
                      "T twice(T a)\n"
                      "{\n"
                      "    return TWICE(a);\n"
                      "}\n";
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, src, "twice", 1, 1, &k));
    size_t s[1] = {5};
    clmad_tensor *in[1] = {filled(ctx, CLMAD_F64, 1, s, 1.5)};
    clmad_tensor *y = NULL;
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    double *v = bs_read(ctx, y, CLMAD_F64, 1, s);
    for (int e = 0; e < 5; e++)
        cr_assert_eq(v[e], 3.0);
    free(v);
    clmad_tensor_release(y);

    clmad_tensor *out[1], *parts[1], *ot[1];
    set_sentinels(out, 1);
    set_sentinels(parts, 1);
    clmad_status st = clmad_broadcast_partials(ctx, k, in, NULL, out, parts);
    const char *msg = clmad_last_error(ctx);
    cr_assert_eq(st, CLMAD_ERR_BUILD, "%s: %s", clmad_status_string(st), msg);
    cr_assert(test_contains(msg, "source:8:"), "message lacks the user's line: %s", msg);
    cr_assert(test_contains(msg, OPERATOR_HINT), "message lacks the hint: %s", msg);
    expect_untouched(out, 1, "outputs");
    expect_untouched(parts, 1, "partials");
    still_works(ctx);

    clmad_tensor *tan[1] = {in[0]};
    set_sentinels(out, 1);
    set_sentinels(ot, 1);
    st = clmad_broadcast_jvp(ctx, k, in, tan, out, ot);
    cr_assert_eq(st, CLMAD_ERR_BUILD, "%s: %s", clmad_status_string(st), clmad_last_error(ctx));
    cr_assert(test_contains(clmad_last_error(ctx), "source:8:"), "%s", clmad_last_error(ctx));
    expect_untouched(out, 1, "outputs");
    expect_untouched(ot, 1, "out_tangents");
    still_works(ctx);

    /* f32 compiles in every mode. */
    clmad_tensor *in32[1] = {filled(ctx, CLMAD_F32, 1, s, 1.5)};
    CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, in32, NULL, out, parts));
    v = bs_read(ctx, parts[0], CLMAD_F32, 1, s);
    for (int e = 0; e < 5; e++)
        cr_assert_eq(v[e], 2.0);
    free(v);
    clmad_tensor_release(out[0]);
    clmad_tensor_release(parts[0]);
    clmad_tensor_release(in32[0]);

    clmad_tensor_release(in[0]);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* ---- invalid and NULL arguments ---------------------------------------------- */

static void expect_invalid_create(clmad_context *ctx, const char *src, const char *fn, int n_in, int n_out,
                                  int use_k, const char *what)
{
    clmad_kernel *k = KSENTINEL;
    clmad_status st = clmad_kernel_create(ctx, src, fn, n_in, n_out, use_k ? &k : NULL);
    cr_assert_eq(st, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s: %s", what, clmad_status_string(st),
                 clmad_last_error(ctx));
    cr_assert_eq(k, KSENTINEL, "%s: *k was written on failure", what);
    if (ctx) {
        cr_assert_neq(clmad_last_error(ctx)[0], '\0', "%s: no message", what);
        still_works(ctx);
    } else {
        cr_assert_neq(clmad_last_error(NULL)[0], '\0', "%s: no message", what);
    }
}

Test(broadcast_errors, invalid_kernel_arguments)
{
    clmad_context *ctx = test_context();
    expect_invalid_create(ctx, ADD2_SRC, "add2", 0, 1, 1, "0 inputs");
    expect_invalid_create(ctx, ADD2_SRC, "add2", -1, 1, 1, "-1 inputs");
    expect_invalid_create(ctx, ADD2_SRC, "add2", 65, 1, 1, "65 inputs");
    expect_invalid_create(ctx, ADD2_SRC, "add2", 2, 0, 1, "0 outputs");
    expect_invalid_create(ctx, ADD2_SRC, "add2", 2, 17, 1, "17 outputs");
    expect_invalid_create(ctx, ADD2_SRC, "not an identifier", 2, 1, 1, "name with spaces");
    expect_invalid_create(ctx, ADD2_SRC, "", 2, 1, 1, "empty name");
    expect_invalid_create(ctx, ADD2_SRC, "1add2", 2, 1, 1, "name starting with a digit");
    expect_invalid_create(ctx, ADD2_SRC, "add2(", 2, 1, 1, "name with a parenthesis");
    expect_invalid_create(ctx, ADD2_SRC, "add2;x", 2, 1, 1, "name with a semicolon");
    expect_invalid_create(ctx, NULL, "add2", 2, 1, 1, "NULL source");
    expect_invalid_create(ctx, ADD2_SRC, NULL, 2, 1, 1, "NULL name");
    expect_invalid_create(ctx, ADD2_SRC, "add2", 2, 1, 0, "NULL k");
    expect_invalid_create(NULL, ADD2_SRC, "add2", 2, 1, 1, "NULL ctx");
    /* The bounds themselves are valid: 64 inputs and 16 outputs. */
    char src[8192];
    size_t u = (size_t)snprintf(src, sizeof src, "void wide(");
    for (int j = 0; j < 64; j++)
        u += (size_t)snprintf(src + u, sizeof src - u, "T x%d, ", j);
    for (int o = 0; o < 16; o++)
        u += (size_t)snprintf(src + u, sizeof src - u, "T *y%d%s", o, o < 15 ? ", " : ")\n{\n");
    for (int o = 0; o < 16; o++)
        u += (size_t)snprintf(src + u, sizeof src - u, "    *y%d = ad_add(x%d, x%d);\n", o, o, 63 - o);
    snprintf(src + u, sizeof src - u, "}\n");
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, src, "wide", 64, 16, &k));
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

Test(broadcast_errors, null_arguments_of_broadcast_calls)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = add2_kernel(ctx);
    size_t s[1] = {3};
    clmad_tensor *in[2] = {filled(ctx, CLMAD_F32, 1, s, 1), filled(ctx, CLMAD_F32, 1, s, 2)};
    clmad_tensor *half[2] = {in[0], NULL};
    clmad_tensor *tan[2] = {NULL, NULL};
    clmad_tensor *out[1], *parts[2], *ot[1];
    struct {
        const char *what;
        clmad_status st;
    } cases[18];
    int n = 0;
#define CASE(call)                                                                  \
    do {                                                                            \
        set_sentinels(out, 1);                                                      \
        set_sentinels(parts, 2);                                                    \
        set_sentinels(ot, 1);                                                       \
        cases[n].what = #call;                                                      \
        cases[n].st = (call);                                                       \
        cr_assert_eq(cases[n].st, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s: %s", #call,  \
                     clmad_status_string(cases[n].st), clmad_last_error(ctx));      \
        expect_untouched(out, 1, #call);                                            \
        expect_untouched(parts, 2, #call);                                          \
        expect_untouched(ot, 1, #call);                                             \
        n++;                                                                        \
    } while (0)
    CASE(clmad_broadcast(NULL, k, in, out));
    CASE(clmad_broadcast(ctx, NULL, in, out));
    CASE(clmad_broadcast(ctx, k, NULL, out));
    CASE(clmad_broadcast(ctx, k, half, out));
    CASE(clmad_broadcast(ctx, k, in, NULL));
    CASE(clmad_broadcast_partials(NULL, k, in, NULL, out, parts));
    CASE(clmad_broadcast_partials(ctx, NULL, in, NULL, out, parts));
    CASE(clmad_broadcast_partials(ctx, k, NULL, NULL, out, parts));
    CASE(clmad_broadcast_partials(ctx, k, half, NULL, out, parts));
    CASE(clmad_broadcast_partials(ctx, k, in, NULL, NULL, parts));
    CASE(clmad_broadcast_partials(ctx, k, in, NULL, out, NULL));
    CASE(clmad_broadcast_jvp(NULL, k, in, tan, out, ot));
    CASE(clmad_broadcast_jvp(ctx, NULL, in, tan, out, ot));
    CASE(clmad_broadcast_jvp(ctx, k, NULL, tan, out, ot));
    CASE(clmad_broadcast_jvp(ctx, k, half, tan, out, ot));
    CASE(clmad_broadcast_jvp(ctx, k, in, tan, NULL, ot));
    CASE(clmad_broadcast_jvp(ctx, k, in, tan, out, NULL));
#undef CASE
    cr_assert_eq(n, 17);
    /* Chunk caps: 0..64 valid, others not; NULL context. */
    cr_assert_eq(clmad_set_chunk_cap(ctx, -1), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_set_chunk_cap(ctx, 65), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_set_chunk_cap(NULL, 4), CLMAD_ERR_INVALID_ARGUMENT);
    CHECK_OK(ctx, clmad_set_chunk_cap(ctx, 64));
    cr_assert_eq(clmad_chunk_cap(ctx), 64);
    CHECK_OK(ctx, clmad_set_chunk_cap(ctx, 0));
    cr_assert_gt(clmad_chunk_cap(ctx), 0);
    clmad_kernel_release(NULL); /* a no-op */
    still_works(ctx);
    bs_release_all(in, 2);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* Kernels and tensors belong to one context. */
Test(broadcast_errors, objects_of_another_context)
{
    clmad_context *a = test_context(), *b = test_context();
    clmad_kernel *ka = add2_kernel(a);
    size_t s[1] = {3};
    clmad_tensor *ia[2] = {filled(a, CLMAD_F32, 1, s, 1), filled(a, CLMAD_F32, 1, s, 2)};
    clmad_tensor *mixed[2] = {ia[0], filled(b, CLMAD_F32, 1, s, 2)};
    clmad_tensor *out[1];
    set_sentinels(out, 1);
    clmad_status st = clmad_broadcast(b, ka, ia, out); /* kernel of a used on b */
    cr_assert_eq(st, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s", clmad_status_string(st), clmad_last_error(b));
    st = clmad_broadcast(a, ka, mixed, out); /* input 1 of b */
    cr_assert_eq(st, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s", clmad_status_string(st), clmad_last_error(a));
    cr_assert(test_contains(clmad_last_error(a), "input 1"), "%s", clmad_last_error(a));
    expect_untouched(out, 1, "outputs");
    still_works(a);
    still_works(b);
    clmad_tensor_release(mixed[1]);
    bs_release_all(ia, 2);
    clmad_kernel_release(ka);
    clmad_context_release(b);
    clmad_context_release(a);
}

/* ---- zero-sized broadcasts ----------------------------------------------------- */

static void expect_empty(clmad_context *ctx, clmad_tensor *t, int ndim, const size_t *shape)
{
    cr_assert_not_null(t);
    cr_assert_neq(t, SENTINEL);
    cr_assert_eq(clmad_tensor_ndim(t), ndim);
    for (int d = 0; d < ndim; d++)
        cr_assert_eq(clmad_tensor_dim(t, d), shape[d], "axis %d: %zu, expected %zu", d, clmad_tensor_dim(t, d),
                     shape[d]);
    cr_assert_eq(clmad_tensor_numel(t), 0);
    CHECK_OK(ctx, clmad_tensor_read(t, NULL, 0));
}

Test(broadcast_errors, zero_sized_broadcasts_give_empty_outputs)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = add2_kernel(ctx);
    struct {
        int na, nb, nout;
        size_t sa[3], sb[3], sout[3];
    } cases[] = {
        {2, 2, 2, {0, 3}, {1, 3}, {0, 3}},      /* 0 against 1 */
        {1, 0, 1, {0}, {0}, {0}},               /* (0,) against a scalar */
        {2, 2, 2, {0, 1}, {1, 5}, {0, 5}},      /* outer product with an empty side */
        {3, 1, 3, {2, 0, 4}, {4}, {2, 0, 4}},   /* empty middle axis */
        {2, 2, 2, {3, 0}, {3, 0}, {3, 0}},      /* both empty */
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        for (int dt = 0; dt < 2; dt++) {
            clmad_dtype dtype = dt ? CLMAD_F64 : CLMAD_F32;
            clmad_tensor *in[2];
            CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, cases[c].na, cases[c].sa, NULL, &in[0]));
            in[1] = filled(ctx, dtype, cases[c].nb, cases[c].sb, 0.5);
            clmad_tensor *out[1], *parts[2], *ot[1];
            set_sentinels(out, 1);
            CHECK_OK(ctx, clmad_broadcast(ctx, k, in, out));
            expect_empty(ctx, out[0], cases[c].nout, cases[c].sout);
            clmad_tensor_release(out[0]);

            set_sentinels(out, 1);
            set_sentinels(parts, 2);
            static const int active[2] = {0, 1};
            CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, in, active, out, parts));
            expect_empty(ctx, out[0], cases[c].nout, cases[c].sout);
            cr_assert_null(parts[0], "case %d: partial of the inactive input is not NULL", c);
            expect_empty(ctx, parts[1], cases[c].nout, cases[c].sout);
            clmad_tensor_release(out[0]);
            clmad_tensor_release(parts[1]);

            clmad_tensor *tan[2] = {in[0], NULL};
            set_sentinels(out, 1);
            set_sentinels(ot, 1);
            CHECK_OK(ctx, clmad_broadcast_jvp(ctx, k, in, tan, out, ot));
            expect_empty(ctx, out[0], cases[c].nout, cases[c].sout);
            expect_empty(ctx, ot[0], cases[c].nout, cases[c].sout);
            clmad_tensor_release(out[0]);
            clmad_tensor_release(ot[0]);
            bs_release_all(in, 2);
        }
    }
    still_works(ctx);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}
