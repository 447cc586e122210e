/* SPDX-License-Identifier: Apache-2.0 */
/* NumPy broadcasting of input shapes into a plan (plan.h): output shape,
 * collapsed dimensions, and how each input is read. */
#include "broadcast/plan.h"
#include "base/strbuf.h"

#include <string.h>

static clmad_status shape_error(clmad_context *ctx, const char *what, clmad_tensor *const *inputs,
                                int n, int bad, int axis_from_end)
{
    clmad_strbuf sb = {0};
    clmad__sb_printf(&sb, "%s: input %d of shape ", what, bad);
    clmad__sb_shape(&sb, inputs[bad]->ndim, inputs[bad]->shape);
    clmad__sb_printf(&sb, " does not broadcast with the inputs before it (axis -%d); input shapes:",
                     axis_from_end);
    for (int j = 0; j < n; j++) {
        clmad__sb_printf(&sb, " %d:", j);
        clmad__sb_shape(&sb, inputs[j]->ndim, inputs[j]->shape);
    }
    clmad_status st = clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s", sb.data ? sb.data : what);
    clmad__sb_free(&sb);
    return st;
}

clmad_status clmad__plan_broadcast(clmad_context *ctx, const char *what, clmad_tensor *const *inputs,
                                   int n, clmad_bcast_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->n_inputs = n;
    int rank = 0;
    for (int j = 0; j < n; j++)
        if (inputs[j]->ndim > rank)
            rank = inputs[j]->ndim;
    plan->out_ndim = rank;
    for (int d = 0; d < rank; d++)
        plan->out_shape[d] = 1;

    /* NumPy rule, aligned at the last axis: sizes equal, or one of them 1. */
    for (int j = 0; j < n; j++) {
        const clmad_tensor *t = inputs[j];
        for (int k = 1; k <= t->ndim; k++) {
            size_t *o = &plan->out_shape[rank - k];
            size_t s = t->shape[t->ndim - k];
            if (s == *o || s == 1)
                continue;
            if (*o == 1)
                *o = s;
            else
                return shape_error(ctx, what, inputs, n, j, k);
        }
    }
    plan->numel = 1;
    for (int d = 0; d < rank; d++)
        plan->numel *= plan->out_shape[d];

    /* Full-rank strides per input, 0 where the input is broadcast. */
    size_t full[CLMAD_MAX_INPUTS][CLMAD_MAX_DIMS];
    for (int j = 0; j < n; j++) {
        const clmad_tensor *t = inputs[j];
        size_t stride = 1;
        for (int k = 1; k <= rank; k++) {
            size_t s = k <= t->ndim ? t->shape[t->ndim - k] : 1;
            full[j][rank - k] = s == 1 ? 0 : stride;
            stride *= s;
        }
    }

    /* Drop size-1 output dimensions, then merge a dimension into the one
     * after it when every input continues contiguously (or stays broadcast). */
    int nd = 0;
    for (int d = 0; d < rank; d++) {
        if (plan->out_shape[d] == 1)
            continue;
        int merge = nd > 0;
        for (int j = 0; j < n && merge; j++)
            merge = plan->strides[j][nd - 1] == full[j][d] * plan->out_shape[d];
        if (merge) {
            plan->dims[nd - 1] *= plan->out_shape[d];
            for (int j = 0; j < n; j++)
                plan->strides[j][nd - 1] = full[j][d];
        } else {
            plan->dims[nd] = plan->out_shape[d];
            for (int j = 0; j < n; j++)
                plan->strides[j][nd] = full[j][d];
            nd++;
        }
    }
    plan->nd = nd;

    for (int j = 0; j < n; j++) {
        if (inputs[j]->numel == 1)
            plan->access[j] = CLMAD_ACCESS_SCALAR;
        else if (inputs[j]->numel == plan->numel)
            plan->access[j] = CLMAD_ACCESS_FULL;
        else {
            plan->access[j] = CLMAD_ACCESS_STRIDED;
            plan->any_strided = 1;
        }
    }
    return CLMAD_OK;
}
