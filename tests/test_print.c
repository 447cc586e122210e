/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_tensor_format and clmad_tensor_print against texts written out by
 * hand in PyTorch's layout; clmad_dtype_name. */
#include "support.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static clmad_tensor *make(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape, const double *v)
{
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    clmad_tensor *t = NULL;
    if (dtype == CLMAD_F32) {
        float *f = malloc((n ? n : 1) * sizeof *f);
        for (size_t i = 0; i < n; i++)
            f[i] = (float)v[i];
        CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, ndim, shape, f, &t));
        free(f);
    } else {
        CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, ndim, shape, v, &t));
    }
    return t;
}

/* The text of t equals want, through both calls. */
static void expect_text(clmad_context *ctx, clmad_tensor *t, const char *want)
{
    size_t length = 0;
    CHECK_OK(ctx, clmad_tensor_format(t, NULL, 0, &length));
    cr_assert_eq(length, strlen(want), "length %zu, want %zu", length, strlen(want));
    char *buf = malloc(length + 1);
    size_t again = 0;
    CHECK_OK(ctx, clmad_tensor_format(t, buf, length + 1, &again));
    cr_assert_eq(again, length);
    cr_assert_str_eq(buf, want, "\ngot:\n%s\nwant:\n%s", buf, want);
    free(buf);
    clmad_tensor_release(t);
}

Test(print, small_tensors_as_pytorch_prints_them)
{
    clmad_context *ctx = test_context();
    const double six[] = {1, 2, 3, 4, 5, 6}, mixed[] = {-1.5, 10, 0.25}, tiny[] = {1e-5, 1, -2.5},
                 odd[] = {NAN, INFINITY, -INFINITY, 1}, eight[] = {0, 1, 2, 3, 4, 5, 6, 7}, half = 2.5;
    size_t s23[] = {2, 3}, s3[] = {3}, s4[] = {4}, s222[] = {2, 2, 2}, s03[] = {0, 3};
    expect_text(ctx, make(ctx, CLMAD_F32, 2, s23, six),
                "tensor([[1.0000, 2.0000, 3.0000],\n"
                "        [4.0000, 5.0000, 6.0000]], shape=(2, 3), dtype=f32)");
    expect_text(ctx, make(ctx, CLMAD_F32, 1, s3, mixed), "tensor([-1.5000, 10.0000,  0.2500], shape=(3,), dtype=f32)");
    expect_text(ctx, make(ctx, CLMAD_F32, 1, s3, tiny),
                "tensor([ 1.0000e-05,  1.0000e+00, -2.5000e+00], shape=(3,), dtype=f32)");
    expect_text(ctx, make(ctx, CLMAD_F32, 1, s4, odd), "tensor([   nan,    inf,   -inf, 1.0000], shape=(4,), dtype=f32)");
    expect_text(ctx, make(ctx, CLMAD_F32, 3, s222, eight),
                "tensor([[[0.0000, 1.0000],\n"
                "         [2.0000, 3.0000]],\n"
                "\n"
                "        [[4.0000, 5.0000],\n"
                "         [6.0000, 7.0000]]], shape=(2, 2, 2), dtype=f32)");
    expect_text(ctx, make(ctx, CLMAD_F32, 2, s03, six), "tensor([], shape=(0, 3), dtype=f32)");
    if (test_device_fp64())
        expect_text(ctx, make(ctx, CLMAD_F64, 0, NULL, &half), "tensor(2.5000, shape=(), dtype=f64)");
    clmad_context_release(ctx);
}

Test(print, summarises_past_1000_elements)
{
    clmad_context *ctx = test_context();
    double *v = malloc(1600 * sizeof *v);
    for (int i = 0; i < 1600; i++)
        v[i] = 1000 + i;
    size_t s1000[] = {1000}, s1001[] = {1001}, s40[] = {40, 40};
    /* 1000 elements: all shown. */
    clmad_tensor *t = make(ctx, CLMAD_F32, 1, s1000, v);
    size_t length;
    CHECK_OK(ctx, clmad_tensor_format(t, NULL, 0, &length));
    cr_assert_eq(length, strlen("tensor([") + 1000 * strlen("1000.0000") + 999 * 2 + strlen("], shape=(1000,), dtype=f32)"));
    clmad_tensor_release(t);
    expect_text(ctx, make(ctx, CLMAD_F32, 1, s1001, v),
                "tensor([1000.0000, 1001.0000, 1002.0000, ..., 1998.0000, 1999.0000, 2000.0000], shape=(1001,), "
                "dtype=f32)");
    expect_text(ctx, make(ctx, CLMAD_F32, 2, s40, v),
                "tensor([[1000.0000, 1001.0000, 1002.0000, ..., 1037.0000, 1038.0000, 1039.0000],\n"
                "        [1040.0000, 1041.0000, 1042.0000, ..., 1077.0000, 1078.0000, 1079.0000],\n"
                "        [1080.0000, 1081.0000, 1082.0000, ..., 1117.0000, 1118.0000, 1119.0000],\n"
                "        ...,\n"
                "        [2480.0000, 2481.0000, 2482.0000, ..., 2517.0000, 2518.0000, 2519.0000],\n"
                "        [2520.0000, 2521.0000, 2522.0000, ..., 2557.0000, 2558.0000, 2559.0000],\n"
                "        [2560.0000, 2561.0000, 2562.0000, ..., 2597.0000, 2598.0000, 2599.0000]], shape=(40, 40), "
                "dtype=f32)");
    free(v);
    clmad_context_release(ctx);
}

Test(print, cuts_like_snprintf_and_prints_to_a_file)
{
    clmad_context *ctx = test_context();
    const double v[] = {1, 2};
    size_t s2[] = {2};
    clmad_tensor *t = make(ctx, CLMAD_F32, 1, s2, v);
    const char *want = "tensor([1.0000, 2.0000], shape=(2,), dtype=f32)";
    char buf[11];
    memset(buf, 'x', sizeof buf);
    size_t length = 0;
    CHECK_OK(ctx, clmad_tensor_format(t, buf, 10, &length));
    cr_assert_eq(length, strlen(want));
    cr_assert_str_eq(buf, "tensor([1");
    cr_assert_eq(buf[10], 'x', "wrote past size");
    FILE *f = tmpfile();
    CHECK_OK(ctx, clmad_tensor_print(t, f));
    rewind(f);
    char line[128] = "";
    cr_assert(fgets(line, sizeof line, f));
    fclose(f);
    cr_assert_eq(strlen(line), strlen(want) + 1);
    cr_assert_eq(strncmp(line, want, strlen(want)), 0, "%s", line);
    cr_assert_eq(line[strlen(want)], '\n');
    cr_assert_eq(clmad_tensor_format(NULL, buf, 10, &length), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tensor_format(t, buf, 10, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tensor_format(t, NULL, 10, &length), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tensor_print(t, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "clmad_tensor_print: f is NULL"));
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

Test(print, dtype_names)
{
    cr_assert_str_eq(clmad_dtype_name(CLMAD_F32), "f32");
    cr_assert_str_eq(clmad_dtype_name(CLMAD_F64), "f64");
    cr_assert_str_eq(clmad_dtype_name((clmad_dtype)99), "unknown");
}

/* Integer tensors print exactly (no float layout), i64 past 2^53 too. */
Test(print, integer_tensors_print_exactly)
{
    clmad_context *ctx = test_context();
    const int32_t labels[] = {1, -20, 300, 4};
    const int64_t big[] = {9007199254740993LL, -1};
    const uint8_t mask[] = {0, 255, 7};
    size_t s22[] = {2, 2}, s2[] = {2}, s3[] = {3};
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I32, 2, s22, labels, &t));
    expect_text(ctx, t,
                "tensor([[  1, -20],\n"
                "        [300,   4]], shape=(2, 2), dtype=i32)");
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I64, 1, s2, big, &t));
    expect_text(ctx, t, "tensor([9007199254740993,               -1], shape=(2,), dtype=i64)");
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_U8, 1, s3, mask, &t));
    expect_text(ctx, t, "tensor([  0, 255,   7], shape=(3,), dtype=u8)");
    cr_assert_str_eq(clmad_dtype_name(CLMAD_I64), "i64");
    clmad_context_release(ctx);
}
