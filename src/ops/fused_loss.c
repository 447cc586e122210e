/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fused losses. The natural training loss, clmad_dot(cell(...), w) or
 * clmad_sum(cell(...)), written eagerly is a forward that writes y (and
 * the partials), a pass reading y (and w), and a backward reading the
 * partials (and w) to write the gradients. Fused, it is one kernel: the
 * inputs (and w) read once and the gradients written once, which is
 * backward's result when the loss's adjoint is exactly 1, as
 * clmad_backward seeds it; the loss's other passes sum a few partial sums.
 * clmad_mean's 1/n, and one builtin between the broadcast and the sum
 * (clmad_sum(clmad_mul(cell(...), w))), go into the same kernel.
 */
#include "ops/fused_loss.h"
#include "broadcast/held.h"
#include "broadcast/launch.h"
#include "broadcast/loss_operands.h"
#include "broadcast/node.h"
#include "base/log.h"
#include "ops/builtins.h"
#include "runtime/primitives.h"

#include <stdlib.h>
#include <string.h>

struct clmad_fused_loss {
    int raw;                /* the gradients are a STORE node's partials taken whole */
    int n_stages;           /* builtins between y and the loss's input (the last of them) */
    int stage_y[CLMAD_MAX_LOSS_STAGES]; /* stage i's operand that the one below it gave */
    int stage_raw;          /* the last stage's partial was taken whole (its node's STORE) */
    int stage_wgrad[CLMAD_MAX_LOSS_STAGES]; /* as clmad_loss_form's */
    int n_user_grads;       /* as clmad_loss_form's */
    int user_grad_stage[CLMAD_MAX_USER_GRADS], user_grad_input[CLMAD_MAX_USER_GRADS];
    int user_grad_raw[CLMAD_MAX_USER_GRADS];
    clmad_loss_grads g;     /* n = 0 once used or released */
};

void clmad__fused_loss_free(clmad_fused_loss *f)
{
    if (!f)
        return;
    for (int s = 0; s < f->g.n; s++)
        clmad__tensor_unref(f->g.grad[s]);
    for (int s = 0; s < CLMAD_MAX_LOSS_STAGES; s++)
        clmad__tensor_unref(f->g.stage_grad[s]);
    for (int u = 0; u < CLMAD_MAX_USER_GRADS; u++)
        clmad__tensor_unref(f->g.user_grad[u]);
    clmad__tensor_unref(f->g.y_values);
    free(f);
}

void clmad__free_fused_data(clmad_node *node)
{
    if (node->data)
        clmad__fused_loss_free(*(clmad_fused_loss **)node->data);
    free(node->data);
    node->data = NULL;
}

/* The first pass into sums (parts of them), then the passes of
 * clmad__reduce to one value: dot.c's dot_value with the loss kernel first. */
static clmad_status loss_value(clmad_context *ctx, clmad_tensor *y, const clmad_loss_form *form,
                               clmad_fused_loss *f, double scale, int out_ndim, const size_t *out_shape,
                               clmad_tensor **out)
{
    size_t one = 1;
    int ranges = clmad__sum_by_ranges(ctx, 1, 1, &one);
    size_t parts = ranges ? clmad__range_parts(y->numel) : clmad__reduce_parts(1, y->numel);
    clmad_tensor *sums;
    clmad_status st = parts == 1 ? clmad_tensor_create(ctx, y->dtype, out_ndim, out_shape, NULL, &sums)
                                 : clmad_tensor_create(ctx, y->dtype, 1, &parts, NULL, &sums);
    if (st != CLMAD_OK)
        return st;
    st = clmad__bcast_fused_loss(ctx, y, form, sums, parts, ranges, &f->g);
    if (st == CLMAD_OK && parts == 1 && scale != 1.0) {
        /* clmad__reduce's scaling of its one pass's result */
        size_t dims[1] = {sums->numel}, one[1] = {1};
        st = clmad__strided_copy(ctx, sums, 0, one, sums, 0, one, 1, dims, scale, 0);
    }
    if (st != CLMAD_OK || parts == 1) {
        if (st == CLMAD_OK)
            *out = sums;
        else
            clmad_tensor_release(sums);
        return st;
    }
    int reduce_all[1] = {1};
    st = clmad__reduce(ctx, sums, reduce_all, scale, out_ndim, out_shape, out);
    clmad_tensor_release(sums);
    return st;
}

/* The stage z is, when z is a held builtin of ctx (ops/elementwise.c held
 * it) over a held broadcast a loss may fuse, *below, at operand *pos, the
 * other operand (*w) of its shape, or broadcast to it when it needs no gradient
 * (none for a square: clmad_mul(below, below)). */
static int stage_under(clmad_context *ctx, clmad_tensor *z, const clmad_stage_call *call, int *stage, int *pos,
                       clmad_tensor **below, clmad_tensor **w, clmad_kernel **user,
                       clmad_tensor *const **user_inputs)
{
    clmad_kernel *k = call ? call->k : NULL;
    clmad_tensor *const *in = call ? call->inputs : NULL;
    *user = NULL;
    if (!call && (!clmad__bcast_held_call(z, &k, &in) || !clmad__bcast_loss_fusible(ctx, z, NULL, 0)))
        return 0;
    *stage = clmad__builtin_stage(ctx, k);
    if (!*stage && clmad__bcast_user_stage(ctx, k, in, pos)) {
        *stage = CLMAD_STAGE_USER, *below = in[*pos], *w = NULL;
        *user = k, *user_inputs = in;
        return 1;
    }
    if (*stage == CLMAD_STAGE_MUL && in[0] == in[1])
        *stage = CLMAD_STAGE_SQUARE; /* one operand, as the unary ones */
    if (*stage >= CLMAD_STAGE_NEG) {
        *pos = 0, *below = in[0], *w = NULL;
        return clmad__bcast_loss_fusible(ctx, in[0], NULL, 0);
    }
    for (*pos = 0; *stage && *pos < 2; ++*pos)
        if (clmad__bcast_loss_fusible(ctx, in[*pos], in[1 - *pos],
                                      CLMAD_LOSS_W_SCALAR | CLMAD_LOSS_W_GRAD | CLMAD_LOSS_W_BROADCAST)) {
            *below = in[*pos], *w = in[1 - *pos];
            return 1;
        }
    return 0;
}

/* 1 if the user kernel of a chain's new stage users[n - 1] (NULL for a
 * builtin) is none of the stages' above it: a source appears once in the
 * loss kernel's program (stage_form checks the broadcast under them). */
static int distinct_kernels(clmad_kernel *const *users, int n)
{
    if (!users[n - 1])
        return 1;
    for (int i = 0; i < n - 1; i++)
        if (users[i] == users[n - 1])
            return 0;
    return 1;
}

int clmad__stage_chain(clmad_context *ctx, clmad_tensor *z, const clmad_stage_call *top, double scale,
                       clmad_loss_form *form, clmad_tensor **y)
{
    int n = 0, stage[CLMAD_MAX_LOSS_STAGES], pos[CLMAD_MAX_LOSS_STAGES];
    clmad_tensor *cur = z, *below, *w[CLMAD_MAX_LOSS_STAGES], *zs[CLMAD_MAX_LOSS_STAGES];
    clmad_kernel *user[CLMAD_MAX_LOSS_STAGES];
    clmad_tensor *const *user_inputs[CLMAD_MAX_LOSS_STAGES] = {0};
    while (n < CLMAD_MAX_LOSS_STAGES &&
           stage_under(ctx, cur, n ? NULL : top, &stage[n], &pos[n], &below, &w[n], &user[n], &user_inputs[n]) &&
           distinct_kernels(user, n + 1)) {
        zs[n++] = cur;
        cur = below;
    }
    clmad_kernel *base;
    clmad_tensor *const *in;
    if (!cur)
        return 0; /* top's call is no stage */
    for (int i = 0; clmad__bcast_held_call(cur, &base, &in) && i < n; i++)
        if (user[i] == base) { /* its source is the broadcast's: the chain starts above it */
            cur = zs[i];
            n = i;
        }
    /* nor a broadcast whose targets the kernel may not write (a learnable row's) */
    while (n > 0 && !clmad__fused_distinct_targets(ctx, cur, form->region != 0))
        cur = zs[--n];
    if (!cur)
        return 0; /* top's own call is the chain's start: no stage */
    form->n_stages = n;
    for (int i = 0; i < n; i++) { /* found from the loss down, applied from y up */
        form->stage[i] = stage[n - 1 - i], form->stage_y[i] = pos[n - 1 - i];
        form->stage_w[i] = w[n - 1 - i], form->z[i] = zs[n - 1 - i];
        form->stage_kernel[i] = user[n - 1 - i], form->stage_inputs[i] = user_inputs[n - 1 - i];
    }
    /* as node.c's take_partial: the last stage's adjoint is clmad_sum's seed
     * (and, for its w, w's slot is empty); never a square's, whose input is
     * in two places */
    form->stage_raw = n && !form->w && !form->self_dot && scale == 1.0 && !ctx->tape.retain &&
                      form->stage[n - 1] != CLMAD_STAGE_SQUARE && clmad__bcast_node_wants_partials(z->node);
    for (int i = 0; i < n; i++)
        form->stage_wgrad[i] = form->stage_w[i] && clmad__needs_grad(ctx, form->stage_w[i]);
    if (n && form->stage_wgrad[n - 1] && form->stage_raw && clmad__same_shape(form->stage_w[n - 1], z) &&
        !*clmad__adjoint_slot(ctx, z->node, 1 - form->stage_y[n - 1]))
        form->stage_wgrad[n - 1] = 2; /* taken whole only from y's shape (node.c's take_partial) */
    if (!clmad__fused_user_grads(ctx, form, z, cur) || !clmad__loss_extras_fit(form, cur)) {
        clmad_tensor *w = form->w;
        const int self = form->self_dot;
        memset(form, 0, sizeof *form);
        form->w = w, form->self_dot = self, form->adj = scale;
        return 0; /* the loss kernel over z itself, if it may */
    }
    *y = cur;
    return n > 0;
}

clmad_status clmad__fused_loss(clmad_context *ctx, clmad_tensor *y, clmad_tensor *w, double scale, int out_ndim,
                               const size_t *out_shape, clmad_fused_loss **fused, clmad_tensor **out)
{
    *fused = NULL;
    *out = NULL;
    /* dot(y, y): y's own values weigh it, its adjoint y + y (emit_dot_term).
     * The mean's adjoint: its backward's 1 * scale, rounded to the dtype. */
    const int self = w == y;
    clmad_loss_form form = {.w = self ? NULL : w, .self_dot = self, .adj = scale};
    clmad_tensor *over = y; /* the held broadcast the kernel evaluates */
    /* y may be the last of a chain of stages, clmad_dot's w on it as on a plain y */
    const int fits = clmad__bcast_loss_fusible(ctx, y, form.w, CLMAD_LOSS_W_GRAD);
    int staged = fits && clmad__stage_chain(ctx, y, NULL, scale, &form, &over);
    clmad_fused_loss *f = fits && clmad__fused_distinct_targets(ctx, over, 0) ? calloc(1, sizeof *f) : NULL;
    if (!f) { /* eager: it reads y and w alone */
        clmad_tensor *operands[2] = {y, w};
        return clmad__inputs_ready(ctx, operands, 2);
    }
    f->n_stages = form.n_stages;
    for (int i = 0; i < form.n_stages; i++)
        f->stage_y[i] = form.stage_y[i], f->stage_wgrad[i] = form.stage_wgrad[i];
    f->stage_raw = form.stage_raw;
    f->n_user_grads = form.n_user_grads;
    for (int u = 0; u < form.n_user_grads; u++) {
        f->user_grad_stage[u] = form.user_grad_stage[u], f->user_grad_input[u] = form.user_grad_input[u];
        f->user_grad_raw[u] = form.user_grad_raw[u];
    }
    form.write_y = form.w && clmad__needs_grad(ctx, form.w); /* dot's w: its gradient is y */
    /* A STORE node would hand its partials over whole to an adjoint of 1
     * (node.c's take_partial): so does the loss kernel. */
    f->raw = form.raw = !form.w && !form.self_dot && !staged && scale == 1.0 && !ctx->tape.retain &&
                        clmad__bcast_node_wants_partials(y->node);
    clmad_status st = loss_value(ctx, over, &form, f, scale, out_ndim, out_shape, out);
    if (st != CLMAD_OK) {
        clmad__log("%s: the fused loss kernel failed (%s); running eagerly", over->node->name,
                   clmad_last_error(ctx));
        clmad__fused_loss_free(f);
        *out = NULL;
        return clmad__flush_held(ctx);
    }
    ctx->stats.fused_losses++;
    *fused = f;
    return CLMAD_OK;
}

/* The loss kernel's gradients are backward's: its adjoint is clmad_backward's
 * ones (then nothing else reaches y: every path from the loss to y goes
 * through this node; handed on through an add, when nothing else reads the
 * chain: clmad__fused_sole_path), nothing else reached the stages either, and what raw
 * and stage_raw took for granted still holds. *y: the broadcast under the
 * stages, from the loss's input z; stages[i]: stage i's node. */
static int grads_usable(clmad_context *ctx, clmad_node *node, clmad_tensor *z, const clmad_fused_loss *f,
                        clmad_tensor **y, clmad_node **stages)
{
    for (int i = f->n_stages - 1; i >= 0; i--) {
        if (!clmad__needs_grad(ctx, z) || z->node->out_adj[z->out_index])
            return 0;
        clmad_tensor **w_slot = f->stage_wgrad[i] == 2 ? clmad__adjoint_slot(ctx, z->node, 1 - f->stage_y[i]) : NULL;
        if (f->stage_wgrad[i] == 2 && (ctx->tape.retain || !w_slot || *w_slot))
            return 0;
        for (int u = 0; u < f->n_user_grads; u++) {
            if (f->user_grad_stage[u] != i || !f->user_grad_raw[u])
                continue;
            clmad_tensor **slot = clmad__adjoint_slot(ctx, z->node, f->user_grad_input[u]);
            if (ctx->tape.retain || !slot || *slot)
                return 0;
        }
        stages[i] = z->node;
        z = z->node->inputs[f->stage_y[i]];
    }
    *y = z;
    if (!clmad__adjoint_is_seed(ctx, node, 0) || !clmad__needs_grad(ctx, z) || z->node->out_adj[z->out_index] ||
        (f->stage_raw && ctx->tape.retain) ||
        (node->out_adj_lazy[0] && !clmad__fused_sole_path(ctx, node, stages, f->n_stages, z->node)))
        return 0;
    for (int s = 0; f->raw && s < f->g.n; s++) {
        clmad_tensor **slot = clmad__adjoint_slot(ctx, z->node, f->g.input[s]);
        if (ctx->tape.retain || (slot && *slot))
            return 0;
    }
    return 1;
}

clmad_status clmad__hand_to_input(clmad_context *ctx, clmad_node *node, int j, clmad_tensor *g)
{
    clmad_tensor *x = node->inputs[j];
    if (!clmad__same_shape(g, x)) {
        clmad_tensor *summed = NULL;
        clmad_status st = clmad__sum_to_shape(ctx, g, x->ndim, x->shape, &summed);
        clmad_tensor_release(g);
        if (st != CLMAD_OK)
            return st;
        g = summed;
    }
    return clmad__accumulate_input(ctx, node, j, g);
}

/* Hands the gradients of the stages' and clmad_dot's w to their nodes'
 * inputs, in the order backward would: from the loss down. */
static clmad_status give_w_gradients(clmad_context *ctx, clmad_node *node, int y_input, clmad_fused_loss *f,
                                     clmad_node **stages)
{
    clmad_status st = CLMAD_OK;
    for (int i = f->n_stages - 1; i >= 0 && st == CLMAD_OK; i--) {
        if (f->g.stage_grad[i])
            st = clmad__hand_to_input(ctx, stages[i], 1 - f->stage_y[i], f->g.stage_grad[i]);
        f->g.stage_grad[i] = NULL;
        for (int u = 0; u < f->n_user_grads && st == CLMAD_OK; u++)
            if (f->user_grad_stage[u] == i && f->g.user_grad[u]) {
                st = clmad__hand_to_input(ctx, stages[i], f->user_grad_input[u], f->g.user_grad[u]);
                f->g.user_grad[u] = NULL;
            }
    }
    if (st == CLMAD_OK && f->g.y_values) /* as dot.c's backward: w's adjoint is a (= y) times the seed */
        st = clmad__give_adjoint(ctx, node, 1 - y_input, f->g.y_values, node->out_adj[0]);
    return st;
}

clmad_status clmad__fused_loss_backward(clmad_context *ctx, clmad_node *node, int y_input,
                                        clmad_fused_loss *f, int *done)
{
    *done = 0;
    if (!f || f->g.n == 0)
        return CLMAD_OK;
    clmad_tensor *y = NULL;
    clmad_node *stages[CLMAD_MAX_LOSS_STAGES];
    if (!grads_usable(ctx, node, node->inputs[y_input], f, &y, stages)) {
        ctx->stats.fusion_fallbacks++;
        clmad__loss_grads_release(&f->g);
        return CLMAD_OK;
    }
    clmad_status st = give_w_gradients(ctx, node, y_input, f, stages);
    for (int s = 0; s < f->g.n; s++) {
        clmad_tensor *g = f->g.grad[s];
        f->g.grad[s] = NULL;
        if (st == CLMAD_OK && clmad__adjoint_slot(ctx, y->node, f->g.input[s]))
            st = clmad__accumulate_input(ctx, y->node, f->g.input[s], g);
        else
            clmad_tensor_release(g);
    }
    clmad__loss_grads_release(&f->g);
    *done = st == CLMAD_OK;
    return st;
}
