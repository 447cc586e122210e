/* SPDX-License-Identifier: Apache-2.0 */
/* Strided copies: slices, concatenations, transposes, expansions, and the
 * scaled or accumulating copies of the adjoints. */
#include "runtime/context.h"
#include "runtime/primitives.h"

#include <string.h>

void clmad__contiguous_strides(int ndim, const size_t *shape, size_t *strides)
{
    size_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d];
    }
}

cl_ulong8 clmad__pack8(int n, const size_t *v)
{
    cl_ulong8 p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < n && i < 8; i++)
        p.s[i] = v[i];
    return p;
}

/* The strided copy with unit strides on both sides: a flat kernel, one
 * vector access per work-item (the tuning's vector width). */
static clmad_status contiguous_copy(clmad_context *ctx, clmad_tensor *dst, size_t dst_off, clmad_tensor *src,
                                    size_t src_off, size_t n, double scale, int accumulate, uint64_t bytes)
{
    cl_kernel k;
    clmad_status st = clmad__cached_kernel(ctx, dst->dtype, CLMAD_OPS_COPY_CONTIGUOUS, &k);
    if (st != CLMAD_OK)
        return st;
    cl_ulong nn = n, doff = dst_off, soff = src_off;
    cl_int acc = accumulate;
    clmad_real_arg scale_arg;
    const size_t scale_size = clmad__real_arg(dst->dtype, scale, &scale_arg);
    const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof nn, sizeof doff, sizeof soff, scale_size,
                            sizeof acc};
    const void *values[] = {&dst->mem, &src->mem, &nn, &doff, &soff, &scale_arg, &acc};
    st = clmad__set_kernel_args(ctx, k, 7, sizes, values);
    return st == CLMAD_OK ? clmad__enqueue_flat(ctx, k, n, bytes) : st;
}

clmad_status clmad__strided_copy(clmad_context *ctx, clmad_tensor *dst, size_t dst_off,
                                 const size_t *dst_strides, clmad_tensor *src, size_t src_off,
                                 const size_t *src_strides, int nd, const size_t *dims, double scale,
                                 int accumulate)
{
    size_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= dims[d];
    if (n == 0)
        return CLMAD_OK;
    /* Merge neighbouring dimensions that both sides walk as one (outer
     * stride = inner stride x inner size) and drop those of size 1: the
     * kernel's index arithmetic is per dimension, and a single dimension
     * (a contiguous copy, a scalar expanded) needs none. */
    size_t md[CLMAD_MAX_DIMS], mds[CLMAD_MAX_DIMS], mss[CLMAD_MAX_DIMS];
    int m = 0;
    for (int d = 0; d < nd; d++) {
        if (dims[d] == 1)
            continue;
        if (m > 0 && mds[m - 1] == dst_strides[d] * dims[d] && mss[m - 1] == src_strides[d] * dims[d]) {
            md[m - 1] *= dims[d];
            mds[m - 1] = dst_strides[d];
            mss[m - 1] = src_strides[d];
            continue;
        }
        md[m] = dims[d];
        mds[m] = dst_strides[d];
        mss[m] = src_strides[d];
        m++;
    }
    if (m == 0) { /* a single element */
        md[0] = 1, mds[0] = 0, mss[0] = 0;
        m = 1;
    }
    nd = m, dims = md, dst_strides = mds, src_strides = mss;
    /* Each element read once and written once (twice when accumulating). */
    uint64_t bytes = (uint64_t)n * clmad_dtype_size(dst->dtype) * (accumulate ? 3 : 2);
    if (nd == 1 && dst_strides[0] == 1 && src_strides[0] == 1)
        return contiguous_copy(ctx, dst, dst_off, src, src_off, n, scale, accumulate, bytes);
    cl_kernel k;
    clmad_status st = clmad__cached_kernel(ctx, dst->dtype, CLMAD_OPS_STRIDED_COPY, &k);
    if (st != CLMAD_OK)
        return st;
    cl_ulong nn = n, doff = dst_off, soff = src_off;
    cl_int ndim = nd, acc = accumulate;
    cl_ulong8 d8 = clmad__pack8(nd, dims), ds8 = clmad__pack8(nd, dst_strides), ss8 = clmad__pack8(nd, src_strides);
    clmad_real_arg scale_arg;
    const size_t scale_size = clmad__real_arg(dst->dtype, scale, &scale_arg);
    const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof nn, sizeof ndim, sizeof d8,
                            sizeof ds8, sizeof ss8, sizeof doff, sizeof soff, scale_size, sizeof acc};
    const void *values[] = {&dst->mem, &src->mem, &nn, &ndim, &d8, &ds8, &ss8, &doff, &soff,
                            &scale_arg, &acc};
    st = clmad__set_kernel_args(ctx, k, 11, sizes, values);
    return st == CLMAD_OK ? clmad__enqueue_1d(ctx, k, n, bytes) : st;
}
