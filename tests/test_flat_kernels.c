/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The flat internal kernels (cl/real.clh): a work-item takes a run of the
 * tuning table's vector width in one vector access (16 floats on POCL's
 * CPU device, 4 under Oclgrind), and the tail past the last whole run one
 * element at a time. Every length from 0 to 3 runs of 16 and a few longer
 * ones (fewer under CLMAD_TEST_SMALL), through the public calls that launch them: fills (f32, f64, i32,
 * u8), axpby, concatenation and slices (the contiguous copy, at offsets),
 * and backward (a lazy adjoint expanded, gradients accumulated, a slice's
 * gradient copied at an offset). The values are small integers and
 * halves, so every result is exact and compared with ==. Also the sum's
 * last passes in GPUs' order, one work-group for all of them, against the
 * host's passes in the same order.
 */
#include <criterion/criterion.h>

#include "support.h"
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static clmad_context *ctx;

static clmad_tensor *vector_of(size_t n, double (*value)(size_t))
{
    float *h = malloc((n ? n : 1) * sizeof *h);
    cr_assert_not_null(h);
    for (size_t i = 0; i < n; i++)
        h[i] = (float)value(i);
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, h, &t));
    free(h);
    return t;
}

static double ramp(size_t i) { return (double)(i % 97) - 40.0; }
static double halves(size_t i) { return 0.5 * (double)(i % 13); }

/* t's elements (of any dtype) equal expect(i, arg) for every i. */
static void expect_values(clmad_tensor *t, size_t n, double (*expect)(size_t, size_t), size_t arg,
                          const char *what)
{
    const clmad_dtype dtype = clmad_tensor_dtype(t);
    unsigned char *h = malloc((n ? n : 1) * 8);
    cr_assert_not_null(h);
    cr_assert_eq(clmad_tensor_numel(t), n, "%s: %zu elements, not %zu", what, clmad_tensor_numel(t), n);
    CHECK_OK(ctx, clmad_tensor_read(t, h, n * clmad_dtype_size(dtype)));
    for (size_t i = 0; i < n; i++) {
        double v = dtype == CLMAD_F32   ? ((float *)h)[i]
                   : dtype == CLMAD_F64 ? ((double *)h)[i]
                   : dtype == CLMAD_I32 ? ((int32_t *)h)[i]
                                        : h[i];
        cr_assert_eq(v, expect(i, arg), "%s, n %zu: element %zu is %g, not %g", what, n, i, v, expect(i, arg));
    }
    free(h);
}

static double fill_value(size_t i, size_t dtype)
{
    (void)i;
    return dtype == CLMAD_U8 ? 200.0 : dtype == CLMAD_I32 ? -7.0 : 2.5;
}
static double axpby_value(size_t i, size_t n) { (void)n; return 2.0 * ramp(i) + 0.5 * halves(i); }
static double concat_value(size_t i, size_t n) { return i < n ? ramp(i) : halves(i - n); }
static double slice_value(size_t i, size_t n) { (void)n; return ramp(i + 1); }
static double twice_one(size_t i, size_t n) { (void)i, (void)n; return 2.0; }
static double slice_sum(size_t i, size_t n)
{
    (void)i;
    double total = 0;
    for (size_t k = 1; k < n; k++)
        total += ramp(k);
    return total;
}
static double slice_grad(size_t i, size_t n) { (void)n; return i == 0 ? 0.0 : 1.0; }

static void check_length(size_t n)
{
    static const clmad_dtype dtypes[] = {CLMAD_F32, CLMAD_F64, CLMAD_I32, CLMAD_U8};
    for (int d = 0; d < 4; d++) {
        if (dtypes[d] == CLMAD_F64 && !test_device_fp64())
            continue;
        clmad_tensor *t;
        CHECK_OK(ctx, clmad_tensor_fill(ctx, dtypes[d], 1, &n, fill_value(0, dtypes[d]), &t));
        expect_values(t, n, fill_value, dtypes[d], clmad_dtype_name(dtypes[d]));
        clmad_tensor_release(t);
    }

    /* y = 2 x + 0.5 y */
    clmad_tensor *x = vector_of(n, ramp), *y = vector_of(n, halves);
    CHECK_OK(ctx, clmad_tensor_axpby(y, 2.0, x, 0.5));
    expect_values(y, n, axpby_value, n, "axpby");

    /* concat(x, 3 halves): a contiguous copy at offset n */
    const size_t three = 3;
    clmad_tensor *tail = vector_of(three, halves), *parts[2] = {x, tail}, *cat;
    CHECK_OK(ctx, clmad_concat(ctx, 2, parts, 0, &cat));
    expect_values(cat, n + 3, concat_value, n, "concat");
    clmad_tensor_release(cat);
    clmad_tensor_release(tail);

    if (n >= 1) {
        clmad_tensor *s;
        CHECK_OK(ctx, clmad_slice(ctx, x, 0, 1, n, &s));
        expect_values(s, n - 1, slice_value, n, "slice");
        clmad_tensor_release(s);
    }

    /* sum(x) backward twice on a retained tape: the seed expanded over x,
     * then accumulated into the gradient already there */
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_set_retain_tape(ctx, 1));
    clmad_tensor *loss, *g;
    CHECK_OK(ctx, clmad_sum(ctx, x, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    if (n > 0) {
        cr_assert_not_null(g, "n %zu: no gradient", n);
        expect_values(g, n, twice_one, n, "sum's gradient, twice");
    }
    clmad_tensor_release(g);
    clmad_tensor_release(loss);
    CHECK_OK(ctx, clmad_set_retain_tape(ctx, 0));
    clmad_tape_clear(ctx);
    clmad_tensor_zero_grad(x);

    /* sum(x[1:]): its gradient copied into x's at offset 1 */
    if (n >= 2) {
        clmad_tensor *s;
        CHECK_OK(ctx, clmad_slice(ctx, x, 0, 1, n, &s));
        expect_values(s, n - 1, slice_value, n, "slice on the tape");
        CHECK_OK(ctx, clmad_sum(ctx, s, 0, NULL, 0, &loss));
        expect_values(loss, 1, slice_sum, n, "sum of a slice");
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        CHECK_OK(ctx, clmad_tensor_grad(x, &g));
        cr_assert_not_null(g);
        expect_values(g, n, slice_grad, n, "a slice's gradient");
        clmad_tensor_release(g);
        clmad_tensor_release(loss);
        clmad_tensor_release(s);
    }
    clmad_tensor_release(x);
    clmad_tensor_release(y);
}

/* CLMAD_TEST_SMALL=1 (make test-oclgrind, runs of 4): up to 3 runs of 4
 * and one longer length. */
Test(flat_kernels, every_tail_length)
{
    ctx = test_context();
    const int small = test_small();
    for (size_t n = 0; n <= (small ? 3 * 4 + 1 : 3 * 16 + 1); n++)
        check_length(n);
    static const size_t longer[] = {257, 255, 256, 4099, 65537};
    for (int i = 0; i < (small ? 1 : 5); i++)
        check_length(longer[i]);
    clmad_context_release(ctx);
}

/* The sum of x[0..n) as clmad__reduce's passes make it where sums are
 * interleaved (GPUs): parts of n / 32 (1 up to 64 values), part p the
 * values p, p + parts, ..., each from 0, in float. */
static float host_passes(const float *x, size_t n)
{
    float *cur = malloc(n * sizeof *cur), *next = malloc(((n + 31) / 32 + 1) * sizeof *next);
    cr_assert(cur && next);
    memcpy(cur, x, n * sizeof *cur);
    for (;;) {
        size_t parts = n <= 64 ? 1 : (n + 31) / 32;
        for (size_t p = 0; p < parts; p++) {
            float acc = 0;
            for (size_t q = p; q < n; q += parts)
                acc += cur[q];
            next[p] = acc;
        }
        if (parts == 1) {
            float sum = next[0];
            free(cur);
            free(next);
            return sum;
        }
        float *t = cur;
        cur = next, next = t, n = parts;
    }
}

/* Values whose sum depends on the order of the additions (magnitudes from
 * 2^-10 to 2^10, both signs). */
static float order_sensitive(size_t i)
{
    return (float)((long)((i * 2654435761u) % 2001) - 1000) * ldexpf(1.0f, (int)(i % 21) - 10) / 7.0f;
}

/* The sum and mean of n order-sensitive values with the sum's last passes
 * in one group of `group` work-items (0: as many as the device takes):
 * the host's passes bit for bit, in one launch when the group takes them
 * all (32 values a work-item), else after passes. */
static void check_tail_sum(size_t n, size_t group)
{
    clmad__reduce_tail_group(ctx, group);
    float *h = malloc(n * sizeof *h);
    cr_assert_not_null(h);
    for (size_t i = 0; i < n; i++)
        h[i] = order_sensitive(i);
    clmad_tensor *x, *sum, *mean;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, h, &x));
    clmad_stats s0, s1;
    CHECK_OK(ctx, clmad_context_stats(ctx, &s0));
    CHECK_OK(ctx, clmad_sum(ctx, x, 0, NULL, 0, &sum));
    CHECK_OK(ctx, clmad_context_stats(ctx, &s1));
    const uint64_t launches = s1.kernels_launched - s0.kernels_launched;
    const size_t whole = 32 * (group ? group : 32); /* the device's group: 32 work-items at least */
    cr_assert(n <= whole ? launches == 1 : launches > 1 || !group, "n %zu, group %zu: %llu launches", n, group,
              (unsigned long long)launches);
    CHECK_OK(ctx, clmad_mean(ctx, x, 0, NULL, 0, &mean));
    float got[2];
    CHECK_OK(ctx, clmad_tensor_read(sum, &got[0], sizeof got[0]));
    CHECK_OK(ctx, clmad_tensor_read(mean, &got[1], sizeof got[1]));
    const float want = host_passes(h, n), want_mean = (float)(1.0 / (double)n) * want;
    cr_assert(memcmp(&got[0], &want, sizeof want) == 0, "n %zu, group %zu: sum %.9g, the host's passes %.9g", n,
              group, (double)got[0], (double)want);
    cr_assert(memcmp(&got[1], &want_mean, sizeof want) == 0, "n %zu, group %zu: mean %.9g, the host's %.9g", n,
              group, (double)got[1], (double)want_mean);
    clmad_tensor_release(x);
    clmad_tensor_release(sum);
    clmad_tensor_release(mean);
    free(h);
}

Test(flat_kernels, sums_last_passes_in_one_group_as_the_passes)
{
    ctx = test_context();
    clmad__sum_as_gpus(ctx, 1);
    const int small = test_small();
    /* Up to 64 values (one level), two and three levels, the largest the
     * tail takes whole (32 x 1024), and one more level before it; in the
     * device's group, and in the smaller groups of other devices. */
    static const size_t sizes[] = {1, 64, 65, 2048, 2049, 32768, 32769, 100003};
    static const size_t groups[] = {0, 32, 256};
    for (int g = 0; g < 3; g++)
        for (int s = 0; s < (small ? 5 : 8); s++)
            check_tail_sum(sizes[s], groups[g]);
    clmad_context_release(ctx);
}

/* Column sums (the kept elements neighbours in memory, the reduced ones a
 * row apart: a bias's gradient), where work-items go across the columns
 * (clmad_reduce_sum): each column's sum is the host's passes over it, bit
 * for bit, on order-sensitive values. */
Test(flat_kernels, column_sums_as_the_passes)
{
    ctx = test_context();
    const int small = test_small(); /* Oclgrind: the two smaller of each */
    static const size_t rows[] = {65, 1000, 5003}, cols[] = {3, 37, 256};
    for (int r = 0; r < (small ? 2 : 3); r++)
        for (int c = 0; c < (small ? 2 : 3); c++) {
            const size_t shape[2] = {rows[r], cols[c]}, n = rows[r] * cols[c];
            float *h = malloc(n * sizeof *h), *column = malloc(rows[r] * sizeof *column);
            float *got = malloc(cols[c] * sizeof *got);
            cr_assert(h && column && got);
            for (size_t i = 0; i < n; i++)
                h[i] = order_sensitive(i);
            clmad_tensor *x, *sum;
            const int axis = 0;
            CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, shape, h, &x));
            CHECK_OK(ctx, clmad_sum(ctx, x, 1, &axis, 0, &sum));
            CHECK_OK(ctx, clmad_tensor_read(sum, got, cols[c] * sizeof *got));
            for (size_t m = 0; m < cols[c]; m++) {
                for (size_t q = 0; q < rows[r]; q++)
                    column[q] = h[q * cols[c] + m];
                const float want = host_passes(column, rows[r]);
                cr_assert(memcmp(&got[m], &want, sizeof want) == 0, "%zu x %zu, column %zu: %.9g, the host's %.9g",
                          rows[r], cols[c], m, (double)got[m], (double)want);
            }
            clmad_tensor_release(x);
            clmad_tensor_release(sum);
            free(h);
            free(column);
            free(got);
        }
    clmad_context_release(ctx);
}
