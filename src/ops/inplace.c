/* SPDX-License-Identifier: Apache-2.0 */
/* In-place updates outside the tape: y = alpha x + beta y into an existing
 * tensor, refused while the tape keeps it. */
#include "runtime/primitives.h"
#include "tape/tape.h"
#include "runtime/context_guard.h"

clmad_status clmad_tensor_axpby(clmad_tensor *y, double alpha, clmad_tensor *x, double beta)
{
    CLMAD_GUARD(y ? y->ctx : NULL, "clmad_tensor_axpby");
    if (!y)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_axpby: y is NULL");
    clmad_context *ctx = y->ctx;
    clmad_status st = clmad__check_same_context(ctx, x, "clmad_tensor_axpby", "x");
    if (st == CLMAD_OK)
        st = clmad__require_float(ctx, y, "clmad_tensor_axpby", "y");
    if (st != CLMAD_OK)
        return st;
    if (x && x->dtype != y->dtype)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_tensor_axpby: y is %s, x %s",
                           clmad_dtype_name(y->dtype), clmad_dtype_name(x->dtype));
    if (x && !clmad__same_shape(x, y))
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "clmad_tensor_axpby: x and y have different shapes");
    st = clmad__check_writable(y, "clmad_tensor_axpby", "y");
    if (st == CLMAD_OK)
        st = clmad__check_not_on_tape(ctx, y, "clmad_tensor_axpby", "y");
    if (st != CLMAD_OK || y->numel == 0)
        return st;
    cl_kernel k;
    st = clmad__cached_kernel(ctx, y->dtype, CLMAD_TRAIN_AXPBY, &k);
    if (st != CLMAD_OK)
        return st;
    cl_ulong n = y->numel;
    cl_int has_x = x != NULL;
    float af = (float)alpha, bf = (float)beta;
    int f64 = y->dtype == CLMAD_F64;
    size_t rs = clmad_dtype_size(y->dtype);
    const size_t sizes[6] = {sizeof(cl_mem), sizeof(cl_mem), sizeof n, rs, rs, sizeof has_x};
    const void *values[6] = {&y->mem, x ? &x->mem : &y->mem, &n, f64 ? (const void *)&alpha : &af,
                             f64 ? (const void *)&beta : &bf, &has_x};
    st = clmad__set_kernel_args(ctx, k, 6, sizes, values);
    if (st != CLMAD_OK)
        return st;
    return clmad__enqueue_flat(ctx, k, y->numel, (uint64_t)(has_x ? 3 : 2) * clmad__tensor_bytes(y));
}
