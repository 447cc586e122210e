/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_gather and clmad_scatter_add along an axis, each the other's
 * adjoint. The scatter sums, for each element of its destination, the
 * source elements that point at it, in order (one work-item per
 * destination element, no atomics: bitwise reproducible). */
#include "ops/index.h"
#include "ops/region.h"
#include "runtime/context_guard.h"

#include <stdlib.h>

clmad_status clmad__index_move(clmad_context *ctx, clmad_kernel_id id, clmad_tensor *dst, clmad_tensor *src,
                               clmad_tensor *idx, clmad_axis_view v, size_t k_len, int accumulate)
{
    if (dst->numel == 0)
        return CLMAD_OK;
    cl_ulong total = dst->numel, a_len = v.len, k = k_len, inner = v.inner;
    cl_int acc = accumulate;
    const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), 8, 8, 8, 8, sizeof acc};
    const void *values[] = {&dst->mem, &src->mem, &idx->mem, &total, &a_len, &k, &inner, &acc};
    size_t es = clmad_dtype_size(dst->dtype);
    uint64_t reads = id == CLMAD_INDEX_GATHER ? (uint64_t)dst->numel * (es + 8)
                                              : (uint64_t)dst->numel * k_len * (es + 8);
    return clmad__launch_cached(ctx, dst->dtype, id, 8, sizes, values, dst->numel,
                                reads + (uint64_t)dst->numel * es * (accumulate ? 2 : 1));
}

/* The rule of both calls: idx has the rank of `full` and its sizes outside
 * the axis (a, checked). */
static clmad_status check_index_shape(clmad_context *ctx, const char *call, const clmad_tensor *full,
                                      const char *full_name, const clmad_tensor *idx, const char *idx_name,
                                      int a)
{
    int ok = idx->ndim == full->ndim;
    for (int d = 0; ok && d < idx->ndim; d++)
        ok = d == a || idx->shape[d] == full->shape[d];
    if (!ok)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "%s: %s (rank %d) must have the rank of %s (%d) and its sizes outside axis %d", call,
                           idx_name, idx->ndim, full_name, full->ndim, a);
    return CLMAD_OK;
}

/* ---- gather --------------------------------------------------------------- */

static clmad_status gather_backward(clmad_context *ctx, clmad_node *node)
{
    clmad_index_data *d = node->data;
    clmad_adjoint_target t;
    clmad_status st = clmad__adjoint_open(ctx, node, 0, 0, &t);
    if (st != CLMAD_OK || !t.slot)
        return st;
    st = clmad__index_move(ctx, CLMAD_INDEX_SCATTER_ADD, t.tensor, node->out_adj[0], node->inputs[1], d->v,
                           d->k_len, t.accumulate);
    return clmad__adjoint_close(&t, st);
}

const clmad_op clmad__op_gather = {.name = "clmad_gather", .backward = gather_backward,
                                   .free_data = clmad__free_node_data, .kind = CLMAD_OP_OPAQUE};

clmad_status clmad_gather(clmad_context *ctx, clmad_tensor *x, int axis, clmad_tensor *index, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_gather");
    READS_ONLY(ctx, x, index);
    const char *call = "clmad_gather";
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!x || !index || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call,
                           !x ? "x" : !index ? "index" : "out");
    clmad_status st = clmad__check_same_context(ctx, x, call, "x");
    clmad_axis_view v;
    if (st == CLMAD_OK)
        st = clmad__axis_view(ctx, call, x, axis, &v);
    if (st == CLMAD_OK)
        st = clmad__check_same_context(ctx, index, call, "index");
    if (st == CLMAD_OK)
        st = check_index_shape(ctx, call, x, "x", index, "index", v.axis);
    if (st == CLMAD_OK)
        st = clmad__check_indices(ctx, call, "index", index, v.len);
    if (st != CLMAD_OK)
        return st;
    clmad_index_data *d = malloc(sizeof *d);
    if (!d)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in %s", call);
    *d = (clmad_index_data){v, index->shape[v.axis]};
    clmad_tensor *y = NULL;
    st = clmad_tensor_create(ctx, x->dtype, index->ndim, index->shape, NULL, &y);
    if (st == CLMAD_OK)
        st = clmad__index_move(ctx, CLMAD_INDEX_GATHER, y, x, index, v, d->k_len, 0);
    clmad_tensor *ins[2] = {x, index};
    return clmad__finish_op(ctx, &clmad__op_gather, ins, 2, y, d, st, out);
}

/* ---- scatter_add ---------------------------------------------------------- */

static clmad_status scatter_backward(clmad_context *ctx, clmad_node *node)
{
    clmad_index_data *d = node->data;
    clmad_tensor *adj = node->out_adj[0];
    clmad_adjoint_target t;
    /* x: the adjoint itself */
    clmad_status st = clmad__adjoint_open(ctx, node, 0, 0, &t);
    if (st == CLMAD_OK && t.slot) {
        size_t one[1] = {1}, dims[1] = {adj->numel};
        st = clmad__strided_copy(ctx, t.tensor, 0, one, adj, 0, one, 1, dims, 1.0, t.accumulate);
        st = clmad__adjoint_close(&t, st);
    }
    /* src: the adjoint gathered at the index */
    if (st == CLMAD_OK)
        st = clmad__adjoint_open(ctx, node, 2, 0, &t);
    if (st == CLMAD_OK && t.slot) {
        st = clmad__index_move(ctx, CLMAD_INDEX_GATHER, t.tensor, adj, node->inputs[1], d->v, d->k_len,
                               t.accumulate);
        st = clmad__adjoint_close(&t, st);
    }
    return st;
}

const clmad_op clmad__op_scatter_add = {.name = "clmad_scatter_add", .backward = scatter_backward,
                                        .free_data = clmad__free_node_data, .kind = CLMAD_OP_OPAQUE};

clmad_status clmad_scatter_add(clmad_context *ctx, clmad_tensor *x, int axis, clmad_tensor *index,
                               clmad_tensor *src, clmad_tensor **out)
{
    CLMAD_GUARD(ctx, "clmad_scatter_add");
    const char *call = "clmad_scatter_add";
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!x || !index || !src || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call,
                           !x ? "x" : !index ? "index" : !src ? "src" : "out");
    clmad_status st = clmad__check_same_context(ctx, x, call, "x");
    if (st == CLMAD_OK)
        st = clmad__check_same_context(ctx, src, call, "src");
    if (st == CLMAD_OK)
        st = clmad__check_same_context(ctx, index, call, "index");
    if (st == CLMAD_OK && src->dtype != x->dtype)
        st = clmad__fail(ctx, CLMAD_ERR_DTYPE, "%s: x is %s and src is %s", call, clmad_dtype_name(x->dtype),
                         clmad_dtype_name(src->dtype));
    clmad_axis_view v;
    if (st == CLMAD_OK)
        st = clmad__axis_view(ctx, call, x, axis, &v);
    if (st == CLMAD_OK)
        st = check_index_shape(ctx, call, x, "x", src, "src", v.axis);
    if (st == CLMAD_OK && !clmad__same_shape(index, src))
        st = clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s: index and src must have one shape", call);
    if (st == CLMAD_OK)
        st = clmad__check_indices(ctx, call, "index", index, v.len);
    if (st != CLMAD_OK)
        return st;
    clmad_index_data *d = malloc(sizeof *d);
    if (!d)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in %s", call);
    *d = (clmad_index_data){v, index->shape[v.axis]};
    clmad_tensor *y = NULL;
    st = clmad_tensor_create(ctx, x->dtype, x->ndim, x->shape, NULL, &y);
    if (st == CLMAD_OK && y->numel > 0) {
        cl_int err = clEnqueueCopyBuffer(ctx->queue, x->mem, y->mem, 0, 0, clmad__tensor_bytes(x), 0, NULL, NULL);
        if (err != CL_SUCCESS)
            st = clmad__fail_cl(ctx, err, "clEnqueueCopyBuffer");
    }
    if (st == CLMAD_OK)
        st = clmad__index_move(ctx, CLMAD_INDEX_SCATTER_ADD, y, src, index, v, d->k_len, 1);
    clmad_tensor *ins[3] = {x, index, src};
    return clmad__finish_op(ctx, &clmad__op_scatter_add, ins, 3, y, d, st, out);
}
