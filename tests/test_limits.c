/* SPDX-License-Identifier: Apache-2.0 */
/* Limits and leaks (issue 13, item 4): the per-thread message of
 * clmad_last_error(NULL) is freed when its thread exits; clmad_gradcheck
 * refuses a point count whose buffers overflow; concat refuses a summed
 * dimension that overflows; a shape and its transpose are both accepted or
 * both refused; the mean over an empty axis is NaN (0/0), as in NumPy and
 * PyTorch. */
#include "support.h"

#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* Host bytes in use: malloc'ed chunks of every arena plus mmapped blocks. */
static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* A context-less failure: leaves its message on this thread. */
static void *fail_without_context(void *arg)
{
    (void)arg;
    clmad_status st = clmad_set_grad_enabled(NULL, 1);
    int ok = st == CLMAD_ERR_INVALID_ARGUMENT && test_contains(clmad_last_error(NULL), "ctx is NULL");
    return ok ? arg : NULL;
}

static void run_threads(int n)
{
    static int token;
    for (int i = 0; i < n; i++) {
        pthread_t th;
        void *ret = NULL;
        cr_assert_eq(pthread_create(&th, NULL, fail_without_context, &token), 0);
        cr_assert_eq(pthread_join(th, &ret), 0);
        cr_assert_eq(ret, &token, "thread %d did not see its message", i);
    }
}

Test(limits, thread_message_freed_at_thread_exit)
{
    enum { THREADS = 2000 };
    run_threads(50); /* arenas and thread caches settle */
    size_t before = heap_in_use();
    run_threads(THREADS);
    size_t after = heap_in_use();
    long grown = (long)after - (long)before;
    cr_log_info("heap growth over %d threads: %ld bytes", THREADS, grown);
    /* Each thread's message takes a chunk of at least 48 bytes: a leak
     * grows the heap by 96 KB or more; a few KB of noise is allowed. */
    cr_assert_lt(grown, 16 * 1024, "the heap grew by %ld bytes over %d threads (%.1f bytes/thread)",
                 grown, THREADS, (double)grown / THREADS);
    /* This thread's message still works after the others exited. */
    cr_assert_eq(clmad_set_grad_enabled(NULL, 1), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(NULL), "clmad_set_grad_enabled"));
}

static clmad_kernel *square_kernel(clmad_context *ctx)
{
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T sq(T x) { return ad_mul(x, x); }", "sq", 1, 1, &k));
    return k;
}

Test(limits, gradcheck_refuses_overflowing_point_counts)
{
    if (!test_device_fp64())
        cr_skip_test("the test device has no fp64, which clmad_gradcheck computes in");
    clmad_context *ctx = test_context();
    clmad_kernel *k = square_kernel(ctx);
    double points[4] = {0.5, 1.0, 1.5, 2.0}, worst = -1.0;
    /* (2^61 + 1) * 8 bytes wraps to 8: an unchecked count allocates 8
     * bytes and copies 2^61 points into them. */
    const size_t counts[] = {((size_t)1 << 61) + 1, SIZE_MAX / 2, SIZE_MAX};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        clmad_status st = clmad_gradcheck(ctx, k, CLMAD_F64, counts[i], points, &worst);
        cr_assert_eq(st, CLMAD_ERR_INVALID_ARGUMENT, "n_points %zu -> %s: %s", counts[i],
                     clmad_status_string(st), clmad_last_error(ctx));
        cr_assert(test_contains(clmad_last_error(ctx), "n_points"), "%s", clmad_last_error(ctx));
        cr_assert_eq(worst, -1.0, "worst was written on failure");
    }
    /* Large but representable: too big for the device, refused before any
     * host buffer of that size is asked for. */
    size_t big = (size_t)1 << 40;
    clmad_status st = clmad_gradcheck(ctx, k, CLMAD_F64, big, points, &worst);
    cr_assert_eq(st, CLMAD_ERR_OUT_OF_MEMORY, "%s: %s", clmad_status_string(st), clmad_last_error(ctx));
    cr_assert(test_contains(clmad_last_error(ctx), "n_points"), "%s", clmad_last_error(ctx));
    /* Still usable afterwards. */
    CHECK_OK(ctx, clmad_gradcheck(ctx, k, CLMAD_F64, 4, points, &worst));
    cr_assert_lt(worst, 1e-6);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

Test(limits, concat_refuses_an_overflowing_axis)
{
    clmad_context *ctx = test_context();
    /* Eight empty f32 tensors of 2^61 rows: together 2^64 rows, which wraps
     * to 0 in size_t. */
    size_t shape[2] = {(size_t)1 << 61, 0};
    clmad_tensor *x;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, shape, NULL, &x));
    clmad_tensor *xs[8] = {x, x, x, x, x, x, x, x}, *y = NULL;
    clmad_status st = clmad_concat(ctx, 8, xs, 0, &y);
    cr_assert_eq(st, CLMAD_ERR_OUT_OF_MEMORY, "%s: %s", clmad_status_string(st), clmad_last_error(ctx));
    cr_assert_null(y);
    cr_assert(test_contains(clmad_last_error(ctx), "clmad_concat"), "%s", clmad_last_error(ctx));
    cr_assert(test_contains(clmad_last_error(ctx), "axis 0"), "%s", clmad_last_error(ctx));
    /* Two of them: 2^62 rows, 2^64 bytes of f32 were it not empty: refused
     * like tensor creation refuses that shape. */
    st = clmad_concat(ctx, 2, xs, 0, &y);
    cr_assert_eq(st, CLMAD_ERR_OUT_OF_MEMORY, "%s: %s", clmad_status_string(st), clmad_last_error(ctx));
    cr_assert_null(y);
    /* Along the empty axis: the sum is 0 and fine. */
    CHECK_OK(ctx, clmad_concat(ctx, 8, xs, 1, &y));
    cr_assert_eq(clmad_tensor_dim(y, 0), (size_t)1 << 61);
    cr_assert_eq(clmad_tensor_dim(y, 1), 0);
    clmad_tensor_release(y);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}

Test(limits, a_shape_and_its_transpose_are_both_accepted_or_both_refused)
{
    clmad_context *ctx = test_context();
    const size_t big = ((size_t)1 << 63) - 1;
    /* The rule (NumPy's): the product of the nonzero sizes, in bytes, fits
     * in size_t, whatever the order of the axes. */
    const struct {
        size_t rows, cols;
        int ok;
    } cases[] = {{0, big, 0}, {big, 0, 0}, {0, (size_t)1 << 61, 1}, {0, (size_t)1 << 62, 0},
                 {0, SIZE_MAX, 0}, {3, 0, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t shape[2] = {cases[i].rows, cases[i].cols};
        clmad_tensor *x = NULL;
        clmad_status st = clmad_tensor_create(ctx, CLMAD_F32, 2, shape, NULL, &x);
        if (!cases[i].ok) {
            cr_assert_eq(st, CLMAD_ERR_OUT_OF_MEMORY, "(%zu, %zu) -> %s: %s", shape[0], shape[1],
                         clmad_status_string(st), clmad_last_error(ctx));
            cr_assert(test_contains(clmad_last_error(ctx), "too big"), "%s", clmad_last_error(ctx));
            continue;
        }
        cr_assert_eq(st, CLMAD_OK, "(%zu, %zu): %s", shape[0], shape[1], clmad_last_error(ctx));
        clmad_tensor *t = NULL;
        CHECK_OK(ctx, clmad_transpose(ctx, x, NULL, &t));
        cr_assert_eq(clmad_tensor_dim(t, 0), shape[1]);
        cr_assert_eq(clmad_tensor_dim(t, 1), shape[0]);
        clmad_tensor_release(t);
        clmad_tensor_release(x);
    }
    clmad_context_release(ctx);
}

static void read_f32(clmad_context *ctx, clmad_tensor *t, float *out, size_t n)
{
    cr_assert_eq(clmad_tensor_numel(t), n);
    CHECK_OK(ctx, clmad_tensor_read(t, out, n * sizeof *out));
}

Test(limits, mean_over_an_empty_axis_is_nan)
{
    clmad_context *ctx = test_context();
    size_t shape[2] = {0, 3};
    clmad_tensor *x, *y;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, shape, NULL, &x));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    float v[3];

    int axis0 = 0;
    CHECK_OK(ctx, clmad_mean(ctx, x, 1, &axis0, 0, &y));
    read_f32(ctx, y, v, 3);
    for (int i = 0; i < 3; i++)
        cr_assert(isnan(v[i]), "mean over the empty axis, column %d: %g (NaN expected)", i, v[i]);
    clmad_tensor_release(y);

    CHECK_OK(ctx, clmad_mean(ctx, x, 1, &axis0, 1, &y)); /* keepdims */
    cr_assert_eq(clmad_tensor_ndim(y), 2);
    read_f32(ctx, y, v, 3);
    for (int i = 0; i < 3; i++)
        cr_assert(isnan(v[i]));
    clmad_tensor_release(y);

    /* Over every axis: one NaN; its gradient is an empty tensor. */
    CHECK_OK(ctx, clmad_mean(ctx, x, 0, NULL, 0, &y));
    read_f32(ctx, y, v, 1);
    cr_assert(isnan(v[0]), "mean of an empty tensor: %g (NaN expected)", v[0]);
    CHECK_OK(ctx, clmad_backward(ctx, y, NULL));
    clmad_tensor *g = NULL;
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    if (g) {
        cr_assert_eq(clmad_tensor_numel(g), 0);
        cr_assert_eq(clmad_tensor_dim(g, 1), 3);
    }
    clmad_tensor_release(g);
    clmad_tensor_release(y);

    /* Over the nonempty axis: an empty result; the sum stays 0. */
    int axis1 = 1;
    CHECK_OK(ctx, clmad_mean(ctx, x, 1, &axis1, 0, &y));
    cr_assert_eq(clmad_tensor_numel(y), 0);
    clmad_tensor_release(y);
    CHECK_OK(ctx, clmad_sum(ctx, x, 1, &axis0, 0, &y));
    read_f32(ctx, y, v, 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(v[i], 0.0f);
    clmad_tensor_release(y);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}
