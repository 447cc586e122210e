/* SPDX-License-Identifier: Apache-2.0 */
/* The public tape API: clearing it, its settings, leaves and their gradients. */
#include "tape/state.h"
#include "runtime/context_guard.h"

void clmad_tape_clear(clmad_context *ctx)
{
    CLMAD_GUARD_WAIT(ctx);
    if (ctx)
        clmad__tape_free_nodes(ctx);
}

clmad_status clmad_set_retain_tape(clmad_context *ctx, int on)
{
    CLMAD_GUARD(ctx, "clmad_set_retain_tape");
    return clmad__set_param(ctx, "clmad_set_retain_tape", CLMAD_PARAM_RETAIN_TAPE, on != 0);
}

clmad_status clmad_set_grad_enabled(clmad_context *ctx, int on)
{
    CLMAD_GUARD(ctx, "clmad_set_grad_enabled");
    return clmad__set_param(ctx, "clmad_set_grad_enabled", CLMAD_PARAM_DISABLE_GRAD, on == 0);
}

clmad_status clmad_set_partials_policy(clmad_context *ctx, clmad_partials_policy policy)
{
    /* Held work stays held: each node keeps the policy it was recorded under. */
    CLMAD_GUARD_HOLDING(ctx, "clmad_set_partials_policy");
    return clmad__set_param(ctx, "clmad_set_partials_policy", CLMAD_PARAM_PARTIALS_POLICY, (int64_t)policy);
}

clmad_status clmad_tensor_set_requires_grad(clmad_tensor *t, int on)
{
    CLMAD_GUARD(t ? t->ctx : NULL, "clmad_tensor_set_requires_grad");
    if (!t)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_set_requires_grad: NULL tensor");
    if (on && !clmad__dtype_is_float(t->dtype) && !clmad__dtype_is_16bit(t->dtype))
        return clmad__fail(t->ctx, CLMAD_ERR_DTYPE,
                           "clmad_tensor_set_requires_grad: the tensor is an integer tensor (%s): integer "
                           "tensors (labels, indices, masks) have no gradient",
                           clmad_dtype_name(t->dtype));
    if (clmad__node_current(t->ctx, t))
        return clmad__fail(t->ctx, CLMAD_ERR_STATE,
                           "clmad_tensor_set_requires_grad: the tensor is the output of a recorded "
                           "operation; only leaves can be marked");
    t->node = NULL;
    t->requires_grad = on != 0;
    return CLMAD_OK;
}

int clmad_tensor_requires_grad(const clmad_tensor *t)
{
    return t ? clmad__needs_grad(t->ctx, t) : 0;
}

clmad_status clmad_tensor_grad(clmad_tensor *t, clmad_tensor **grad)
{
    CLMAD_GUARD(t ? t->ctx : NULL, "clmad_tensor_grad");
    if (!t || !grad)
        return clmad__fail(t ? t->ctx : NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_grad: NULL argument");
    *grad = clmad_tensor_retain(t->grad);
    return CLMAD_OK;
}

void clmad_tensor_zero_grad(clmad_tensor *t)
{
    CLMAD_GUARD_WAIT(t ? t->ctx : NULL);
    if (!t)
        return;
    clmad__tensor_unref(t->grad);
    t->grad = NULL;
}
