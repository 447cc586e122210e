/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_index_select (rows of x along an axis) and clmad_embedding (rows
 * of a table). The adjoint adds the output's rows back into the rows they
 * came from: one work-item per row of the source, over the indices in
 * their order (no atomics: bitwise reproducible). */
#include "ops/index.h"
#include "runtime/context_guard.h"

#include <stdlib.h>

static clmad_status select_backward(clmad_context *ctx, clmad_node *node)
{
    clmad_index_data *d = node->data;
    clmad_tensor *idx = node->inputs[1], *adj = node->out_adj[0];
    clmad_adjoint_target t;
    clmad_status st = clmad__adjoint_open(ctx, node, 0, 0, &t);
    if (st != CLMAD_OK || !t.slot)
        return st;
    cl_ulong rows = d->v.outer * d->v.len, a_len = d->v.len, k_len = d->k_len, inner = d->v.inner;
    cl_int acc = t.accumulate;
    if (t.tensor->numel > 0) {
        const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), 8, 8, 8, 8, sizeof acc};
        const void *values[] = {&t.tensor->mem, &adj->mem, &idx->mem, &rows, &a_len, &k_len, &inner, &acc};
        size_t es = clmad_dtype_size(adj->dtype);
        st = clmad__launch_cached(ctx, adj->dtype, CLMAD_INDEX_SELECT_GRAD, 8, sizes, values, rows,
                                  (uint64_t)(t.tensor->numel * (acc ? 2 : 1) + adj->numel) * es +
                                  (uint64_t)rows * k_len * 8);
    }
    return clmad__adjoint_close(&t, st);
}

/* index_select of x (checked, with its view v) by idx (checked), output
 * shape `shape`. */
static clmad_status select_rows(clmad_context *ctx, const char *call, clmad_tensor *x, clmad_axis_view v,
                                clmad_tensor *idx, int ndim, const size_t *shape, clmad_tensor **out)
{
    clmad_index_data *d = malloc(sizeof *d);
    if (!d)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in %s", call);
    *d = (clmad_index_data){v, idx->numel};
    clmad_tensor *y = NULL;
    clmad_status st = clmad_tensor_create(ctx, x->dtype, ndim, shape, NULL, &y);
    if (st == CLMAD_OK && y->numel > 0) {
        cl_ulong total = y->numel, a_len = v.len, k_len = idx->numel, inner = v.inner;
        const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), 8, 8, 8, 8};
        const void *values[] = {&y->mem, &x->mem, &idx->mem, &total, &a_len, &k_len, &inner};
        st = clmad__launch_cached(ctx, x->dtype, CLMAD_INDEX_SELECT, 7, sizes, values, y->numel,
                                  (uint64_t)y->numel * (2 * clmad_dtype_size(x->dtype) + 8));
    }
    clmad_tensor *ins[2] = {x, idx};
    return clmad__finish_op(ctx, call, select_backward, ins, 2, y, d, clmad__free_node_data, st, out);
}

clmad_status clmad_index_select(clmad_context *ctx, clmad_tensor *x, int axis, clmad_tensor *index,
                                clmad_tensor **out)
{
    CLMAD_GUARD(ctx, "clmad_index_select");
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
    return select_rows(ctx, call, x, v, index, x->ndim, shape, out);
}

clmad_status clmad_embedding(clmad_context *ctx, clmad_tensor *weight, clmad_tensor *index, clmad_tensor **out)
{
    CLMAD_GUARD(ctx, "clmad_embedding");
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
    return select_rows(ctx, call, weight, v, index, index->ndim + 1, shape, out);
}
