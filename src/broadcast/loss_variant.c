/* SPDX-License-Identifier: Apache-2.0 */
/* The variant of a loss kernel (and of a lazy region's kernels) for a
 * loss form: its stages, weights and gradients, and how it visits the
 * elements. */
#include "broadcast/launch.h"
#include "broadcast/loss_operands.h"
#include "runtime/primitives.h"

/* The run of a loss kernel summing ranges: CLMAD_LOSS_RUN, or the
 * longest of its halves down to 16 that divides the rows of a strided
 * input (runs start at multiples of it, so they then stay in one row). */
static int loss_run(const clmad_bcast_plan *plan)
{
    int run = CLMAD_LOSS_RUN;
    while (plan->any_strided && run > 16 && plan->dims[plan->nd - 1] % (size_t)run)
        run /= 2;
    return plan->any_strided && plan->dims[plan->nd - 1] % (size_t)run ? CLMAD_LOSS_RUN : run;
}

/* The LOSS variant of k over plan for form; weights[s]: WEIGHT s's tensor. */
void clmad__loss_variant(const clmad_kernel *k, const clmad_bcast_plan *plan, clmad_tensor *y,
                         const clmad_loss_form *form, int ranges, clmad_variant *v, clmad_tensor **weights)
{
    clmad__bcast_variant(k, plan, y->dtype, CLMAD_MODE_LOSS, v);
    v->loss_weighted = form->self_dot ? CLMAD_LOSS_DOT_SELF : form->w ? CLMAD_LOSS_DOT_W : 0;
    v->loss_write_y = form->write_y;
    v->loss_ranges = ranges;
    v->loss_terms = ranges && y->ctx->loss_terms;
    v->loss_region = form->region;
    if (form->region) /* a plain element loop, as the element kernels' */
        clmad__bcast_variant_runs(v, plan, clmad__items_per_work_item(y->ctx));
    /* A range is visited in runs (codegen_loss.c) where the compiler
     * vectorises a loop inside a work-item (items per work-item above 1:
     * POCL), which is what they are for; elsewhere one by one. (rusticl
     * takes terms: llvmpipe ends a work-item's loops after 65535
     * iterations in all, and runs over h(g(y, w)) * w at 5 x 13107 lost
     * the ends of their ranges; docs/design-notes.md.) */
    if (ranges && !v->loss_terms && clmad__items_per_work_item(y->ctx) > 1)
        clmad__bcast_variant_runs(v, plan, loss_run(plan));
    v->loss_raw = form->raw;
    v->loss_stages = form->n_stages;
    weights[CLMAD_LOSS_DOT_WEIGHT] = form->w;
    for (int s = 0; s < form->n_stages; s++) {
        const clmad_kernel *g = form->stage_kernel[s];
        for (int j = 0; g && j < g->n_inputs; j++)
            if (form->stage_inputs[s][j]->ndim == 0 && j != form->stage_y[s])
                v->loss_stage_scalars[s] |= (uint64_t)1 << j;
        if (g) {
            v->loss_stage_kernel[s] = g->id;
            v->loss_stage_inputs[s] = (unsigned char)g->n_inputs;
            v->loss_stage_source[s] = g->source;
            v->loss_stage_fn[s] = g->fn_name;
        }
        v->loss_stage[s] = (char)form->stage[s];
        v->loss_stage_y[s] = (char)form->stage_y[s];
        v->loss_weight_scalar[s] = form->stage_w[s] && form->stage_w[s]->ndim == 0;
        v->loss_stage_wgrad[s] = (char)form->stage_wgrad[s];
        if (form->stage_w[s])
            weights[s] = form->stage_w[s];
    }
    v->loss_stage_raw = form->stage_raw;
    for (int u = 0; u < form->n_user_grads; u++) {
        v->loss_user_grad_stage[u] = (unsigned char)form->user_grad_stage[u];
        v->loss_user_grad_input[u] = (unsigned char)form->user_grad_input[u];
        v->loss_user_grad_raw[u] = (unsigned char)form->user_grad_raw[u];
    }
    v->loss_user_grads = form->n_user_grads;
    v->loss_adj = form->adj != 1.0;
}
