/* SPDX-License-Identifier: Apache-2.0 */
/* Deterministic reductions (sum, mean, unbroadcast). */
#include "runtime/context.h"
#include "runtime/primitives.h"
#include "base/strbuf.h"

#include <stdlib.h>
#include <string.h>

/* One pass of clmad_reduce_sum: dst[m * parts + p] = partial sums. */
static clmad_status reduce_pass(clmad_context *ctx, cl_mem dst, cl_mem src, clmad_dtype dtype,
                                size_t n_keep, size_t n_red, size_t parts, int nk,
                                const size_t *kdims, const size_t *ks, int nr, const size_t *rdims,
                                const size_t *rs)
{
    cl_kernel k;
    clmad_status st = clmad__cached_kernel(ctx, dtype, CLMAD_OPS_REDUCE_SUM, &k);
    if (st != CLMAD_OK)
        return st;
    cl_ulong keep = n_keep, red = n_red, np = parts;
    cl_int nk32 = nk, nr32 = nr;
    cl_ulong8 kd = clmad__pack8(nk, kdims), kst = clmad__pack8(nk, ks), rd = clmad__pack8(nr, rdims), rst = clmad__pack8(nr, rs);
    const size_t sizes[] = {sizeof dst, sizeof src, sizeof keep, sizeof red, sizeof np, sizeof nk32,
                            sizeof kd, sizeof kst, sizeof nr32, sizeof rd, sizeof rst};
    const void *values[] = {&dst, &src, &keep, &red, &np, &nk32, &kd, &kst, &nr32, &rd, &rst};
    st = clmad__set_kernel_args(ctx, k, 11, sizes, values);
    uint64_t bytes = (uint64_t)(n_keep * n_red + n_keep * parts) * clmad_dtype_size(dtype);
    return st == CLMAD_OK ? clmad__enqueue_1d(ctx, k, n_keep * parts, bytes) : st;
}

void clmad__reduce_tail_group(clmad_context *ctx, size_t group)
{
    for (int d = 0; d < CLMAD__DTYPE_COUNT; d++)
        ctx->reduce_tail_group[d] = group;
}

/* The largest work-group of clmad_reduce_sum_tail: as many work-items as
 * the kernel takes, up to 1024 (its first level has at most 1024 parts). */
static clmad_status tail_group(clmad_context *ctx, clmad_dtype dtype, cl_kernel k, size_t *group)
{
    size_t *g = &ctx->reduce_tail_group[dtype];
    if (!*g) {
        size_t most = 0;
        cl_int err = clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof most, &most, NULL);
        if (err != CL_SUCCESS)
            return clmad__fail_cl(ctx, err, "clGetKernelWorkGroupInfo");
        *g = most < 1024 ? (most ? most : 1) : 1024;
    }
    *group = *g;
    return CLMAD_OK;
}

/* The remaining passes over n contiguous values in one launch (GPUs: the
 * last passes of a sum cost a launch each, for a few thousand values at
 * most), if the tail kernel takes n: up to 32 values per work-item. *done
 * 0 when it does not. Bitwise the passes' sum (clmad_reduce_sum_tail).
 * (The kernel could take up to 32 x 1024 values in a smaller group, each
 * work-item summing several parts in turn: on an H200, whose group for it
 * is smaller, that made a 1024 x 1024 loss 0.064 ms against 0.054 with one
 * more pass, 2026-11-28.) */
static clmad_status reduce_tail(clmad_context *ctx, cl_mem dst, cl_mem src, clmad_dtype dtype, size_t n,
                                double scale, int *done)
{
    *done = 0;
    cl_kernel k;
    clmad_status st = clmad__cached_kernel(ctx, dtype, CLMAD_OPS_REDUCE_SUM_TAIL, &k);
    size_t group = 0;
    if (st == CLMAD_OK)
        st = tail_group(ctx, dtype, k, &group);
    if (st != CLMAD_OK || n > 32 * group)
        return st;
    /* No more work-items than the first level has parts (in warps of 32):
     * a few values need one warp, not a group of 1024 waiting at barriers
     * (Oclgrind simulates every one of them). */
    size_t parts = (n + 31) / 32, fit = (parts + 31) / 32 * 32;
    group = fit < group ? fit : group;
    cl_ulong nn = n;
    cl_int scaled = scale != 1.0;
    clmad_real_arg scale_arg;
    const size_t scale_size = clmad__real_arg(dtype, scale, &scale_arg);
    const size_t sizes[] = {sizeof dst, sizeof src, sizeof nn, scale_size, sizeof scaled};
    const void *values[] = {&dst, &src, &nn, &scale_arg, &scaled};
    st = clmad__set_kernel_args(ctx, k, 5, sizes, values);
    if (st == CLMAD_OK)
        st = clmad__enqueue_groups(ctx, k, 1, group, (uint64_t)(n + 1) * clmad_dtype_size(dtype));
    *done = st == CLMAD_OK;
    return st;
}

/* How many partial sums per kept element a pass makes. A work-item's
 * additions form a chain of dependent loads, so each sums few elements
 * (about 32) and there are many work-items (up to 2^20 in all), which keeps
 * GPUs busy; the passes repeat until one value is left, and the last one
 * adds at most 64 values in a row. (With 65536 work-items of 64 elements and
 * a last pass of 1024 values, a sum of 2048 x 2048 took 0.12 ms on an H100.) */
size_t clmad__reduce_parts(size_t n_keep, size_t n_red)
{
    if (n_red <= 64 || n_keep >= ((size_t)1 << 20))
        return 1;
    size_t parts = (n_red + 31) / 32, cap = ((size_t)1 << 20) / n_keep;
    return parts < cap ? parts : cap;
}

int clmad__loss_terms(clmad_context *ctx, int on)
{
    const int before = ctx->loss_terms;
    if (on >= 0)
        ctx->loss_terms = on;
    return before;
}

int clmad__sum_by_ranges(const clmad_context *ctx, size_t n_keep, int nr, const size_t *rs)
{
    return ctx->info.type == CLMAD_DEVICE_CPU && !ctx->sums_interleaved && n_keep == 1 && nr == 1 && rs[0] == 1;
}

/* Ranges of 8192 elements (a CPU core streams each in about a microsecond)
 * and at most 4096 of them: a sum of 2^22 is 512 ranges, then one. */
size_t clmad__range_parts(size_t n)
{
    const size_t range = 8192, most = 4096;
    size_t parts = (n + range - 1) / range;
    return parts < most ? parts : most;
}

clmad_status clmad__range_pass(clmad_context *ctx, clmad_kernel_id id, cl_mem dst, cl_mem a, cl_mem b,
                               clmad_dtype dtype, size_t n, size_t parts)
{
    cl_kernel k;
    clmad_status st = clmad__cached_kernel(ctx, dtype, id, &k);
    if (st != CLMAD_OK)
        return st;
    cl_ulong nn = n, np = parts;
    const size_t sizes[] = {sizeof dst, sizeof a, b ? sizeof b : sizeof nn, sizeof nn, sizeof np};
    const void *with_b[] = {&dst, &a, &b, &nn, &np}, *without_b[] = {&dst, &a, &nn, &np};
    const size_t sizes_without_b[] = {sizeof dst, sizeof a, sizeof nn, sizeof np};
    st = b ? clmad__set_kernel_args(ctx, k, 5, sizes, with_b)
           : clmad__set_kernel_args(ctx, k, 4, sizes_without_b, without_b);
    uint64_t bytes = ((b ? 2 : 1) * (uint64_t)n + parts) * clmad_dtype_size(dtype);
    return st == CLMAD_OK ? clmad__enqueue_1d(ctx, k, parts, bytes) : st;
}

static clmad_status reduce_in(clmad_context *ctx, clmad_tensor *src, const int *reduce, double scale,
                              clmad_dtype acc, clmad_tensor *result);

clmad_status clmad__reduce(clmad_context *ctx, clmad_tensor *src, const int *reduce, double scale,
                           int out_ndim, const size_t *out_shape, clmad_tensor **out)
{
    /* 16-bit floats are summed in f32 and rounded once at the end. */
    const clmad_dtype acc = clmad__dtype_is_16bit(src->dtype) ? CLMAD_F32 : src->dtype;
    clmad_tensor *result = NULL, *sums = NULL;
    clmad_status st = clmad_tensor_create(ctx, src->dtype, out_ndim, out_shape, NULL, &result);
    if (st == CLMAD_OK && result->numel > 0 && src->numel == 0)
        st = clmad__fill(ctx, result->mem, src->dtype, result->numel, 0.0);
    else if (st == CLMAD_OK && result->numel > 0 && acc != src->dtype) {
        st = clmad_tensor_create(ctx, acc, out_ndim, out_shape, NULL, &sums);
        if (st == CLMAD_OK)
            st = reduce_in(ctx, src, reduce, scale, acc, sums);
        if (st == CLMAD_OK)
            st = clmad__convert_half(ctx, result, sums);
        clmad_tensor_release(sums);
    } else if (st == CLMAD_OK && result->numel > 0)
        st = reduce_in(ctx, src, reduce, scale, acc, result);
    if (st != CLMAD_OK) {
        clmad_tensor_release(result);
        return st;
    }
    *out = result;
    return CLMAD_OK;
}

/* result (of dtype acc: src's, or f32 for a 16-bit src) = the sums. */
static clmad_status reduce_in(clmad_context *ctx, clmad_tensor *src, const int *reduce, double scale,
                              clmad_dtype acc, clmad_tensor *result)
{
    size_t strides[CLMAD_MAX_DIMS];
    clmad__contiguous_strides(src->ndim, src->shape, strides);
    /* Split the dimensions into kept and reduced ones, dropping size 1 and
     * merging neighbours of the same kind (contiguous in src). */
    size_t kdims[CLMAD_MAX_DIMS], ks[CLMAD_MAX_DIMS], rdims[CLMAD_MAX_DIMS], rs[CLMAD_MAX_DIMS];
    int nk = 0, nr = 0, last = -1; /* last: kind of the previous kept dimension (0 keep, 1 reduce) */
    size_t n_keep = 1, n_red = 1;
    for (int d = 0; d < src->ndim; d++) {
        size_t n = src->shape[d];
        if (n == 1)
            continue;
        int r = reduce[d] != 0;
        size_t *dims = r ? rdims : kdims, *st = r ? rs : ks;
        int *count = r ? &nr : &nk;
        if (last == r && *count > 0 && st[*count - 1] == strides[d] * n) {
            dims[*count - 1] *= n;
            st[*count - 1] = strides[d];
        } else {
            dims[*count] = n;
            st[*count] = strides[d];
            (*count)++;
        }
        last = r;
        if (r)
            n_red *= n;
        else
            n_keep *= n;
    }
    clmad_status st = CLMAD_OK;
    /* Passes until one value per kept element is left: each splits its
     * reduced elements into a number of parts that depends on the shape
     * only, so the order of the additions is the same from run to run. */
    int ranges = clmad__sum_by_ranges(ctx, n_keep, nr, rs);
    size_t parts = ranges ? clmad__range_parts(n_red) : clmad__reduce_parts(n_keep, n_red);
    cl_mem from = src->mem;
    clmad_dtype dtype = src->dtype; /* of `from`; the first pass widens a 16-bit src */
    clmad_tensor *partial = NULL;
    int tail_done = 0;
    for (;;) {
        if (!ranges && n_keep == 1 && nr == 1 && rs[0] == 1) {
            st = reduce_tail(ctx, result->mem, from, dtype, n_red, scale, &tail_done);
            if (st != CLMAD_OK || tail_done)
                break;
        }
        clmad_tensor *next = NULL;
        if (parts > 1) {
            size_t pshape[1] = {n_keep * parts};
            st = clmad_tensor_create(ctx, acc, 1, pshape, NULL, &next);
        }
        cl_mem to = next ? next->mem : result->mem;
        if (st == CLMAD_OK && ranges)
            st = clmad__range_pass(ctx, CLMAD_OPS_SUM_RANGES, to, from, NULL, dtype, n_red, parts);
        else if (st == CLMAD_OK)
            st = reduce_pass(ctx, to, from, dtype, n_keep, n_red, parts, nk, kdims, ks, nr, rdims, rs);
        clmad_tensor_release(partial);
        partial = next;
        if (st != CLMAD_OK || !next)
            break;
        /* The next pass reads the partial sums: n_keep rows of `parts`. */
        from = next->mem;
        dtype = acc;
        n_red = parts;
        nk = 1, kdims[0] = n_keep, ks[0] = parts;
        nr = 1, rdims[0] = parts, rs[0] = 1;
        ranges = clmad__sum_by_ranges(ctx, n_keep, nr, rs);
        parts = ranges ? clmad__range_parts(n_red) : clmad__reduce_parts(n_keep, n_red);
    }
    clmad_tensor_release(partial);
    if (st == CLMAD_OK && scale != 1.0 && !tail_done) {
        size_t dims[1] = {result->numel}, one[1] = {1};
        st = clmad__strided_copy(ctx, result, 0, one, result, 0, one, 1, dims, scale, 0);
    }
    return st;
}

clmad_status clmad__sum_to_shape(clmad_context *ctx, clmad_tensor *src, int ndim, const size_t *shape,
                                 clmad_tensor **out)
{
    int reduce[CLMAD_MAX_DIMS];
    int lead = src->ndim - ndim;
    for (int d = 0; d < src->ndim; d++)
        reduce[d] = d < lead || (shape[d - lead] == 1 && src->shape[d] != 1);
    return clmad__reduce(ctx, src, reduce, 1.0, ndim, shape, out);
}
