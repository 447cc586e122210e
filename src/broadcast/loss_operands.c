/* SPDX-License-Identifier: Apache-2.0 */
/* A loss kernel's stage operands of other shapes than y's (a row w_i in
 * sum(y * w), a column input of a user stage). The kernel reads each at
 * the element's broadcast offset, which the plan of the broadcast's inputs
 * with the extras after them gives as it gives the broadcast's own strided
 * inputs' (rows, columns, runs on CPUs). One may need a gradient (a
 * learnable bias row, a builtin's w or a user stage's input): the kernel
 * writes its contributions at y's shape, and backward sums them to its
 * shape (fused_loss.c). */
#include "broadcast/loss_operands.h"
#include "broadcast/launch.h"
#include "tape/tape.h"

int clmad__broadcasts_to(const clmad_tensor *t, const clmad_tensor *y)
{
    if (t->ndim > y->ndim)
        return 0;
    for (int k = 1; k <= t->ndim; k++) {
        const size_t s = t->shape[t->ndim - k];
        if (s != 1 && s != y->shape[y->ndim - k])
            return 0;
    }
    return 1;
}

/* 1 if x, an operand of a stage over y, is read as an extra. */
static int is_extra(const clmad_tensor *x, const clmad_tensor *y)
{
    return x->ndim != 0 && !clmad__same_shape(x, y);
}

/* How many extras form has over y; x (unless NULL) gets them, stage s's
 * operand j each, in order (the first CLMAD_MAX_LOSS_EXTRAS). */
static int each_extra(const clmad_loss_form *form, const clmad_tensor *y, clmad_loss_extras *x)
{
    int n = 0;
    for (int s = 0; s < form->n_stages; s++) {
        const clmad_kernel *g = form->stage_kernel[s];
        for (int j = 0; j < (g ? g->n_inputs : 2); j++) {
            clmad_tensor *t = g ? form->stage_inputs[s][j] : form->stage_w[s];
            if (j == form->stage_y[s] || !t || !is_extra(t, y))
                continue;
            if (x && n < CLMAD_MAX_LOSS_EXTRAS)
                x->t[n] = t, x->stage[n] = (unsigned char)s, x->input[n] = (unsigned char)j;
            n++;
        }
    }
    if (x)
        x->n = n;
    return n;
}

int clmad__loss_extras_fit(const clmad_loss_form *form, const clmad_tensor *y)
{
    const int n = each_extra(form, y, NULL);
    /* y's node records the broadcast with its inputs */
    return n == 0 || (n <= CLMAD_MAX_LOSS_EXTRAS && y->node && y->node->n_inputs + n <= CLMAD_MAX_INPUTS);
}

clmad_status clmad__loss_plan(clmad_context *ctx, const clmad_kernel *k, clmad_tensor *const *inputs,
                              const clmad_loss_form *form, const clmad_tensor *y, clmad_loss_extras *x,
                              clmad_bcast_plan *plan)
{
    clmad_tensor *all[CLMAD_MAX_INPUTS];
    const int n = each_extra(form, y, x);
    if (n > CLMAD_MAX_LOSS_EXTRAS || k->n_inputs + n > CLMAD_MAX_INPUTS) /* clmad__loss_extras_fit said no */
        return clmad__fail(ctx, CLMAD_ERR_STATE, "%s: a loss kernel over %d stage operands", k->fn_name, n);
    for (int j = 0; j < k->n_inputs; j++)
        all[j] = inputs[j];
    for (int e = 0; e < n; e++)
        all[k->n_inputs + e] = x->t[e];
    return clmad__plan_broadcast(ctx, k->fn_name, all, k->n_inputs + n, plan);
}

void clmad__loss_variant_extras(clmad_variant *v, const clmad_bcast_plan *plan, const clmad_loss_extras *x)
{
    v->loss_extras = x->n;
    for (int e = 0; e < x->n; e++) {
        v->loss_extra_stage[e] = x->stage[e], v->loss_extra_input[e] = x->input[e];
        clmad__variant_access(v, plan, v->n_inputs + e);
    }
}
