/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The second-order rules of clmad_hvp, per operation, written with the
 * library's own operations (recording is off while clmad_hvp runs):
 *   broadcast  y = f(x):  ydot = J xdot (the JVP kernel);
 *              xbar_j = unbroadcast(sum_o ybar_o p_oj),
 *              xbardot_j = unbroadcast(sum_o ybardot_o p_oj + ybar_o pdot_oj),
 *              p and pdot from one nested-dual kernel (clmad_broadcast_second);
 *   sum, mean  linear: the same rule on tangents as on values;
 *   dot        bilinear: sdot = dot(adot, b) + dot(a, bdot).
 * The other operations' rules are in files of their own: matmul and bmm
 * hvp_product.c; shape ops hvp_shape.c; axis ops (max, softmax, ...)
 * hvp_axis.c; index ops and cast hvp_index.c; matmul by NumPy's rules
 * hvp_matmul_nd.c. RULES, at the end, gives each operation (by its
 * descriptor, tape.h) its rules; clmad_hvp refuses a tape holding any other
 * operation (clmad__hvp_supported).
 */
#include "ops/hvp.h"
#include "ops/index.h"
#include "broadcast/node.h"

/* *t summed over the axes that broadcasting expanded to reach x's shape,
 * in place of *t. */
static clmad_status unbroadcast(clmad_context *ctx, clmad_tensor **t, const clmad_tensor *x)
{
    if (!*t || clmad__same_shape(*t, x))
        return CLMAD_OK;
    const int nd = (*t)->ndim, lead = nd - x->ndim;
    int axes[CLMAD_MAX_DIMS], n = 0;
    for (int d = 0; d < nd; d++)
        if (d < lead || (x->shape[d - lead] == 1 && (*t)->shape[d] != 1))
            axes[n++] = d;
    clmad_tensor *s = NULL, *r = NULL;
    clmad_status st = n ? clmad_sum(ctx, *t, n, axes, 1, &s) : CLMAD_OK;
    if (st == CLMAD_OK)
        st = clmad_reshape(ctx, s ? s : *t, x->ndim, x->shape, &r);
    clmad_tensor_release(s);
    if (st != CLMAD_OK)
        return st;
    clmad_tensor_release(*t);
    *t = r;
    return CLMAD_OK;
}

static clmad_status bcast_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    clmad_kernel *k;
    uint64_t active;
    clmad__bcast_node(node, &k, &active);
    clmad_tensor *tan[CLMAD_MAX_INPUTS] = {0}, *values[CLMAD_MAX_OUTPUTS] = {0};
    int any = 0;
    for (int j = 0; j < node->n_inputs; j++)
        any |= (tan[j] = (active >> j) & 1u ? io->in_tan[j] : NULL) != NULL;
    if (!any)
        return CLMAD_OK;
    clmad_status st = clmad_broadcast_jvp(ctx, k, node->inputs, tan, values, io->out_tan);
    for (int o = 0; st == CLMAD_OK && o < node->n_outputs; o++)
        clmad_tensor_release(values[o]);
    return st;
}

static clmad_status bcast_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    clmad_kernel *k;
    uint64_t active;
    clmad__bcast_node(node, &k, &active);
    const int n_in = node->n_inputs, n_out = node->n_outputs;
    clmad_tensor *tan[CLMAD_MAX_INPUTS] = {0};
    int act[CLMAD_MAX_INPUTS] = {0};
    for (int j = 0; j < n_in; j++) {
        act[j] = (int)((active >> j) & 1u);
        tan[j] = act[j] ? io->in_tan[j] : NULL;
    }
    clmad_tensor *y[CLMAD_MAX_OUTPUTS] = {0}, *ty[CLMAD_MAX_OUTPUTS] = {0};
    clmad_tensor *p[CLMAD_MAX_OUTPUTS * CLMAD_MAX_INPUTS] = {0}, *pt[CLMAD_MAX_OUTPUTS * CLMAD_MAX_INPUTS] = {0};
    clmad_status st = clmad_broadcast_second(ctx, k, node->inputs, tan, act, y, ty, p, pt);
    if (st != CLMAD_OK)
        return st;
    for (int j = 0; j < n_in && st == CLMAD_OK; j++) {
        if (!io->want[j] || !act[j])
            continue;
        for (int o = 0; o < n_out && st == CLMAD_OK; o++) {
            st = clmad__hvp_mul_into(ctx, &io->in_adj[j], io->out_adj[o], p[o * n_in + j], 0);
            if (st == CLMAD_OK)
                st = clmad__hvp_mul_into(ctx, &io->in_adj_tan[j], io->out_adj[o], pt[o * n_in + j], 0);
            if (st == CLMAD_OK)
                st = clmad__hvp_mul_into(ctx, &io->in_adj_tan[j], io->out_adj_tan[o], p[o * n_in + j], 0);
        }
        if (st == CLMAD_OK)
            st = unbroadcast(ctx, &io->in_adj[j], node->inputs[j]);
        if (st == CLMAD_OK)
            st = unbroadcast(ctx, &io->in_adj_tan[j], node->inputs[j]);
    }
    for (int o = 0; o < n_out; o++) {
        clmad_tensor_release(y[o]);
        clmad_tensor_release(ty[o]);
    }
    for (int i = 0; i < n_out * n_in; i++) {
        clmad_tensor_release(p[i]);
        clmad_tensor_release(pt[i]);
    }
    return st;
}

/* The tangent of a sum: the same sum of the tangent, in the output's shape. */
static clmad_status sum_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    clmad_tensor *x = io->in_tan[0];
    if (!x)
        return CLMAD_OK;
    int reduce[CLMAD_MAX_DIMS];
    double scale;
    clmad__sum_params(node, reduce, &scale);
    int axes[CLMAD_MAX_DIMS], n = 0;
    for (int d = 0; d < x->ndim; d++)
        if (reduce[d])
            axes[n++] = d;
    clmad_tensor *s = NULL, *r = NULL;
    clmad_status st = n ? clmad_sum(ctx, x, n, axes, 1, &s) : CLMAD_OK;
    if (st == CLMAD_OK)
        st = clmad_reshape(ctx, s ? s : x, node->out_ndim[0], node->out_shape[0], &r);
    clmad_tensor_release(s);
    if (st == CLMAD_OK && scale != 1.0) {
        st = clmad_mul_scalar(ctx, r, scale, &s);
        clmad_tensor_release(r);
        r = st == CLMAD_OK ? s : NULL;
    }
    io->out_tan[0] = r;
    return st;
}

/* g (the output's shape) expanded over the summed axes of x, times scale. */
static clmad_status sum_expand(clmad_context *ctx, const clmad_tensor *x, const int *reduce, double scale,
                               clmad_tensor *g, clmad_tensor **out)
{
    if (!g)
        return CLMAD_OK;
    size_t kept[CLMAD_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        kept[d] = reduce[d] ? 1 : x->shape[d];
    clmad_tensor *r = NULL, *z = NULL, *e = NULL;
    clmad_status st = clmad_reshape(ctx, g, x->ndim, kept, &r);
    if (st == CLMAD_OK)
        st = clmad_tensor_zeros(ctx, x->dtype, x->ndim, x->shape, &z);
    if (st == CLMAD_OK)
        st = clmad_add(ctx, z, r, &e);
    clmad_tensor_release(r);
    clmad_tensor_release(z);
    if (st == CLMAD_OK && scale != 1.0) {
        st = clmad_mul_scalar(ctx, e, scale, &r);
        clmad_tensor_release(e);
        e = st == CLMAD_OK ? r : NULL;
    }
    *out = e;
    return st;
}

/* The adjoint and its tangent expanded back over the summed axes. */
static clmad_status sum_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    if (!io->want[0])
        return CLMAD_OK;
    int reduce[CLMAD_MAX_DIMS];
    double scale;
    clmad__sum_params(node, reduce, &scale);
    clmad_status st = sum_expand(ctx, node->inputs[0], reduce, scale, io->out_adj[0], &io->in_adj[0]);
    return st == CLMAD_OK ? sum_expand(ctx, node->inputs[0], reduce, scale, io->out_adj_tan[0], &io->in_adj_tan[0])
                          : st;
}

/* dot(a, b), bilinear: sdot = dot(adot, b) + dot(a, bdot); abar = sbar b,
 * abardot = sbardot b + sbar bdot (and b's likewise). */
static clmad_status dot_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    clmad_status st = CLMAD_OK;
    for (int j = 0; j < 2 && st == CLMAD_OK; j++) {
        clmad_tensor *t = io->in_tan[j], *d;
        if (!t)
            continue;
        st = clmad_dot(ctx, t, node->inputs[1 - j], &d);
        if (st == CLMAD_OK)
            st = clmad__hvp_add_into(ctx, &io->out_tan[0], d);
    }
    return st;
}

static clmad_status dot_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    clmad_status st = CLMAD_OK;
    for (int j = 0; j < 2 && st == CLMAD_OK; j++) {
        if (!io->want[j])
            continue;
        clmad_tensor *other = node->inputs[1 - j];
        st = clmad__hvp_mul_into(ctx, &io->in_adj[j], other, io->out_adj[0], 0);
        if (st == CLMAD_OK)
            st = clmad__hvp_mul_into(ctx, &io->in_adj_tan[j], other, io->out_adj_tan[0], 0);
        if (st == CLMAD_OK)
            st = clmad__hvp_mul_into(ctx, &io->in_adj_tan[j], io->in_tan[1 - j], io->out_adj[0], 0);
        if (st == CLMAD_OK)
            st = unbroadcast(ctx, &io->in_adj[j], node->inputs[j]);
        if (st == CLMAD_OK)
            st = unbroadcast(ctx, &io->in_adj_tan[j], node->inputs[j]);
    }
    return st;
}

/* Every operation with second-order rules, by its descriptor. Here, not in
 * the descriptor: the rules call the operations they are for (tape.h). */
static const struct hvp_rules {
    const clmad_op *op;
    clmad_hvp_rule forward, backward;
} RULES[] = {
    {&clmad__op_broadcast, bcast_forward, bcast_backward},
    {&clmad__op_sum, sum_forward, sum_backward},
    {&clmad__op_mean, sum_forward, sum_backward},
    {&clmad__op_dot, dot_forward, dot_backward},
    {&clmad__op_matmul, clmad__hvp_product_forward, clmad__hvp_product_backward},
    {&clmad__op_bmm, clmad__hvp_product_forward, clmad__hvp_product_backward},
    {&clmad__op_matmul_nd, clmad__hvp_matmul_nd_forward, clmad__hvp_matmul_nd_backward},
    {&clmad__op_slice, clmad__hvp_shape_forward, clmad__hvp_shape_backward},
    {&clmad__op_concat, clmad__hvp_shape_forward, clmad__hvp_shape_backward},
    {&clmad__op_reshape, clmad__hvp_shape_forward, clmad__hvp_shape_backward},
    {&clmad__op_transpose, clmad__hvp_shape_forward, clmad__hvp_shape_backward},
    {&clmad__op_max, clmad__hvp_axis_forward, clmad__hvp_axis_backward},
    {&clmad__op_logsumexp, clmad__hvp_axis_forward, clmad__hvp_axis_backward},
    {&clmad__op_softmax, clmad__hvp_axis_forward, clmad__hvp_axis_backward},
    {&clmad__op_log_softmax, clmad__hvp_axis_forward, clmad__hvp_axis_backward},
    {&clmad__op_index_select, clmad__hvp_index_forward, clmad__hvp_index_backward},
    {&clmad__op_embedding, clmad__hvp_index_forward, clmad__hvp_index_backward},
    {&clmad__op_gather, clmad__hvp_index_forward, clmad__hvp_index_backward},
    {&clmad__op_scatter_add, clmad__hvp_index_forward, clmad__hvp_index_backward},
    {&clmad__op_cast, clmad__hvp_index_forward, clmad__hvp_index_backward},
};

static const struct hvp_rules *rules_of(const clmad_node *node)
{
    for (size_t i = 0; i < sizeof RULES / sizeof RULES[0]; i++)
        if (RULES[i].op == node->op)
            return &RULES[i];
    return NULL;
}

int clmad__hvp_supported(const clmad_node *node)
{
    return rules_of(node) != NULL;
}

static clmad_status unsupported(clmad_context *ctx, const clmad_node *node)
{
    return clmad__fail(ctx, CLMAD_ERR_UNSUPPORTED, "clmad_hvp: '%s' has no second-order rule", node->name);
}

clmad_status clmad__hvp_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    const struct hvp_rules *r = rules_of(node);
    return r ? r->forward(ctx, node, io) : unsupported(ctx, node);
}

clmad_status clmad__hvp_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    const struct hvp_rules *r = rules_of(node);
    return r ? r->backward(ctx, node, io) : unsupported(ctx, node);
}
