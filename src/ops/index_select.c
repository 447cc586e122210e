/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_index_select (rows of x along an axis) and clmad_embedding (rows
 * of a table). The adjoint adds the output's rows back into the rows they
 * came from: one work-item per row of the source, over the indices in
 * their order (no atomics: bitwise reproducible). */
#include "ops/index.h"
#include "ops/region.h"
#include "runtime/context_guard.h"

#include <stdlib.h>

/* dst (+= when accumulate) the rows of adj added back into the rows of
 * the source (d's view) they came from. */
static clmad_status launch_select_grad(clmad_context *ctx, const clmad_index_data *d, clmad_tensor *dst,
                                       clmad_tensor *adj, clmad_tensor *idx, int accumulate)
{
    if (dst->numel == 0)
        return CLMAD_OK;
    cl_ulong rows = d->v.outer * d->v.len, a_len = d->v.len, k_len = d->k_len, inner = d->v.inner;
    cl_int acc = accumulate;
    const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), 8, 8, 8, 8, sizeof acc};
    const void *values[] = {&dst->mem, &adj->mem, &idx->mem, &rows, &a_len, &k_len, &inner, &acc};
    size_t es = clmad_dtype_size(adj->dtype);
    return clmad__launch_cached(ctx, adj->dtype, CLMAD_INDEX_SELECT_GRAD, 8, sizes, values, rows,
                                (uint64_t)(dst->numel * (acc ? 2 : 1) + adj->numel) * es +
                                    (uint64_t)rows * k_len * 8);
}

/* y = the rows of x (d's view) that idx picks. */
static clmad_status launch_select(clmad_context *ctx, const clmad_index_data *d, clmad_tensor *y, clmad_tensor *x,
                                  clmad_tensor *idx)
{
    if (y->numel == 0)
        return CLMAD_OK;
    cl_ulong total = y->numel, a_len = d->v.len, k_len = d->k_len, inner = d->v.inner;
    const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), 8, 8, 8, 8};
    const void *values[] = {&y->mem, &x->mem, &idx->mem, &total, &a_len, &k_len, &inner};
    return clmad__launch_cached(ctx, x->dtype, CLMAD_INDEX_SELECT, 7, sizes, values, y->numel,
                                (uint64_t)y->numel * (2 * clmad_dtype_size(x->dtype) + 8));
}

static clmad_status select_backward(clmad_context *ctx, clmad_node *node)
{
    clmad_adjoint_target t;
    clmad_status st = clmad__adjoint_open(ctx, node, 0, 0, &t);
    if (st != CLMAD_OK || !t.slot)
        return st;
    st = launch_select_grad(ctx, node->data, t.tensor, node->out_adj[0], node->inputs[1], t.accumulate);
    return clmad__adjoint_close(&t, st);
}

/* clmad_index_select and clmad_embedding: one backward, two names. */
const clmad_op clmad__op_index_select = {.name = "clmad_index_select", .backward = select_backward,
                                         .free_data = clmad__free_node_data, .kind = CLMAD_OP_OPAQUE};
const clmad_op clmad__op_embedding = {.name = "clmad_embedding", .backward = select_backward,
                                      .free_data = clmad__free_node_data, .kind = CLMAD_OP_OPAQUE};

/* index_select of x (checked, with its view v) by idx (checked), output
 * shape `shape`, recorded as op. */
static clmad_status select_rows(clmad_context *ctx, const clmad_op *op, clmad_tensor *x, clmad_axis_view v,
                                clmad_tensor *idx, int ndim, const size_t *shape, clmad_tensor **out)
{
    clmad_index_data *d = malloc(sizeof *d);
    if (!d)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in %s", op->name);
    *d = (clmad_index_data){v, idx->numel};
    clmad_tensor *y = NULL;
    clmad_status st = clmad_tensor_create(ctx, x->dtype, ndim, shape, NULL, &y);
    if (st == CLMAD_OK)
        st = launch_select(ctx, d, y, x, idx);
    clmad_tensor *ins[2] = {x, idx};
    return clmad__finish_op(ctx, op, ins, 2, y, d, st, out);
}

clmad_status clmad_index_select(clmad_context *ctx, clmad_tensor *x, int axis, clmad_tensor *index,
                                clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_index_select");
    READS_ONLY(ctx, x, index);
    const char *call = "clmad_index_select";
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!x || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call, !x ? "x" : "out");
    clmad_status st = clmad__check_same_context(ctx, x, call, "x");
    clmad_axis_view v;
    if (st == CLMAD_OK)
        st = clmad__axis_view(ctx, call, x, axis, &v);
    if (st == CLMAD_OK && index && index->ndim != 1)
        st = clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s: index has rank %d; it must be 1-d", call, index->ndim);
    if (st == CLMAD_OK)
        st = clmad__check_indices(ctx, call, "index", index, v.len);
    if (st != CLMAD_OK)
        return st;
    size_t shape[CLMAD_MAX_DIMS];
    for (int dim = 0; dim < x->ndim; dim++)
        shape[dim] = dim == v.axis ? index->numel : x->shape[dim];
    return select_rows(ctx, &clmad__op_index_select, x, v, index, x->ndim, shape, out);
}

clmad_status clmad_embedding(clmad_context *ctx, clmad_tensor *weight, clmad_tensor *index, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_embedding");
    READS_ONLY(ctx, weight, index);
    const char *call = "clmad_embedding";
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!weight || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call, !weight ? "weight" : "out");
    clmad_status st = clmad__check_same_context(ctx, weight, call, "weight");
    if (st == CLMAD_OK && weight->ndim != 2)
        st = clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s: weight has rank %d; it must be 2-d (rows, features)", call,
                         weight->ndim);
    if (st == CLMAD_OK && index && index->ndim >= CLMAD_MAX_DIMS)
        st = clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s: index has rank %d; the output adds an axis (at most %d)",
                         call, index->ndim, CLMAD_MAX_DIMS);
    clmad_axis_view v;
    if (st == CLMAD_OK)
        st = clmad__axis_view(ctx, call, weight, 0, &v);
    if (st == CLMAD_OK)
        st = clmad__check_indices(ctx, call, "index", index, v.len);
    if (st != CLMAD_OK)
        return st;
    size_t shape[CLMAD_MAX_DIMS];
    for (int dim = 0; dim < index->ndim; dim++)
        shape[dim] = index->shape[dim];
    shape[index->ndim] = weight->shape[1];
    /* The kernel reads the index as a flat list: its shape only names the
     * output's leading axes. */
    return select_rows(ctx, &clmad__op_embedding, weight, v, index, index->ndim + 1, shape, out);
}

clmad_status clmad__select_apply(clmad_context *ctx, const clmad_node *node, clmad_tensor *x, clmad_tensor **out)
{
    clmad_tensor *y = NULL;
    clmad_status st = clmad_tensor_create(ctx, x->dtype, node->out_ndim[0], node->out_shape[0], NULL, &y);
    if (st == CLMAD_OK)
        st = launch_select(ctx, node->data, y, x, node->inputs[1]);
    if (st != CLMAD_OK) {
        clmad_tensor_release(y);
        return st;
    }
    *out = y;
    return CLMAD_OK;
}

clmad_status clmad__select_adjoint(clmad_context *ctx, const clmad_node *node, clmad_tensor *g, clmad_tensor **out)
{
    const clmad_tensor *x = node->inputs[0];
    clmad_tensor *dx = NULL;
    clmad_status st = clmad_tensor_create(ctx, g->dtype, x->ndim, x->shape, NULL, &dx);
    if (st == CLMAD_OK)
        st = launch_select_grad(ctx, node->data, dx, g, node->inputs[1], 0);
    if (st != CLMAD_OK) {
        clmad_tensor_release(dx);
        return st;
    }
    *out = dx;
    return CLMAD_OK;
}
