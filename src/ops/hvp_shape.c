/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clmad_hvp's rules for the shape operations: each is linear, and its
 * backward does not read its inputs, so a tangent goes through the
 * operation as a value does, and an adjoint's tangent through the backward
 * as the adjoint does (the transposed copy: reshape back, the inverse
 * permutation, a slice padded with zeros, the slices of a concat).
 */
#include "ops/hvp.h"
#include "ops/ops.h"

/* A zero tangent stands for an input's tangent in a concat. */
static clmad_status or_zeros(clmad_context *ctx, clmad_tensor *t, const clmad_tensor *like, clmad_tensor **out)
{
    if (t) {
        clmad_tensor_retain(t);
        *out = t;
        return CLMAD_OK;
    }
    return clmad_tensor_zeros(ctx, like->dtype, like->ndim, like->shape, out);
}

/* The shape operation of node and its parameters. */
typedef struct shape_rule {
    clmad_shape_op op;
    int axis, perm[CLMAD_MAX_DIMS];
    size_t start;
} shape_rule;

static shape_rule rule_of(const clmad_node *node)
{
    shape_rule r = {0};
    r.op = clmad__shape_node(node, &r.axis, &r.start, r.perm);
    return r;
}

/* The operation applied to x (a tangent); xs: every input's, for concat. */
static clmad_status forward_one(clmad_context *ctx, clmad_node *node, const shape_rule *r, clmad_tensor *const *xs,
                                clmad_tensor **out)
{
    switch (r->op) {
    case CLMAD_SHAPE_RESHAPE: return clmad_reshape(ctx, xs[0], node->out_ndim[0], node->out_shape[0], out);
    case CLMAD_SHAPE_TRANSPOSE: return clmad_transpose(ctx, xs[0], r->perm, out);
    case CLMAD_SHAPE_SLICE:
        return clmad_slice(ctx, xs[0], r->axis, r->start, r->start + node->out_shape[0][r->axis], out);
    default: return clmad_concat(ctx, node->n_inputs, xs, r->axis, out);
    }
}

/* Input j's part of g (the output's shape), by the transposed copy. */
static clmad_status backward_one(clmad_context *ctx, clmad_node *node, const shape_rule *r, int j, clmad_tensor *g,
                                 clmad_tensor **out)
{
    const clmad_shape_op op = r->op;
    const int axis = r->axis, *perm = r->perm;
    const size_t start = r->start;
    const clmad_tensor *x = node->inputs[j];
    if (!g)
        return CLMAD_OK;
    if (op == CLMAD_SHAPE_RESHAPE)
        return clmad_reshape(ctx, g, x->ndim, x->shape, out);
    if (op == CLMAD_SHAPE_TRANSPOSE) {
        int inverse[CLMAD_MAX_DIMS];
        for (int i = 0; i < x->ndim; i++)
            inverse[perm[i]] = i;
        return clmad_transpose(ctx, g, inverse, out);
    }
    if (op == CLMAD_SHAPE_CONCAT) {
        size_t offset = 0;
        for (int i = 0; i < j; i++)
            offset += node->inputs[i]->shape[axis];
        return clmad_slice(ctx, g, axis, offset, offset + x->shape[axis], out);
    }
    /* slice: g between zeros before and after along the axis */
    clmad_tensor *parts[3] = {0};
    int n = 0;
    clmad_status st = CLMAD_OK;
    const size_t before = start, after = x->shape[axis] - start - g->shape[axis];
    size_t shape[CLMAD_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        shape[d] = x->shape[d];
    if (before) {
        shape[axis] = before;
        st = clmad_tensor_zeros(ctx, x->dtype, x->ndim, shape, &parts[n++]);
    }
    clmad_tensor_retain(g);
    parts[n++] = g;
    if (after && st == CLMAD_OK) {
        shape[axis] = after;
        st = clmad_tensor_zeros(ctx, x->dtype, x->ndim, shape, &parts[n++]);
    }
    if (st == CLMAD_OK)
        st = clmad_concat(ctx, n, parts, axis, out);
    for (int i = 0; i < n; i++)
        clmad_tensor_release(parts[i]);
    return st;
}

clmad_status clmad__hvp_shape_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    const shape_rule r = rule_of(node);
    clmad_status st = CLMAD_OK;
    for (int j = 0; j < node->n_inputs && st == CLMAD_OK; j++) {
        if (!io->want[j])
            continue;
        st = backward_one(ctx, node, &r, j, io->out_adj[0], &io->in_adj[j]);
        if (st == CLMAD_OK)
            st = backward_one(ctx, node, &r, j, io->out_adj_tan[0], &io->in_adj_tan[j]);
    }
    return st;
}

clmad_status clmad__hvp_shape_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    const shape_rule r = rule_of(node);
    int any = 0;
    for (int j = 0; j < node->n_inputs; j++)
        any |= io->in_tan[j] != NULL;
    if (!any)
        return CLMAD_OK;
    if (r.op != CLMAD_SHAPE_CONCAT)
        return forward_one(ctx, node, &r, io->in_tan, &io->out_tan[0]);
    clmad_tensor **xs = calloc((size_t)node->n_inputs, sizeof *xs);
    if (!xs)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "clmad_hvp: out of host memory");
    clmad_status st = CLMAD_OK;
    for (int j = 0; j < node->n_inputs && st == CLMAD_OK; j++)
        st = or_zeros(ctx, io->in_tan[j], node->inputs[j], &xs[j]);
    if (st == CLMAD_OK)
        st = forward_one(ctx, node, &r, xs, &io->out_tan[0]);
    for (int j = 0; j < node->n_inputs; j++)
        clmad_tensor_release(xs[j]);
    free(xs);
    return st;
}
