/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernels of the builtin operations that are not broadcasts: strided copies
 * (slice, concat, transpose, expand), deterministic reductions and the
 * accumulation of gradients, and fills. `real` and `clmad__stored` come
 * from real.clh: kernels that compute load through CLMAD__LD and store
 * through CLMAD__ST (16-bit tensors compute in float and round once), sums
 * accumulate in `real`, and a plain copy or fill moves clmad__stored as it
 * is.
 * Shapes and strides of up to 8 dimensions travel as ulong8 and are unpacked
 * into private arrays (vectors cannot be indexed by a variable in OpenCL C
 * 1.2). No contraction into fma: clmad_dot must round like a product stored
 * and then summed.
 */
#pragma OPENCL FP_CONTRACT OFF

#include "real.clh"

/* Element offset of linear index i over dims[0..nd) with the given strides
 * (last dimension fastest). */
static ulong clmad_offset(ulong i, int nd, const ulong *dims, const ulong *strides)
{
    ulong off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        off += (i % dims[d]) * strides[d];
        i /= dims[d];
    }
    return off;
}

/* dst[di] (+)= scale * src[si]; a plain copy (scale 1, no accumulation)
 * moves the element as it is, bit for bit. */
static void clmad_scaled_into(__global clmad__stored *dst, ulong di, __global const clmad__stored *src, ulong si,
                              real scale, int accumulate)
{
    if (scale == (real)1 && !accumulate) {
        dst[di] = src[si];
        return;
    }
    const real v = scale * CLMAD__LD(src, si);
    CLMAD__ST(dst, di, accumulate ? CLMAD__LD(dst, di) + v : v);
}

/* dst[dst_off + offset(e, dst_strides)] (+)= scale * src[src_off + offset(e, src_strides)]
 * for every element e of the shape `dims`. */
__kernel void clmad_strided_copy(__global clmad__stored *dst, __global const clmad__stored *src, ulong n, int nd,
                                 ulong8 dims8, ulong8 dst_strides8, ulong8 src_strides8,
                                 ulong dst_off, ulong src_off, real scale, int accumulate)
{
    ulong e = get_global_id(0);
    if (e >= n)
        return;
    if (nd <= 1) {
        /* One dimension after merging (contiguous copies, expansions of a
         * scalar): no index arithmetic, no private arrays. */
        const ulong dstep = nd == 1 ? dst_strides8.s0 : 0, sstep = nd == 1 ? src_strides8.s0 : 0;
        clmad_scaled_into(dst, dst_off + e * dstep, src, src_off + e * sstep, scale, accumulate);
        return;
    }
    ulong dims[8], ds[8], ss[8];
    vstore8(dims8, 0, dims);
    vstore8(dst_strides8, 0, ds);
    vstore8(src_strides8, 0, ss);
    clmad_scaled_into(dst, dst_off + clmad_offset(e, nd, dims, ds), src, src_off + clmad_offset(e, nd, dims, ss),
                      scale, accumulate);
}

/* Deterministic partial sums: work-item g = m * parts + p (or p * n_keep +
 * m, below) sums, in a fixed order, part p of the reduced elements of kept
 * element m, and writes dst[m * parts + p]. With one reduced dimension
 * (the common case once neighbours are merged) part p is the interleaved
 * set p, p + parts, p + 2 parts, ...:
 * neighbouring work-items read neighbouring elements, which GPUs coalesce
 * and CPUs vectorise. With several, part p is the contiguous range
 * [p * n_red / parts, (p+1) * n_red / parts), walked by an odometer. */
__kernel void clmad_reduce_sum(__global real *dst, __global const clmad__stored *src, ulong n_keep,
                               ulong n_red, ulong parts, int nk, ulong8 kdims8, ulong8 kstrides8,
                               int nr, ulong8 rdims8, ulong8 rstrides8)
{
    ulong g = get_global_id(0);
    if (g >= n_keep * parts)
        return;
    /* Where the kept elements are neighbours in memory and the reduced
     * ones are not (a column sum: a bias's gradient), neighbouring
     * work-items take neighbouring kept elements instead, so that their
     * reads coalesce; each part is added in the same order and written to
     * the same place. */
    const ulong inner_keep = nk == 1 ? kstrides8.s0 : 0;
    if (nk <= 1 && nr <= 1) { /* the common case, with no coordinate arrays */
        const ulong stride = nr == 1 ? rstrides8.s0 : 0;
        const int across = nk == 1 && inner_keep == 1 && stride != 1;
        const ulong m = across ? g % n_keep : g / parts, p = across ? g / n_keep : g % parts;
        const ulong base = m * inner_keep;
        real acc = 0;
        for (ulong q = p; q < n_red; q += parts)
            acc += CLMAD__LD(src, base + q * stride);
        dst[m * parts + p] = acc;
        return;
    }
    ulong kdims[8], ks[8], rdims[8], rs[8];
    vstore8(kdims8, 0, kdims);
    vstore8(kstrides8, 0, ks);
    vstore8(rdims8, 0, rdims);
    vstore8(rstrides8, 0, rs);
    const int across = nr == 1 && ks[nk - 1] == 1 && rs[0] != 1;
    ulong m = across ? g % n_keep : g / parts, p = across ? g / n_keep : g % parts;
    ulong base = clmad_offset(m, nk, kdims, ks);
    real acc = 0;
    if (nr <= 1) {
        const ulong stride = nr == 1 ? rs[0] : 0;
        for (ulong q = p; q < n_red; q += parts)
            acc += CLMAD__LD(src, base + q * stride);
        dst[m * parts + p] = acc;
        return;
    }
    ulong q0 = p * n_red / parts, q1 = (p + 1) * n_red / parts;
    /* Odometer over the reduced coordinates: no division per element. */
    ulong c[8];
    ulong rest = q0, off = 0;
    for (int d = nr - 1; d >= 0; d--) {
        c[d] = rest % rdims[d];
        rest /= rdims[d];
        off += c[d] * rs[d];
    }
    for (ulong q = q0; q < q1; q++) {
        acc += CLMAD__LD(src, base + off);
        for (int d = nr - 1; d >= 0; d--) {
            off += rs[d];
            if (++c[d] < rdims[d])
                break;
            off -= c[d] * rs[d];
            c[d] = 0;
        }
    }
    dst[g] = acc;
}

/* One level of clmad_reduce_sum_tail: its parts of n values of IN (each
 * read by LOAD) into OUT, or the sum into dst[0] at the last level. */
#define CLMAD_LOCAL(p, q) ((p)[q])
#define CLMAD_TAIL_LEVEL(IN, LOAD, OUT)                                                         \
    for (ulong p = lid; p < parts; p += w) {                                                    \
        real acc = 0;                                                                           \
        for (ulong q = p; q < n; q += parts)                                                    \
            acc += LOAD(IN, q);                                                                 \
        if (parts > 1)                                                                          \
            OUT[p] = acc;                                                                       \
        else                                                                                    \
            dst[0] = scaled ? scale * acc : acc;                                                \
    }

/* The last passes of clmad_reduce_sum over one contiguous run of n values
 * (one kept element), in one work-group: each level's parts as
 * clmad__reduce makes them (parts = 1 up to 64 values, else n / 32 rounded
 * up; part p is p, p + parts, ...), added in the same order, kept in local
 * memory between the levels instead of one launch each. n <= 32768 (the
 * first level's parts fit a). dst[0] is the sum, times scale when scaled
 * (as clmad__reduce's clmad_strided_copy scales it). */
__kernel void clmad_reduce_sum_tail(__global real *dst, __global const clmad__stored *src, ulong n, real scale,
                                    int scaled)
{
    __local real a[1024], b[32];
    const ulong lid = get_local_id(0), w = get_local_size(0);
    ulong parts = n <= 64 ? 1 : (n + 31) / 32;
    CLMAD_TAIL_LEVEL(src, CLMAD__LD, a)
    __local real *in = a, *out = b;
    while (parts > 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        n = parts;
        parts = n <= 64 ? 1 : (n + 31) / 32;
        CLMAD_TAIL_LEVEL(in, CLMAD_LOCAL, out)
        __local real *t = in;
        in = out;
        out = t;
    }
}

/* On CPUs, a full sum of a contiguous array: work-item p sums the range
 * [p n / parts, (p + 1) n / parts) in eight lanes (element q of the range's
 * multiples of 8 into lane q % 8), then its tail, then the lanes in a fixed
 * tree. Vector loads of neighbouring elements, and a fixed order. PRODUCT:
 * of a[q] * b[q] (clmad_dot; the same additions as over a stored product). */
#define CLMAD_RANGE_SUM(name, VALUE8, VALUE, ...)                                              \
    __kernel void name(__global real *restrict dst, __VA_ARGS__, ulong n, ulong parts)          \
    {                                                                                           \
        ulong p = get_global_id(0);                                                             \
        if (p >= parts)                                                                         \
            return;                                                                             \
        const ulong lo = p * n / parts, hi = (p + 1) * n / parts;                               \
        clmad__real8 acc = (clmad__real8)(0);                                                   \
        ulong q = lo;                                                                           \
        for (; q + 8 <= hi; q += 8)                                                             \
            acc += VALUE8;                                                                      \
        real tail = 0;                                                                          \
        for (; q < hi; q++)                                                                     \
            tail += VALUE;                                                                      \
        dst[p] = ((acc.s0 + acc.s1) + (acc.s2 + acc.s3)) + ((acc.s4 + acc.s5) + (acc.s6 + acc.s7)) \
                 + tail;                                                                        \
    }
CLMAD_RANGE_SUM(clmad_sum_ranges, CLMAD__LD8(src, q), CLMAD__LD(src, q), __global const clmad__stored *restrict src)
CLMAD_RANGE_SUM(clmad_dot_ranges, CLMAD__LD8(a, q) * CLMAD__LD8(b, q), CLMAD__LD(a, q) * CLMAD__LD(b, q),
                __global const clmad__stored *restrict a, __global const clmad__stored *restrict b)

/* Partial sums of a[q] * b[q] over q = p, p + parts, ... (clmad_dot): the
 * first pass of clmad_reduce_sum over the product, added in the same order. */
__kernel void clmad_dot_parts(__global real *restrict dst, __global const clmad__stored *restrict a,
                              __global const clmad__stored *restrict b, ulong n, ulong parts)
{
    ulong p = get_global_id(0);
    if (p >= parts)
        return;
    real acc = 0;
    for (ulong q = p; q < n; q += parts) {
        const real prod = CLMAD__LD(a, q) * CLMAD__LD(b, q);
        acc += prod;
    }
    dst[p] = acc;
}

/* dst = dst + src, elementwise (gradient accumulation). Flat (real.clh). */
__kernel void clmad_accumulate(__global clmad__stored *restrict dst, __global const clmad__stored *restrict src,
                               ulong n)
{
    const ulong i = get_global_id(0);
    if (CLMAD__WHOLE_RUN(i, n))
        CLMAD__VSTORE(CLMAD__VLOAD(i, dst) + CLMAD__VLOAD(i, src), i, dst);
    else
        for (ulong e = i * CLMAD_VW; e < n; e++)
            CLMAD__ST(dst, e, CLMAD__LD(dst, e) + CLMAD__LD(src, e));
}

/* dst[e] = src[e * step] (* scale[0]), step 0 or 1: a lazy adjoint expanded
 * (tape/adjoint.c). The product is the one the broadcast kernels form from
 * it (broadcast/codegen_body.c). Flat (real.clh). */
__kernel void clmad_expand_scaled(__global clmad__stored *restrict dst, __global const clmad__stored *restrict src,
                                  ulong step, __global const clmad__stored *restrict scale, int scaled,
                                  ulong n)
{
    const ulong i = get_global_id(0);
    if (CLMAD__WHOLE_RUN(i, n)) {
        const clmad__realv v = step ? CLMAD__VLOAD(i, src) : (clmad__realv)(CLMAD__LD(src, 0));
        CLMAD__VSTORE(scaled ? v * CLMAD__LD(scale, 0) : v, i, dst);
    } else {
        for (ulong e = i * CLMAD_VW; e < n; e++)
            CLMAD__ST(dst, e, scaled ? CLMAD__LD(src, e * step) * CLMAD__LD(scale, 0) : CLMAD__LD(src, e * step));
    }
}

/* dst[0..n) = value, an element as stored (tensor fills and zeros; see
 * clmad__fill). Flat. */
__kernel void clmad_fill(__global clmad__stored *dst, clmad__stored value, ulong n)
{
    const ulong i = get_global_id(0);
    if (CLMAD__WHOLE_RUN(i, n))
        CLMAD__VSTORE_RAW((clmad__storedv)(value), i, dst);
    else
        for (ulong e = i * CLMAD_VW; e < n; e++)
            dst[e] = value;
}

/* dst[dst_off + e] (+)= scale * src[src_off + e] for e in [0, n): the
 * strided copy's one-dimension case with unit strides (runtime/reduce.c),
 * in the same operations. Flat. */
__kernel void clmad_copy_contiguous(__global clmad__stored *restrict dst, __global const clmad__stored *restrict src,
                                    ulong n, ulong dst_off, ulong src_off, real scale, int accumulate)
{
    const ulong i = get_global_id(0);
    __global clmad__stored *d = dst + dst_off;
    __global const clmad__stored *s = src + src_off;
    if (scale == (real)1 && !accumulate) { /* a plain copy: bit for bit, never reading dst */
        if (CLMAD__WHOLE_RUN(i, n))
            CLMAD__VSTORE_RAW(CLMAD__VRAW(i, s), i, d);
        else
            for (ulong e = i * CLMAD_VW; e < n; e++)
                d[e] = s[e];
    } else if (CLMAD__WHOLE_RUN(i, n)) {
        /* Two stores, so that a scaled copy never reads dst */
        const clmad__realv v = scale * CLMAD__VLOAD(i, s);
        if (accumulate)
            CLMAD__VSTORE(CLMAD__VLOAD(i, d) + v, i, d);
        else
            CLMAD__VSTORE(v, i, d);
    } else {
        for (ulong e = i * CLMAD_VW; e < n; e++) {
            const real v = scale * CLMAD__LD(s, e);
            CLMAD__ST(d, e, accumulate ? CLMAD__LD(d, e) + v : v);
        }
    }
}

/* C = op(A) op(B) + beta C for the small products that ops/gemm.c keeps
 * from CLBlast (whose first GEMM of a process builds a large program: 4 s
 * of POCL's time): row-major matrices at element offsets with their leading
 * dimensions, op transposing when ta / tb is set. A work-item computes a
 * run of up to 8 consecutive elements of a row of C: with B as it is, each
 * summing over k in order, a whole run loading its 8 values of B at once;
 * with B transposed, each a dot product in lanes of 8 over k. The order of
 * the sums depends only on the shapes. beta 0 never reads C. */
__kernel void clmad_gemm_small(__global const real *a, ulong a_off, ulong lda, int ta, __global const real *b,
                               ulong b_off, ulong ldb, int tb, __global real *c, ulong c_off, ulong ldc,
                               ulong m, ulong n, ulong k, real beta)
{
    const ulong runs = (n + 7) / 8, e = get_global_id(0);
    if (e >= m * runs)
        return;
    const ulong i = e / runs, j = (e % runs) * 8, width = min(n - j, (ulong)8);
    /* op(A)[i][l] = x[l * a_step]; op(B)[l][j + t] = y[l * ldb + t], or
     * y[t * ldb + l] when B is transposed. */
    const ulong a_step = ta ? lda : 1, b_step = ldb;
    __global const real *x = a + a_off + (ta ? i : i * lda);
    __global const real *y = b + b_off + (tb ? j * ldb : j);
    __global real *out = c + c_off + i * ldc + j;
    if (width == 8 && !tb) {
        clmad__real8 sum = (clmad__real8)(0);
        for (ulong l = 0; l < k; l++)
            sum += x[l * a_step] * vload8(0, y + l * b_step);
        vstore8(beta == 0 ? sum : sum + beta * vload8(0, out), 0, out);
        return;
    }
    if (tb) {
        /* Column j + t of op(B) is row j + t of B: each element a dot
         * product of two contiguous runs (when A is not transposed), in
         * lanes of 8 over l, then a fixed tree, then the tail. */
        for (ulong t = 0; t < width; t++) {
            __global const real *yt = y + t * ldb;
            clmad__real8 lanes = (clmad__real8)(0);
            ulong l = 0;
            if (!ta)
                for (; l + 8 <= k; l += 8)
                    lanes += vload8(0, x + l) * vload8(0, yt + l);
            real sum = ((lanes.s0 + lanes.s1) + (lanes.s2 + lanes.s3)) + ((lanes.s4 + lanes.s5) + (lanes.s6 + lanes.s7));
            for (; l < k; l++)
                sum += x[l * a_step] * yt[l];
            out[t] = beta == 0 ? sum : sum + beta * out[t];
        }
        return;
    }
    real sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (ulong l = 0; l < k; l++) {
        const real xl = x[l * a_step];
        for (ulong t = 0; t < width; t++)
            sum[t] += xl * y[l * b_step + t];
    }
    for (ulong t = 0; t < width; t++)
        out[t] = beta == 0 ? sum[t] : sum[t] + beta * out[t];
}
