/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Held broadcasts: the forward of a recorded broadcast waits, with its
 * kernel and inputs, until the output is read. Run, it is the forward that
 * eager would have run (the partials too when the node stores them), so
 * results do not change; a loss kernel may read it first (fused loss).
 */
#include "broadcast/held.h"
#include "broadcast/launch.h"
#include "broadcast/loss_operands.h"
#include "broadcast/node.h"
#include "runtime/primitives.h"
#include "runtime/scope.h"
#include "tape/tape.h"

#include <stdlib.h>

typedef struct bcast_held {
    clmad_held base;
    clmad_kernel *k;          /* retained */
    int read_by_loss;         /* a loss kernel has read it: one per output */
    clmad_tensor *inputs[];   /* k->n_inputs, retained */
} bcast_held;

static void held_drop(clmad_held *base)
{
    bcast_held *h = (bcast_held *)base;
    for (int j = 0; j < h->k->n_inputs; j++)
        clmad__tensor_unref(h->inputs[j]);
    clmad_kernel_release(h->k);
    free(h);
}

/* Gives y the buffer of v and v y's (both made by the pool for the same
 * shape and dtype): v's values become y's. */
static void take_buffer(clmad_tensor *y, clmad_tensor *v)
{
    cl_mem mem = y->mem;
    size_t capacity = y->capacity;
    y->mem = v->mem, y->capacity = v->capacity;
    v->mem = mem, v->capacity = capacity;
}

/* The node of y when y is the output of a broadcast on the current tape. */
static clmad_node *broadcast_node(clmad_context *ctx, clmad_tensor *y, uint64_t *active)
{
    clmad_kernel *k;
    if (!clmad__needs_grad(ctx, y) || !y->node || !clmad__bcast_node(y->node, &k, active))
        return NULL;
    return y->node;
}

static clmad_status held_run(clmad_held *base, clmad_tensor *y)
{
    bcast_held *h = (bcast_held *)base;
    clmad_context *ctx = y->ctx;
    clmad_kernel *k = h->k;
    clmad_bcast_plan plan;
    clmad_status st = clmad__tensors_ready(h->inputs, h->k->n_inputs); /* a stage's held y */
    if (st == CLMAD_OK)
        st = clmad__plan_broadcast(ctx, k->fn_name, h->inputs, k->n_inputs, &plan);
    uint64_t mask = 0;
    clmad_node *node = broadcast_node(ctx, y, &mask);
    if (st == CLMAD_OK && node && clmad__bcast_node_wants_partials(node)) {
        int active[CLMAD_MAX_INPUTS];
        for (int j = 0; j < k->n_inputs; j++)
            active[j] = (int)((mask >> j) & 1u);
        clmad_tensor *values[CLMAD_MAX_OUTPUTS] = {0}, *partials[CLMAD_MAX_OUTPUTS * CLMAD_MAX_INPUTS] = {0};
        st = clmad__bcast_run_partials(k, &plan, h->inputs, active, values, partials);
        if (st == CLMAD_OK) {
            take_buffer(y, values[0]);
            clmad_tensor_release(values[0]);
            clmad__bcast_node_store(ctx, node, partials);
        }
    } else if (st == CLMAD_OK) {
        clmad_variant v;
        clmad__bcast_variant(k, &plan, y->dtype, CLMAD_MODE_PRIMAL, &v);
        clmad_launch_args a = {.values = &y, .inputs = h->inputs};
        st = clmad__bcast_launch(k, &v, &plan, &a);
    }
    held_drop(base);
    return st;
}

clmad_held *clmad__bcast_held_new(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                  const clmad_bcast_plan *plan)
{
    /* 16-bit tensors run eagerly: loss kernels and regions accumulate in
     * their dtype's `real`, which for them is not the stored type. */
    if (!clmad__fusion_enabled(ctx) || k->n_outputs != 1 || plan->numel == 0 ||
        clmad__dtype_is_16bit(clmad__bcast_dtype(k, inputs)))
        return NULL;
    int n_active = 0, over_held = 0;
    for (int j = 0; j < k->n_inputs; j++)
        over_held |= inputs[j]->held != NULL;
    for (int j = 0; j < k->n_inputs; j++) {
        if (inputs[j]->wrapped)
            return NULL;
        if (clmad__kernel_integer(k, j) || !clmad__needs_grad(ctx, inputs[j]))
            continue;
        if (plan->access[j] == CLMAD_ACCESS_SCALAR && !over_held)
            return NULL; /* one value: a sum of every element's contribution (a 0-d scale's, and
                            every input of a one-element y): no loss kernel's or region's */
        for (int i = 0; i < j; i++)
            if (inputs[i] == inputs[j] && !inputs[j]->held)
                return NULL; /* one tensor in two places: its gradient is a sum (a held one is
                                a stage's, clmad_mul(z, z): the loss kernel never writes it) */
        n_active++;
    }
    if (n_active == 0 || n_active > clmad_chunk_cap(ctx))
        return NULL;
    bcast_held *h = calloc(1, sizeof *h + (size_t)k->n_inputs * sizeof h->inputs[0]);
    if (!h)
        return NULL; /* then eager: nothing is lost */
    h->base.run = held_run;
    h->base.drop = held_drop;
    k->refcount++;
    h->k = k;
    for (int j = 0; j < k->n_inputs; j++)
        h->inputs[j] = clmad_tensor_retain(inputs[j]);
    return &h->base;
}

int clmad__bcast_held_call(const clmad_tensor *t, clmad_kernel **k, clmad_tensor *const **inputs)
{
    if (!t->held || t->held->run != held_run || ((bcast_held *)t->held)->read_by_loss)
        return 0;
    *k = ((bcast_held *)t->held)->k;
    *inputs = ((bcast_held *)t->held)->inputs;
    return 1;
}

int clmad__bcast_loss_fusible(clmad_context *ctx, clmad_tensor *y, clmad_tensor *w, int flags)
{
    uint64_t mask;
    clmad_kernel *k;
    clmad_tensor *const *inputs;
    if (!clmad__bcast_held_call(y, &k, &inputs) || k->loss_failed || !broadcast_node(ctx, y, &mask) ||
        !clmad__dtype_is_float(y->dtype))
        return 0;
    if (!w)
        return 1;
    if (w->held || w->dtype != y->dtype)
        return 0;
    const int shape_fits = clmad__same_shape(w, y) || ((flags & CLMAD_LOSS_W_SCALAR) && w->ndim == 0) ||
                           ((flags & CLMAD_LOSS_W_BROADCAST) && clmad__broadcasts_to(w, y));
    if (!clmad__needs_grad(ctx, w))
        return shape_fits;
    for (int j = 0; j < k->n_inputs; j++)
        if (inputs[j] == w)
            return 0;
    return (flags & CLMAD_LOSS_W_GRAD) && shape_fits;
}

int clmad__bcast_user_stage(clmad_context *ctx, const clmad_kernel *k, clmad_tensor *const *inputs, int *pos)
{
    if (!ctx || !clmad__fusion_enabled(ctx) || !k || k->ctx != ctx || !inputs || k->n_outputs != 1 ||
        k->stage_failed)
        return 0;
    int found = -1;
    for (int j = 0; j < k->n_inputs; j++) {
        clmad_tensor *x = inputs[j];
        if (!x || x->ctx != ctx || clmad__kernel_integer(k, j))
            return 0;
        if (found < 0 && clmad__bcast_loss_fusible(ctx, x, NULL, 0))
            found = j;
        else if (x->held || x->wrapped)
            return 0;
    }
    if (found < 0)
        return 0;
    for (int j = 0; j < k->n_inputs; j++) {
        const int grad = j != found && clmad__needs_grad(ctx, inputs[j]);
        if (j != found && !clmad__same_shape(inputs[j], inputs[found]) &&
            !clmad__broadcasts_to(inputs[j], inputs[found]))
            return 0;
        for (int i = 0; grad && i < j; i++)
            if (inputs[i] == inputs[j])
                return 0; /* one tensor in two places: its gradient is a sum */
    }
    *pos = found;
    return 1;
}

void clmad__bcast_region_written(clmad_tensor *z, clmad_tensor *v)
{
    take_buffer(z, v);
    clmad__held_forget(z);
}

void clmad__loss_grads_release(clmad_loss_grads *g)
{
    clmad__release_all(g->grad, g->n);
    clmad__release_all(g->stage_grad, CLMAD_MAX_LOSS_STAGES);
    clmad__release_all(g->user_grad, CLMAD_MAX_USER_GRADS);
    clmad_tensor_release(g->y_values);
    g->y_values = NULL;
    g->n = 0;
}

/* New tensors of y's shape for what the form asks the kernel to write
 * besides the inputs' gradients. */
static clmad_status extra_outputs(clmad_context *ctx, clmad_tensor *y, const clmad_loss_form *form,
                                  clmad_loss_grads *g)
{
    clmad_status st = CLMAD_OK;
    if (form->write_y)
        st = clmad_tensor_create(ctx, y->dtype, y->ndim, y->shape, NULL, &g->y_values);
    for (int s = 0; s < form->n_stages && st == CLMAD_OK; s++)
        if (form->stage_wgrad[s])
            st = clmad_tensor_create(ctx, y->dtype, y->ndim, y->shape, NULL, &g->stage_grad[s]);
    for (int u = 0; u < form->n_user_grads && st == CLMAD_OK; u++)
        st = clmad_tensor_create(ctx, y->dtype, y->ndim, y->shape, NULL, &g->user_grad[u]);
    return st;
}

clmad_status clmad__bcast_fused_loss(clmad_context *ctx, clmad_tensor *y, const clmad_loss_form *form,
                                     clmad_tensor *sums, size_t parts, int ranges, clmad_loss_grads *g)
{
    bcast_held *h = (bcast_held *)y->held;
    clmad_kernel *k = h->k;
    clmad_bcast_plan plan;
    clmad_loss_extras extras;
    g->n = 0;
    clmad_status st = clmad__tensors_ready(h->inputs, h->k->n_inputs);
    if (st == CLMAD_OK)
        st = clmad__loss_plan(ctx, k, h->inputs, form, y, &extras, &plan);
    if (st != CLMAD_OK)
        return st;
    uint64_t mask = 0;
    broadcast_node(ctx, y, &mask);
    clmad_variant v;
    clmad_tensor *weights[CLMAD_MAX_LOSS_STAGES + 1] = {0};
    clmad__loss_variant(k, &plan, y, form, ranges, &v, weights);
    v.loss_lanes = ranges || form->region ? 1 : clmad__loss_lanes_for(ctx, parts);
    clmad__loss_variant_extras(&v, &plan, &extras);
    clmad__scope_pause(ctx); /* the gradients are clmad's until backward hands them on */
    st = extra_outputs(ctx, y, form, g);
    for (int j = 0; j < k->n_inputs && st == CLMAD_OK && form->region != CLMAD_REGION_VALUES; j++) {
        if (!((mask >> j) & 1u))
            continue;
        clmad_tensor *x = h->inputs[j];
        /* read at the element index (plan.c's FULL), else a region's row: y's shape, summed (ops/region.c) */
        const clmad_tensor *of = clmad__element_index(x, y) ? x : y;
        st = clmad_tensor_create(ctx, x->dtype, of->ndim, of->shape, NULL, &g->grad[g->n]);
        if (st == CLMAD_OK) {
            v.slot[j] = (signed char)g->n;
            g->input[g->n++] = j;
        }
    }
    clmad__scope_resume(ctx);
    v.K = g->n;
    /* The terms form: the kernel's terms in a tensor of y's size, then the
     * range pass of clmad_sum over them into sums. */
    clmad_tensor *terms = NULL;
    if (st == CLMAD_OK && v.loss_terms)
        st = clmad_tensor_create(ctx, y->dtype, 1, &y->numel, NULL, &terms);
    if (st == CLMAD_OK) {
        clmad_launch_args a = {.values = &g->y_values, .derivs = g->grad, .inputs = h->inputs,
                               .sums = terms ? terms : sums, .weights = weights, .stage_grads = g->stage_grad,
                               .loss_adj = form->adj, .parts = parts, .stage_inputs = form->stage_inputs,
                               .user_grads = g->user_grad};
        st = clmad__bcast_launch(k, &v, &plan, &a);
    }
    if (st == CLMAD_OK && terms)
        st = clmad__range_pass(ctx, CLMAD_OPS_SUM_RANGES, sums->mem, terms->mem, NULL, y->dtype, y->numel, parts);
    clmad_tensor_release(terms);
    if (st != CLMAD_OK) {
        /* A build that fails with user stages may be their sources' clash:
         * they stop being stages, and k's losses are tried without them. */
        int users = 0;
        for (int s = 0; s < form->n_stages; s++)
            if (form->stage_kernel[s]) {
                form->stage_kernel[s]->stage_failed |= st == CLMAD_ERR_BUILD;
                users = 1;
            }
        k->loss_failed |= !users && st == CLMAD_ERR_BUILD;
        clmad__loss_grads_release(g);
        return st;
    }
    if (form->region)
        return CLMAD_OK; /* a region's forward leaves y as it was; its backward ends it */
    h->read_by_loss = 1;
    for (int s = 0; s < form->n_stages; s++)
        ((bcast_held *)form->z[s]->held)->read_by_loss = 1;
    return CLMAD_OK;
}
