/* SPDX-License-Identifier: Apache-2.0 */
#include "runtime/primitives.h"
#include "tape/tape.h"
#include "runtime/scope.h"

#include <stdlib.h>
#include <string.h>

static int node_current(const clmad_context *ctx, const clmad_tensor *t)
{
    return t->node && t->node_gen == ctx->tape.generation;
}

int clmad__needs_grad(const clmad_context *ctx, const clmad_tensor *t)
{
    if (!t)
        return 0;
    return t->node ? node_current(ctx, t) : t->requires_grad;
}

int clmad__tape_holds(const clmad_context *ctx, const clmad_tensor *t)
{
    return t->tape_refs > 0 || node_current(ctx, t);
}

/* Drops the node's reference to input j (NULL once dropped). */
static void drop_input(clmad_node *node, int j)
{
    clmad_tensor *x = node->inputs[j];
    if (!x)
        return;
    x->tape_refs--;
    node->inputs[j] = NULL;
    clmad_tensor_release(x);
}

int clmad__should_record(const clmad_context *ctx, clmad_tensor *const *inputs, int n)
{
    if (!ctx->tape.grad_enabled)
        return 0;
    for (int j = 0; j < n; j++)
        if (clmad__needs_grad(ctx, inputs[j]))
            return 1;
    return 0;
}

static void node_free(clmad_context *ctx, clmad_node *node)
{
    if (node->free_data)
        node->free_data(node);
    ctx->stats.tape_saved_bytes -= node->saved_bytes;
    for (int j = 0; j < node->n_inputs; j++)
        drop_input(node, j);
    for (int o = 0; o < node->n_outputs; o++) {
        clmad_tensor_release(node->out_adj[o]);
        clmad_tensor_release(node->out_adj_scale[o]);
    }
    free(node); /* with its arrays */
}

/* Reserves n objects of size `size` and alignment `align` at the end of a
 * block of *end bytes; returns their offset. */
static size_t carve(size_t *end, size_t n, size_t size, size_t align)
{
    size_t at = (*end + align - 1) / align * align;
    *end = at + n * size;
    return at;
}

/* A zeroed node with its arrays for n_inputs inputs and n_outputs outputs. */
static clmad_node *node_alloc(int n_inputs, int n_outputs)
{
    size_t ni = (size_t)n_inputs, no = (size_t)n_outputs, end = sizeof(clmad_node);
    size_t inputs = carve(&end, ni, sizeof(clmad_tensor *), _Alignof(clmad_tensor *));
    size_t adj = carve(&end, no, sizeof(clmad_tensor *), _Alignof(clmad_tensor *));
    size_t scale = carve(&end, no, sizeof(clmad_tensor *), _Alignof(clmad_tensor *));
    size_t shape = carve(&end, no, sizeof(size_t[CLMAD_MAX_DIMS]), _Alignof(size_t));
    size_t ndim = carve(&end, no, sizeof(int), _Alignof(int));
    size_t scalar = carve(&end, no, 1, 1);
    size_t lazy = carve(&end, no, 1, 1);
    char *block = calloc(1, end);
    if (!block)
        return NULL;
    clmad_node *node = (clmad_node *)block;
    node->inputs = (clmad_tensor **)(block + inputs);
    node->out_adj = (clmad_tensor **)(block + adj);
    node->out_adj_scale = (clmad_tensor **)(block + scale);
    node->out_shape = (size_t(*)[CLMAD_MAX_DIMS])(block + shape);
    node->out_ndim = (int *)(block + ndim);
    node->out_adj_scalar = (unsigned char *)(block + scalar);
    node->out_adj_lazy = (unsigned char *)(block + lazy);
    return node;
}

clmad_status clmad__record(clmad_context *ctx, const char *name, clmad_backward_fn backward,
                           clmad_tensor *const *inputs, int n_inputs, clmad_tensor **outputs,
                           int n_outputs, clmad_node **out)
{
    clmad_tape *tape = &ctx->tape;
    if (tape->count == tape->cap) {
        size_t cap = tape->cap ? tape->cap * 2 : 64;
        clmad_node **grown = realloc(tape->nodes, cap * sizeof *grown);
        if (!grown)
            return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory growing the tape");
        tape->nodes = grown;
        tape->cap = cap;
    }
    clmad_node *node = node_alloc(n_inputs, n_outputs);
    if (!node)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory recording %s", name);
    node->name = name;
    node->backward = backward;
    node->n_inputs = n_inputs;
    for (int j = 0; j < n_inputs; j++) {
        node->inputs[j] = clmad_tensor_retain(inputs[j]);
        if (inputs[j])
            inputs[j]->tape_refs++;
    }
    node->n_outputs = n_outputs;
    node->dtype = outputs[0]->dtype;
    for (int o = 0; o < n_outputs; o++) {
        clmad_tensor *t = outputs[o];
        node->out_ndim[o] = t->ndim;
        memcpy(node->out_shape[o], t->shape, sizeof t->shape);
        t->requires_grad = 1;
        t->node = node;
        t->node_gen = tape->generation;
        t->out_index = o;
    }
    tape->nodes[tape->count++] = node;
    ctx->stats.tape_nodes = tape->count;
    *out = node;
    return CLMAD_OK;
}

clmad_tensor **clmad__adjoint_slot(clmad_context *ctx, clmad_node *node, int j)
{
    clmad_tensor *x = node->inputs[j];
    if (x->node)
        return node_current(ctx, x) ? &x->node->out_adj[x->out_index] : NULL;
    return x->requires_grad ? &x->grad : NULL;
}

clmad_status clmad__accumulate_into(clmad_context *ctx, clmad_tensor *dst, clmad_tensor *src)
{
    if (dst->numel == 0)
        return CLMAD_OK;
    cl_kernel k;
    clmad_status st = clmad__cached_kernel(ctx, dst->dtype, CLMAD_OPS_ACCUMULATE, &k);
    if (st != CLMAD_OK)
        return st;
    cl_ulong n = dst->numel;
    clSetKernelArg(k, 0, sizeof(cl_mem), &dst->mem);
    clSetKernelArg(k, 1, sizeof(cl_mem), &src->mem);
    clSetKernelArg(k, 2, sizeof n, &n);
    return clmad__enqueue_1d(ctx, k, dst->numel, 3 * (uint64_t)clmad__tensor_bytes(dst));
}

/* A new tensor of the given shape holding a (read at 0 when it has one
 * element) times scale[0] when scale is not NULL. */
static clmad_status expand_adjoint(clmad_context *ctx, clmad_tensor *a, clmad_tensor *scale, int ndim,
                                   const size_t *shape, clmad_tensor **out)
{
    clmad_tensor *t;
    clmad_status st = clmad_tensor_create(ctx, a->dtype, ndim, shape, NULL, &t);
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
        st = clmad__enqueue_1d(ctx, k, t->numel, (step + 1) * (uint64_t)clmad__tensor_bytes(t));
    if (st != CLMAD_OK) {
        clmad_tensor_release(t);
        return st;
    }
    *out = t;
    return CLMAD_OK;
}

/* out_adj[o] = full (a full tensor, or NULL), releasing what was there. */
static void set_adjoint(clmad_node *node, int o, clmad_tensor *full)
{
    clmad_tensor_release(node->out_adj[o]);
    clmad_tensor_release(node->out_adj_scale[o]);
    node->out_adj[o] = full;
    node->out_adj_scale[o] = NULL;
    node->out_adj_scalar[o] = 0;
    node->out_adj_lazy[o] = 0;
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
    set_adjoint(node, o, full);
    return CLMAD_OK;
}

clmad_status clmad__settle_adjoint_slot(clmad_context *ctx, clmad_node *node, int j)
{
    clmad_tensor *x = node->inputs[j];
    if (!x->node || !node_current(ctx, x))
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

clmad_status clmad__accumulate_input(clmad_context *ctx, clmad_node *node, int j, clmad_tensor *g)
{
    clmad_tensor **slot = clmad__adjoint_slot(ctx, node, j);
    if (!slot) {
        clmad_tensor_release(g);
        return CLMAD_OK;
    }
    clmad_status settled = clmad__settle_adjoint_slot(ctx, node, j);
    if (settled != CLMAD_OK) {
        clmad_tensor_release(g);
        return settled;
    }
    if (!*slot) {
        *slot = g; /* the first contribution is taken as it is */
        return CLMAD_OK;
    }
    clmad_status st = clmad__accumulate_into(ctx, *slot, g);
    clmad_tensor_release(g);
    return st;
}

void clmad__tape_free_nodes(clmad_context *ctx)
{
    clmad_tape *tape = &ctx->tape;
    for (size_t i = tape->count; i-- > 0;)
        node_free(ctx, tape->nodes[i]);
    tape->count = 0;
    tape->generation++;
    ctx->stats.tape_nodes = 0;
}

void clmad_tape_clear(clmad_context *ctx)
{
    if (ctx)
        clmad__tape_free_nodes(ctx);
}

clmad_status clmad_set_retain_tape(clmad_context *ctx, int on)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_set_retain_tape: ctx is NULL");
    ctx->tape.retain = on != 0;
    return CLMAD_OK;
}

clmad_status clmad_set_grad_enabled(clmad_context *ctx, int on)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_set_grad_enabled: ctx is NULL");
    ctx->tape.grad_enabled = on != 0;
    return CLMAD_OK;
}

clmad_status clmad_set_partials_policy(clmad_context *ctx, clmad_partials_policy policy)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_set_partials_policy: ctx is NULL");
    if (policy != CLMAD_PARTIALS_AUTO && policy != CLMAD_PARTIALS_STORE &&
        policy != CLMAD_PARTIALS_RECOMPUTE)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "unknown partials policy %d", (int)policy);
    ctx->tape.policy = policy;
    return CLMAD_OK;
}

clmad_status clmad_tensor_set_requires_grad(clmad_tensor *t, int on)
{
    if (!t)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_set_requires_grad: NULL tensor");
    if (t->node && node_current(t->ctx, t))
        return clmad__fail(t->ctx, CLMAD_ERR_STATE,
                           "clmad_tensor_set_requires_grad: the tensor is the output of a recorded "
                           "operation; only leaves can be marked");
    t->node = NULL;
    t->requires_grad = on != 0;
    return CLMAD_OK;
}

int clmad_tensor_requires_grad(const clmad_tensor *t)
{
    return t ? clmad__needs_grad(t->ctx, t) : 0;
}

clmad_status clmad_tensor_grad(clmad_tensor *t, clmad_tensor **grad)
{
    if (!t || !grad)
        return clmad__fail(t ? t->ctx : NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_grad: NULL argument");
    *grad = clmad_tensor_retain(t->grad);
    return CLMAD_OK;
}

void clmad_tensor_zero_grad(clmad_tensor *t)
{
    if (!t)
        return;
    clmad_tensor_release(t->grad);
    t->grad = NULL;
}

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

static int same_shape(const clmad_tensor *a, const clmad_tensor *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

static clmad_status backward_pass(clmad_context *ctx, clmad_tensor *loss, clmad_tensor *seed)
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
                           seed->dtype == CLMAD_F64 ? "f64" : "f32", loss->dtype == CLMAD_F64 ? "f64" : "f32");
    if (seed && !same_shape(seed, loss))
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "clmad_backward: the seed must have the loss's shape");
    if (!seed && loss->numel != 1)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "clmad_backward: the loss has %zu elements; a non-scalar loss needs a seed tensor",
                           loss->numel);
    clmad_tensor *g;
    clmad_status st = seed ? copy_tensor(ctx, seed, &g)
                           : clmad_tensor_fill(ctx, loss->dtype, loss->ndim, loss->shape, 1.0, &g);
    if (st != CLMAD_OK)
        return st;
    clmad_tensor **slot = loss->node ? &loss->node->out_adj[loss->out_index] : &loss->grad;
    if (*slot) {
        st = clmad__accumulate_into(ctx, *slot, g);
        clmad_tensor_release(g);
    } else {
        *slot = g;
    }

    clmad_tape *tape = &ctx->tape;
    for (size_t i = tape->count; st == CLMAD_OK && i-- > 0;) {
        clmad_node *node = tape->nodes[i];
        int any = 0;
        for (int o = 0; o < node->n_outputs; o++) {
            any |= node->out_adj[o] != NULL;
            if (!node->lazy_adjoints && st == CLMAD_OK)
                st = clmad__materialize_adjoint(ctx, node, o);
        }
        if (any && st == CLMAD_OK)
            st = node->backward(ctx, node);
        for (int o = 0; o < node->n_outputs; o++)
            set_adjoint(node, o, NULL);
        if (!tape->retain) {
            /* What the node saved is no longer needed: free it now, not at the end. */
            if (node->free_data)
                node->free_data(node);
            node->free_data = NULL;
            ctx->stats.tape_saved_bytes -= node->saved_bytes;
            node->saved_bytes = 0;
            for (int j = 0; j < node->n_inputs; j++)
                drop_input(node, j);
        }
    }
    if (!tape->retain || st != CLMAD_OK)
        clmad__tape_free_nodes(ctx);
    return st;
}

clmad_status clmad_backward(clmad_context *ctx, clmad_tensor *loss, clmad_tensor *seed)
{
    /* The gradients and adjoints backward makes are clmad's own, not the
     * caller's: no scope may release them. */
    if (ctx)
        clmad__scope_pause(ctx);
    clmad_status st = backward_pass(ctx, loss, seed);
    if (ctx)
        clmad__scope_resume(ctx);
    return st;
}
