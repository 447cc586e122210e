/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lazy regions. A chain of held elementwise calls (a broadcast y, then the
 * builtins and user kernels over it that a loss kernel takes as stages)
 * waits until something reads its last value z. When by then nobody but
 * the tape and the chain holds y and the values between (Python's
 * temporaries, C tensors released early), one kernel computes z from y's
 * inputs and writes z alone; y and the values between stay held, written
 * only if backward needs them. In backward, z's node forms every gradient
 * of the chain in one kernel: the loss kernel's element with z's adjoint
 * as clmad_dot's w (codegen_region.c), which forms them as the eager nodes
 * do, so the bits are eager's (test_fusion proves dot(z, w) over chains).
 * Anything else (an adjoint that is not a full tensor, y written since, a
 * chain read by other nodes) runs the eager backward, which writes y and
 * the values between first (bcast_backward readies its held inputs).
 */
#include "ops/region.h"
#include "base/log.h"
#include "broadcast/node.h"
#include "ops/fused_loss.h"

#include <string.h>

/* Times node reads t (clmad_mul(z, z) reads z twice). */
static int times_read(const clmad_node *node, const clmad_tensor *t)
{
    int n = 0;
    for (int j = 0; j < node->n_inputs; j++)
        n += node->inputs[j] == t;
    return n;
}

/* 1 if nobody holds t but the stage above it: its node, and its held work,
 * which retains the node's inputs (and a scope whose caller released t:
 * the scope's reference only waits for its end). */
static int orphan(const clmad_tensor *t, const clmad_node *above)
{
    const int reads = times_read(above, t), scope = t->scope_slot && !t->scope_caller_ref;
    return reads > 0 && t->tape_refs == reads && t->refcount == 2 * reads + scope;
}

static clmad_status region_backward(clmad_context *ctx, clmad_node *node, int *done);
static const clmad_bcast_region region = {region_backward};

/* z's values by the region's kernel, when z ends a chain whose
 * intermediates are orphans: 1 if written. */
static int region_forward(clmad_context *ctx, clmad_tensor *z)
{
    clmad_loss_form form = {.adj = 1.0, .region = CLMAD_REGION_VALUES};
    clmad_tensor *y = NULL;
    if (!clmad__bcast_loss_fusible(ctx, z, NULL, 0) || !clmad__stage_chain(ctx, z, NULL, 1.0, &form, &y) ||
        !clmad__fused_distinct_targets(ctx, y, 1))
        return 0;
    for (int i = 0; i < form.n_stages; i++)
        if (!orphan(i ? form.z[i - 1] : y, form.z[i]->node))
            return 0;
    /* values alone: no gradient of the stages' operands */
    form.write_y = 1;
    form.raw = form.stage_raw = form.n_user_grads = 0;
    memset(form.stage_wgrad, 0, sizeof form.stage_wgrad);
    clmad_loss_grads g = {0};
    clmad_status st = clmad__bcast_fused_loss(ctx, y, &form, NULL, 0, 0, &g);
    if (st != CLMAD_OK) {
        clmad__log("%s: the region's kernel failed (%s); running eagerly", z->node->name, clmad_last_error(ctx));
        return 0;
    }
    clmad__bcast_region_written(z, g.y_values);
    clmad__loss_grads_release(&g);
    clmad__bcast_node_set_region(z->node, &region);
    ctx->stats.fused_regions++;
    return 1;
}

clmad_status clmad__region_inputs_ready(clmad_context *ctx, clmad_tensor *const *ts, int n)
{
    for (int i = 0; ts && i < n; i++)
        if (ts[i] && ts[i]->ctx == ctx && ts[i]->held)
            region_forward(ctx, ts[i]);
    return clmad__inputs_ready(ctx, ts, n);
}

/* 1 if adj is a full tensor of node's one output. */
static int full_adjoint(const clmad_node *node, const clmad_tensor *adj)
{
    return adj && node->n_outputs == 1 && !node->out_adj_scalar[0] && !node->out_adj_scale[0] &&
           adj->dtype == node->dtype && adj->ndim == node->out_ndim[0] &&
           memcmp(adj->shape, node->out_shape[0], (size_t)adj->ndim * sizeof adj->shape[0]) == 0;
}

/* g (y's shape; owned) summed to input j's shape, as y's node sums the
 * temporary it writes for an input it does not read at the element index
 * (a sum from 0, even of one element: a -0 becomes +0), to its slot. */
static clmad_status hand_summed(clmad_context *ctx, clmad_node *node, int j, clmad_tensor *g)
{
    clmad_tensor *x = node->inputs[j], *summed = NULL;
    clmad_status st = clmad__sum_to_shape(ctx, g, x->ndim, x->shape, &summed);
    clmad_tensor_release(g);
    return st == CLMAD_OK ? clmad__accumulate_input(ctx, node, j, summed) : st;
}

/* The kernel's gradients to their nodes' inputs in the order backward
 * would hand them: the stages' operands from the top stage down (nodes[i]
 * is stage i's), then the inputs of y's node. g is emptied. */
static clmad_status hand_out(clmad_context *ctx, const clmad_loss_form *form, clmad_loss_grads *g,
                             clmad_node *const *nodes, clmad_tensor *y)
{
    clmad_node *y_node = y->node;
    clmad_status st = CLMAD_OK;
    for (int i = form->n_stages - 1; i >= 0 && st == CLMAD_OK; i--) {
        if (g->stage_grad[i])
            st = clmad__hand_to_input(ctx, nodes[i], 1 - form->stage_y[i], g->stage_grad[i]);
        g->stage_grad[i] = NULL;
        for (int u = 0; u < form->n_user_grads && st == CLMAD_OK; u++)
            if (form->user_grad_stage[u] == i && g->user_grad[u]) {
                st = clmad__hand_to_input(ctx, nodes[i], form->user_grad_input[u], g->user_grad[u]);
                g->user_grad[u] = NULL;
            }
    }
    for (int s = 0; s < g->n; s++) {
        clmad_tensor *grad = g->grad[s];
        g->grad[s] = NULL;
        if (st == CLMAD_OK && clmad__adjoint_slot(ctx, y_node, g->input[s]))
            st = clmad__element_index(y_node->inputs[g->input[s]], y)
                     ? clmad__accumulate_input(ctx, y_node, g->input[s], grad)
                     : hand_summed(ctx, y_node, g->input[s], grad); /* a row's, written at y's shape */
        else
            clmad_tensor_release(grad);
    }
    clmad__loss_grads_release(g);
    return st;
}

static clmad_status fall_back(clmad_context *ctx)
{
    ctx->stats.fusion_fallbacks++;
    return CLMAD_OK;
}

static clmad_status region_backward(clmad_context *ctx, clmad_node *node, int *done)
{
    clmad_kernel *k;
    uint64_t active;
    clmad_tensor *dz = node->out_adj[0];
    clmad_status st = clmad__tensor_ready(dz); /* clmad_backward's seed may be held */
    if (st != CLMAD_OK)
        return st;
    if (!full_adjoint(node, dz) || !clmad__bcast_node(node, &k, &active))
        return fall_back(ctx);
    /* The chain again, from this node down, each value below still held:
     * nothing wrote them since the forward (a flush writes them all). */
    const clmad_stage_call top = {k, node->inputs};
    clmad_loss_form form = {.w = dz, .adj = 1.0, .region = CLMAD_REGION_GRADS};
    clmad_tensor *y = NULL;
    if (!clmad__stage_chain(ctx, NULL, &top, 1.0, &form, &y) || !clmad__fused_distinct_targets(ctx, y, 1))
        return fall_back(ctx);
    const int n = form.n_stages;
    clmad_node *nodes[CLMAD_MAX_LOSS_STAGES];
    nodes[n - 1] = node;
    for (int i = 0; i < n - 1; i++) { /* nothing else reached them */
        if (!clmad__needs_grad(ctx, form.z[i]) || form.z[i]->node->out_adj[form.z[i]->out_index])
            return fall_back(ctx);
        nodes[i] = form.z[i]->node;
    }
    if (!clmad__needs_grad(ctx, y) || y->node->out_adj[y->out_index] ||
        !clmad__fused_sole_path(ctx, node, nodes, n - 1, y->node))
        return fall_back(ctx);
    clmad_loss_grads g = {0};
    st = clmad__bcast_fused_loss(ctx, y, &form, NULL, 0, 0, &g);
    if (st != CLMAD_OK) {
        clmad__log("%s: the region's backward kernel failed (%s); running eagerly", node->name,
                   clmad_last_error(ctx));
        return fall_back(ctx);
    }
    st = hand_out(ctx, &form, &g, nodes, y);
    *done = st == CLMAD_OK;
    return st;
}
