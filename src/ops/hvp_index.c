/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clmad_hvp's rules for the index operations and cast. Each is linear in
 * its float inputs and its backward reads only the index (never the
 * inputs' values), so a tangent goes through the operation as a value
 * does, and an adjoint's tangent through the backward as the adjoint does:
 *   index_select, embedding  ydot = select(xdot),  xbardot = select^T(ybardot)
 *   gather                   ydot = gather(xdot),  xbardot = scatter(ybardot)
 *   scatter_add              ydot = xdot + scatter(srcdot),
 *                            xbardot = ybardot,     srcbardot = gather(ybardot)
 *   cast                     ydot = cast(xdot),    xbardot = cast back(ybardot)
 * The integer index inputs have no tangent and take no adjoint.
 */
#include "ops/hvp.h"
#include "ops/index.h"

typedef enum index_kind { KIND_SELECT, KIND_GATHER, KIND_SCATTER_ADD, KIND_CAST } index_kind;

static index_kind kind_of(const clmad_node *node)
{
    const clmad_op *op = node->op;
    return op == &clmad__op_index_select || op == &clmad__op_embedding ? KIND_SELECT
           : op == &clmad__op_gather                                   ? KIND_GATHER
           : op == &clmad__op_scatter_add                              ? KIND_SCATTER_ADD
                                                                       : KIND_CAST;
}

/* src gathered (CLMAD_INDEX_GATHER) or scattered (CLMAD_INDEX_SCATTER_ADD)
 * along the node's axis into a new tensor shaped like `like`; nothing when
 * src is zero (NULL). */
static clmad_status moved(clmad_context *ctx, const clmad_node *node, clmad_kernel_id id, clmad_tensor *src,
                          const clmad_tensor *like, clmad_tensor **out)
{
    if (!src)
        return CLMAD_OK;
    const clmad_index_data *d = node->data;
    clmad_tensor *y = NULL;
    clmad_status st = clmad_tensor_create(ctx, src->dtype, like->ndim, like->shape, NULL, &y);
    if (st == CLMAD_OK)
        st = clmad__index_move(ctx, id, y, src, node->inputs[1], d->v, d->k_len, 0);
    if (st != CLMAD_OK) {
        clmad_tensor_release(y);
        return st;
    }
    *out = y;
    return CLMAD_OK;
}

/* The linear map of the node applied to input j's tangent t: its part of
 * the output's tangent (a new tensor, or NULL for zero). */
static clmad_status apply(clmad_context *ctx, clmad_node *node, index_kind kind, int j, clmad_tensor *t,
                          clmad_tensor **out)
{
    if (!t)
        return CLMAD_OK;
    switch (kind) {
    case KIND_SELECT: return clmad__select_apply(ctx, node, t, out);
    case KIND_GATHER: return moved(ctx, node, CLMAD_INDEX_GATHER, t, node->inputs[1], out);
    case KIND_CAST: return clmad_cast(ctx, t, node->dtype, out);
    default: /* scatter_add: x passes through, src is scattered */
        if (j == 2)
            return moved(ctx, node, CLMAD_INDEX_SCATTER_ADD, t, node->inputs[0], out);
        *out = clmad_tensor_retain(t);
        return CLMAD_OK;
    }
}

/* The adjoint of the node's map for input j applied to g (the output's
 * adjoint or its tangent): a new tensor of input j's shape, NULL for zero. */
static clmad_status adjoint(clmad_context *ctx, clmad_node *node, index_kind kind, int j, clmad_tensor *g,
                            clmad_tensor **out)
{
    if (!g)
        return CLMAD_OK;
    switch (kind) {
    case KIND_SELECT: return clmad__select_adjoint(ctx, node, g, out);
    case KIND_GATHER: return moved(ctx, node, CLMAD_INDEX_SCATTER_ADD, g, node->inputs[0], out);
    case KIND_CAST: return clmad_cast(ctx, g, node->inputs[0]->dtype, out);
    default:
        if (j == 2)
            return moved(ctx, node, CLMAD_INDEX_GATHER, g, node->inputs[2], out);
        *out = clmad_tensor_retain(g);
        return CLMAD_OK;
    }
}

/* The float inputs: x (0) and, for scatter_add, src (2); input 1 is the index. */
static int last_float_input(index_kind kind)
{
    return kind == KIND_SCATTER_ADD ? 2 : 0;
}

clmad_status clmad__hvp_index_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    const index_kind kind = kind_of(node);
    clmad_status st = CLMAD_OK;
    for (int j = 0; j <= last_float_input(kind) && st == CLMAD_OK; j += 2) {
        clmad_tensor *part = NULL;
        st = apply(ctx, node, kind, j, io->in_tan[j], &part);
        if (st == CLMAD_OK)
            st = clmad__hvp_add_into(ctx, &io->out_tan[0], part);
    }
    return st;
}

clmad_status clmad__hvp_index_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    const index_kind kind = kind_of(node);
    clmad_status st = CLMAD_OK;
    for (int j = 0; j <= last_float_input(kind) && st == CLMAD_OK; j += 2) {
        if (!io->want[j])
            continue;
        st = adjoint(ctx, node, kind, j, io->out_adj[0], &io->in_adj[j]);
        if (st == CLMAD_OK)
            st = adjoint(ctx, node, kind, j, io->out_adj_tan[0], &io->in_adj_tan[j]);
    }
    return st;
}
