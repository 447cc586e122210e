/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clmad_hvp: a Hessian-vector product by forward over reverse. A forward
 * walk of the tape gives every recorded output its tangent along v (the
 * JVP of each operation); a reverse walk then carries, beside each adjoint,
 * its tangent (the JVP of each operation's backward, ops/hvp_rules.c). The
 * tangents of the parameters' adjoints are H v. The walks read the tape and
 * change nothing on it; recording is off while they run.
 */
#include "ops/hvp.h"
#include "ops/ops.h"
#include "broadcast/plan.h"
#include "runtime/context.h"
#include "runtime/context_guard.h"
#include "runtime/scope.h"

#include <stdlib.h>
#include <string.h>

/* Per node: its outputs' tangents, adjoints and adjoints' tangents. */
typedef struct hvp_slots {
    clmad_tensor *tan[CLMAD_MAX_OUTPUTS], *adj[CLMAD_MAX_OUTPUTS], *adj_tan[CLMAD_MAX_OUTPUTS];
} hvp_slots;

typedef struct hvp_walk {
    clmad_node *const *nodes;
    size_t count;
    hvp_slots *slots;
    struct hvp_entry {
        const clmad_node *node;
        size_t index;
    } *sorted;           /* the nodes by address, for the producer of a tensor */
    clmad_tensor *const *params, *const *v;
    int n;
    clmad_tensor **hv;   /* accumulated H v per parameter */
} hvp_walk;

static int by_address(const void *a, const void *b)
{
    const clmad_node *x = ((const struct hvp_entry *)a)->node, *y = ((const struct hvp_entry *)b)->node;
    return (x > y) - (x < y);
}

/* Where t comes from: a node of the tape (its index; *o its output), a
 * parameter (-2 - k), or nothing that depends on them (-1). */
static long origin(const clmad_context *ctx, const hvp_walk *w, const clmad_tensor *t, int *o)
{
    if (clmad__output_on_tape(ctx, t)) {
        const struct hvp_entry key = {t->node, 0};
        const struct hvp_entry *hit = bsearch(&key, w->sorted, w->count, sizeof *w->sorted, by_address);
        if (!hit)
            return -1;
        *o = t->out_index;
        return (long)hit->index;
    }
    for (int k = 0; k < w->n; k++)
        if (w->params[k] == t)
            return -2 - k;
    return -1;
}

static clmad_tensor *tangent_of(const clmad_context *ctx, const hvp_walk *w, const clmad_tensor *t)
{
    int o = 0;
    long from = origin(ctx, w, t, &o);
    return from >= 0 ? w->slots[from].tan[o] : from <= -2 ? w->v[-2 - from] : NULL;
}

static void release_slot(clmad_tensor **t, int n)
{
    for (int i = 0; i < n; i++) {
        clmad_tensor_release(t[i]);
        t[i] = NULL;
    }
}

static clmad_status forward_walk(clmad_context *ctx, hvp_walk *w)
{
    for (size_t i = 0; i < w->count; i++) {
        clmad_node *node = w->nodes[i];
        clmad_tensor *in_tan[CLMAD_MAX_INPUTS] = {0};
        for (int j = 0; j < node->n_inputs; j++)
            in_tan[j] = tangent_of(ctx, w, node->inputs[j]);
        clmad_hvp_io io = {.in_tan = in_tan, .out_tan = w->slots[i].tan};
        clmad_status st = clmad__hvp_forward(ctx, node, &io);
        if (st != CLMAD_OK)
            return st;
    }
    return CLMAD_OK;
}

static clmad_status backward_node(clmad_context *ctx, hvp_walk *w, size_t i)
{
    clmad_node *node = w->nodes[i];
    hvp_slots *s = &w->slots[i];
    clmad_tensor *in_tan[CLMAD_MAX_INPUTS] = {0}, *in_adj[CLMAD_MAX_INPUTS] = {0};
    clmad_tensor *in_adj_tan[CLMAD_MAX_INPUTS] = {0};
    unsigned char want[CLMAD_MAX_INPUTS] = {0};
    long from[CLMAD_MAX_INPUTS];
    int out[CLMAD_MAX_INPUTS] = {0};
    for (int j = 0; j < node->n_inputs; j++) {
        from[j] = origin(ctx, w, node->inputs[j], &out[j]);
        want[j] = from[j] != -1;
        in_tan[j] = tangent_of(ctx, w, node->inputs[j]);
    }
    clmad_hvp_io io = {.in_tan = in_tan, .out_tan = s->tan, .out_adj = s->adj, .out_adj_tan = s->adj_tan,
                       .want = want, .in_adj = in_adj, .in_adj_tan = in_adj_tan};
    clmad_status st = clmad__hvp_backward(ctx, node, &io);
    for (int j = 0; j < node->n_inputs; j++) {
        if (st == CLMAD_OK && from[j] >= 0) {
            st = clmad__hvp_add_into(ctx, &w->slots[from[j]].adj[out[j]], in_adj[j]);
            in_adj[j] = NULL;
            if (st == CLMAD_OK)
                st = clmad__hvp_add_into(ctx, &w->slots[from[j]].adj_tan[out[j]], in_adj_tan[j]);
            in_adj_tan[j] = NULL;
        } else if (st == CLMAD_OK && from[j] <= -2) {
            st = clmad__hvp_add_into(ctx, &w->hv[-2 - from[j]], in_adj_tan[j]);
            in_adj_tan[j] = NULL;
        }
        clmad_tensor_release(in_adj[j]);
        clmad_tensor_release(in_adj_tan[j]);
    }
    return st;
}

static clmad_status check_arguments(clmad_context *ctx, clmad_tensor *loss, clmad_tensor *const *params, int n,
                                    clmad_tensor *const *v, clmad_tensor **hv)
{
    if (!loss || !params || !v || !hv || n <= 0)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_hvp: loss, params, v and hv must not be NULL, and n must be positive");
    if (loss->numel != 1)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "clmad_hvp: the loss has %zu elements; it must have one",
                           loss->numel);
    if (!clmad__output_on_tape(ctx, loss))
        return clmad__fail(ctx, CLMAD_ERR_STATE,
                           "clmad_hvp: the loss has no tape behind it (not computed from tensors that require "
                           "a gradient, or the tape was consumed by clmad_backward: keep it with "
                           "clmad_set_retain_tape)");
    for (int k = 0; k < n; k++) {
        if (!params[k] || !v[k])
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_hvp: params[%d] or v[%d] is NULL", k, k);
        clmad_status st = clmad__check_same_context(ctx, params[k], "clmad_hvp", "params[%d]", k);
        if (st == CLMAD_OK)
            st = clmad__check_same_context(ctx, v[k], "clmad_hvp", "v[%d]", k);
        if (st != CLMAD_OK)
            return st;
        if (clmad__output_on_tape(ctx, params[k]) || !params[k]->requires_grad)
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                               "clmad_hvp: params[%d] must be a leaf that requires a gradient", k);
        if (!clmad__same_shape(v[k], params[k]) || v[k]->dtype != params[k]->dtype)
            return clmad__fail(ctx, CLMAD_ERR_SHAPE, "clmad_hvp: v[%d] must have the shape and dtype of params[%d]",
                               k, k);
        for (int i = 0; i < k; i++)
            if (params[i] == params[k])
                return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_hvp: params[%d] repeats params[%d]", k,
                                   i);
    }
    size_t count;
    clmad_node *const *nodes = clmad__tape_nodes(ctx, &count);
    for (size_t i = 0; i < count; i++) {
        if (!clmad__hvp_supported(nodes[i]))
            return clmad__fail(ctx, CLMAD_ERR_UNSUPPORTED,
                               "clmad_hvp: the tape holds '%s', which has no second-order rule (clmad.h lists the "
                               "operations clmad_hvp supports)",
                               nodes[i]->name);
        if (clmad__dtype_is_16bit(nodes[i]->dtype))
            return clmad__fail(ctx, CLMAD_ERR_UNSUPPORTED,
                               "clmad_hvp: the tape holds '%s' over %s tensors: second order runs in f32 and f64 "
                               "only (clmad_cast to f32 before the operations it differentiates)",
                               nodes[i]->name, clmad_dtype_name(nodes[i]->dtype));
    }
    return CLMAD_OK;
}

static clmad_status hvp_walks(clmad_context *ctx, clmad_tensor *loss, hvp_walk *w)
{
    clmad_status st = forward_walk(ctx, w);
    int o = 0;
    long last = origin(ctx, w, loss, &o);
    if (st == CLMAD_OK && last >= 0)
        st = clmad_tensor_fill(ctx, loss->dtype, loss->ndim, loss->shape, 1.0, &w->slots[last].adj[o]);
    for (size_t i = w->count; st == CLMAD_OK && i-- > 0;) {
        hvp_slots *s = &w->slots[i];
        int any = 0;
        for (int k = 0; k < w->nodes[i]->n_outputs; k++)
            any |= s->adj[k] != NULL || s->adj_tan[k] != NULL;
        if (any)
            st = backward_node(ctx, w, i);
        /* Every consumer of this node came later: done with its slots. */
        release_slot(s->tan, CLMAD_MAX_OUTPUTS);
        release_slot(s->adj, CLMAD_MAX_OUTPUTS);
        release_slot(s->adj_tan, CLMAD_MAX_OUTPUTS);
    }
    for (int k = 0; k < w->n && st == CLMAD_OK; k++)
        if (!w->hv[k])
            st = clmad_tensor_zeros(ctx, w->params[k]->dtype, w->params[k]->ndim, w->params[k]->shape, &w->hv[k]);
    return st;
}

clmad_status clmad_hvp(clmad_context *ctx, clmad_tensor *loss, clmad_tensor *const *params, int n,
                       clmad_tensor *const *v, clmad_tensor **hv)
{
    CLMAD_GUARD(ctx, "clmad_hvp");
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_hvp: ctx is NULL");
    clmad_status st = clmad__check_same_context(ctx, loss, "clmad_hvp", "loss");
    if (st == CLMAD_OK)
        st = check_arguments(ctx, loss, params, n, v, hv);
    if (st != CLMAD_OK)
        return st;
    hvp_walk w = {.params = params, .v = v, .n = n};
    w.nodes = clmad__tape_nodes(ctx, &w.count);
    w.slots = calloc(w.count, sizeof *w.slots);
    w.sorted = malloc(w.count * sizeof *w.sorted);
    w.hv = calloc((size_t)n, sizeof *w.hv);
    if (!w.slots || !w.sorted || !w.hv) {
        free(w.slots);
        free(w.sorted);
        free(w.hv);
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "clmad_hvp: out of host memory");
    }
    for (size_t i = 0; i < w.count; i++)
        w.sorted[i] = (struct hvp_entry){w.nodes[i], i};
    qsort(w.sorted, w.count, sizeof *w.sorted, by_address);
    /* The tensors made here are clmad_hvp's own (no scope releases them),
     * and no operation records while it runs. */
    clmad__scope_pause(ctx);
    const int recording = ctx->tape.grad_enabled;
    ctx->tape.grad_enabled = 0;
    st = hvp_walks(ctx, loss, &w);
    ctx->tape.grad_enabled = recording;
    clmad__scope_resume(ctx);
    for (size_t i = 0; i < w.count; i++) {
        release_slot(w.slots[i].tan, CLMAD_MAX_OUTPUTS);
        release_slot(w.slots[i].adj, CLMAD_MAX_OUTPUTS);
        release_slot(w.slots[i].adj_tan, CLMAD_MAX_OUTPUTS);
    }
    if (st == CLMAD_OK)
        memcpy(hv, w.hv, (size_t)n * sizeof *hv);
    else
        release_slot(w.hv, n);
    free(w.slots);
    free(w.sorted);
    free(w.hv);
    return st;
}
