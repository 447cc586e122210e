/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_backward: seeds the loss's adjoint and runs the nodes in reverse. */
#include "runtime/scope.h"
#include "tape/state.h"
#include "runtime/context_guard.h"
#include "runtime/held.h"
#include "runtime/primitives.h"

static clmad_status copy_tensor(clmad_context *ctx, clmad_tensor *src, clmad_tensor **out)
{
    clmad_tensor *t;
    clmad_status st = clmad_tensor_create(ctx, src->dtype, src->ndim, src->shape, NULL, &t);
    if (st != CLMAD_OK || src->numel == 0) {
        if (st == CLMAD_OK)
            *out = t;
        return st;
    }
    cl_int err = clEnqueueCopyBuffer(ctx->queue, src->mem, t->mem, 0, 0, clmad__tensor_bytes(src), 0,
                                     NULL, NULL);
    if (err != CL_SUCCESS) {
        clmad_tensor_release(t);
        return clmad__fail_cl(ctx, err, "clEnqueueCopyBuffer");
    }
    *out = t;
    return CLMAD_OK;
}

static clmad_status check_loss(clmad_context *ctx, clmad_tensor *loss, clmad_tensor *seed)
{
    if (!ctx || !loss)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_backward: ctx and loss must not be NULL");
    clmad_status checked = clmad__check_same_context(ctx, loss, "clmad_backward", "loss");
    if (checked == CLMAD_OK)
        checked = clmad__check_same_context(ctx, seed, "clmad_backward", "seed");
    if (checked != CLMAD_OK)
        return checked;
    if (!clmad__needs_grad(ctx, loss))
        return clmad__fail(ctx, CLMAD_ERR_STATE,
                           "clmad_backward: the loss has no tape behind it: it was not computed from "
                           "tensors that require a gradient, or the tape was consumed by an earlier "
                           "backward (keep it with clmad_set_retain_tape)");
    if (seed && seed->dtype != loss->dtype)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_backward: the seed is %s, the loss %s",
                           clmad_dtype_name(seed->dtype), clmad_dtype_name(loss->dtype));
    if (seed && !clmad__same_shape(seed, loss))
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "clmad_backward: the seed must have the loss's shape");
    if (!seed && loss->numel != 1)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "clmad_backward: the loss has %zu elements; a non-scalar loss needs a seed tensor",
                           loss->numel);
    return CLMAD_OK;
}

static clmad_status fill_ones(clmad_held *h, clmad_tensor *t)
{
    (void)h;
    return clmad__fill(t->ctx, t->mem, t->dtype, t->numel, 1.0);
}

static void keep_ones(clmad_held *h)
{
    (void)h;
}

/* Stateless: every held seed shares it. */
static clmad_held ones_fill = {fill_ones, keep_ones};

/* The ones that seed loss. Held (written only where it is read) when the
 * loss's node reads its adjoint late: a fused loss's backward only asks
 * whether its adjoint is the seed, and then a launch per step is saved. */
static clmad_status ones_seed(clmad_context *ctx, clmad_tensor *loss, clmad_tensor **out)
{
    const clmad_node *node = loss->node;
    if (!node || !clmad__node_current(ctx, loss) || !node->op->reads_adjoint_late || node->out_adj[loss->out_index] ||
        !clmad__fusion_enabled(ctx))
        return clmad_tensor_fill(ctx, loss->dtype, loss->ndim, loss->shape, 1.0, out);
    clmad_status st = clmad_tensor_create(ctx, loss->dtype, loss->ndim, loss->shape, NULL, out);
    if (st == CLMAD_OK)
        clmad__hold(*out, &ones_fill);
    return st;
}

/* Runs the backward of node (when an adjoint reached it) and drops its
 * adjoints, and what it saved unless the tape is retained. */
static clmad_status run_node(clmad_context *ctx, clmad_node *node)
{
    clmad_status st = CLMAD_OK;
    int any = 0;
    for (int o = 0; o < node->n_outputs; o++) {
        any |= node->out_adj[o] != NULL;
        if (!node->op->reads_adjoint_late && st == CLMAD_OK)
            st = clmad__adjoint_ready(node, o);
        if (!node->lazy_adjoints && st == CLMAD_OK)
            st = clmad__materialize_adjoint(ctx, node, o);
    }
    if (any && st == CLMAD_OK)
        st = node->op->backward(ctx, node);
    for (int o = 0; o < node->n_outputs; o++)
        clmad__set_adjoint(node, o, NULL);
    if (!ctx->tape.retain)
        clmad__node_drop_saved(ctx, node); /* no longer needed: free it now, not at the end */
    return st;
}

static clmad_status backward_pass(clmad_context *ctx, clmad_tensor *loss, clmad_tensor *seed)
{
    clmad_status st = check_loss(ctx, loss, seed);
    if (st != CLMAD_OK)
        return st;
    clmad_tensor *g;
    st = seed ? copy_tensor(ctx, seed, &g) : ones_seed(ctx, loss, &g);
    if (st != CLMAD_OK)
        return st;
    /* Ones that the nodes may recognise (clmad__adjoint_is_one): held
     * until the end, so that no other tensor takes its address meanwhile. */
    struct clmad_tape *tape = ctx->tape.state;
    if (tape && !seed)
        tape->ones_seed = clmad_tensor_retain(g);
    st = clmad__adjoint_add(ctx, loss->node ? &loss->node->out_adj[loss->out_index] : &loss->grad, g);
    for (size_t i = tape ? tape->count : 0; st == CLMAD_OK && i-- > 0;)
        st = run_node(ctx, tape->nodes[i]);
    if (tape) {
        clmad__tensor_unref(tape->ones_seed);
        tape->ones_seed = NULL;
    }
    if (!ctx->tape.retain || st != CLMAD_OK)
        clmad__tape_free_nodes(ctx);
    return st;
}

clmad_status clmad_backward(clmad_context *ctx, clmad_tensor *loss, clmad_tensor *seed)
{
    /* Held tensors stay held: no node reads them but the fused losses,
     * which never do (held.h), and recomputing broadcasts, which write
     * their held inputs first (broadcast/node.c); every other consumer
     * wrote them. The seed is read here: written first. */
    CLMAD_GUARD_HOLDING(ctx, "clmad_backward");
    /* The gradients and adjoints backward makes are clmad's own, not the
     * caller's: no scope may release them. */
    clmad_status st = seed && ctx && seed->ctx == ctx ? clmad__tensor_ready(seed) : CLMAD_OK;
    if (st != CLMAD_OK)
        return st;
    if (ctx)
        clmad__scope_pause(ctx);
    st = backward_pass(ctx, loss, seed);
    if (ctx)
        clmad__scope_resume(ctx);
    return st;
}
