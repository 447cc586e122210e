/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_argmax and clmad_argmin: the first index of the extreme along an
 * axis, as i64; of any dtype; never recorded (no gradient). */
#include "ops/index.h"
#include "ops/region.h"
#include "runtime/context_guard.h"

static clmad_status argext(clmad_context *ctx, const char *call, clmad_tensor *x, int axis, int keepdims,
                           int want_max, clmad_tensor **out)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!x || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call, !x ? "x" : "out");
    clmad_status st = clmad__check_same_context(ctx, x, call, "x");
    if (st != CLMAD_OK)
        return st;
    clmad_axis_view v;
    st = clmad__axis_view(ctx, call, x, axis, &v);
    if (st != CLMAD_OK)
        return st;
    if (v.len == 0)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s: axis %d is empty: no element to point at", call, axis);
    size_t shape[CLMAD_MAX_DIMS];
    int ndim = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != v.axis)
            shape[ndim++] = x->shape[d];
        else if (keepdims)
            shape[ndim++] = 1;
    clmad_tensor *y = NULL;
    st = clmad_tensor_create(ctx, CLMAD_I64, ndim, shape, NULL, &y);
    if (st == CLMAD_OK && y->numel > 0) {
        cl_ulong rows = v.outer * v.inner, n = v.len, inner = v.inner;
        cl_int mode = want_max;
        const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof rows, sizeof n, sizeof inner, sizeof mode};
        const void *values[] = {&y->mem, &x->mem, &rows, &n, &inner, &mode};
        st = clmad__launch_cached(ctx, x->dtype, CLMAD_INDEX_ARGEXT, 6, sizes, values, rows,
                                  (uint64_t)x->numel * clmad_dtype_size(x->dtype) + rows * 8);
    }
    if (st != CLMAD_OK) {
        clmad_tensor_release(y);
        return st;
    }
    *out = y;
    return CLMAD_OK;
}

clmad_status clmad_argmax(clmad_context *ctx, clmad_tensor *x, int axis, int keepdims, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_argmax");
    READS_ONLY(ctx, x, NULL);
    return argext(ctx, "clmad_argmax", x, axis, keepdims, 1, out);
}

clmad_status clmad_argmin(clmad_context *ctx, clmad_tensor *x, int axis, int keepdims, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_argmin");
    READS_ONLY(ctx, x, NULL);
    return argext(ctx, "clmad_argmin", x, axis, keepdims, 0, out);
}
