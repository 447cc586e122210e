/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fused losses. The natural training loss, clmad_dot(cell(...), w) or
 * clmad_sum(cell(...)), written eagerly is a forward that writes y (and
 * the partials), a pass reading y (and w), and a backward reading the
 * partials (and w) to write the gradients. Fused, it is one kernel: the
 * inputs (and w) read once and the gradients written once, which is
 * backward's result when the loss's adjoint is exactly 1, as
 * clmad_backward seeds it; the loss's other passes sum a few partial sums.
 */
#include "ops/fused_loss.h"
#include "broadcast/held.h"
#include "broadcast/launch.h"
#include "broadcast/node.h"
#include "base/log.h"

#include <stdlib.h>

struct clmad_fused_loss {
    int raw;                /* the gradients are a STORE node's partials taken whole */
    clmad_loss_grads g;     /* n = 0 once used or released */
};

void clmad__fused_loss_free(clmad_fused_loss *f)
{
    if (!f)
        return;
    for (int s = 0; s < f->g.n; s++)
        clmad__tensor_unref(f->g.grad[s]);
    free(f);
}

void clmad__free_fused_data(clmad_node *node)
{
    if (node->data)
        clmad__fused_loss_free(*(clmad_fused_loss **)node->data);
    free(node->data);
    node->data = NULL;
}

/* The first pass into sums (parts of them), then the passes of
 * clmad__reduce to one value: dot.c's dot_value with the loss kernel first. */
static clmad_status loss_value(clmad_context *ctx, clmad_tensor *y, clmad_tensor *w, clmad_fused_loss *f,
                               int out_ndim, const size_t *out_shape, clmad_tensor **out)
{
    size_t one = 1;
    int ranges = clmad__sum_by_ranges(ctx, 1, 1, &one);
    size_t parts = ranges ? clmad__range_parts(y->numel) : clmad__reduce_parts(1, y->numel);
    clmad_tensor *sums;
    clmad_status st = parts == 1 ? clmad_tensor_create(ctx, y->dtype, out_ndim, out_shape, NULL, &sums)
                                 : clmad_tensor_create(ctx, y->dtype, 1, &parts, NULL, &sums);
    if (st != CLMAD_OK)
        return st;
    st = clmad__bcast_fused_loss(ctx, y, w, f->raw, sums, parts, ranges, &f->g);
    if (st != CLMAD_OK || parts == 1) {
        if (st == CLMAD_OK)
            *out = sums;
        else
            clmad_tensor_release(sums);
        return st;
    }
    int reduce_all[1] = {1};
    st = clmad__reduce(ctx, sums, reduce_all, 1.0, out_ndim, out_shape, out);
    clmad_tensor_release(sums);
    return st;
}

clmad_status clmad__fused_loss(clmad_context *ctx, clmad_tensor *y, clmad_tensor *w, int out_ndim,
                               const size_t *out_shape, clmad_fused_loss **fused, clmad_tensor **out)
{
    *fused = NULL;
    *out = NULL;
    clmad_fused_loss *f = NULL;
    if (clmad__bcast_loss_fusible(ctx, y, w))
        f = calloc(1, sizeof *f);
    if (!f)
        return clmad__flush_held(ctx);
    /* A STORE node would hand its partials over whole to an adjoint of 1
     * (node.c's take_partial): so does the loss kernel. */
    f->raw = !w && !ctx->tape.retain && clmad__bcast_node_wants_partials(y->node);
    clmad_status st = loss_value(ctx, y, w, f, out_ndim, out_shape, out);
    if (st != CLMAD_OK) {
        clmad__log("%s: the fused loss kernel failed (%s); running eagerly", y->node->name,
                   clmad_last_error(ctx));
        clmad__fused_loss_free(f);
        *out = NULL;
        return clmad__flush_held(ctx);
    }
    ctx->stats.fused_losses++;
    *fused = f;
    return CLMAD_OK;
}

/* The loss kernel's gradients are backward's: its adjoint is clmad_backward's
 * ones (then nothing else reaches y: every path from the loss to y goes
 * through this node), and what raw took for granted still holds. */
static int grads_usable(clmad_context *ctx, clmad_node *node, clmad_tensor *y, const clmad_fused_loss *f)
{
    if (!clmad__adjoint_is_seed(ctx, node, 0) || !clmad__needs_grad(ctx, y) || y->node->out_adj[y->out_index])
        return 0;
    for (int s = 0; f->raw && s < f->g.n; s++) {
        clmad_tensor **slot = clmad__adjoint_slot(ctx, y->node, f->g.input[s]);
        if (ctx->tape.retain || (slot && *slot))
            return 0;
    }
    return 1;
}

clmad_status clmad__fused_loss_backward(clmad_context *ctx, clmad_node *node, int y_input,
                                        clmad_fused_loss *f, int *done)
{
    *done = 0;
    if (!f || f->g.n == 0)
        return CLMAD_OK;
    clmad_tensor *y = node->inputs[y_input];
    if (!grads_usable(ctx, node, y, f)) {
        ctx->stats.fusion_fallbacks++;
        clmad__release_all(f->g.grad, f->g.n);
        f->g.n = 0;
        return CLMAD_OK;
    }
    clmad_status st = CLMAD_OK;
    for (int s = 0; s < f->g.n; s++) {
        clmad_tensor *g = f->g.grad[s];
        f->g.grad[s] = NULL;
        if (st == CLMAD_OK && clmad__adjoint_slot(ctx, y->node, f->g.input[s]))
            st = clmad__accumulate_input(ctx, y->node, f->g.input[s], g);
        else
            clmad_tensor_release(g);
    }
    f->g.n = 0;
    *done = st == CLMAD_OK;
    return st;
}
