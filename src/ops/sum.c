/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_sum and clmad_mean, and their adjoint: the output adjoint expanded
 * back over the summed axes (times 1/count for the mean). */
#include "ops/ops.h"
#include "ops/fused_loss.h"
#include "tape/tape.h"
#include "runtime/context_guard.h"

#include <math.h>
#include <stdlib.h>

typedef struct sum_data {
    clmad_fused_loss *fused; /* first: a sum of a held broadcast, fused (fused_loss.h) */
    int reduce[CLMAD_MAX_DIMS];
    double scale;
} sum_data;

static clmad_status sum_backward(clmad_context *ctx, clmad_node *node)
{
    sum_data *d = node->data;
    int done = 0;
    clmad_status fused = clmad__fused_loss_backward(ctx, node, 0, d->fused, &done);
    if (fused != CLMAD_OK || done)
        return fused;
    clmad_status seeded = clmad__adjoint_ready(node, 0);
    if (seeded != CLMAD_OK)
        return seeded;
    clmad_tensor *x = node->inputs[0], *adj = node->out_adj[0], *g = NULL;
    /* A sum to one value (or of one value's adjoint): it goes on as one
     * value, lazily as it came (backward's seed stays the seed: a sum under
     * an add is then what it would be as the root), never expanded over x's
     * shape; scaled for the mean. */
    if (adj->numel == 1 && d->scale == 1.0)
        return clmad__give_adjoint(ctx, node, 0, adj, node->out_adj_scale[0]);
    clmad_status ready = clmad__materialize_adjoint(ctx, node, 0);
    if (ready != CLMAD_OK)
        return ready;
    adj = node->out_adj[0];
    if (adj->numel == 1) {
        size_t one[1] = {1};
        clmad_status st = clmad_tensor_create(ctx, x->dtype, 0, NULL, NULL, &g);
        if (st == CLMAD_OK)
            st = clmad__strided_copy(ctx, g, 0, one, adj, 0, one, 1, one, d->scale, 0);
        if (st == CLMAD_OK)
            st = clmad__give_adjoint(ctx, node, 0, g, NULL);
        clmad_tensor_release(g);
        return st;
    }
    clmad_status st = clmad_tensor_create(ctx, x->dtype, x->ndim, x->shape, NULL, &g);
    if (st != CLMAD_OK)
        return st;
    /* g[e] = scale * adj[kept coordinates of e]: strides 0 on summed axes. */
    size_t gs[CLMAD_MAX_DIMS], as[CLMAD_MAX_DIMS], s = 1;
    clmad__contiguous_strides(x->ndim, x->shape, gs);
    for (int dim = x->ndim - 1; dim >= 0; dim--) {
        as[dim] = d->reduce[dim] ? 0 : s;
        if (!d->reduce[dim])
            s *= x->shape[dim];
    }
    st = clmad__strided_copy(ctx, g, 0, gs, adj, 0, as, x->ndim, x->shape, d->scale, 0);
    if (st != CLMAD_OK) {
        clmad_tensor_release(g);
        return st;
    }
    return clmad__accumulate_input(ctx, node, 0, g);
}

const clmad_op clmad__op_sum = {.name = "clmad_sum", .backward = sum_backward, .free_data = clmad__free_fused_data,
                                .kind = CLMAD_OP_REDUCTION, .reduction = CLMAD_REDUCTION_SUM,
                                .reads_adjoint_late = 1};
const clmad_op clmad__op_mean = {.name = "clmad_mean", .backward = sum_backward, .free_data = clmad__free_fused_data,
                                 .kind = CLMAD_OP_REDUCTION, .reduction = CLMAD_REDUCTION_MEAN,
                                 .reads_adjoint_late = 1};

static clmad_status reduce_op(clmad_context *ctx, const clmad_op *op, clmad_tensor *x, int naxes,
                              const int *axes, int keepdims, clmad_tensor **out)
{
    const char *name = op->name;
    const int mean = op == &clmad__op_mean;
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", name);
    if (!x || !out || (naxes > 0 && !axes) || naxes < 0)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: NULL or invalid argument", name);
    clmad_status checked = clmad__check_same_context(ctx, x, name, "x");
    if (checked == CLMAD_OK)
        checked = clmad__require_any_float(ctx, x, name, "x"); /* 16-bit: summed in f32 */
    if (checked != CLMAD_OK)
        return checked;
    sum_data *d = calloc(1, sizeof *d);
    if (!d)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in %s", name);
    for (int i = 0; i < naxes; i++) {
        int a = axes[i] < 0 ? axes[i] + x->ndim : axes[i];
        if (a < 0 || a >= x->ndim || d->reduce[a]) {
            free(d);
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: axis %d is %s for a rank-%d tensor",
                               name, axes[i], a >= 0 && a < x->ndim ? "repeated" : "out of range", x->ndim);
        }
        d->reduce[a] = 1;
    }
    if (naxes == 0)
        for (int a = 0; a < x->ndim; a++)
            d->reduce[a] = 1;
    size_t shape[CLMAD_MAX_DIMS], count = 1;
    int ndim = 0;
    for (int a = 0; a < x->ndim; a++) {
        if (d->reduce[a])
            count *= x->shape[a];
        if (!d->reduce[a] || keepdims)
            shape[ndim++] = d->reduce[a] ? 1 : x->shape[a];
    }
    /* An empty mean is 0/0 (NaN), as in NumPy and PyTorch; its gradient
     * has x's empty shape, so the scale reaches no element. */
    d->scale = mean ? (count ? 1.0 / (double)count : NAN) : 1.0;
    clmad_tensor *y = NULL;
    /* A whole sum or mean of a held broadcast: one loss kernel (fused_loss.h). */
    clmad_status st = count != x->numel || x->numel == 0
                          ? clmad__inputs_ready(ctx, &x, 1) /* it reads x alone */
                          : clmad__fused_loss(ctx, x, NULL, d->scale, ndim, shape, &d->fused, &y);
    if (st == CLMAD_OK && !y)
        st = mean && count == 0 ? clmad_tensor_fill(ctx, x->dtype, ndim, shape, NAN, &y)
                                : clmad__reduce(ctx, x, d->reduce, d->scale, ndim, shape, &y);
    if (st != CLMAD_OK) {
        clmad__free_fused_data(&(clmad_node){.data = d});
        return st;
    }
    st = clmad__finish_op(ctx, op, &x, 1, y, d, st, out);
    if (st == CLMAD_OK && (*out)->node)
        (*out)->node->lazy_adjoints = 1; /* a seed handed on stays the seed (sum_backward) */
    return st;
}

clmad_status clmad_sum(clmad_context *ctx, clmad_tensor *x, int naxes, const int *axes, int keepdims,
                       clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_sum");
    return reduce_op(ctx, &clmad__op_sum, x, naxes, axes, keepdims, out);
}

clmad_status clmad_mean(clmad_context *ctx, clmad_tensor *x, int naxes, const int *axes, int keepdims,
                        clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_mean");
    return reduce_op(ctx, &clmad__op_mean, x, naxes, axes, keepdims, out);
}

void clmad__sum_params(const clmad_node *node, int *reduce, double *scale)
{
    const sum_data *d = node->data;
    for (int i = 0; i < CLMAD_MAX_DIMS; i++)
        reduce[i] = d->reduce[i];
    *scale = d->scale;
}
