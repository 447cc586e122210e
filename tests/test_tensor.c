/* SPDX-License-Identifier: Apache-2.0 */
/* Tensors: round trips at every rank, fills, empties, the pool, errors. */
#include "support.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void shape_for(int rank, size_t numel, size_t *shape)
{
    for (int i = 0; i < rank; i++)
        shape[i] = 1;
    if (rank > 0)
        shape[rank / 2] = numel; /* the size sits on a middle axis */
}

static void round_trip(clmad_context *ctx, clmad_dtype dtype, int rank, size_t numel)
{
    size_t es = clmad_dtype_size(dtype), shape[CLMAD_MAX_DIMS];
    shape_for(rank, numel, shape);
    unsigned char *in = malloc(numel * es), *out = malloc(numel * es);
    cr_assert(in && out);
    for (size_t i = 0; i < numel; i++) {
        double v = sin((double)i) * 1e3 + (double)i;
        if (dtype == CLMAD_F32)
            ((float *)in)[i] = (float)v;
        else
            ((double *)in)[i] = v;
    }
    memset(out, 0xAB, numel * es);
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, rank, shape, in, &t));
    cr_assert_eq(clmad_tensor_ndim(t), rank);
    cr_assert_eq(clmad_tensor_numel(t), numel);
    cr_assert_eq(clmad_tensor_dtype(t), dtype);
    for (int i = 0; i < rank; i++)
        cr_assert_eq(clmad_tensor_dim(t, i), shape[i]);
    CHECK_OK(ctx, clmad_tensor_read(t, out, numel * es));
    cr_assert_eq(memcmp(in, out, numel * es), 0, "dtype %d rank %d numel %zu", dtype, rank, numel);
    clmad_tensor_release(t);
    free(in);
    free(out);
}

static void round_trips(clmad_dtype dtype)
{
    clmad_context *ctx = test_context();
    const size_t sizes[] = {1, 7, (1u << 20) + 3};
    for (int rank = 0; rank <= CLMAD_MAX_DIMS; rank++)
        for (int s = 0; s < 3; s++)
            if (rank > 0 || sizes[s] == 1)
                round_trip(ctx, dtype, rank, sizes[s]);
    clmad_context_release(ctx);
}

Test(tensor, round_trip_f32_all_ranks) { round_trips(CLMAD_F32); }
Test(tensor, round_trip_f64_all_ranks) { round_trips(CLMAD_F64); }

Test(tensor, fill_and_zeros)
{
    clmad_context *ctx = test_context();
    size_t shape[2] = {3, 5};
    clmad_tensor *a, *b;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F64, 2, shape, -2.5, &a));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, shape, &b));
    double da[15];
    float fb[15];
    CHECK_OK(ctx, clmad_tensor_read(a, da, sizeof da));
    CHECK_OK(ctx, clmad_tensor_read(b, fb, sizeof fb));
    for (int i = 0; i < 15; i++) {
        cr_expect_eq(da[i], -2.5);
        cr_expect_eq(fb[i], 0.0f);
    }
    clmad_tensor_release(a);
    clmad_tensor_release(b);
    clmad_context_release(ctx);
}

Test(tensor, empty_tensor_is_valid)
{
    clmad_context *ctx = test_context();
    size_t shape[3] = {4, 0, 2};
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 3, shape, NULL, &t));
    cr_expect_eq(clmad_tensor_numel(t), 0);
    CHECK_OK(ctx, clmad_tensor_read(t, NULL, 0));
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

Test(tensor, pool_reuses_buffers_and_live_bytes_return)
{
    clmad_context *ctx = test_context();
    clmad_stats s0, s1, s2;
    CHECK_OK(ctx, clmad_context_stats(ctx, &s0));
    size_t shape[1] = {1000};
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, shape, &t));
    CHECK_OK(ctx, clmad_context_stats(ctx, &s1));
    cr_expect_gt(s1.live_tensor_bytes, s0.live_tensor_bytes);
    cr_expect_eq(s1.pool_misses, s0.pool_misses + 1);
    clmad_tensor_release(t);
    shape[0] = 990; /* same size class: served from the pool */
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, shape, &t));
    CHECK_OK(ctx, clmad_context_stats(ctx, &s2));
    cr_expect_eq(s2.pool_hits, s1.pool_hits + 1);
    cr_expect_eq(s2.pool_misses, s1.pool_misses);
    clmad_tensor_retain(t);
    clmad_tensor_release(t); /* one reference left */
    clmad_tensor_release(t);
    CHECK_OK(ctx, clmad_context_stats(ctx, &s2));
    cr_expect_eq(s2.live_tensor_bytes, s0.live_tensor_bytes);
    clmad_context_release(ctx);
}

/* CLMAD_POISON_BUFFERS=1 (read at context creation): a buffer handed out,
 * new or from the pool, holds 0xFF bytes until written, so that a kernel
 * reading what nobody wrote reads NaN; unset, a new one is not filled. */
Test(tensor, poisoned_buffers_hold_ff_until_written)
{
    cr_assert_eq(setenv("CLMAD_POISON_BUFFERS", "1", 1), 0);
    clmad_context *ctx = test_context();
    cr_assert_eq(unsetenv("CLMAD_POISON_BUFFERS"), 0);
    const size_t shape[1] = {300};
    for (int reuse = 0; reuse < 2; reuse++) { /* new, then from the pool after a write */
        clmad_tensor *t;
        unsigned char bytes[300 * sizeof(float)];
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, shape, NULL, &t));
        CHECK_OK(ctx, clmad_tensor_read(t, bytes, sizeof bytes));
        for (size_t i = 0; i < sizeof bytes; i++)
            cr_assert_eq(bytes[i], 0xff, "byte %zu of a %s buffer: %#x", i, reuse ? "pooled" : "new", bytes[i]);
        clmad_tensor_release(t);
        CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, shape, &t)); /* written, then back to the pool */
        clmad_tensor_release(t);
    }
    clmad_stats stats;
    CHECK_OK(ctx, clmad_context_stats(ctx, &stats));
    cr_expect_gt(stats.pool_hits, 0, "the second buffer was not from the pool");
    clmad_context_release(ctx);
}

Test(tensor, f64_without_fp64_is_unsupported)
{
    clmad_options opt;
    clmad_options_init(&opt);
    opt.disable_fp64 = 1;
    clmad_context *ctx = test_context_with(&opt);
    size_t shape[1] = {4};
    clmad_tensor *t = NULL;
    cr_expect_eq(clmad_tensor_zeros(ctx, CLMAD_F64, 1, shape, &t), CLMAD_ERR_UNSUPPORTED);
    cr_expect_null(t);
    cr_expect(test_contains(clmad_last_error(ctx), "f64"), "%s", clmad_last_error(ctx));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, shape, &t)); /* context still works */
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

Test(tensor, bad_arguments)
{
    clmad_context *ctx = test_context();
    size_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    clmad_tensor *t = NULL;
    cr_expect_eq(clmad_tensor_zeros(ctx, CLMAD_F32, 9, shape, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect(test_contains(clmad_last_error(ctx), "rank 9"));
    cr_expect_eq(clmad_tensor_zeros(ctx, CLMAD_F32, 2, NULL, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_tensor_zeros(ctx, CLMAD_F32, 1, shape, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_tensor_zeros(NULL, CLMAD_F32, 1, shape, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_tensor_zeros(ctx, (clmad_dtype)7, 1, shape, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_null(t);

    size_t four[1] = {4};
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, four, &t));
    float small[2];
    cr_expect_eq(clmad_tensor_read(t, small, sizeof small), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect(test_contains(clmad_last_error(ctx), "16"), "%s", clmad_last_error(ctx));
    cr_expect_eq(clmad_tensor_write(t, small, sizeof small), CLMAD_ERR_INVALID_ARGUMENT);
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

Test(tensor, allocation_above_device_maximum_is_out_of_memory)
{
    clmad_context *ctx = test_context();
    clmad_device_info d;
    CHECK_OK(ctx, clmad_context_device(ctx, &d));
    size_t shape[1] = {(size_t)(d.max_alloc_bytes / sizeof(float)) + 1024};
    clmad_tensor *t = NULL;
    cr_expect_eq(clmad_tensor_zeros(ctx, CLMAD_F32, 1, shape, &t), CLMAD_ERR_OUT_OF_MEMORY);
    cr_expect_null(t);
    cr_expect(test_contains(clmad_last_error(ctx), "maximum allocation"), "%s", clmad_last_error(ctx));
    size_t huge[2] = {(size_t)1 << 40, (size_t)1 << 40}; /* overflows size_t bytes */
    cr_expect_eq(clmad_tensor_zeros(ctx, CLMAD_F32, 2, huge, &t), CLMAD_ERR_OUT_OF_MEMORY);
    size_t ok[1] = {8};
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, ok, &t));
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}
