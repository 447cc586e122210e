/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clmad_hvp's rules for the operations along one axis (axis.c). With w the
 * row's weights (the softmax s of the row; for max its selection, 1 at the
 * element backward picks), P the node's own backward kernel
 * (clmad__axis_pullback, linear in the adjoint), sums over the axis kept:
 *   max        ydot = sum(w xdot);         xbar = P(g), xbardot = P(gdot)
 *              (the selection is locally constant);
 *   logsumexp  ydot = sum(s xdot);         xbar = P(g) = s g,
 *              xbardot = P(gdot) + sdot g, sdot = s (xdot - sum(s xdot));
 *   softmax    ydot = P(xdot) (its Jacobian diag(s) - s s^T is symmetric);
 *              xbar = P(g) = s (g - sum(g s)),
 *              xbardot = P(gdot) + sdot (g - sum(g s)) - s sum(g sdot);
 *   log_softmax  ydot = xdot - sum(s xdot); xbar = P(g) = g - s sum(g),
 *              xbardot = P(gdot) - s ydot sum(g).
 * The adjoint itself is the backward's own kernel, so clmad_hvp's gradient
 * is clmad_backward's; the rest is written with the library's operations.
 */
#include "ops/hvp.h"
#include "ops/ops.h"

typedef struct axis_rule {
    clmad_context *ctx;
    clmad_node *node;
    clmad_axis_op op;
    int axis;
    clmad_tensor *y; /* the node's output (borrowed) */
} axis_rule;

/* *out = a * b, NULL (zero) when either is. */
static clmad_status mul(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, clmad_tensor **out)
{
    *out = NULL;
    return a && b ? clmad_mul(ctx, a, b, out) : CLMAD_OK;
}

/* *out = sum over the axis of a * b, the axis kept with size 1. */
static clmad_status row_dot(const axis_rule *r, clmad_tensor *a, clmad_tensor *b, clmad_tensor **out)
{
    clmad_tensor *m;
    *out = NULL;
    clmad_status st = mul(r->ctx, a, b, &m);
    if (st == CLMAD_OK && m)
        st = clmad_sum(r->ctx, m, 1, &r->axis, 1, out);
    clmad_tensor_release(m);
    return st;
}

/* *out = t - sum(w t): t less its weighted mean over the row. */
static clmad_status deviation(const axis_rule *r, clmad_tensor *w, clmad_tensor *t, clmad_tensor **out)
{
    clmad_tensor *mean;
    clmad_status st = row_dot(r, w, t, &mean);
    if (st == CLMAD_OK)
        st = clmad_sub(r->ctx, t, mean, out);
    clmad_tensor_release(mean);
    return st;
}

/* P(adj) into *out, NULL for a zero adjoint. */
static clmad_status pullback(const axis_rule *r, clmad_tensor *adj, clmad_tensor **out)
{
    *out = NULL;
    return adj ? clmad__axis_pullback(r->ctx, r->node, adj, out) : CLMAD_OK;
}

/* The row's weights w (a new reference, the input's shape). */
static clmad_status weights(const axis_rule *r, clmad_tensor **w)
{
    if (r->op == CLMAD_AXIS_SOFTMAX) {
        *w = clmad_tensor_retain(r->y);
        return CLMAD_OK;
    }
    if (r->op == CLMAD_AXIS_LOG_SOFTMAX)
        return clmad_exp(r->ctx, r->y, w);
    /* max, logsumexp: the backward of an adjoint of ones */
    const clmad_node *node = r->node;
    clmad_tensor *ones;
    clmad_status st = clmad_tensor_fill(r->ctx, node->dtype, node->out_ndim[0], node->out_shape[0], 1.0, &ones);
    if (st == CLMAD_OK)
        st = pullback(r, ones, w);
    clmad_tensor_release(ones);
    return st;
}

static clmad_status forward_rule(const axis_rule *r, clmad_tensor *xdot, clmad_tensor **ydot)
{
    if (!xdot)
        return CLMAD_OK;
    if (r->op == CLMAD_AXIS_SOFTMAX)
        return pullback(r, xdot, ydot);
    clmad_tensor *w, *t = NULL;
    clmad_status st = weights(r, &w);
    if (st == CLMAD_OK && r->op == CLMAD_AXIS_LOG_SOFTMAX)
        st = deviation(r, w, xdot, ydot);
    else if (st == CLMAD_OK) {
        st = row_dot(r, w, xdot, &t);
        if (st == CLMAD_OK)
            st = clmad_reshape(r->ctx, t, r->node->out_ndim[0], r->node->out_shape[0], ydot);
    }
    clmad_tensor_release(w);
    clmad_tensor_release(t);
    return st;
}

/* The part of xbardot that comes from the tangent of the Jacobian (applied
 * to g), added into *acc. */
static clmad_status curvature(const axis_rule *r, const clmad_hvp_io *io, clmad_tensor **acc)
{
    clmad_tensor *g = io->out_adj[0], *ydot = io->out_tan[0], *xdot = io->in_tan[0];
    if (r->op == CLMAD_AXIS_MAX || !g || (r->op == CLMAD_AXIS_LOGSUMEXP ? !xdot : !ydot))
        return CLMAD_OK;
    clmad_tensor *w, *a = NULL, *b = NULL;
    clmad_status st = weights(r, &w);
    if (st != CLMAD_OK)
        return st;
    if (r->op == CLMAD_AXIS_SOFTMAX) { /* sdot (g - sum(g s)) - s sum(g sdot) */
        st = deviation(r, w, g, &a);
        if (st == CLMAD_OK)
            st = clmad__hvp_mul_into(r->ctx, acc, ydot, a, 0);
        if (st == CLMAD_OK)
            st = row_dot(r, g, ydot, &b);
        if (st == CLMAD_OK)
            st = clmad__hvp_mul_into(r->ctx, acc, w, b, 1);
    } else if (r->op == CLMAD_AXIS_LOG_SOFTMAX) { /* -s ydot sum(g) */
        st = mul(r->ctx, w, ydot, &a);
        if (st == CLMAD_OK)
            st = clmad_sum(r->ctx, g, 1, &r->axis, 1, &b);
        if (st == CLMAD_OK)
            st = clmad__hvp_mul_into(r->ctx, acc, a, b, 1);
    } else { /* logsumexp: s (xdot - sum(s xdot)) g, g with the axis kept */
        const clmad_tensor *x = r->node->inputs[0];
        size_t kept[CLMAD_MAX_DIMS];
        for (int d = 0; d < x->ndim; d++)
            kept[d] = d == r->axis ? 1 : x->shape[d];
        clmad_tensor *sdot = NULL;
        st = deviation(r, w, xdot, &a);
        if (st == CLMAD_OK)
            st = mul(r->ctx, w, a, &sdot);
        if (st == CLMAD_OK)
            st = clmad_reshape(r->ctx, g, x->ndim, kept, &b);
        if (st == CLMAD_OK)
            st = clmad__hvp_mul_into(r->ctx, acc, sdot, b, 0);
        clmad_tensor_release(sdot);
    }
    clmad_tensor_release(w);
    clmad_tensor_release(a);
    clmad_tensor_release(b);
    return st;
}

static clmad_status backward_rule(const axis_rule *r, clmad_hvp_io *io)
{
    if (!io->want[0])
        return CLMAD_OK;
    clmad_status st = pullback(r, io->out_adj[0], &io->in_adj[0]);
    if (st == CLMAD_OK)
        st = pullback(r, io->out_adj_tan[0], &io->in_adj_tan[0]);
    return st == CLMAD_OK ? curvature(r, io, &io->in_adj_tan[0]) : st;
}

static axis_rule rule_of(clmad_context *ctx, clmad_node *node)
{
    axis_rule r = {.ctx = ctx, .node = node};
    r.op = clmad__axis_node(node, &r.axis, &r.y);
    return r;
}

clmad_status clmad__hvp_axis_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    const axis_rule r = rule_of(ctx, node);
    return forward_rule(&r, io->in_tan[0], &io->out_tan[0]);
}

clmad_status clmad__hvp_axis_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    const axis_rule r = rule_of(ctx, node);
    return backward_rule(&r, io);
}
