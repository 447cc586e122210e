/* SPDX-License-Identifier: Apache-2.0 */
/* Host-side helpers shared by the broadcast tests: a reproducible random
 * generator, tensors from/to double arrays, NumPy broadcasting on the host
 * and mixed absolute/relative comparison. Header-only (static inline). */
#ifndef CLMAD_TEST_BCAST_SUPPORT_H
#define CLMAD_TEST_BCAST_SUPPORT_H

#include "support.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- random numbers (splitmix64: reproducible on every platform) -------- */

static inline uint64_t bs_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static inline double bs_uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(bs_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [lo, hi] (inclusive). */
static inline int bs_int(uint64_t *s, int lo, int hi)
{
    return lo + (int)(bs_next(s) % (uint64_t)(hi - lo + 1));
}

/* ---- shapes ------------------------------------------------------------- */

static inline size_t bs_numel(int ndim, const size_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

/* NumPy broadcast of n shapes; returns 0 when they do not broadcast. */
static inline int bs_broadcast_shape(int n, const int *ndims, const size_t (*shapes)[CLMAD_MAX_DIMS],
                                     int *out_ndim, size_t *out_shape)
{
    int rank = 0;
    for (int j = 0; j < n; j++)
        if (ndims[j] > rank)
            rank = ndims[j];
    for (int d = 0; d < rank; d++)
        out_shape[d] = 1;
    for (int j = 0; j < n; j++)
        for (int k = 1; k <= ndims[j]; k++) {
            size_t s = shapes[j][ndims[j] - k], *o = &out_shape[rank - k];
            if (s == *o || s == 1)
                continue;
            if (*o != 1)
                return 0;
            *o = s;
        }
    *out_ndim = rank;
    return 1;
}

/* Flat index into an input of shape in_shape (aligned at the last axis) of
 * the output element with flat index `flat` in out_shape. */
static inline size_t bs_bindex(size_t flat, int out_ndim, const size_t *out_shape, int in_ndim,
                               const size_t *in_shape)
{
    size_t idx = 0, stride = 1;
    for (int k = 1; k <= out_ndim; k++) {
        size_t od = out_shape[out_ndim - k];
        size_t coord = od ? flat % od : 0;
        flat = od ? flat / od : 0;
        if (k <= in_ndim) {
            size_t s = in_shape[in_ndim - k];
            if (s != 1)
                idx += coord * stride;
            stride *= s;
        }
    }
    return idx;
}

/* ---- tensors ------------------------------------------------------------ */

/* Rounds data[0..n) to dtype in place, so that the host reference sees the
 * values the device sees. */
static inline void bs_round(clmad_dtype dtype, double *data, size_t n)
{
    if (dtype == CLMAD_F32)
        for (size_t i = 0; i < n; i++)
            data[i] = (double)(float)data[i];
}

/* A tensor of dtype holding data (rounded in place to dtype first). */
static inline clmad_tensor *bs_tensor(clmad_context *ctx, clmad_dtype dtype, int ndim,
                                      const size_t *shape, double *data)
{
    size_t n = bs_numel(ndim, shape);
    bs_round(dtype, data, n);
    void *host = data;
    float *f = NULL;
    if (dtype == CLMAD_F32) {
        f = malloc((n ? n : 1) * sizeof *f);
        cr_assert_not_null(f);
        for (size_t i = 0; i < n; i++)
            f[i] = (float)data[i];
        host = f;
    }
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, ndim, shape, host, &t));
    free(f);
    return t;
}

/* The elements of t as a malloc'ed double array (at least one element).
 * Asserts that t is non-NULL and has dtype and the expected shape. */
static inline double *bs_read(clmad_context *ctx, clmad_tensor *t, clmad_dtype dtype, int ndim,
                              const size_t *shape)
{
    cr_assert_not_null(t, "expected a tensor, got NULL");
    cr_assert_eq(clmad_tensor_dtype(t), dtype);
    cr_assert_eq(clmad_tensor_ndim(t), ndim, "rank %d, expected %d", clmad_tensor_ndim(t), ndim);
    for (int d = 0; d < ndim; d++)
        cr_assert_eq(clmad_tensor_dim(t, d), shape[d], "dim %d is %zu, expected %zu", d,
                     clmad_tensor_dim(t, d), shape[d]);
    size_t n = clmad_tensor_numel(t);
    cr_assert_eq(n, bs_numel(ndim, shape));
    double *out = malloc((n ? n : 1) * sizeof *out);
    cr_assert_not_null(out);
    if (dtype == CLMAD_F64) {
        CHECK_OK(ctx, clmad_tensor_read(t, out, n * sizeof(double)));
    } else {
        float *f = malloc((n ? n : 1) * sizeof *f);
        cr_assert_not_null(f);
        CHECK_OK(ctx, clmad_tensor_read(t, f, n * sizeof(float)));
        for (size_t i = 0; i < n; i++)
            out[i] = (double)f[i];
        free(f);
    }
    return out;
}

/* 1 if the two tensors hold bitwise identical bytes (same dtype and numel). */
static inline int bs_bitwise_equal(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b)
{
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    if (clmad_tensor_dtype(a) != clmad_tensor_dtype(b) || clmad_tensor_numel(a) != clmad_tensor_numel(b))
        return 0;
    size_t bytes = clmad_tensor_numel(a) * clmad_dtype_size(clmad_tensor_dtype(a));
    unsigned char *ha = malloc(bytes ? bytes : 1), *hb = malloc(bytes ? bytes : 1);
    cr_assert(ha && hb);
    CHECK_OK(ctx, clmad_tensor_read(a, ha, bytes));
    CHECK_OK(ctx, clmad_tensor_read(b, hb, bytes));
    int same = memcmp(ha, hb, bytes) == 0;
    free(ha);
    free(hb);
    return same;
}

/* 1 if the two tensors hold the same values to within `ulps` units of the
 * last place of their dtype, relative to the larger magnitude but at least
 * to 1 (so that values near 0 compare absolutely); NaN matches NaN only.
 * For the outputs of two separately compiled programs (a primal kernel and
 * a dual one): the OpenCL spec bounds each builtin's error in ulps and lets
 * two programs differ within it (Intel's vectoriser, for one, turns a dual
 * kernel's sin and cos into one sincos, 2 ulp from the primal's sin). */
static inline int bs_ulps_equal(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, double ulps)
{
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    const clmad_dtype dt = clmad_tensor_dtype(a);
    const size_t n = clmad_tensor_numel(a);
    if (dt != clmad_tensor_dtype(b) || n != clmad_tensor_numel(b))
        return 0;
    const size_t es = clmad_dtype_size(dt);
    unsigned char *ha = malloc(n ? n * es : 1), *hb = malloc(n ? n * es : 1);
    cr_assert(ha && hb);
    CHECK_OK(ctx, clmad_tensor_read(a, ha, n * es));
    CHECK_OK(ctx, clmad_tensor_read(b, hb, n * es));
    const double eps = dt == CLMAD_F32 ? 0x1p-23 : 0x1p-52;
    int same = 1;
    for (size_t i = 0; i < n && same; i++) {
        double x = dt == CLMAD_F32 ? ((float *)ha)[i] : ((double *)ha)[i];
        double y = dt == CLMAD_F32 ? ((float *)hb)[i] : ((double *)hb)[i];
        if (isnan(x) || isnan(y))
            same = isnan(x) && isnan(y);
        else if (x != y)
            same = !isinf(x) && !isinf(y) && fabs(x - y) <= ulps * eps * fmax(1.0, fmax(fabs(x), fabs(y)));
    }
    free(ha);
    free(hb);
    return same;
}

/* ---- comparison ---------------------------------------------------------- */

/* Mixed absolute/relative closeness: |got - want| <= tol * max(1, |want|).
 * NaN never compares close. */
static inline int bs_close(double got, double want, double tol)
{
    double scale = fabs(want) > 1 ? fabs(want) : 1;
    return fabs(got - want) <= tol * scale;
}

/* Releases n tensors (NULL entries allowed) and sets them to NULL. */
static inline void bs_release_all(clmad_tensor **t, int n)
{
    for (int i = 0; i < n; i++) {
        clmad_tensor_release(t[i]);
        t[i] = NULL;
    }
}

#endif
