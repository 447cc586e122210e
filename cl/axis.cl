/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernels of the operations along one axis (max, logsumexp, softmax,
 * log_softmax) and of the softmax cross-entropy loss. `real` comes from
 * real.clh, inlined at build time. (No comment of cl/ may name the
 * preprocessor's file directives: the word alone keeps a program off the
 * disk cache, see reads_other_files in src/runtime/program.c.) A tensor is
 * seen as outer x n x inner, the axis in the middle: element (o, k, i) is
 * at (o * n + k) * inner + i, and the row (o, i) is its n elements along
 * the axis, r = o * inner + i. One work-item walks one row in a fixed order
 * (reproducible results); rows of a softmax over classes are short, and
 * there are many of them. On GPUs, long rows along the last axis go one
 * work-group each, also in a fixed order (the kernels named *_groups).
 */
#pragma OPENCL FP_CONTRACT OFF

#include "real.clh"

#define ROW_BASE(r, n, inner) (((r) / (inner)) * (n) * (inner) + (r) % (inner))

/* max(m, v), a NaN winning (the first NaN kept), as PyTorch's max. */
static real max_of(real m, real v)
{
    return v > m || isnan(v) ? (isnan(m) ? m : v) : m;
}

/* The max of a row; NaN when the row holds one. */
static real row_max(__global const real *x, ulong base, ulong n, ulong inner)
{
    real m = -INFINITY;
    for (ulong k = 0; k < n; k++)
        m = max_of(m, x[base + k * inner]);
    return m;
}

/* The shift that keeps exp() finite: the max, or 0 when the max is
 * infinite (a row of -inf has logsumexp -inf, not NaN). */
static real row_shift(real m)
{
    return isinf(m) ? (real)0 : m;
}

/* sum_k exp(x_k - shift) of a row. */
static real row_sumexp(__global const real *x, ulong base, ulong n, ulong inner, real shift)
{
    real acc = 0;
    for (ulong k = 0; k < n; k++)
        acc += exp(x[base + k * inner] - shift);
    return acc;
}

/* dst[r] = max (mode 0) or logsumexp (mode 1) of row r. */
__kernel void clmad_axis_reduce(__global real *restrict dst, __global const real *restrict x,
                                ulong rows, ulong n, ulong inner, int mode)
{
    ulong r = get_global_id(0);
    if (r >= rows)
        return;
    const ulong base = ROW_BASE(r, n, inner);
    const real m = row_max(x, base, n, inner), s = row_shift(m);
    dst[r] = mode == 0 ? m : s + log(row_sumexp(x, base, n, inner, s));
}

/* y = softmax (take_log 0) or log_softmax (take_log 1) of x along the axis,
 * as exp(x - m) / sum and (x - m) - log(sum), m the row's max: x - m is
 * exact for neighbouring values, where x - logsumexp would round (in f32,
 * to 6e-5 at 1000) and exp() would carry that error. A row holding +inf
 * is NaN throughout, as PyTorch's (inf - inf in its sum), so that its
 * gradient, and the loss of a cross-entropy over it, say it: shifting by
 * 0 there would give finite values beside a NaN (row_shift is for
 * logsumexp, whose value at +inf is +inf). */
__kernel void clmad_axis_softmax(__global real *restrict y, __global const real *restrict x,
                                 ulong rows, ulong n, ulong inner, int take_log)
{
    ulong r = get_global_id(0);
    if (r >= rows)
        return;
    const ulong base = ROW_BASE(r, n, inner);
    const real m = row_max(x, base, n, inner);
    const real s = m == INFINITY ? m : row_shift(m), sum = row_sumexp(x, base, n, inner, s);
    const real log_sum = log(sum);
    for (ulong k = 0; k < n; k++) {
        const ulong e = base + k * inner;
        y[e] = take_log ? (x[e] - s) - log_sum : exp(x[e] - s) / sum;
    }
}

/* Adjoint of max: the row's adjoint goes to its first maximal element
 * (the first NaN when the max is NaN), zero to the others. */
__kernel void clmad_axis_max_grad(__global real *restrict g, __global const real *restrict x,
                                  __global const real *restrict y, __global const real *restrict adj,
                                  ulong rows, ulong n, ulong inner)
{
    ulong r = get_global_id(0);
    if (r >= rows)
        return;
    const ulong base = ROW_BASE(r, n, inner);
    const real m = y[r], a = adj[r];
    int found = 0;
    for (ulong k = 0; k < n; k++) {
        const ulong e = base + k * inner;
        const int hit = !found && (x[e] == m || (isnan(m) && isnan(x[e])));
        found |= hit;
        g[e] = hit ? a : (real)0;
    }
}

/* Adjoint of logsumexp: adj[r] times the softmax of the row, recomputed
 * as in clmad_axis_softmax (exp(x - y) would carry y's rounding). */
__kernel void clmad_axis_logsumexp_grad(__global real *restrict g, __global const real *restrict x,
                                        __global const real *restrict adj, ulong rows, ulong n,
                                        ulong inner)
{
    ulong r = get_global_id(0);
    if (r >= rows)
        return;
    const ulong base = ROW_BASE(r, n, inner);
    const real s = row_shift(row_max(x, base, n, inner)), sum = row_sumexp(x, base, n, inner, s);
    const real a = adj[r];
    for (ulong k = 0; k < n; k++) {
        const ulong e = base + k * inner;
        g[e] = a * (exp(x[e] - s) / sum);
    }
}

/* Adjoint of softmax: g = y (adj - sum_k adj_k y_k); of log_softmax:
 * g = adj - exp(y) sum_k adj_k. y is the forward's output. */
__kernel void clmad_axis_softmax_grad(__global real *restrict g, __global const real *restrict y,
                                      __global const real *restrict adj, ulong rows, ulong n,
                                      ulong inner, int take_log)
{
    ulong r = get_global_id(0);
    if (r >= rows)
        return;
    const ulong base = ROW_BASE(r, n, inner);
    real s = 0;
    for (ulong k = 0; k < n; k++) {
        const ulong e = base + k * inner;
        s += take_log ? adj[e] : adj[e] * y[e];
    }
    for (ulong k = 0; k < n; k++) {
        const ulong e = base + k * inner;
        g[e] = take_log ? adj[e] - exp(y[e]) * s : y[e] * (adj[e] - s);
    }
}

/* The same operations over rows that lie along the last axis (inner 1),
 * one work-group of AXIS_GROUP work-items per row, for GPUs: there one
 * work-item per row reads addresses n apart, which no GPU coalesces (4096
 * rows of 1000 classes took 446 us a pass on an H100). Work-item l takes
 * the row's elements l, l + AXIS_GROUP, ... in order; the group's values
 * then join in a fixed tree. The order differs from the one work-item's,
 * so these are a form of their own (ops/axis.c picks one per device). */
#define AXIS_GROUP 64

/* t[0] = the max (take_max) or the sum of t[0..AXIS_GROUP), every
 * work-item's t[l] written before; all work-items may read t[0] after. */
static void group_join(__local real *t, uint l, int take_max)
{
    for (uint s = AXIS_GROUP / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < s)
            t[l] = take_max ? max_of(t[l], t[l + s]) : t[l] + t[l + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* The row's max (as row_max) into every work-item; t is free again after. */
static real group_max(__local real *t, uint l, __global const real *x, ulong base, ulong n)
{
    real m = -INFINITY;
    for (ulong k = l; k < n; k += AXIS_GROUP)
        m = max_of(m, x[base + k]);
    t[l] = m;
    group_join(t, l, 1);
    m = t[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return m;
}

/* sum_k exp(x_k - shift) of the row into every work-item, as row_sumexp. */
static real group_sumexp(__local real *t, uint l, __global const real *x, ulong base, ulong n, real shift)
{
    real acc = 0;
    for (ulong k = l; k < n; k += AXIS_GROUP)
        acc += exp(x[base + k] - shift);
    t[l] = acc;
    group_join(t, l, 0);
    acc = t[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return acc;
}

__kernel void clmad_axis_reduce_groups(__global real *restrict dst, __global const real *restrict x, ulong n,
                                       int mode)
{
    __local real t[AXIS_GROUP];
    const uint l = get_local_id(0);
    const ulong r = get_group_id(0), base = r * n;
    const real m = group_max(t, l, x, base, n), s = row_shift(m);
    const real v = mode == 0 ? m : s + log(group_sumexp(t, l, x, base, n, s));
    if (l == 0)
        dst[r] = v;
}

__kernel void clmad_axis_softmax_groups(__global real *restrict y, __global const real *restrict x, ulong n,
                                        int take_log)
{
    __local real t[AXIS_GROUP];
    const uint l = get_local_id(0);
    const ulong base = get_group_id(0) * n;
    const real m = group_max(t, l, x, base, n);
    const real s = m == INFINITY ? m : row_shift(m), sum = group_sumexp(t, l, x, base, n, s);
    const real log_sum = log(sum);
    for (ulong k = l; k < n; k += AXIS_GROUP) {
        const ulong e = base + k;
        y[e] = take_log ? (x[e] - s) - log_sum : exp(x[e] - s) / sum;
    }
}

__kernel void clmad_axis_logsumexp_grad_groups(__global real *restrict g, __global const real *restrict x,
                                               __global const real *restrict adj, ulong n)
{
    __local real t[AXIS_GROUP];
    const uint l = get_local_id(0);
    const ulong r = get_group_id(0), base = r * n;
    const real s = row_shift(group_max(t, l, x, base, n)), sum = group_sumexp(t, l, x, base, n, s);
    const real a = adj[r];
    for (ulong k = l; k < n; k += AXIS_GROUP) {
        const ulong e = base + k;
        g[e] = a * (exp(x[e] - s) / sum);
    }
}

__kernel void clmad_axis_softmax_grad_groups(__global real *restrict g, __global const real *restrict y,
                                             __global const real *restrict adj, ulong n, int take_log)
{
    __local real t[AXIS_GROUP];
    const uint l = get_local_id(0);
    const ulong base = get_group_id(0) * n;
    real acc = 0;
    for (ulong k = l; k < n; k += AXIS_GROUP) {
        const ulong e = base + k;
        acc += take_log ? adj[e] : adj[e] * y[e];
    }
    t[l] = acc;
    group_join(t, l, 0);
    const real s = t[0];
    for (ulong k = l; k < n; k += AXIS_GROUP) {
        const ulong e = base + k;
        g[e] = take_log ? adj[e] - exp(y[e]) * s : y[e] * (adj[e] - s);
    }
}

/* dst (rows x classes) = the one-hot rows of the class indices idx[rows]
 * (clmad_cross_entropy); a row whose index is not an integer in
 * [0, classes) is NaN, so that the loss is NaN rather than silently wrong. */
__kernel void clmad_one_hot(__global real *restrict dst, __global const real *restrict idx, ulong numel,
                            ulong classes)
{
    ulong e = get_global_id(0);
    if (e >= numel)
        return;
    const real c = idx[e / classes];
    const int valid = c >= 0 && c < (real)classes && c == floor(c);
    dst[e] = !valid ? (real)NAN : (ulong)c == e % classes ? (real)1 : (real)0;
}
