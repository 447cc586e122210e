/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_cast (dtype conversion; differentiable between float dtypes) and
 * clmad_one_hot (class indices to rows of 0 and 1). */
#include "ops/index.h"
#include "ops/region.h"
#include "runtime/context_guard.h"

/* The kernel that converts from dtype `from`. */
static clmad_kernel_id cast_kernel(clmad_dtype from)
{
    switch (from) {
    case CLMAD_F32: return CLMAD_INDEX_CAST_F32;
    case CLMAD_F64: return CLMAD_INDEX_CAST_F64;
    case CLMAD_I32: return CLMAD_INDEX_CAST_I32;
    case CLMAD_I64: return CLMAD_INDEX_CAST_I64;
    case CLMAD_U8:
    case CLMAD_F16: /* convert_16bit's */
    case CLMAD_BF16: break;
    }
    return CLMAD_INDEX_CAST_U8;
}

static clmad_status convert(clmad_context *ctx, clmad_tensor *dst, clmad_tensor *src);

/* A conversion with a 16-bit side: half.cl's kernels, built for the f32 or
 * f64 side; integers and the other 16-bit type go through f32. */
static clmad_status convert_16bit(clmad_context *ctx, clmad_tensor *dst, clmad_tensor *src)
{
    if (clmad__dtype_is_float(dst->dtype) || clmad__dtype_is_float(src->dtype))
        return clmad__convert_half(ctx, dst, src);
    clmad_tensor *wide = NULL;
    clmad_status st = clmad_tensor_create(ctx, CLMAD_F32, src->ndim, src->shape, NULL, &wide);
    if (st == CLMAD_OK)
        st = convert(ctx, wide, src);
    if (st == CLMAD_OK)
        st = convert(ctx, dst, wide);
    clmad_tensor_release(wide);
    return st;
}

/* dst = src converted (same element count). */
static clmad_status convert(clmad_context *ctx, clmad_tensor *dst, clmad_tensor *src)
{
    if (dst->numel == 0)
        return CLMAD_OK;
    if (dst->dtype == src->dtype) {
        cl_int err = clEnqueueCopyBuffer(ctx->queue, src->mem, dst->mem, 0, 0, clmad__tensor_bytes(src), 0, NULL,
                                         NULL);
        return err == CL_SUCCESS ? CLMAD_OK : clmad__fail_cl(ctx, err, "clEnqueueCopyBuffer");
    }
    if (clmad__dtype_is_16bit(dst->dtype) || clmad__dtype_is_16bit(src->dtype))
        return convert_16bit(ctx, dst, src);
    cl_ulong n = dst->numel;
    const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof n};
    const void *values[] = {&dst->mem, &src->mem, &n};
    return clmad__launch_cached(ctx, dst->dtype, cast_kernel(src->dtype), 3, sizes, values, dst->numel,
                                (uint64_t)n * (clmad_dtype_size(dst->dtype) + clmad_dtype_size(src->dtype)));
}

static clmad_status cast_backward(clmad_context *ctx, clmad_node *node)
{
    clmad_tensor *x = node->inputs[0], *g = NULL;
    clmad_status st = clmad_tensor_create(ctx, x->dtype, x->ndim, x->shape, NULL, &g);
    if (st == CLMAD_OK)
        st = convert(ctx, g, node->out_adj[0]);
    if (st != CLMAD_OK) {
        clmad_tensor_release(g);
        return st;
    }
    return clmad__accumulate_input(ctx, node, 0, g);
}

const clmad_op clmad__op_cast = {.name = "clmad_cast", .backward = cast_backward, .kind = CLMAD_OP_OPAQUE};

clmad_status clmad_cast(clmad_context *ctx, clmad_tensor *x, clmad_dtype dtype, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_cast");
    READS_ONLY(ctx, x, NULL);
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_cast: ctx is NULL");
    if (!x || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_cast: %s is NULL", !x ? "x" : "out");
    clmad_status st = clmad__check_same_context(ctx, x, "clmad_cast", "x");
    if (st != CLMAD_OK)
        return st;
    clmad_tensor *y = NULL;
    st = clmad_tensor_create(ctx, dtype, x->ndim, x->shape, NULL, &y);
    if (st == CLMAD_OK)
        st = convert(ctx, y, x);
    /* Gradients flow between the float dtypes (f32, f64, f16, bf16), the
     * adjoint converted back to x's dtype: an integer result has none. */
    int n = clmad__dtype_is_float(dtype) || clmad__dtype_is_16bit(dtype) ? 1 : 0;
    return clmad__finish_op(ctx, &clmad__op_cast, &x, n, y, NULL, st, out);
}

clmad_status clmad_one_hot(clmad_context *ctx, clmad_tensor *index, size_t classes, clmad_dtype dtype,
                           clmad_tensor **out)
{
    CLMAD_GUARD(ctx, "clmad_one_hot");
    const char *call = "clmad_one_hot";
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: out is NULL", call);
    if (clmad__dtype_is_16bit(dtype))
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "%s: dtype %s: one-hot rows are f32, f64 or integer (clmad_cast "
                           "them to 16 bits)", call, clmad_dtype_name(dtype));
    clmad_status st = index && index->ndim >= CLMAD_MAX_DIMS
                          ? clmad__fail(ctx, CLMAD_ERR_SHAPE,
                                        "%s: index has rank %d; the output adds an axis (at most %d)", call,
                                        index->ndim, CLMAD_MAX_DIMS)
                          : clmad__check_indices(ctx, call, "index", index, classes);
    if (st != CLMAD_OK)
        return st;
    size_t shape[CLMAD_MAX_DIMS];
    for (int d = 0; d < index->ndim; d++)
        shape[d] = index->shape[d];
    shape[index->ndim] = classes;
    clmad_tensor *y = NULL;
    st = clmad_tensor_create(ctx, dtype, index->ndim + 1, shape, NULL, &y);
    if (st == CLMAD_OK && y->numel > 0) {
        cl_ulong total = y->numel, c = classes;
        const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof total, sizeof c};
        const void *values[] = {&y->mem, &index->mem, &total, &c};
        st = clmad__launch_cached(ctx, dtype, CLMAD_INDEX_ONE_HOT, 4, sizes, values, y->numel,
                                  (uint64_t)y->numel * clmad_dtype_size(dtype) + index->numel * 8);
    }
    if (st != CLMAD_OK) {
        clmad_tensor_release(y);
        return st;
    }
    *out = y;
    return CLMAD_OK;
}
