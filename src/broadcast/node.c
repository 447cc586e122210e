/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Broadcast nodes on the tape, with the partials policies of DESIGN.md 5:
 * STORE keeps the partials of the forward dual kernel and, in backward,
 * multiplies them by the output adjoints in one kernel per chunk; RECOMPUTE
 * runs the primal forward and, in backward, one dual kernel per chunk fused
 * with the multiply by the output adjoints and the accumulation. Both form each
 * input adjoint with the same expression, sum_o adj_o * partial_o, so they
 * agree bitwise; broadcast-expanded inputs are then reduced to their shape
 * in a fixed order (runtime/reduce.c).
 */
#include "broadcast/node.h"
#include "broadcast/launch.h"
#include "runtime/held.h"
#include "runtime/primitives.h"
#include "runtime/scope.h"
#include "tape/tape.h"

#include <stdlib.h>
#include <string.h>

/* Sized by the kernel's arity: every recorded operation has one, so it
 * stays small (the broadcast plan is not kept: backward plans the inputs'
 * shapes again, which cannot change). */
typedef struct bcast_data {
    clmad_kernel *k;            /* retained */
    const clmad_bcast_region *region; /* its backward first, once, or NULL */
    uint64_t active;            /* bit j: input j needs a gradient */
    int stored;                 /* the partials are there (a held forward stores them
                                   when it runs: held.c) */
    int n_partials;             /* STORE: n_outputs * n_inputs, else 0 */
    clmad_tensor *partials[];   /* STORE: [o * n_in + j] */
} bcast_data;

_Static_assert(CLMAD_MAX_INPUTS <= 64, "bcast_data.active has a bit per input");

static int is_active(const bcast_data *d, int j)
{
    return (int)((d->active >> j) & 1u);
}

static void bcast_free(clmad_node *node)
{
    bcast_data *d = node->data;
    if (!d)
        return;
    clmad__release_all(d->partials, d->n_partials);
    clmad_kernel_release(d->k);
    free(d);
    node->data = NULL;
}

/* Input j's gradient can be formed in place: it reads at the element index
 * and no other active input is the same tensor (which would alias). */
static int direct_target(const clmad_node *node, const bcast_data *d, const clmad_bcast_plan *plan,
                         int j)
{
    if (plan->access[j] != CLMAD_ACCESS_FULL)
        return 0;
    for (int i = 0; i < node->n_inputs; i++)
        if (i != j && is_active(d, i) && node->inputs[i] == node->inputs[j])
            return 0;
    return 1;
}

/* Where a kernel writes input j's gradient: the input's adjoint target
 * (tape.h's protocol: the slot's tensor to add into, or a new one for it)
 * when it reads at the element index, else a temporary of the output shape,
 * reduced to the input's shape afterwards. */
typedef struct grad_target {
    int j;
    int direct;
    clmad_adjoint_target adj;   /* direct */
    clmad_tensor *temporary;    /* not direct */
} grad_target;

static clmad_status target_open(clmad_context *ctx, clmad_node *node, bcast_data *d,
                                const clmad_bcast_plan *plan, int j, grad_target *t)
{
    memset(t, 0, sizeof *t);
    t->j = j;
    t->direct = direct_target(node, d, plan, j);
    if (t->direct)
        return clmad__adjoint_open(ctx, node, j, 0, &t->adj);
    return clmad_tensor_create(ctx, node->dtype, plan->out_ndim, plan->out_shape, NULL, &t->temporary);
}

static clmad_tensor *target_tensor(const grad_target *t)
{
    return t->direct ? t->adj.tensor : t->temporary;
}

/* After the kernel: hand the gradient to its slot. */
static clmad_status target_close(clmad_context *ctx, clmad_node *node, grad_target *t, clmad_status st)
{
    if (t->direct)
        return clmad__adjoint_close(&t->adj, st);
    clmad_tensor *x = node->inputs[t->j], *g = NULL;
    if (st == CLMAD_OK)
        st = clmad__sum_to_shape(ctx, t->temporary, x->ndim, x->shape, &g);
    clmad_tensor_release(t->temporary);
    return st == CLMAD_OK ? clmad__accumulate_input(ctx, node, t->j, g) : st;
}

/* STORE, the one output's adjoint exactly 1 (a loss that sums the output,
 * seeded by clmad_backward): input j's gradient is its stored partial, as
 * the kernel would form it (1 * partial, bitwise but for a partial of -0,
 * kept where adjoint_times gives +0: hands_on says how fusion agrees), so
 * the partial's buffer becomes the gradient and no kernel runs for j. Only into an empty slot,
 * from a full-shape input, and when no later backward reads the partials
 * (the tape is not retained). */
static int take_partial(clmad_context *ctx, clmad_node *node, bcast_data *d, const clmad_bcast_plan *plan,
                        int j)
{
    if (!d->stored || node->n_outputs != 1 || ctx->tape.retain || !clmad__adjoint_is_one(ctx, node, 0))
        return 0;
    clmad_tensor *p = d->partials[j], *x = node->inputs[j], **slot = clmad__adjoint_slot(ctx, node, j);
    if (!p || !slot || *slot || !direct_target(node, d, plan, j) || p->dtype != x->dtype ||
        !clmad__same_shape(p, x))
        return 0;
    *slot = p;
    d->partials[j] = NULL;
    return 1;
}

/* Input j's partial is exactly 1 (k->identity_inputs) and it has the
 * output's shape: its gradient is the output's adjoint as it is
 * (adjoint_times(a, 1) is a, bitwise; the same elements in the same order),
 * handed on with no kernel (lazily where its producer takes lazy
 * adjoints). A loss under a builtin add then keeps clmad_backward's seed as
 * its adjoint, and may use its fused gradients (ops/fused_loss.c). Not to
 * a broadcast's output: given the seed, its node would take its stored
 * partials whole (take_partial), where the kernel forms adjoint_times(1, p)
 * (+0 for a partial of -0); it gets the kernel's adjoint, as before. */
static int hands_on(clmad_context *ctx, const clmad_node *node, const bcast_data *d, const clmad_bcast_plan *plan,
                    int j)
{
    const clmad_tensor *x = node->inputs[j], *a = node->out_adj[0];
    if (node->n_outputs != 1 || !a || !is_active(d, j) || !((d->k->identity_inputs >> j) & 1u) ||
        x->numel != plan->numel || (a->numel != 1 && a->numel != x->numel) ||
        (clmad__output_on_tape(ctx, x) && x->node->op == &clmad__op_broadcast))
        return 0;
    for (int i = 0; i < node->n_inputs; i++)
        if (i != j && is_active(d, i) && node->inputs[i] == x)
            return 0; /* add(x, x): x's gradient is the sum of two */
    return 1;
}

/* Both policies' backward: per chunk of at most the chunk cap of active
 * inputs, ONE kernel reads each output adjoint once (lazy ones as they are:
 * one value, or times a scale) and writes or accumulates every gradient of
 * the chunk; RECOMPUTE forms the partials with the dual kernel, STORE reads
 * those of the forward pass. */
static clmad_status chunked_backward(clmad_context *ctx, clmad_node *node, bcast_data *d,
                                     const clmad_bcast_plan *plan, uint64_t handed)
{
    clmad_kernel *k = d->k;
    int n_in = node->n_inputs, n_out = node->n_outputs;
    int act[CLMAD_MAX_INPUTS], n_act = 0;
    for (int j = 0; j < n_in; j++)
        if (is_active(d, j) && !((handed >> j) & 1u) && clmad__adjoint_slot(ctx, node, j) &&
            !take_partial(ctx, node, d, plan, j))
            act[n_act++] = j;
    if (n_act == 0)
        return CLMAD_OK;
    unsigned mask = 0, scalar = 0, scaled = 0;
    int n_adj = 0;
    for (int o = 0; o < n_out; o++)
        if (node->out_adj[o]) {
            n_adj++;
            mask |= 1u << o;
            scalar |= (unsigned)node->out_adj_scalar[o] << o;
            scaled |= (unsigned)(node->out_adj_scale[o] != NULL) << o;
        }
    int cap = clmad_chunk_cap(ctx), store = d->stored;
    if (store) {
        /* A STORED kernel takes (outputs with an adjoint) x (K + 1) + K
         * buffers: at most 96 of them, well inside the 1024 bytes of
         * arguments that OpenCL guarantees. Per-input sums: chunking does
         * not change the result. */
        int most = (96 - n_adj) / (n_adj + 1);
        cap = most < 1 ? 1 : most < cap ? most : cap;
    }
    clmad_status st = CLMAD_OK;
    clmad_chunks c = clmad__chunks(act, n_act, cap);
    while (st == CLMAD_OK && clmad__next_chunk(&c)) {
        clmad_variant v;
        clmad__bcast_variant(k, plan, node->dtype, store ? CLMAD_MODE_STORED : CLMAD_MODE_VJP, &v);
        v.write_values = 0;
        v.adj_mask = mask;
        v.adj_scalar = scalar;
        v.adj_scaled = scaled;
        clmad_tensor *stored[CLMAD_MAX_OUTPUTS * CLMAD_MAX_INPUTS] = {0};
        clmad__chunk_seed(&c, &v, store ? d->partials : NULL, stored);
        grad_target t[CLMAD_MAX_INPUTS];
        clmad_tensor *targets[CLMAD_MAX_INPUTS];
        int opened = 0;
        for (int s = 0; s < c.K && st == CLMAD_OK; s++, opened++) {
            st = target_open(ctx, node, d, plan, c.act[c.first + s], &t[s]);
            targets[s] = target_tensor(&t[s]);
            v.accumulate[s] = (char)(t[s].direct && t[s].adj.accumulate);
        }
        if (st == CLMAD_OK) {
            clmad_launch_args a = {.values = node->out_adj, .derivs = targets, .inputs = node->inputs,
                                   .adj_scales = node->out_adj_scale, .stored = stored};
            st = clmad__bcast_launch(k, &v, plan, &a);
        } else {
            opened--; /* the failed target released itself */
        }
        for (int s = 0; s < opened; s++)
            st = target_close(ctx, node, &t[s], st);
    }
    return st;
}

static clmad_status bcast_backward(clmad_context *ctx, clmad_node *node)
{
    bcast_data *d = node->data;
    if (d->region) { /* once: a retained tape's next backward is eager's */
        const clmad_bcast_region *r = d->region;
        int done = 0;
        d->region = NULL;
        clmad_status st = r->backward(ctx, node, &done);
        if (st != CLMAD_OK || done)
            return st;
    }
    clmad_bcast_plan plan;
    clmad_status st = clmad__plan_broadcast(ctx, node->name, node->inputs, node->n_inputs, &plan);
    if (st != CLMAD_OK || plan.numel == 0)
        return st;
    uint64_t handed = 0; /* bit j: input j took the adjoint as it is */
    int rest = 0;        /* inputs left for a kernel */
    for (int j = 0; j < node->n_inputs && st == CLMAD_OK; j++)
        if (hands_on(ctx, node, d, &plan, j)) {
            st = clmad__give_adjoint(ctx, node, j, node->out_adj[0], node->out_adj_scale[0]);
            handed |= (uint64_t)1 << j;
        } else {
            rest |= is_active(d, j);
        }
    /* Recomputing reads the inputs: a fused stage's may still be held
     * (its loss fell back: ops/fused_loss.c). */
    if (st == CLMAD_OK && rest && !d->stored)
        st = clmad__tensors_ready(node->inputs, node->n_inputs);
    return st == CLMAD_OK && rest ? chunked_backward(ctx, node, d, &plan, handed) : st;
}

const clmad_op clmad__op_broadcast = {.name = "clmad_broadcast", .backward = bcast_backward,
                                      .free_data = bcast_free, .kind = CLMAD_OP_ELEMENTWISE};

clmad_status clmad__bcast_record(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                 const clmad_bcast_plan *plan, int held, clmad_tensor **outputs)
{
    int active[CLMAD_MAX_INPUTS], n_active = 0;
    uint64_t mask = 0;
    for (int j = 0; j < k->n_inputs; j++) {
        n_active += active[j] = !clmad__kernel_integer(k, j) && clmad__needs_grad(ctx, inputs[j]);
        mask |= (uint64_t)active[j] << j;
    }
    clmad_dtype dtype = clmad__bcast_dtype(k, inputs);
    int store = clmad__bcast_choose_store(ctx, plan, n_active, k->n_outputs, dtype);
    int n_partials = store ? k->n_outputs * k->n_inputs : 0;
    bcast_data *d = calloc(1, sizeof *d + (size_t)n_partials * sizeof d->partials[0]);
    if (!d)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory recording a broadcast");
    d->active = mask;
    d->n_partials = n_partials;

    clmad_tensor *values[CLMAD_MAX_OUTPUTS] = {0};
    clmad_status st;
    if (held) {
        /* The forward waits for its consumer (held.c), which runs it. */
        st = clmad__bcast_new_outputs(ctx, plan, dtype, k->n_outputs, values);
    } else if (store) {
        d->stored = 1;
        st = clmad__bcast_run_partials(k, plan, inputs, active, values, d->partials);
        for (int i = 0; i < n_partials; i++)
            clmad__scope_keep(d->partials[i]); /* the node keeps them, not the caller */
    } else {
        st = clmad__bcast_primal(k, plan, inputs, values);
    }
    if (st != CLMAD_OK) {
        free(d);
        return st;
    }
    k->refcount++;
    d->k = k;
    clmad_node *node;
    st = clmad__record_op(ctx, &clmad__op_broadcast, inputs, k->n_inputs, values, k->n_outputs, d, &node);
    if (st != CLMAD_OK) {
        clmad__release_all(values, k->n_outputs); /* bcast_free has released the rest */
        return st;
    }
    node->name = k->fn_name; /* the node keeps k, and with it the name */
    node->lazy_adjoints = 1;
    uint64_t kept = 0;
    for (int i = 0; i < d->n_partials; i++)
        if (d->partials[i])
            kept += d->partials[i]->capacity;
    clmad__node_keeps(ctx, node, kept);
    memcpy(outputs, values, (size_t)k->n_outputs * sizeof *outputs);
    return CLMAD_OK;
}

int clmad__bcast_direct_input(const clmad_node *node, const clmad_bcast_plan *plan, int j)
{
    return direct_target(node, node->data, plan, j);
}

int clmad__bcast_node_wants_partials(const clmad_node *node)
{
    const bcast_data *d = node->data;
    return d->n_partials > 0 && !d->stored;
}

void clmad__bcast_node_store(clmad_context *ctx, clmad_node *node, clmad_tensor **partials)
{
    bcast_data *d = node->data;
    uint64_t kept = 0;
    for (int i = 0; i < d->n_partials; i++) {
        d->partials[i] = partials[i];
        clmad__scope_keep(partials[i]);
        if (partials[i])
            kept += partials[i]->capacity;
    }
    d->stored = 1;
    clmad__node_keeps(ctx, node, kept);
}

int clmad__bcast_node(const clmad_node *node, clmad_kernel **k, uint64_t *active)
{
    if (node->op != &clmad__op_broadcast || !node->data)
        return 0;
    const bcast_data *d = node->data;
    *k = d->k;
    *active = d->active;
    return 1;
}

void clmad__bcast_node_set_region(clmad_node *node, const clmad_bcast_region *region)
{
    ((bcast_data *)node->data)->region = region;
}
