/* SPDX-License-Identifier: Apache-2.0 */
/* The check of index tensors, axis views and launches of cl/index.cl. */
#include "ops/index.h"

#include <stdint.h>
#include <stdlib.h>

clmad_status clmad__axis_view(clmad_context *ctx, const char *call, const clmad_tensor *t, int axis,
                              clmad_axis_view *v)
{
    int a = axis < 0 ? axis + t->ndim : axis;
    if (a < 0 || a >= t->ndim)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: axis %d is out of range for a rank-%d tensor",
                           call, axis, t->ndim);
    *v = (clmad_axis_view){a, 1, t->shape[a], 1};
    for (int d = 0; d < t->ndim; d++) {
        if (d < a)
            v->outer *= t->shape[d];
        else if (d > a)
            v->inner *= t->shape[d];
    }
    return CLMAD_OK;
}

/* The message of a failed check: the first bad index, read on the host
 * (the error path only). */
static clmad_status bad_index(clmad_context *ctx, const char *call, const char *what, clmad_tensor *idx,
                              size_t limit)
{
    int64_t *h = malloc(idx->numel * sizeof *h);
    if (!h)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: an index of %s is outside [0, %zu)", call, what,
                           limit);
    clmad_status st = clmad_tensor_read(idx, h, idx->numel * sizeof *h);
    size_t at = 0;
    while (st == CLMAD_OK && at < idx->numel && h[at] >= 0 && (uint64_t)h[at] < limit)
        at++;
    if (st == CLMAD_OK && at < idx->numel)
        st = clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s[%zu] = %lld is outside [0, %zu)", call, what,
                         at, (long long)h[at], limit);
    else if (st == CLMAD_OK)
        st = clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: an index of %s is outside [0, %zu)", call, what,
                         limit);
    free(h);
    return st;
}

clmad_status clmad__check_indices(clmad_context *ctx, const char *call, const char *what, clmad_tensor *idx,
                                  size_t limit)
{
    if (!idx)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call, what);
    clmad_status st = clmad__check_same_context(ctx, idx, call, "%s", what);
    if (st != CLMAD_OK)
        return st;
    if (idx->dtype != CLMAD_I64)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "%s: %s is %s; indices are i64 tensors (CLMAD_I64)", call, what,
                           clmad_dtype_name(idx->dtype));
    if (idx->numel == 0)
        return CLMAD_OK;
    clmad_tensor *flag = NULL;
    st = clmad_tensor_zeros(ctx, CLMAD_I32, 0, NULL, &flag);
    cl_ulong n = idx->numel;
    cl_long lim = limit > (size_t)INT64_MAX ? INT64_MAX : (cl_long)limit;
    if (st == CLMAD_OK) {
        const size_t sizes[] = {sizeof(cl_mem), sizeof n, sizeof lim, sizeof(cl_mem)};
        const void *values[] = {&idx->mem, &n, &lim, &flag->mem};
        st = clmad__launch_cached(ctx, CLMAD_I64, CLMAD_INDEX_CHECK, 4, sizes, values, idx->numel,
                                  (uint64_t)idx->numel * 8);
    }
    int32_t bad = 0;
    if (st == CLMAD_OK)
        st = clmad_tensor_read(flag, &bad, sizeof bad);
    clmad_tensor_release(flag);
    if (st == CLMAD_OK && bad)
        st = bad_index(ctx, call, what, idx, limit);
    return st;
}
