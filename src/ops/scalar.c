/* SPDX-License-Identifier: Apache-2.0 */
/* Scalar operands (a learning rate, a constant) and clmad_tensor_item: a
 * number becomes a 0-d tensor that the builtin broadcasts read for every
 * element, so the gradients are those of clmad_add and clmad_mul. */
#include "runtime/scope.h"
#include "runtime/tensor.h"
#include "runtime/context_guard.h"

clmad_status clmad_tensor_scalar(clmad_context *ctx, clmad_dtype dtype, double value, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_tensor_scalar"); /* as clmad_tensor_fill: reads no tensor */
    return clmad_tensor_fill(ctx, dtype, 0, NULL, value, out);
}

/* out = op(x, value), value a 0-d tensor of x's dtype. */
static clmad_status scalar_op(clmad_context *ctx, const char *call, clmad_tensor *x, double value,
                              clmad_status (*op)(clmad_context *, clmad_tensor *, clmad_tensor *,
                                                 clmad_tensor **),
                              clmad_tensor **out)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!x || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call, x ? "out" : "x");
    clmad_status st = clmad__check_same_context(ctx, x, call, "x");
    if (st != CLMAD_OK)
        return st;
    clmad_tensor *s;
    st = clmad_tensor_scalar(ctx, x->dtype, value, &s);
    if (st != CLMAD_OK)
        return st;
    st = op(ctx, x, s, out);
    /* The tape keeps its own reference when it records; the constant
     * leaves the caller's scope first, so that it lives exactly as long as
     * the tape needs it. */
    clmad__scope_keep(s);
    clmad_tensor_release(s);
    return st;
}

clmad_status clmad_add_scalar(clmad_context *ctx, clmad_tensor *x, double value, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_add_scalar"); /* x + value may be a loss's stage (builtin()) */
    return scalar_op(ctx, "clmad_add_scalar", x, value, clmad_add, out);
}

clmad_status clmad_mul_scalar(clmad_context *ctx, clmad_tensor *x, double value, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_mul_scalar"); /* x * value may be a loss's stage (builtin()) */
    return scalar_op(ctx, "clmad_mul_scalar", x, value, clmad_mul, out);
}

clmad_status clmad_pow_scalar(clmad_context *ctx, clmad_tensor *x, double value, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_pow_scalar"); /* x ^ value may be a loss's stage (builtin()) */
    return scalar_op(ctx, "clmad_pow_scalar", x, value, clmad_pow, out);
}

clmad_status clmad_tensor_item(clmad_tensor *t, double *value)
{
    CLMAD_GUARD(t ? t->ctx : NULL, "clmad_tensor_item");
    if (!t || !value)
        return clmad__fail(t ? t->ctx : NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_item: %s is NULL",
                           t ? "value" : "t");
    if (t->numel != 1)
        return clmad__fail(t->ctx, CLMAD_ERR_SHAPE,
                           "clmad_tensor_item: the tensor has %zu elements, not one", t->numel);
    union {
        float f;
        double d;
        int32_t i;
        int64_t l;
        uint8_t u;
        uint16_t h;
    } e;
    clmad_status st = clmad_tensor_read(t, &e, sizeof e);
    if (st != CLMAD_OK)
        return st;
    switch (t->dtype) {
    case CLMAD_F32: *value = e.f; break;
    case CLMAD_F64: *value = e.d; break;
    case CLMAD_I32: *value = e.i; break;
    case CLMAD_I64: *value = (double)e.l; break; /* exact up to 2^53 */
    case CLMAD_U8: *value = e.u; break;
    case CLMAD_F16: *value = clmad_f16_to_float(e.h); break;
    case CLMAD_BF16: *value = clmad_bf16_to_float(e.h); break;
    }
    return st;
}
