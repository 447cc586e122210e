/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Index operations (ops/index_*.c): argmax and argmin, selection and
 * gathering along an axis, their deterministic adjoints, one-hot rows,
 * dtype conversions. `real` is the type values compute in (float, double,
 * or an integer type) and `clmad__stored` their element in memory
 * (real.clh): a selection moves elements as they are, a sum loads through
 * CLMAD__LD and stores through CLMAD__ST once; indices are long. A tensor seen
 * along `axis` is outer x A x inner (the axis in the middle). Indices are
 * checked by clmad_index_check before any kernel uses them. No float
 * atomics: every element of an adjoint is summed by one work-item, over
 * the indices in their order, so gradients are bitwise reproducible.
 */
#include "real.clh"

/* x is NaN (never for integer elements; a function, so that the compiler
 * does not warn about a constant condition). */
static int clmad_is_nan(real x)
{
#ifdef CLMAD_ELEM_INT
    (void)x;
    return 0;
#else
    return isnan(x);
#endif
}

/* bad[0] = 1 when an index is outside [0, limit). */
__kernel void clmad_index_check(__global const long *restrict idx, ulong n, long limit,
                                __global int *restrict bad)
{
    ulong e = get_global_id(0);
    if (e < n && (idx[e] < 0 || idx[e] >= limit))
        atomic_or(bad, 1);
}

/* out[r] = the first index of the largest (want_max) or smallest element
 * of row r along the axis; a NaN counts as the extreme (NumPy's rule: the
 * first NaN). */
__kernel void clmad_argext(__global long *restrict out, __global const clmad__stored *restrict x, ulong rows,
                           ulong n, ulong inner, int want_max)
{
    ulong r = get_global_id(0);
    if (r >= rows)
        return;
    const ulong base = (r / inner) * n * inner + r % inner;
    real best = CLMAD__LD(x, base);
    long at = 0;
    for (ulong k = 1; k < n && !clmad_is_nan(best); k++) {
        const real v = CLMAD__LD(x, base + k * inner);
        if (clmad_is_nan(v) || (want_max ? v > best : v < best)) {
            best = v;
            at = (long)k;
        }
    }
    out[r] = at;
}

/* y (outer x K x inner) = x (outer x A x inner) at the rows idx[K] along
 * the axis: clmad_index_select. */
__kernel void clmad_index_select(__global clmad__stored *restrict y, __global const clmad__stored *restrict x,
                                 __global const long *restrict idx, ulong total, ulong a_len, ulong k_len,
                                 ulong inner)
{
    ulong e = get_global_id(0);
    if (e >= total)
        return;
    const ulong i = e % inner, k = (e / inner) % k_len, o = e / (inner * k_len);
    y[e] = x[(o * a_len + (ulong)idx[k]) * inner + i];
}

/* The adjoint of clmad_index_select: g (outer x A x inner) (+)= the sum of
 * adj's rows k (outer x K x inner) with idx[k] = a, one work-item per row
 * (o, a) of g, each element summed over k in order. */
__kernel void clmad_index_select_grad(__global clmad__stored *restrict g, __global const clmad__stored *restrict adj,
                                      __global const long *restrict idx, ulong rows, ulong a_len,
                                      ulong k_len, ulong inner, int accumulate)
{
    ulong r = get_global_id(0);
    if (r >= rows)
        return;
    const ulong o = r / a_len, a = r % a_len;
    __global clmad__stored *row = g + r * inner;
    __global const clmad__stored *rows_k = adj + o * k_len * inner;
    for (ulong i = 0; i < inner; i++) {
        real s = accumulate ? CLMAD__LD(row, i) : (real)0;
        for (ulong k = 0; k < k_len; k++)
            if ((ulong)idx[k] == a)
                s += CLMAD__LD(rows_k, k * inner + i);
        CLMAD__ST(row, i, s);
    }
}

/* y (+)= x gathered along the axis: y and idx are outer x K x inner, x
 * outer x A x inner, y[o, k, i] = x[o, idx[o, k, i], i] (clmad_gather, and
 * the adjoint of clmad_scatter_add's source). */
__kernel void clmad_gather(__global clmad__stored *restrict y, __global const clmad__stored *restrict x,
                           __global const long *restrict idx, ulong total, ulong a_len, ulong k_len,
                           ulong inner, int accumulate)
{
    ulong e = get_global_id(0);
    if (e >= total)
        return;
    const ulong i = e % inner, o = e / (inner * k_len), from = (o * a_len + (ulong)idx[e]) * inner + i;
    if (accumulate)
        CLMAD__ST(y, e, CLMAD__LD(y, e) + CLMAD__LD(x, from));
    else
        y[e] = x[from];
}

/* dst (outer x A x inner) (+)= src (outer x K x inner) scattered along the
 * axis by idx (src's shape): dst[o, a, i] sums src[o, k, i] over the k
 * with idx[o, k, i] = a, in order of k (clmad_scatter_add, and the adjoint
 * of clmad_gather). One work-item per element of dst. */
__kernel void clmad_scatter_add(__global clmad__stored *restrict dst, __global const clmad__stored *restrict src,
                                __global const long *restrict idx, ulong total, ulong a_len, ulong k_len,
                                ulong inner, int accumulate)
{
    ulong e = get_global_id(0);
    if (e >= total)
        return;
    const ulong i = e % inner, a = (e / inner) % a_len, o = e / (inner * a_len);
    real s = accumulate ? CLMAD__LD(dst, e) : (real)0;
    for (ulong k = 0; k < k_len; k++) {
        const ulong q = (o * k_len + k) * inner + i;
        if ((ulong)idx[q] == a)
            s += CLMAD__LD(src, q);
    }
    CLMAD__ST(dst, e, s);
}

/* y (n x classes) = the one-hot rows of idx[n]. */
__kernel void clmad_one_hot_index(__global clmad__stored *restrict y, __global const long *restrict idx,
                                  ulong total, ulong classes)
{
    ulong e = get_global_id(0);
    if (e < total)
        CLMAD__ST(y, e, (ulong)idx[e / classes] == e % classes ? (real)1 : (real)0);
}

/* dst[e] = src[e] converted to real (C's conversion: integers to floats
 * round, floats to integers truncate toward zero). */
#define CLMAD_CAST_FROM(name, type)                                                               \
    __kernel void name(__global real *restrict dst, __global const type *restrict src, ulong n)   \
    {                                                                                             \
        ulong e = get_global_id(0);                                                               \
        if (e < n)                                                                                \
            dst[e] = (real)src[e];                                                                \
    }
CLMAD_CAST_FROM(clmad_cast_from_f32, float)
CLMAD_CAST_FROM(clmad_cast_from_i32, int)
CLMAD_CAST_FROM(clmad_cast_from_i64, long)
CLMAD_CAST_FROM(clmad_cast_from_u8, uchar)
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
CLMAD_CAST_FROM(clmad_cast_from_f64, double)
#endif
