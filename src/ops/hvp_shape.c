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

/* The operation applied to x (a tangent); xs: every input's, for concat. */
static clmad_status forward_one(clmad_context *ctx, clmad_node *node, clmad_shape_op op, int axis, size_t start,
                                const int *perm, clmad_tensor *const *xs, clmad_tensor **out)
{
    switch (op) {
    case CLMAD_SHAPE_RESHAPE: return clmad_reshape(ctx, xs[0], node->out_ndim[0], node->out_shape[0], out);
    case CLMAD_SHAPE_TRANSPOSE: return clmad_transpose(ctx, xs[0], perm, out);
    case CLMAD_SHAPE_SLICE:
        return clmad_slice(ctx, xs[0], axis, start, start + node->out_shape[0][axis], out);
    default: return clmad_concat(ctx, node->n_inputs, xs, axis, out);
    }
}

/* Input j's part of g (the output's shape), by the transposed copy. */
static clmad_status backward_one(clmad_context *ctx, clmad_node *node, clmad_shape_op op, int axis, size_t start,
                                 const int *perm, int j, clmad_tensor *g, clmad_tensor **out)
{
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

int clmad__hvp_shape(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io, int backward, clmad_status *st)
{
    int axis = 0, perm[CLMAD_MAX_DIMS];
    size_t start = 0;
    const clmad_shape_op op = clmad__shape_node(node, &axis, &start, perm);
    if (op == CLMAD_SHAPE_NONE)
        return 0;
    if (!ctx) /* a question: is node a shape operation? */
        return 1;
    *st = CLMAD_OK;
    if (backward) {
        for (int j = 0; j < node->n_inputs && *st == CLMAD_OK; j++) {
            if (!io->want[j])
                continue;
            *st = backward_one(ctx, node, op, axis, start, perm, j, io->out_adj[0], &io->in_adj[j]);
            if (*st == CLMAD_OK)
                *st = backward_one(ctx, node, op, axis, start, perm, j, io->out_adj_tan[0], &io->in_adj_tan[j]);
        }
        return 1;
    }
    int any = 0;
    for (int j = 0; j < node->n_inputs; j++)
        any |= io->in_tan[j] != NULL;
    if (!any)
        return 1;
    if (op != CLMAD_SHAPE_CONCAT) {
        *st = forward_one(ctx, node, op, axis, start, perm, io->in_tan, &io->out_tan[0]);
        return 1;
    }
    clmad_tensor **xs = calloc((size_t)node->n_inputs, sizeof *xs);
    if (!xs) {
        *st = clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "clmad_hvp: out of host memory");
        return 1;
    }
    for (int j = 0; j < node->n_inputs && *st == CLMAD_OK; j++)
        *st = or_zeros(ctx, io->in_tan[j], node->inputs[j], &xs[j]);
    if (*st == CLMAD_OK)
        *st = forward_one(ctx, node, op, axis, start, perm, xs, &io->out_tan[0]);
    for (int j = 0; j < node->n_inputs; j++)
        clmad_tensor_release(xs[j]);
    free(xs);
    return 1;
}
