/* SPDX-License-Identifier: Apache-2.0 */
/* The tensors a fused loss writes gradients for (ops/fused_loss.c): which
 * of the user stages' inputs, each given one gradient, whether the loss
 * kernel's are the only ones that reach them and its chain, and whether a
 * broadcast's may be written at the element index. */
#include "ops/fused_loss.h"
#include "broadcast/held.h"
#include "tape/tape.h"

/* Every tensor node reads that either is the chain's (below: the output of
 * the next node down) or needs a gradient (a target of the loss kernel) is
 * read by node alone on the tape. */
static int read_once(clmad_context *ctx, const clmad_node *node, const clmad_node *below)
{
    for (int j = 0; j < node->n_inputs; j++) {
        const clmad_tensor *t = node->inputs[j];
        int here = 0; /* clmad_dot(y, y) reads y twice */
        for (int i = 0; i < node->n_inputs; i++)
            here += node->inputs[i] == t;
        const int chain = below && t->node == below;
        if ((chain || clmad__needs_grad(ctx, t)) && t->tape_refs != here)
            return 0;
    }
    return 1;
}

int clmad__fused_sole_path(clmad_context *ctx, const clmad_node *loss, clmad_node *const *stages, int n_stages,
                           const clmad_node *head)
{
    const clmad_node *above = loss;
    for (int i = n_stages - 1; i >= 0; above = stages[i--])
        if (!read_once(ctx, above, stages[i]))
            return 0;
    return read_once(ctx, above, head) && read_once(ctx, head, NULL);
}

int clmad__fused_user_grads(clmad_context *ctx, clmad_loss_form *form, const clmad_tensor *z, clmad_tensor *y)
{
    clmad_tensor *seen[CLMAD_MAX_INPUTS + 2 * CLMAD_MAX_LOSS_STAGES + CLMAD_MAX_USER_GRADS + 1];
    int n_seen = 0, n = 0;
    clmad_kernel *k;
    clmad_tensor *const *in;
    if (clmad__bcast_held_call(y, &k, &in))
        for (int j = 0; j < k->n_inputs; j++)
            if (clmad__needs_grad(ctx, in[j]))
                seen[n_seen++] = in[j];
    if (form->w && clmad__needs_grad(ctx, form->w))
        seen[n_seen++] = form->w;
    for (int i = 0; i < form->n_stages; i++) {
        if (form->stage_wgrad[i])
            seen[n_seen++] = form->stage_w[i];
        for (int j = 0; form->stage_kernel[i] && j < form->stage_kernel[i]->n_inputs; j++) {
            clmad_tensor *x = form->stage_inputs[i][j];
            if (j == form->stage_y[i] || !clmad__needs_grad(ctx, x))
                continue;
            if (n == CLMAD_MAX_USER_GRADS)
                return 0;
            form->user_grad_stage[n] = i, form->user_grad_input[n] = j;
            const int last = i == form->n_stages - 1;
            clmad_tensor **slot = last && form->stage_raw ? clmad__adjoint_slot(ctx, z->node, j) : NULL;
            form->user_grad_raw[n] = last && form->stage_raw && slot && !*slot && clmad__same_shape(x, z);
            n++;
            seen[n_seen++] = x;
        }
    }
    form->n_user_grads = n;
    for (int a = 0; a < n_seen; a++)
        for (int b = 0; b < a; b++)
            if (seen[a] == seen[b])
                return 0;
    return 1;
}

int clmad__fused_distinct_targets(clmad_context *ctx, clmad_tensor *y, int any_shape)
{
    clmad_kernel *k;
    clmad_tensor *const *in;
    if (!clmad__bcast_held_call(y, &k, &in))
        return 0;
    for (int j = 0; j < k->n_inputs; j++) {
        const int grad = !clmad__kernel_integer(k, j) && clmad__needs_grad(ctx, in[j]);
        if (grad && !any_shape && !(clmad__same_shape(in[j], y) && clmad__element_index(in[j], y)))
            return 0;
        for (int i = 0; i < j && grad; i++)
            if (in[i] == in[j])
                return 0;
    }
    return 1;
}
