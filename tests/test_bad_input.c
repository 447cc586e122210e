/* SPDX-License-Identifier: Apache-2.0 */
/* Bad input: every way a caller can get a call wrong, or feed it values that
 * are legal but unpleasant, one case per test. Each case checks the status,
 * the content of clmad_last_error(ctx), and that the context still works
 * afterwards (a small valid broadcast, read back and checked).
 *
 * Not covered: use of a released tensor or kernel. The library has no way
 * to detect it (handles are plain pointers, freed on the last release, with
 * no generation or magic number), so such a call is undefined behaviour,
 * which the sanitizer and valgrind targets would catch as a use after free.
 */
#include "support.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

/* Only the part of the vocabulary that is stable: add sub mul div neg exp log
 * sqrt tanh sigmoid relu pow select val const. */
static const char *SQ_SRC =
    "T sq_plus(T a, T b)\n"
    "{\n"
    "    return ad_add(ad_mul(a, a), b);\n"
    "}\n";

/* The context still works: (2, 3) broadcast with (3,), f32, read back. */
static void still_works(clmad_context *ctx)
{
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 2, 1, &k));
    size_t sa[2] = {2, 3}, sb[1] = {3};
    float a[6] = {1, -2, 3, 0.5f, -1.5f, 4}, b[3] = {10, 20, 30}, y[6];
    clmad_tensor *in[2] = {NULL, NULL}, *out = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, sa, a, &in[0]));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, sb, b, &in[1]));
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &out));
    cr_assert_eq(clmad_tensor_ndim(out), 2);
    CHECK_OK(ctx, clmad_tensor_read(out, y, sizeof y));
    for (int i = 0; i < 6; i++)
        cr_assert_eq(y[i], a[i] * a[i] + b[i % 3], "context broken after an error: y[%d] = %g", i, y[i]);
    clmad_tensor_release(out);
    clmad_tensor_release(in[0]);
    clmad_tensor_release(in[1]);
    clmad_kernel_release(k);
}

static clmad_tensor *filled(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape, double v)
{
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, dtype, ndim, shape, v, &t));
    return t;
}

/* Asserts the status and that the message holds every needle (NULL-terminated). */
#define EXPECT_ERR(ctx, call, status, ...)                                                        \
    do {                                                                                          \
        clmad_status st_ = (call);                                                                \
        const char *msg_ = clmad_last_error(ctx);                                                 \
        cr_assert_eq(st_, (status), "%s -> %s (expected %s): %s", #call, clmad_status_string(st_), \
                     clmad_status_string(status), msg_);                                          \
        const char *needles_[] = {__VA_ARGS__, NULL};                                             \
        for (int n_ = 0; needles_[n_]; n_++)                                                      \
            cr_assert(test_contains(msg_, needles_[n_]), "%s: message lacks \"%s\": %s", #call,  \
                      needles_[n_], msg_);                                                        \
    } while (0)

/* Sentinel for out-parameters, which must be left untouched on failure. */
#define SENTINEL ((clmad_tensor *)(uintptr_t)0x5e17)
#define KSENTINEL ((clmad_kernel *)(uintptr_t)0x5e17)

/* ---- kernel sources ---------------------------------------------------------- */

static void expect_build_error(clmad_context *ctx, const char *src, const char *fn, int n_in, int n_out,
                               const char *needle1, const char *needle2)
{
    clmad_kernel *k = KSENTINEL;
    EXPECT_ERR(ctx, clmad_kernel_create(ctx, src, fn, n_in, n_out, &k), CLMAD_ERR_BUILD, needle1, needle2);
    cr_assert_eq(k, KSENTINEL, "*k written on failure");
    still_works(ctx);
}

Test(bad_input, template_syntax_error_points_at_the_users_line)
{
    clmad_context *ctx = test_context();
    /* Line 4 lacks its semicolon; the compiler notices at line 4 or 5. */
    const char *src = "/* comment */\n"
                      "T f(T a)\n"
                      "{\n"
                      "    T b = ad_mul(a, a)\n"
                      "    return ad_add(b, a);\n"
                      "}\n";
    clmad_kernel *k = KSENTINEL;
    clmad_status st = clmad_kernel_create(ctx, src, "f", 1, 1, &k);
    const char *msg = clmad_last_error(ctx);
    cr_assert_eq(st, CLMAD_ERR_BUILD, "%s: %s", clmad_status_string(st), msg);
    cr_assert(test_contains(msg, "source:4:") || test_contains(msg, "source:5:"),
              "message lacks the user's line (source:4: or source:5:): %s", msg);
    cr_assert(test_contains(msg, "expected ';'"), "message lacks the compiler's words: %s", msg);
    cr_assert_eq(k, KSENTINEL);
    still_works(ctx);

    /* An unbalanced brace at the end, a stray token on line 2. */
    expect_build_error(ctx, "T g(T a)\n{ return a; } }\n", "g", 1, 1, "source:2:", NULL);
    /* A vocabulary function called with too few arguments, on line 3. */
    expect_build_error(ctx, "T h(T a)\n{\n    T b = ad_mul(a);\n    return b;\n}\n", "h", 1, 1, "source:3:", "too few arguments");
    clmad_context_release(ctx);
}

Test(bad_input, unknown_function_name)
{
    clmad_context *ctx = test_context();
    /* fn_name that the source does not define. */
    expect_build_error(ctx, SQ_SRC, "sq_minus", 2, 1, "sq_minus", NULL);
    /* A call to a function that does not exist, on line 2. */
    expect_build_error(ctx, "T f(T a)\n{ return ad_frobnicate(a); }\n", "f", 1, 1, "source:2:", "ad_frobnicate");
    /* An identifier that is no function name at all. */
    clmad_kernel *k = KSENTINEL;
    EXPECT_ERR(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq plus", 2, 1, &k), CLMAD_ERR_INVALID_ARGUMENT, "sq plus");
    cr_assert_eq(k, KSENTINEL);
    still_works(ctx);
    clmad_context_release(ctx);
}

Test(bad_input, wrong_number_of_parameters)
{
    clmad_context *ctx = test_context();
    expect_build_error(ctx, SQ_SRC, "sq_plus", 3, 1, "sq_plus", NULL);
    expect_build_error(ctx, SQ_SRC, "sq_plus", 1, 1, "sq_plus", NULL);
    expect_build_error(ctx, SQ_SRC, "sq_plus", 2, 2, "sq_plus", NULL);
    /* Out of the allowed ranges: 1..64 inputs, 1..16 outputs. */
    clmad_kernel *k = KSENTINEL;
    EXPECT_ERR(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 0, 1, &k), CLMAD_ERR_INVALID_ARGUMENT, "");
    EXPECT_ERR(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 65, 1, &k), CLMAD_ERR_INVALID_ARGUMENT, "");
    EXPECT_ERR(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 2, 0, &k), CLMAD_ERR_INVALID_ARGUMENT, "");
    EXPECT_ERR(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 2, 17, &k), CLMAD_ERR_INVALID_ARGUMENT, "");
    cr_assert_eq(k, KSENTINEL);
    still_works(ctx);
    clmad_context_release(ctx);
}

/* ---- shapes ------------------------------------------------------------------ */

Test(bad_input, shape_mismatch_names_the_shapes)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 2, 1, &k));
    size_t s34[2] = {3, 4}, s5[1] = {5}, s23[2] = {2, 3};
    clmad_tensor *a = filled(ctx, CLMAD_F32, 2, s34, 1), *b = filled(ctx, CLMAD_F32, 1, s5, 2),
                 *c = filled(ctx, CLMAD_F32, 2, s23, 3);
    clmad_tensor *in[2] = {a, b}, *out = SENTINEL;

    EXPECT_ERR(ctx, clmad_broadcast(ctx, k, in, &out), CLMAD_ERR_SHAPE, "(3, 4)", "(5,)", "sq_plus");
    cr_assert_eq(out, SENTINEL);
    still_works(ctx);
    /* Builtin elementwise operations are one-operation broadcasts: same errors. */
    EXPECT_ERR(ctx, clmad_add(ctx, a, b, &out), CLMAD_ERR_SHAPE, "(3, 4)", "(5,)");
    EXPECT_ERR(ctx, clmad_mul(ctx, c, a, &out), CLMAD_ERR_SHAPE, "(2, 3)", "(3, 4)");
    EXPECT_ERR(ctx, clmad_where(ctx, a, a, c, &out), CLMAD_ERR_SHAPE, "(3, 4)", "(2, 3)");
    cr_assert_eq(out, SENTINEL);
    still_works(ctx);
    /* Inner dimensions of a matrix product. */
    EXPECT_ERR(ctx, clmad_matmul(ctx, c, a, 1, 0, &out), CLMAD_ERR_SHAPE, "");
    EXPECT_ERR(ctx, clmad_matmul(ctx, c, c, 0, 0, &out), CLMAD_ERR_SHAPE, "");
    /* Shape operations. */
    size_t s7[1] = {7};
    EXPECT_ERR(ctx, clmad_reshape(ctx, a, 1, s7, &out), CLMAD_ERR_SHAPE, "");
    EXPECT_ERR(ctx, clmad_slice(ctx, a, 1, 2, 9, &out), CLMAD_ERR_SHAPE, "");
    clmad_tensor *pair[2] = {a, c};
    EXPECT_ERR(ctx, clmad_concat(ctx, 2, pair, 0, &out), CLMAD_ERR_SHAPE, "");
    cr_assert_eq(out, SENTINEL);
    still_works(ctx);

    clmad_tensor_release(a);
    clmad_tensor_release(b);
    clmad_tensor_release(c);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

Test(bad_input, rank_above_eight)
{
    clmad_context *ctx = test_context();
    size_t s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 2};
    clmad_tensor *t = SENTINEL;
    EXPECT_ERR(ctx, clmad_tensor_create(ctx, CLMAD_F32, 9, s9, NULL, &t), CLMAD_ERR_INVALID_ARGUMENT, "rank 9");
    if (test_device_fp64()) /* else f64 is refused first, as unsupported */
        EXPECT_ERR(ctx, clmad_tensor_zeros(ctx, CLMAD_F64, 9, s9, &t), CLMAD_ERR_INVALID_ARGUMENT, "rank 9");
    EXPECT_ERR(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 100, s9, 1.0, &t), CLMAD_ERR_INVALID_ARGUMENT, "100");
    EXPECT_ERR(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, -1, s9, &t), CLMAD_ERR_INVALID_ARGUMENT, "-1");
    cr_assert_eq(t, SENTINEL);
    still_works(ctx);

    /* Rank 8 is valid: an 8-d broadcast against a 0-d scalar. */
    size_t s8[8] = {1, 2, 1, 2, 1, 2, 1, 2};
    float h[16];
    for (int i = 0; i < 16; i++)
        h[i] = (float)i;
    clmad_tensor *x = NULL, *s = filled(ctx, CLMAD_F32, 0, NULL, 0.5), *y = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 8, s8, h, &x));
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 2, 1, &k));
    clmad_tensor *in[2] = {x, s};
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    cr_assert_eq(clmad_tensor_ndim(y), 8);
    float r[16];
    CHECK_OK(ctx, clmad_tensor_read(y, r, sizeof r));
    for (int i = 0; i < 16; i++)
        cr_assert_eq(r[i], h[i] * h[i] + 0.5f);

    /* A reshape to rank 9 is refused; so is a bad permutation of rank 8. */
    clmad_tensor *z = SENTINEL;
    clmad_status st = clmad_reshape(ctx, x, 9, s9, &z);
    cr_assert(st == CLMAD_ERR_INVALID_ARGUMENT || st == CLMAD_ERR_SHAPE, "reshape to rank 9: %s: %s",
              clmad_status_string(st), clmad_last_error(ctx));
    cr_assert_neq(clmad_last_error(ctx)[0], '\0');
    int perm[8] = {0, 1, 2, 3, 4, 5, 6, 6};
    st = clmad_transpose(ctx, x, perm, &z);
    cr_assert(st == CLMAD_ERR_INVALID_ARGUMENT || st == CLMAD_ERR_SHAPE, "repeated axis: %s: %s",
              clmad_status_string(st), clmad_last_error(ctx));
    int axes[1] = {8};
    EXPECT_ERR(ctx, clmad_sum(ctx, x, 1, axes, 0, &z), CLMAD_ERR_INVALID_ARGUMENT, "");
    cr_assert_eq(z, SENTINEL);
    still_works(ctx);

    clmad_tensor_release(x);
    clmad_tensor_release(s);
    clmad_tensor_release(y);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* ---- zero-sized dimensions: valid, empty results -------------------------------- */

Test(bad_input, zero_sized_dimensions_are_valid)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 2, 1, &k));
    size_t s03[2] = {0, 3}, s3[1] = {3};
    clmad_tensor *x = NULL, *b = filled(ctx, CLMAD_F32, 1, s3, 1);
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, s03, NULL, &x));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    clmad_tensor *in[2] = {x, b}, *y = NULL, *e = NULL, *loss = NULL;
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    cr_assert_eq(clmad_tensor_ndim(y), 2);
    cr_assert_eq(clmad_tensor_dim(y, 0), 0);
    cr_assert_eq(clmad_tensor_dim(y, 1), 3);
    cr_assert_eq(clmad_tensor_numel(y), 0);
    CHECK_OK(ctx, clmad_tensor_read(y, NULL, 0));
    CHECK_OK(ctx, clmad_exp(ctx, y, &e));
    cr_assert_eq(clmad_tensor_numel(e), 0);

    /* The sum of nothing is 0, and backward through empties gives an empty
     * gradient (or none). */
    CHECK_OK(ctx, clmad_sum(ctx, e, 0, NULL, 0, &loss));
    float l = -1;
    CHECK_OK(ctx, clmad_tensor_read(loss, &l, sizeof l));
    cr_assert_eq(l, 0.0f);
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    clmad_tensor *g = NULL;
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    if (g) {
        cr_assert_eq(clmad_tensor_numel(g), 0);
        cr_assert_eq(clmad_tensor_dim(g, 0), 0);
        cr_assert_eq(clmad_tensor_dim(g, 1), 3);
        clmad_tensor_release(g);
    }

    /* Shape operations on empties. */
    clmad_tensor *sl = NULL, *r = NULL, *tr = NULL;
    CHECK_OK(ctx, clmad_slice(ctx, b, 0, 1, 1, &sl)); /* an empty slice */
    cr_assert_eq(clmad_tensor_numel(sl), 0);
    size_t s30[2] = {3, 0};
    CHECK_OK(ctx, clmad_reshape(ctx, x, 2, s30, &r));
    CHECK_OK(ctx, clmad_transpose(ctx, x, NULL, &tr));
    cr_assert_eq(clmad_tensor_dim(tr, 0), 3);
    cr_assert_eq(clmad_tensor_dim(tr, 1), 0);
    still_works(ctx);

    clmad_tensor *all[] = {x, b, y, e, loss, sl, r, tr};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* A matrix product with an empty inner dimension is a matrix of zeros. The
 * output buffer comes from the pool, where a released tensor full of NaN
 * left it: the zeros must not depend on what the buffer held. */
Test(bad_input, matmul_with_empty_inner_dimension_is_zeros)
{
    clmad_context *ctx = test_context();
    size_t s20[2] = {2, 0}, s03[2] = {0, 3}, s23[2] = {2, 3};
    clmad_tensor_release(filled(ctx, CLMAD_F32, 2, s23, NAN)); /* its buffer goes back to the pool */
    clmad_tensor *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, s20, NULL, &a));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, s03, NULL, &b));
    CHECK_OK(ctx, clmad_matmul(ctx, a, b, 0, 0, &c));
    cr_assert_eq(clmad_tensor_dim(c, 0), 2);
    cr_assert_eq(clmad_tensor_dim(c, 1), 3);
    float r[6];
    CHECK_OK(ctx, clmad_tensor_read(c, r, sizeof r));
    int zeros = 1;
    for (int i = 0; i < 6; i++)
        zeros &= r[i] == 0.0f;
    still_works(ctx);
    clmad_tensor_release(a);
    clmad_tensor_release(b);
    clmad_tensor_release(c);
    clmad_context_release(ctx);
    cr_assert(zeros, "the product with k = 0 is not all zeros: %g %g %g %g %g %g", r[0], r[1], r[2], r[3],
              r[4], r[5]);
}

/* ---- NULL arguments, family by family ----------------------------------------------- */

#define EXPECT_INVALID(ctx, call) EXPECT_ERR(ctx, call, CLMAD_ERR_INVALID_ARGUMENT, "")

Test(bad_input, null_arguments_devices_and_context)
{
    clmad_device_info *list = NULL;
    size_t count = 0, index = 0;
    EXPECT_INVALID(NULL, clmad_device_list(NULL, &count));
    EXPECT_INVALID(NULL, clmad_device_list(&list, NULL));
    cr_assert_neq(clmad_last_error(NULL)[0], '\0', "no thread message after a failure");
    EXPECT_INVALID(NULL, clmad_device_choose(NULL, 3, NULL, &index));
    CHECK_OK(NULL, clmad_device_list(&list, &count));
    cr_assert_gt(count, 0);
    EXPECT_INVALID(NULL, clmad_device_choose(list, count, NULL, NULL));
    clmad_device_list_free(list);
    clmad_device_list_free(NULL);

    EXPECT_INVALID(NULL, clmad_context_create(NULL, NULL));
    clmad_options_init(NULL); /* must not crash */
    clmad_context_release(NULL);
    cr_assert_not_null(clmad_last_error(NULL));
    cr_assert_not_null(clmad_status_string((clmad_status)12345));

    clmad_context *ctx = test_context();
    clmad_device_info info;
    clmad_stats stats;
    EXPECT_INVALID(NULL, clmad_context_device(NULL, &info));
    EXPECT_INVALID(ctx, clmad_context_device(ctx, NULL));
    EXPECT_INVALID(NULL, clmad_context_stats(NULL, &stats));
    EXPECT_INVALID(ctx, clmad_context_stats(ctx, NULL));
    EXPECT_INVALID(NULL, clmad_finish(NULL));
    EXPECT_INVALID(NULL, clmad_set_chunk_cap(NULL, 4));
    EXPECT_INVALID(NULL, clmad_set_retain_tape(NULL, 1));
    EXPECT_INVALID(NULL, clmad_set_grad_enabled(NULL, 1));
    EXPECT_INVALID(NULL, clmad_set_partials_policy(NULL, CLMAD_PARTIALS_AUTO));
    EXPECT_INVALID(ctx, clmad_set_partials_policy(ctx, (clmad_partials_policy)42));
    clmad_tape_clear(NULL);
    still_works(ctx);
    clmad_context_release(ctx);
}

Test(bad_input, null_arguments_tensors)
{
    clmad_context *ctx = test_context();
    size_t s[1] = {4};
    float h[4] = {1, 2, 3, 4};
    clmad_tensor *t = SENTINEL;
    EXPECT_INVALID(NULL, clmad_tensor_create(NULL, CLMAD_F32, 1, s, h, &t));
    EXPECT_INVALID(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, NULL, h, &t));
    EXPECT_INVALID(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, s, h, NULL));
    EXPECT_INVALID(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, s, NULL));
    EXPECT_INVALID(NULL, clmad_tensor_fill(NULL, CLMAD_F32, 1, s, 1.0, &t));
    EXPECT_INVALID(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, NULL, 1.0, &t));
    cr_assert_eq(t, SENTINEL);
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, s, h, &t));
    EXPECT_INVALID(NULL, clmad_tensor_read(NULL, h, sizeof h));
    EXPECT_INVALID(ctx, clmad_tensor_read(t, NULL, sizeof h));
    EXPECT_INVALID(NULL, clmad_tensor_write(NULL, h, sizeof h));
    EXPECT_INVALID(ctx, clmad_tensor_write(t, NULL, sizeof h));
    /* Queries of NULL answer neutrally, retain/release of NULL are no-ops. */
    cr_assert_eq(clmad_tensor_ndim(NULL), 0);
    cr_assert_eq(clmad_tensor_numel(NULL), 0);
    cr_assert_eq(clmad_tensor_dim(NULL, 0), 0);
    cr_assert_eq(clmad_tensor_dim(t, 5), 0);
    cr_assert_eq(clmad_tensor_dim(t, -1), 0);
    cr_assert_eq(clmad_tensor_requires_grad(NULL), 0);
    cr_assert_null(clmad_tensor_retain(NULL));
    clmad_tensor_release(NULL);
    clmad_tensor_zero_grad(NULL);
    cr_assert_eq(clmad_dtype_size((clmad_dtype)9), 0);
    /* Gradients. */
    clmad_tensor *g = SENTINEL;
    EXPECT_INVALID(NULL, clmad_tensor_set_requires_grad(NULL, 1));
    EXPECT_INVALID(NULL, clmad_tensor_grad(NULL, &g));
    EXPECT_INVALID(ctx, clmad_tensor_grad(t, NULL));
    cr_assert_eq(g, SENTINEL);
    float back[4];
    CHECK_OK(ctx, clmad_tensor_read(t, back, sizeof back));
    cr_assert_eq(memcmp(back, h, sizeof h), 0);
    clmad_tensor_release(t);
    still_works(ctx);
    clmad_context_release(ctx);
}

Test(bad_input, null_arguments_kernels_and_broadcasts)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = KSENTINEL;
    EXPECT_INVALID(NULL, clmad_kernel_create(NULL, SQ_SRC, "sq_plus", 2, 1, &k));
    EXPECT_INVALID(ctx, clmad_kernel_create(ctx, NULL, "sq_plus", 2, 1, &k));
    EXPECT_INVALID(ctx, clmad_kernel_create(ctx, SQ_SRC, NULL, 2, 1, &k));
    EXPECT_INVALID(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 2, 1, NULL));
    cr_assert_eq(k, KSENTINEL);
    clmad_kernel_release(NULL);
    CHECK_OK(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 2, 1, &k));
    size_t s[1] = {3};
    clmad_tensor *a = filled(ctx, CLMAD_F32, 1, s, 1), *in[2] = {a, a}, *half[2] = {a, NULL};
    clmad_tensor *out[1] = {SENTINEL}, *parts[2] = {SENTINEL, SENTINEL}, *tan[2] = {NULL, NULL},
                 *ot[1] = {SENTINEL};
    EXPECT_INVALID(NULL, clmad_broadcast(NULL, k, in, out));
    EXPECT_INVALID(ctx, clmad_broadcast(ctx, NULL, in, out));
    EXPECT_INVALID(ctx, clmad_broadcast(ctx, k, NULL, out));
    EXPECT_INVALID(ctx, clmad_broadcast(ctx, k, half, out));
    EXPECT_INVALID(ctx, clmad_broadcast(ctx, k, in, NULL));
    EXPECT_INVALID(ctx, clmad_broadcast_partials(ctx, k, in, NULL, NULL, parts));
    EXPECT_INVALID(ctx, clmad_broadcast_partials(ctx, k, in, NULL, out, NULL));
    EXPECT_INVALID(ctx, clmad_broadcast_partials(ctx, k, half, NULL, out, parts));
    EXPECT_INVALID(ctx, clmad_broadcast_jvp(ctx, k, in, tan, NULL, ot));
    EXPECT_INVALID(ctx, clmad_broadcast_jvp(ctx, k, in, tan, out, NULL));
    EXPECT_INVALID(ctx, clmad_broadcast_jvp(ctx, NULL, in, tan, out, ot));
    cr_assert_eq(out[0], SENTINEL);
    cr_assert_eq(parts[0], SENTINEL);
    cr_assert_eq(ot[0], SENTINEL);
    clmad_tensor_release(a);
    clmad_kernel_release(k);
    still_works(ctx);
    clmad_context_release(ctx);
}

Test(bad_input, null_arguments_builtins_and_tape)
{
    clmad_context *ctx = test_context();
    size_t s[2] = {2, 2};
    clmad_tensor *a = filled(ctx, CLMAD_F32, 2, s, 2), *out = SENTINEL;
    EXPECT_INVALID(NULL, clmad_add(NULL, a, a, &out));
    EXPECT_INVALID(ctx, clmad_add(ctx, NULL, a, &out));
    EXPECT_INVALID(ctx, clmad_sub(ctx, a, NULL, &out));
    EXPECT_INVALID(ctx, clmad_mul(ctx, a, a, NULL));
    EXPECT_INVALID(ctx, clmad_div(ctx, NULL, NULL, &out));
    EXPECT_INVALID(ctx, clmad_pow(ctx, a, NULL, &out));
    EXPECT_INVALID(ctx, clmad_neg(ctx, NULL, &out));
    EXPECT_INVALID(ctx, clmad_exp(ctx, a, NULL));
    EXPECT_INVALID(ctx, clmad_log(NULL, a, &out));
    EXPECT_INVALID(ctx, clmad_tanh(ctx, NULL, &out));
    EXPECT_INVALID(ctx, clmad_sigmoid(ctx, NULL, &out));
    EXPECT_INVALID(ctx, clmad_relu(ctx, NULL, &out));
    EXPECT_INVALID(ctx, clmad_sqrt(ctx, NULL, &out));
    EXPECT_INVALID(ctx, clmad_where(ctx, NULL, a, a, &out));
    EXPECT_INVALID(ctx, clmad_compare(ctx, CLMAD_LT, a, NULL, &out));
    EXPECT_INVALID(ctx, clmad_compare(ctx, (clmad_compare_op)99, a, a, &out));
    EXPECT_INVALID(ctx, clmad_sum(ctx, NULL, 0, NULL, 0, &out));
    EXPECT_INVALID(ctx, clmad_sum(ctx, a, 1, NULL, 0, &out)); /* naxes 1 but axes NULL */
    EXPECT_INVALID(ctx, clmad_mean(ctx, a, 0, NULL, 0, NULL));
    EXPECT_INVALID(ctx, clmad_matmul(ctx, NULL, a, 0, 0, &out));
    EXPECT_INVALID(ctx, clmad_matmul(ctx, a, a, 0, 0, NULL));
    EXPECT_INVALID(ctx, clmad_slice(ctx, NULL, 0, 0, 1, &out));
    EXPECT_INVALID(ctx, clmad_concat(ctx, 2, NULL, 0, &out));
    clmad_tensor *with_null[2] = {a, NULL};
    EXPECT_INVALID(ctx, clmad_concat(ctx, 2, with_null, 0, &out));
    EXPECT_INVALID(ctx, clmad_reshape(ctx, a, 2, NULL, &out));
    EXPECT_INVALID(ctx, clmad_reshape(ctx, NULL, 2, s, &out));
    EXPECT_INVALID(ctx, clmad_transpose(ctx, NULL, NULL, &out));
    EXPECT_INVALID(ctx, clmad_transpose(ctx, a, NULL, NULL));
    cr_assert_eq(out, SENTINEL);
    EXPECT_INVALID(NULL, clmad_backward(NULL, a, NULL));
    EXPECT_INVALID(ctx, clmad_backward(ctx, NULL, NULL));
    clmad_tensor_release(a);
    still_works(ctx);
    clmad_context_release(ctx);
}

/* ---- dtypes ------------------------------------------------------------------ */

Test(bad_input, mixed_dtypes)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 2, 1, &k));
    size_t s[2] = {2, 2};
    clmad_tensor *f = filled(ctx, CLMAD_F32, 2, s, 1), *d = filled(ctx, CLMAD_F64, 2, s, 2);
    clmad_tensor *in[2] = {f, d}, *out = SENTINEL;
    EXPECT_ERR(ctx, clmad_broadcast(ctx, k, in, &out), CLMAD_ERR_DTYPE, "input 1");
    still_works(ctx);
    /* The builtins promote mixed float dtypes (f32 with f64 to f64); the
     * other calls refuse them. */
    clmad_tensor *promoted = NULL;
    CHECK_OK(ctx, clmad_add(ctx, f, d, &promoted));
    cr_assert_eq(clmad_tensor_dtype(promoted), CLMAD_F64);
    clmad_tensor_release(promoted);
    CHECK_OK(ctx, clmad_where(ctx, f, f, d, &promoted));
    cr_assert_eq(clmad_tensor_dtype(promoted), CLMAD_F64);
    clmad_tensor_release(promoted);
    CHECK_OK(ctx, clmad_compare(ctx, CLMAD_EQ, d, f, &promoted));
    cr_assert_eq(clmad_tensor_dtype(promoted), CLMAD_F64);
    clmad_tensor_release(promoted);
    EXPECT_ERR(ctx, clmad_matmul(ctx, f, d, 0, 0, &out), CLMAD_ERR_DTYPE, "");
    clmad_tensor *pair[2] = {d, f};
    EXPECT_ERR(ctx, clmad_concat(ctx, 2, pair, 0, &out), CLMAD_ERR_DTYPE, "");
    cr_assert_eq(out, SENTINEL);
    /* A tangent of another dtype than its input. */
    clmad_tensor *same[2] = {f, f}, *tan[2] = {d, NULL}, *ot = SENTINEL;
    EXPECT_ERR(ctx, clmad_broadcast_jvp(ctx, k, same, tan, &out, &ot), CLMAD_ERR_DTYPE, "");
    cr_assert_eq(out, SENTINEL);
    cr_assert_eq(ot, SENTINEL);
    still_works(ctx);
    clmad_tensor_release(f);
    clmad_tensor_release(d);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* A seed of the loss's shape but another dtype: the header promises the seed
 * "must have loss's shape and dtype"; a dtype mismatch is CLMAD_ERR_DTYPE
 * everywhere else. */
Test(bad_input, backward_seed_of_another_dtype)
{
    clmad_context *ctx = test_context();
    size_t s[1] = {3};
    clmad_tensor *x = filled(ctx, CLMAD_F32, 1, s, 0.5), *y = NULL, *seed = filled(ctx, CLMAD_F64, 1, s, 1);
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_exp(ctx, x, &y));
    clmad_status st = clmad_backward(ctx, y, seed);
    cr_assert_neq(st, CLMAD_OK, "a seed of another dtype was accepted");
    cr_assert_neq(clmad_last_error(ctx)[0], '\0');
    still_works(ctx);
    clmad_tensor_release(seed);
    clmad_tensor_release(y);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
    cr_assert_eq(st, CLMAD_ERR_DTYPE, "%s", clmad_status_string(st));
}

Test(bad_input, f64_on_a_device_without_fp64)
{
    clmad_options opt;
    clmad_options_init(&opt);
    opt.disable_fp64 = 1;
    clmad_context *ctx = test_context_with(&opt);
    size_t s[1] = {4};
    double h[4] = {1, 2, 3, 4};
    clmad_tensor *t = SENTINEL;
    EXPECT_ERR(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, s, h, &t), CLMAD_ERR_UNSUPPORTED, "f64");
    EXPECT_ERR(ctx, clmad_tensor_zeros(ctx, CLMAD_F64, 1, s, &t), CLMAD_ERR_UNSUPPORTED, "f64");
    EXPECT_ERR(ctx, clmad_tensor_fill(ctx, CLMAD_F64, 0, NULL, 1.0, &t), CLMAD_ERR_UNSUPPORTED, "f64");
    cr_assert_eq(t, SENTINEL);
    still_works(ctx); /* f32 kernels and tensors work as before */
    clmad_context_release(ctx);
}

/* ---- the tape ---------------------------------------------------------------- */

Test(bad_input, backward_without_a_tape)
{
    clmad_context *ctx = test_context();
    size_t s[1] = {3};
    clmad_tensor *x = filled(ctx, CLMAD_F32, 1, s, 2), *loss = NULL, *y = NULL;
    /* A loss computed from constants. */
    CHECK_OK(ctx, clmad_sum(ctx, x, 0, NULL, 0, &loss));
    EXPECT_ERR(ctx, clmad_backward(ctx, loss, NULL), CLMAD_ERR_STATE, "tape");
    clmad_tensor_release(loss);
    /* A loss computed in no-grad mode. */
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_set_grad_enabled(ctx, 0));
    CHECK_OK(ctx, clmad_sum(ctx, x, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_set_grad_enabled(ctx, 1));
    EXPECT_ERR(ctx, clmad_backward(ctx, loss, NULL), CLMAD_ERR_STATE, "tape");
    clmad_tensor_release(loss);
    /* A loss whose tape was cleared. */
    CHECK_OK(ctx, clmad_exp(ctx, x, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    clmad_tape_clear(ctx);
    EXPECT_ERR(ctx, clmad_backward(ctx, loss, NULL), CLMAD_ERR_STATE, "tape");
    clmad_tensor *g = SENTINEL;
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    cr_assert_null(g, "a failed backward accumulated a gradient");
    /* A leaf that requires a gradient is no loss: nothing recorded it
     * either; backward on it is either refused or gives d x / d x = 1. */
    clmad_tensor_release(loss);
    clmad_tensor_release(y);
    clmad_tensor_release(x);
    still_works(ctx);
    clmad_context_release(ctx);
}

Test(bad_input, backward_twice_without_keeping_the_tape)
{
    clmad_context *ctx = test_context();
    size_t s[1] = {3};
    float h[3] = {0, 1, 2};
    clmad_tensor *x = NULL, *y = NULL, *loss = NULL, *g = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, s, h, &x));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_exp(ctx, x, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    EXPECT_ERR(ctx, clmad_backward(ctx, loss, NULL), CLMAD_ERR_STATE, "retain");
    clmad_stats st;
    CHECK_OK(ctx, clmad_context_stats(ctx, &st));
    cr_assert_eq(st.tape_nodes, 0);
    /* The first backward's gradient is intact (not doubled, not lost). */
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    cr_assert_not_null(g);
    float gh[3];
    CHECK_OK(ctx, clmad_tensor_read(g, gh, sizeof gh));
    for (int i = 0; i < 3; i++)
        cr_assert_float_eq(gh[i], expf(h[i]), 1e-5f * expf(h[i]), "grad[%d] = %g", i, gh[i]);
    clmad_tensor_release(g);
    clmad_tensor_release(loss);
    clmad_tensor_release(y);
    clmad_tensor_release(x);
    still_works(ctx);
    clmad_context_release(ctx);
}

Test(bad_input, backward_on_a_non_scalar_without_seed)
{
    clmad_context *ctx = test_context();
    size_t s[2] = {2, 3}, wrong[2] = {3, 2};
    clmad_tensor *x = filled(ctx, CLMAD_F32, 2, s, 1), *y = NULL, *seed = filled(ctx, CLMAD_F32, 2, wrong, 1);
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_tanh(ctx, x, &y));
    EXPECT_ERR(ctx, clmad_backward(ctx, y, NULL), CLMAD_ERR_SHAPE, "seed", "6");
    EXPECT_ERR(ctx, clmad_backward(ctx, y, seed), CLMAD_ERR_SHAPE, "seed");
    /* The failures left the tape alone: a correct seed works. */
    clmad_tensor *ok = filled(ctx, CLMAD_F32, 2, s, 2), *g = NULL;
    CHECK_OK(ctx, clmad_backward(ctx, y, ok));
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    float gh[6];
    CHECK_OK(ctx, clmad_tensor_read(g, gh, sizeof gh));
    float want = 2 * (1 - tanhf(1) * tanhf(1));
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(gh[i], want, 1e-5f, "grad[%d] = %g, expected %g", i, gh[i], want);
    clmad_tensor *all[] = {x, y, seed, ok, g};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    still_works(ctx);
    clmad_context_release(ctx);
}

/* ---- allocations above the device's maximum ------------------------------------ */

Test(bad_input, allocation_above_device_maximum)
{
    clmad_context *ctx = test_context();
    clmad_device_info d;
    CHECK_OK(ctx, clmad_context_device(ctx, &d));
    clmad_stats before, after;
    CHECK_OK(ctx, clmad_context_stats(ctx, &before));
    size_t big[1] = {(size_t)(d.max_alloc_bytes / sizeof(float)) + 1};
    clmad_tensor *t = SENTINEL;
    EXPECT_ERR(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, big, NULL, &t), CLMAD_ERR_OUT_OF_MEMORY, "");
    EXPECT_ERR(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, big, &t), CLMAD_ERR_OUT_OF_MEMORY, "");
    if (test_device_fp64()) /* else f64 is refused first, as unsupported */
        EXPECT_ERR(ctx, clmad_tensor_fill(ctx, CLMAD_F64, 1, big, 1.0, &t), CLMAD_ERR_OUT_OF_MEMORY, "");
    size_t overflow[3] = {SIZE_MAX / 2, 4, 3}; /* numel * size overflows size_t */
    EXPECT_ERR(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 3, overflow, &t), CLMAD_ERR_OUT_OF_MEMORY, "");
    cr_assert_eq(t, SENTINEL);
    still_works(ctx);

    /* A broadcast whose output alone is too large: (n, 1) with (1, n). */
    size_t n = 1;
    while ((double)n * (double)n * sizeof(float) <= (double)d.max_alloc_bytes)
        n *= 2;
    size_t col[2] = {n, 1}, row[2] = {1, n};
    clmad_tensor *a = filled(ctx, CLMAD_F32, 2, col, 1), *b = filled(ctx, CLMAD_F32, 2, row, 2);
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 2, 1, &k));
    clmad_tensor *in[2] = {a, b}, *out = SENTINEL, *parts[2] = {SENTINEL, SENTINEL};
    EXPECT_ERR(ctx, clmad_broadcast(ctx, k, in, &out), CLMAD_ERR_OUT_OF_MEMORY, "");
    EXPECT_ERR(ctx, clmad_broadcast_partials(ctx, k, in, NULL, &out, parts), CLMAD_ERR_OUT_OF_MEMORY, "");
    EXPECT_ERR(ctx, clmad_add(ctx, a, b, &out), CLMAD_ERR_OUT_OF_MEMORY, "");
    /* ... and recorded on the tape. */
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(a, 1));
    EXPECT_ERR(ctx, clmad_broadcast(ctx, k, in, &out), CLMAD_ERR_OUT_OF_MEMORY, "");
    /* A matrix product whose result is too large. */
    EXPECT_ERR(ctx, clmad_matmul(ctx, a, b, 0, 0, &out), CLMAD_ERR_OUT_OF_MEMORY, "");
    cr_assert_eq(out, SENTINEL);
    cr_assert_eq(parts[0], SENTINEL);
    clmad_stats mid;
    CHECK_OK(ctx, clmad_context_stats(ctx, &mid));
    cr_assert_eq(mid.tape_nodes, 0, "a failed operation left a node on the tape");
    still_works(ctx);

    clmad_tensor_release(a);
    clmad_tensor_release(b);
    clmad_kernel_release(k);
    CHECK_OK(ctx, clmad_context_stats(ctx, &after));
    cr_assert_eq(after.live_tensor_bytes, before.live_tensor_bytes, "live bytes %llu, before %llu",
                 (unsigned long long)after.live_tensor_bytes, (unsigned long long)before.live_tensor_bytes);
    clmad_context_release(ctx);
}

/* ---- NaN and Inf ------------------------------------------------------------- */

/* An expected derivative that the test does not check: the math leaves it
 * undefined and the rule used (e.g. 1/x for log at x < 0) may give a number. */
#define ANY 1e300

/* 1 if got is what want says: both NaN, or equal (infinities included). */
static int same_value(double got, double want, double tol)
{
    if (want == ANY)
        return 1;
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    return fabs(got - want) <= tol * (fabs(want) > 1 ? fabs(want) : 1);
}

typedef struct unary_case {
    const char *fn;    /* vocabulary function */
    double x, y, dy;   /* input, value, derivative */
} unary_case;

static void nan_inf_unary(clmad_dtype dtype)
{
    clmad_context *ctx = test_context();
    const double inf = INFINITY, nan = NAN;
    const unary_case cases[] = {
        {"ad_exp", nan, nan, nan},       {"ad_exp", inf, inf, inf},      {"ad_exp", -inf, 0, 0},
        {"ad_log", nan, nan, nan},       {"ad_log", 0, -inf, inf},       {"ad_log", inf, inf, 0},
        {"ad_log", -1, nan, ANY},        {"ad_sqrt", inf, inf, 0},       {"ad_sqrt", nan, nan, nan},
        {"ad_sqrt", -1, nan, ANY},       {"ad_tanh", inf, 1, 0},         {"ad_tanh", -inf, -1, 0},
        {"ad_tanh", nan, nan, nan},      {"ad_sigmoid", inf, 1, 0},      {"ad_sigmoid", -inf, 0, 0},
        {"ad_sigmoid", nan, nan, nan},   {"ad_relu", inf, inf, 1},       {"ad_relu", -inf, 0, 0},
        {"ad_neg", inf, -inf, -1},       {"ad_neg", nan, nan, -1},
    };
    const int n = (int)(sizeof cases / sizeof cases[0]);
    for (int c = 0; c < n; c++) {
        char src[128];
        snprintf(src, sizeof src, "T f(T x) { return %s(x); }\n", cases[c].fn);
        clmad_kernel *k = NULL;
        CHECK_OK(ctx, clmad_kernel_create(ctx, src, "f", 1, 1, &k));
        /* The special value among ordinary ones: it must not spread to them. */
        double hx[3] = {0.5, cases[c].x, 0.75};
        size_t s[1] = {3};
        clmad_tensor *x = NULL;
        if (dtype == CLMAD_F32) {
            float fx[3] = {(float)hx[0], (float)hx[1], (float)hx[2]};
            CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, 1, s, fx, &x));
        } else {
            CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, 1, s, hx, &x));
        }
        clmad_tensor *in[1] = {x}, *y = NULL, *p = NULL, *loss = NULL, *g = NULL;
        CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, in, NULL, &y, &p));
        /* The same partials through the tape: loss = sum(f(x)), both policies. */
        double vals[2][3];
        clmad_tensor *got[2] = {y, p};
        for (int t = 0; t < 2; t++) {
            if (dtype == CLMAD_F32) {
                float f[3];
                CHECK_OK(ctx, clmad_tensor_read(got[t], f, sizeof f));
                for (int i = 0; i < 3; i++)
                    vals[t][i] = f[i];
            } else {
                CHECK_OK(ctx, clmad_tensor_read(got[t], vals[t], sizeof vals[t]));
            }
        }
        const char *what = dtype == CLMAD_F32 ? "f32" : "f64";
        cr_assert(same_value(vals[0][1], cases[c].y, 1e-6), "%s %s(%g) = %g, expected %g", what, cases[c].fn,
                  cases[c].x, vals[0][1], cases[c].y);
        cr_assert(same_value(vals[1][1], cases[c].dy, 1e-6), "%s %s'(%g) = %g, expected %g", what, cases[c].fn,
                  cases[c].x, vals[1][1], cases[c].dy);
        for (int i = 0; i < 3; i += 2) {
            cr_assert(isfinite(vals[0][i]) && isfinite(vals[1][i]), "%s %s: element %d poisoned: %g, %g", what,
                      cases[c].fn, i, vals[0][i], vals[1][i]);
        }
        for (int policy = CLMAD_PARTIALS_STORE; policy <= CLMAD_PARTIALS_RECOMPUTE; policy++) {
            CHECK_OK(ctx, clmad_set_partials_policy(ctx, (clmad_partials_policy)policy));
            clmad_tensor_zero_grad(x);
            CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
            clmad_tensor *yy = NULL;
            CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &yy));
            CHECK_OK(ctx, clmad_sum(ctx, yy, 0, NULL, 0, &loss));
            CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
            CHECK_OK(ctx, clmad_tensor_grad(x, &g));
            double gv[3];
            if (dtype == CLMAD_F32) {
                float f[3];
                CHECK_OK(ctx, clmad_tensor_read(g, f, sizeof f));
                for (int i = 0; i < 3; i++)
                    gv[i] = f[i];
            } else {
                CHECK_OK(ctx, clmad_tensor_read(g, gv, sizeof gv));
            }
            for (int i = 0; i < 3; i++)
                cr_assert(same_value(gv[i], vals[1][i], 1e-6), "%s %s policy %d: grad[%d] = %g, partial %g", what,
                          cases[c].fn, policy, i, gv[i], vals[1][i]);
            clmad_tensor_release(g);
            clmad_tensor_release(loss);
            clmad_tensor_release(yy);
        }
        CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_AUTO));
        clmad_tensor_release(y);
        clmad_tensor_release(p);
        clmad_tensor_release(x);
        clmad_kernel_release(k);
    }
    still_works(ctx);
    clmad_context_release(ctx);
}

Test(bad_input, nan_and_inf_through_unary_kernels_f32) { nan_inf_unary(CLMAD_F32); }
Test(bad_input, nan_and_inf_through_unary_kernels_f64) { nan_inf_unary(CLMAD_F64); }

/* Two inputs, one of them NaN or Inf, and a broadcast scalar whose gradient
 * is a reduction over the expanded elements: the NaN reaches the reduction. */
Test(bad_input, nan_and_inf_through_binary_kernels_and_reductions)
{
    clmad_context *ctx = test_context();
    const char *src = "T f(T x, T w)\n"
                      "{\n"
                      "    if (ad_val(x) > 100) return ad_mul(w, ad_const(2));\n" /* a branch on a special value */
                      "    return ad_mul(x, w);\n"
                      "}\n";
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, src, "f", 2, 1, &k));
    size_t s[1] = {4};
    float hx[4] = {1, NAN, INFINITY, -INFINITY}, hw = 3;
    clmad_tensor *x = NULL, *w = NULL, *y = NULL, *loss = NULL, *gx = NULL, *gw = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, s, hx, &x));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 0, NULL, &hw, &w));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(w, 1));
    clmad_tensor *in[2] = {x, w};
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    float hy[4];
    CHECK_OK(ctx, clmad_tensor_read(y, hy, sizeof hy));
    cr_assert_eq(hy[0], 3.0f);
    cr_assert(isnan(hy[1]), "NaN * 3 = %g", hy[1]);
    cr_assert_eq(hy[2], 6.0f, "the x > 100 branch: %g", hy[2]);
    cr_assert_eq(hy[3], -INFINITY);
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    float hl = 0;
    CHECK_OK(ctx, clmad_tensor_read(loss, &hl, sizeof hl));
    cr_assert(isnan(hl), "sum with a NaN = %g", hl);
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(x, &gx));
    CHECK_OK(ctx, clmad_tensor_grad(w, &gw));
    float hgx[4], hgw = 0;
    CHECK_OK(ctx, clmad_tensor_read(gx, hgx, sizeof hgx));
    CHECK_OK(ctx, clmad_tensor_read(gw, &hgw, sizeof hgw));
    cr_assert_eq(hgx[0], 3.0f);
    cr_assert_eq(hgx[2], 0.0f, "x > 100 branch does not depend on x: %g", hgx[2]);
    /* d(x w)/dx = w = 3 at x = NaN and x = -inf; dual numbers compute
     * 1 * w + x * 0, which is NaN there: either is accepted, nothing else. */
    cr_assert(hgx[1] == 3.0f || isnan(hgx[1]), "d/dx at x = NaN: %g", hgx[1]);
    cr_assert(hgx[3] == 3.0f || isnan(hgx[3]), "d/dx at x = -inf: %g", hgx[3]);
    /* d/dw = x0 + x1 + 2 + x3 = 1 + NaN + 2 - inf = NaN */
    cr_assert(isnan(hgw), "gradient of the broadcast scalar = %g", hgw);
    clmad_tensor *all[] = {x, w, y, loss, gx, gw};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    clmad_kernel_release(k);
    still_works(ctx);
    clmad_context_release(ctx);
}

/* NaN and Inf through the builtin reductions and matrix products: no crash,
 * IEEE results. */
Test(bad_input, nan_and_inf_through_builtins)
{
    clmad_context *ctx = test_context();
    size_t s[2] = {2, 2};
    float h[4] = {1, NAN, INFINITY, 2}, r[4];
    clmad_tensor *a = NULL, *m = NULL, *sum = NULL, *mx = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, s, h, &a));
    CHECK_OK(ctx, clmad_matmul(ctx, a, a, 0, 0, &m));
    CHECK_OK(ctx, clmad_tensor_read(m, r, sizeof r));
    /* [[1, NaN], [inf, 2]]^2 = [[1 + NaN inf, NaN + 2 NaN], [inf + 2 inf, inf NaN + 4]] */
    cr_assert(isnan(r[0]) && isnan(r[1]) && isnan(r[3]), "a a = [%g, %g, %g, %g]", r[0], r[1], r[2], r[3]);
    cr_assert_eq(r[2], INFINITY, "(a a)[1][0] = %g", r[2]);
    static const int axis1[1] = {1};
    CHECK_OK(ctx, clmad_sum(ctx, a, 1, axis1, 0, &sum));
    CHECK_OK(ctx, clmad_tensor_read(sum, r, 2 * sizeof(float)));
    cr_assert(isnan(r[0]), "row 0 sum = %g", r[0]);
    cr_assert_eq(r[1], INFINITY, "row 1 sum = %g", r[1]);
    clmad_tensor *zero = filled(ctx, CLMAD_F32, 0, NULL, 0);
    CHECK_OK(ctx, clmad_compare(ctx, CLMAD_GT, a, zero, &mx));
    CHECK_OK(ctx, clmad_tensor_read(mx, r, sizeof r));
    cr_assert_eq(r[0], 1.0f);
    cr_assert_eq(r[1], 0.0f, "NaN > 0 is false");
    cr_assert_eq(r[2], 1.0f);
    clmad_tensor *all[] = {a, m, sum, mx, zero};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    still_works(ctx);
    clmad_context_release(ctx);
}
