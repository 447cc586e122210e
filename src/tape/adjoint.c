/* SPDX-License-Identifier: Apache-2.0 */
/* Adjoint routing: where an input's gradient goes, lazy adjoints, accumulation. */
#include "runtime/held.h"
#include "runtime/primitives.h"
#include "tape/state.h"

clmad_tensor **clmad__adjoint_slot(clmad_context *ctx, clmad_node *node, int j)
{
    clmad_tensor *x = node->inputs[j];
    if (x->node)
        return clmad__node_current(ctx, x) ? &x->node->out_adj[x->out_index] : NULL;
    return x->requires_grad ? &x->grad : NULL;
}

clmad_status clmad__accumulate_into(clmad_context *ctx, clmad_tensor *dst, clmad_tensor *src)
{
    if (dst->numel == 0)
        return CLMAD_OK;
    clmad_tensor *both[2] = {dst, src}; /* either may be backward's seed, held */
    clmad_status st = clmad__tensors_ready(both, 2);
    cl_kernel k;
    if (st == CLMAD_OK)
        st = clmad__cached_kernel(ctx, dst->dtype, CLMAD_OPS_ACCUMULATE, &k);
    if (st != CLMAD_OK)
        return st;
    cl_ulong n = dst->numel;
    const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof n};
    const void *values[] = {&dst->mem, &src->mem, &n};
    st = clmad__set_kernel_args(ctx, k, 3, sizes, values);
    if (st != CLMAD_OK)
        return st;
    return clmad__enqueue_flat(ctx, k, dst->numel, 3 * (uint64_t)clmad__tensor_bytes(dst));
}

/* A new tensor of the given shape holding a (read at 0 when it has one
 * element) times scale[0] when scale is not NULL. */
static clmad_status expand_adjoint(clmad_context *ctx, clmad_tensor *a, clmad_tensor *scale, int ndim,
                                   const size_t *shape, clmad_tensor **out)
{
    clmad_tensor *t, *read[2] = {a, scale}; /* either may be backward's seed, held */
    clmad_status st = clmad__tensors_ready(read, 2);
    if (st == CLMAD_OK)
        st = clmad_tensor_create(ctx, a->dtype, ndim, shape, NULL, &t);
    if (st != CLMAD_OK || t->numel == 0) {
        if (st == CLMAD_OK)
            *out = t;
        return st;
    }
    cl_kernel k;
    st = clmad__cached_kernel(ctx, a->dtype, CLMAD_OPS_EXPAND_SCALED, &k);
    cl_ulong step = a->numel == t->numel ? 1 : 0, n = t->numel;
    cl_int scaled = scale != NULL;
    cl_mem scale_mem = scale ? scale->mem : a->mem; /* unread when not scaled */
    const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof step, sizeof(cl_mem), sizeof scaled,
                            sizeof n};
    const void *values[] = {&t->mem, &a->mem, &step, &scale_mem, &scaled, &n};
    if (st == CLMAD_OK)
        st = clmad__set_kernel_args(ctx, k, 6, sizes, values);
    if (st == CLMAD_OK)
        st = clmad__enqueue_flat(ctx, k, t->numel, (step + 1) * (uint64_t)clmad__tensor_bytes(t));
    if (st != CLMAD_OK) {
        clmad_tensor_release(t);
        return st;
    }
    *out = t;
    return CLMAD_OK;
}

void clmad__set_adjoint(clmad_node *node, int o, clmad_tensor *full)
{
    clmad__tensor_unref(node->out_adj[o]);
    clmad__tensor_unref(node->out_adj_scale[o]);
    node->out_adj[o] = full;
    node->out_adj_scale[o] = NULL;
    node->out_adj_scalar[o] = 0;
    node->out_adj_lazy[o] = 0;
}

clmad_status clmad__adjoint_ready(clmad_node *node, int o)
{
    clmad_tensor *both[2] = {node->out_adj[o], node->out_adj_scale[o]};
    return clmad__tensors_ready(both, 2);
}

clmad_status clmad__materialize_adjoint(clmad_context *ctx, clmad_node *node, int o)
{
    if (!node->out_adj_lazy[o])
        return CLMAD_OK;
    clmad_tensor *full;
    clmad_status st = expand_adjoint(ctx, node->out_adj[o], node->out_adj_scale[o], node->out_ndim[o],
                                     node->out_shape[o], &full);
    if (st != CLMAD_OK)
        return st;
    clmad__set_adjoint(node, o, full);
    return CLMAD_OK;
}

int clmad__adjoint_is_one(const clmad_context *ctx, const clmad_node *node, int o)
{
    const struct clmad_tape *tape = ctx->tape.state;
    return tape && tape->ones_seed && node->out_adj[o] == tape->ones_seed && node->out_adj_lazy[o] &&
           node->out_adj_scalar[o] && !node->out_adj_scale[o];
}

int clmad__adjoint_is_seed(const clmad_context *ctx, const clmad_node *node, int o)
{
    const struct clmad_tape *tape = ctx->tape.state;
    return tape && tape->ones_seed && node->out_adj[o] == tape->ones_seed;
}

/* Makes the adjoint slot of input j of node hold a full tensor (or nothing),
 * so that it can be accumulated into in place. */
static clmad_status settle_adjoint_slot(clmad_context *ctx, clmad_node *node, int j)
{
    clmad_tensor *x = node->inputs[j];
    if (!x->node || !clmad__node_current(ctx, x))
        return CLMAD_OK;
    return clmad__materialize_adjoint(ctx, x->node, x->out_index);
}

clmad_status clmad__give_adjoint(clmad_context *ctx, clmad_node *node, int j, clmad_tensor *a,
                                 clmad_tensor *scale)
{
    clmad_tensor **slot = clmad__adjoint_slot(ctx, node, j);
    if (!slot)
        return CLMAD_OK;
    clmad_tensor *x = node->inputs[j];
    if (a->numel != 1 && a->numel != x->numel)
        return clmad__fail(ctx, CLMAD_ERR_STATE,
                           "%s: an adjoint of %zu elements for an input of %zu (internal error)",
                           node->name, a->numel, x->numel);
    clmad_node *producer = x->node;
    if (!*slot && producer && producer->lazy_adjoints && (a->numel == 1 || a->numel == x->numel)) {
        int o = x->out_index;
        producer->out_adj[o] = clmad_tensor_retain(a);
        producer->out_adj_scale[o] = scale ? clmad_tensor_retain(scale) : NULL;
        producer->out_adj_scalar[o] = a->numel != x->numel;
        producer->out_adj_lazy[o] = 1;
        return CLMAD_OK;
    }
    clmad_tensor *g;
    clmad_status st = expand_adjoint(ctx, a, scale, x->ndim, x->shape, &g);
    return st == CLMAD_OK ? clmad__accumulate_input(ctx, node, j, g) : st;
}

/* The slot of input j made ready to be added into (t->slot NULL: none). */
static clmad_status open_slot(clmad_context *ctx, clmad_node *node, int j, clmad_adjoint_target *t)
{
    *t = (clmad_adjoint_target){clmad__adjoint_slot(ctx, node, j), NULL, 0};
    if (!t->slot)
        return CLMAD_OK;
    /* A lazy adjoint (one value, or another node's tensor) is expanded
     * first: the gradient is added into the slot's buffer. */
    clmad_status st = settle_adjoint_slot(ctx, node, j);
    if (st != CLMAD_OK) {
        t->slot = NULL;
        return st;
    }
    t->tensor = *t->slot;
    t->accumulate = t->tensor != NULL;
    return CLMAD_OK;
}

clmad_status clmad__adjoint_open(clmad_context *ctx, clmad_node *node, int j, int zeroed,
                                 clmad_adjoint_target *t)
{
    clmad_status st = open_slot(ctx, node, j, t);
    if (st != CLMAD_OK || !t->slot || t->accumulate)
        return st;
    clmad_tensor *x = node->inputs[j];
    st = zeroed ? clmad_tensor_zeros(ctx, x->dtype, x->ndim, x->shape, &t->tensor)
                : clmad_tensor_create(ctx, x->dtype, x->ndim, x->shape, NULL, &t->tensor);
    if (st != CLMAD_OK)
        *t = (clmad_adjoint_target){0};
    return st;
}

clmad_status clmad__adjoint_close(clmad_adjoint_target *t, clmad_status st)
{
    if (!t->slot || t->accumulate)
        return st;
    if (st != CLMAD_OK)
        clmad_tensor_release(t->tensor);
    else
        *t->slot = t->tensor; /* the first contribution is taken as it is */
    t->tensor = NULL;
    return st;
}

clmad_status clmad__adjoint_add(clmad_context *ctx, clmad_tensor **slot, clmad_tensor *g)
{
    if (!*slot) {
        *slot = g;
        return CLMAD_OK;
    }
    clmad_status st = clmad__accumulate_into(ctx, *slot, g);
    clmad_tensor_release(g);
    return st;
}

clmad_status clmad__accumulate_input(clmad_context *ctx, clmad_node *node, int j, clmad_tensor *g)
{
    clmad_adjoint_target t;
    clmad_status st = open_slot(ctx, node, j, &t);
    if (st != CLMAD_OK || !t.slot) {
        clmad_tensor_release(g);
        return st;
    }
    return clmad__adjoint_add(ctx, t.slot, g);
}
