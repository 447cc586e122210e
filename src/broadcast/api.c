/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_broadcast and its forward-mode forms: the public calls, their
 * argument checks, and recording when an input needs a gradient. */
#include "broadcast/launch.h"
#include "broadcast/node.h"
#include "broadcast/held.h"
#include "runtime/context.h"
#include "tape/tape.h"
#include "runtime/context_guard.h"

#include <stdio.h>
#include <string.h>

/* "parameter J (\"name\")" of input j of k, for messages (1-based, as the
 * source counts; the name where the check saw it). */
static const char *parameter(const clmad_kernel *k, int j, char *buf, size_t cap)
{
    if (k->params[j].name[0])
        snprintf(buf, cap, "parameter %d (\"%s\")", j + 1, k->params[j].name);
    else
        snprintf(buf, cap, "parameter %d", j + 1);
    return buf;
}

/* Input j is a tensor of the type its parameter declares: an integer
 * parameter's dtype, or a float tensor for T (a 16-bit one computes in
 * f32: cl/real.clh). */
static clmad_status check_parameter_type(clmad_context *ctx, clmad_kernel *k, const clmad_tensor *x, int j,
                                         const char *call)
{
    char p[64];
    const int want = k->params[j].dtype;
    if (want != LOWER_PARAM_T && x->dtype != (clmad_dtype)want)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "%s(%s): %s is %s, so input %d must be of dtype %s; it is %s",
                           call, k->fn_name, parameter(k, j, p, sizeof p), clmad__integer_type((clmad_dtype)want),
                           j, clmad_dtype_name((clmad_dtype)want), clmad_dtype_name(x->dtype));
    if (want == LOWER_PARAM_T && !clmad__dtype_is_float(x->dtype) && !clmad__dtype_is_16bit(x->dtype))
        return clmad__fail(ctx, CLMAD_ERR_DTYPE,
                           "%s(%s): %s is T, so input %d must be a float tensor (f32, f64, f16 or bf16); it is %s "
                           "(an integer tensor binds a parameter declared int, long or uchar)",
                           call, k->fn_name, parameter(k, j, p, sizeof p), j, clmad_dtype_name(x->dtype));
    return CLMAD_OK;
}

/* Checks the arguments common to every broadcast call and plans the shapes. */
static clmad_status check_and_plan(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                   const char *call, clmad_bcast_plan *plan)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!k || !inputs)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: kernel and inputs must not be NULL",
                           call);
    if (k->ctx != ctx)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "%s(%s): the kernel belongs to another context", call, k->fn_name);
    char what[160];
    snprintf(what, sizeof what, "%s(%s)", call, k->fn_name);
    for (int j = 0; j < k->n_inputs; j++) {
        if (!inputs[j])
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s(%s): input %d is NULL", call,
                               k->fn_name, j);
        clmad_status st = clmad__check_same_context(ctx, inputs[j], what, "input %d", j);
        if (st != CLMAD_OK)
            return st;
    }
    const int first = k->first_T;
    int integers = 0;
    for (int j = 0; j < k->n_inputs; j++)
        integers |= clmad__kernel_integer(k, j);
    clmad_status st = CLMAD_OK;
    /* Every input against its parameter where some are integer (an all-T
     * kernel keeps the checks below, and their messages). */
    for (int j = 0; integers && j < k->n_inputs && st == CLMAD_OK; j++)
        st = check_parameter_type(ctx, k, inputs[j], j, call);
    if (st != CLMAD_OK)
        return st;
    for (int j = 0; j < k->n_inputs; j++)
        if (!clmad__kernel_integer(k, j) && inputs[j]->dtype != inputs[first]->dtype)
            return clmad__fail(ctx, CLMAD_ERR_DTYPE,
                               "%s(%s): input %d is %s but input %d is %s; inputs must share one dtype "
                               "(clmad_cast one of them: the builtins promote mixed float dtypes, kernels do not)",
                               call, k->fn_name, j, clmad_dtype_name(inputs[j]->dtype), first,
                               clmad_dtype_name(inputs[first]->dtype));
    char first_name[32];
    snprintf(first_name, sizeof first_name, "input %d", first);
    st = clmad__require_any_float(ctx, inputs[first], what, first_name);
    if (st == CLMAD_OK)
        st = clmad__check_dtype(ctx, inputs[first]->dtype);
    if (st != CLMAD_OK)
        return st;
    return clmad__plan_broadcast(ctx, what, inputs, k->n_inputs, plan);
}

/* No integer parameter may be marked active: it has no partials. */
static clmad_status check_active(clmad_context *ctx, clmad_kernel *k, const int *active, const char *call)
{
    for (int j = 0; active && j < k->n_inputs; j++)
        if (active[j] && clmad__kernel_integer(k, j)) {
            char p[64];
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                               "%s(%s): active[%d] is set, but %s is an integer parameter, which has no "
                               "partials",
                               call, k->fn_name, j, parameter(k, j, p, sizeof p));
        }
    return CLMAD_OK;
}

clmad_status clmad_broadcast(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                             clmad_tensor **outputs)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_broadcast");
    /* Fusion: a kernel over a held broadcast may be a loss kernel's stage
     * (held.h), and is held too; otherwise its held inputs are written
     * first (below). It reads nothing else, so other held work stays held:
     * a regulariser after a fused loss leaves the loss's y unwritten. */
    clmad_bcast_plan plan;
    clmad_status st = check_and_plan(ctx, k, inputs, "clmad_broadcast", &plan);
    if (st != CLMAD_OK)
        return st;
    if (!outputs)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_broadcast(%s): outputs is NULL",
                           k->fn_name);
    if (clmad__should_record(ctx, inputs, k->n_inputs)) {
        /* Fusion: the forward waits for the output's consumer (held.c). */
        clmad_held *held = clmad__bcast_held_new(ctx, k, inputs, &plan);
        /* A held input (a builtin stage's y: ops/elementwise.c) is written
         * first when this forward runs now. */
        if (!held)
            st = clmad__tensors_ready(inputs, k->n_inputs);
        if (st != CLMAD_OK)
            return st;
        st = clmad__bcast_record(ctx, k, inputs, &plan, held != NULL, outputs);
        if (held && st == CLMAD_OK)
            clmad__hold(outputs[0], held);
        else if (held)
            held->drop(held);
        return st;
    }
    clmad_tensor *values[CLMAD_MAX_OUTPUTS] = {0};
    st = clmad__tensors_ready(inputs, k->n_inputs);
    if (st == CLMAD_OK)
        st = clmad__bcast_primal(k, &plan, inputs, values);
    if (st != CLMAD_OK)
        return st;
    memcpy(outputs, values, (size_t)k->n_outputs * sizeof *outputs);
    return CLMAD_OK;
}

clmad_status clmad_broadcast_partials(clmad_context *ctx, clmad_kernel *k,
                                      clmad_tensor *const *inputs, const int *active,
                                      clmad_tensor **outputs, clmad_tensor **partials)
{
    CLMAD_GUARD(ctx, "clmad_broadcast_partials");
    clmad_bcast_plan plan;
    clmad_status st = check_and_plan(ctx, k, inputs, "clmad_broadcast_partials", &plan);
    if (st != CLMAD_OK)
        return st;
    if (!outputs || !partials)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_broadcast_partials(%s): outputs and partials must not be NULL",
                           k->fn_name);
    st = check_active(ctx, k, active, "clmad_broadcast_partials");
    if (st != CLMAD_OK)
        return st;
    return clmad__bcast_run_partials(k, &plan, inputs, active, outputs, partials);
}

/* Each non-NULL tangent: of a T parameter (an integer one has none), of ctx,
 * with its input's dtype and shape. */
static clmad_status check_tangents(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                   clmad_tensor *const *tangents, const char *call)
{
    for (int j = 0; j < k->n_inputs; j++) {
        const clmad_tensor *t = tangents[j], *x = inputs[j];
        if (!t)
            continue;
        if (clmad__kernel_integer(k, j)) {
            char p[64];
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                               "%s(%s): tangent %d is given, but %s is an integer parameter, "
                               "which has no tangent (pass NULL)",
                               call, k->fn_name, j, parameter(k, j, p, sizeof p));
        }
        char what[160];
        snprintf(what, sizeof what, "%s(%s)", call, k->fn_name);
        clmad_status st = clmad__check_same_context(ctx, t, what, "tangent %d", j);
        if (st != CLMAD_OK)
            return st;
        if (t->dtype != x->dtype)
            return clmad__fail(ctx, CLMAD_ERR_DTYPE, "%s(%s): tangent %d has another dtype than its input",
                               call, k->fn_name, j);
        if (!clmad__same_shape(t, x))
            return clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s(%s): tangent %d must have the shape of input %d",
                               call, k->fn_name, j, j);
    }
    return CLMAD_OK;
}

clmad_status clmad_broadcast_jvp(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                 clmad_tensor *const *tangents, clmad_tensor **outputs,
                                 clmad_tensor **out_tangents)
{
    CLMAD_GUARD(ctx, "clmad_broadcast_jvp");
    clmad_bcast_plan plan;
    clmad_status st = check_and_plan(ctx, k, inputs, "clmad_broadcast_jvp", &plan);
    if (st != CLMAD_OK)
        return st;
    if (!tangents || !outputs || !out_tangents)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_broadcast_jvp(%s): tangents, outputs and out_tangents must not be NULL",
                           k->fn_name);
    st = check_tangents(ctx, k, inputs, tangents, "clmad_broadcast_jvp");
    if (st != CLMAD_OK)
        return st;
    clmad_dtype dtype = clmad__bcast_dtype(k, inputs);
    clmad_tensor *values[CLMAD_MAX_OUTPUTS] = {0}, *dvalues[CLMAD_MAX_OUTPUTS] = {0};
    st = clmad__bcast_new_outputs(ctx, &plan, dtype, k->n_outputs, values);
    if (st == CLMAD_OK)
        st = clmad__bcast_new_outputs(ctx, &plan, dtype, k->n_outputs, dvalues);
    if (st == CLMAD_OK && plan.numel > 0) {
        clmad_variant v;
        clmad__bcast_variant(k, &plan, dtype, CLMAD_MODE_JVP, &v);
        v.K = 1;
        for (int j = 0; j < k->n_inputs; j++)
            v.slot[j] = tangents[j] != NULL;
        clmad_launch_args a = {.values = values, .derivs = dvalues, .inputs = inputs, .tangents = tangents};
        st = clmad__bcast_launch(k, &v, &plan, &a);
    }
    if (st != CLMAD_OK) {
        clmad__release_all(values, k->n_outputs);
        clmad__release_all(dvalues, k->n_outputs);
        return st;
    }
    memcpy(outputs, values, (size_t)k->n_outputs * sizeof *outputs);
    memcpy(out_tangents, dvalues, (size_t)k->n_outputs * sizeof *out_tangents);
    return CLMAD_OK;
}

clmad_status clmad_broadcast_second(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                    clmad_tensor *const *tangents, const int *active, clmad_tensor **outputs,
                                    clmad_tensor **out_tangents, clmad_tensor **partials,
                                    clmad_tensor **partial_tangents)
{
    CLMAD_GUARD(ctx, "clmad_broadcast_second");
    clmad_bcast_plan plan;
    clmad_status st = check_and_plan(ctx, k, inputs, "clmad_broadcast_second", &plan);
    if (st != CLMAD_OK)
        return st;
    if (!tangents || !outputs || !out_tangents || !partials || !partial_tangents)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_broadcast_second(%s): tangents, outputs, out_tangents, partials and "
                           "partial_tangents must not be NULL", k->fn_name);
    st = check_tangents(ctx, k, inputs, tangents, "clmad_broadcast_second");
    if (st != CLMAD_OK)
        return st;
    st = check_active(ctx, k, active, "clmad_broadcast_second");
    if (st != CLMAD_OK)
        return st;
    for (int j = 0; j < k->n_inputs; j++)
        if (tangents[j] && active && !active[j])
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                               "clmad_broadcast_second(%s): input %d has a tangent but is not active; an "
                               "inactive input is a constant (give a NULL tangent)", k->fn_name, j);
    /* A NULL tangent of an active input is zero: the kernel reads one. */
    clmad_tensor *full[CLMAD_MAX_INPUTS] = {0}, *zeros[CLMAD_MAX_INPUTS] = {0};
    for (int j = 0; j < k->n_inputs && st == CLMAD_OK; j++) {
        full[j] = tangents[j];
        if (!tangents[j] && (!active || active[j]) && !clmad__kernel_integer(k, j)) {
            st = clmad_tensor_zeros(ctx, inputs[j]->dtype, inputs[j]->ndim, inputs[j]->shape, &zeros[j]);
            full[j] = zeros[j];
        }
    }
    if (st == CLMAD_OK)
        st = clmad__bcast_run_second(k, &plan, inputs, full, active, outputs, out_tangents, partials,
                                     partial_tangents);
    clmad__release_all(zeros, k->n_inputs);
    return st;
}
