/* SPDX-License-Identifier: Apache-2.0 */
/* Shape operations as strided copies: slice, concat, reshape, transpose.
 * Each adjoint is the inverse copy, accumulated straight into the input's
 * adjoint when it already exists. */
#include "ops/ops.h"
#include "ops/region.h"
#include "runtime/context_guard.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape_data {
    int axis;
    size_t start;                 /* slice */
    int perm[CLMAD_MAX_DIMS];     /* transpose */
} shape_data;

/* Adds the copy src[src_off + e.src_strides] -> [dst_off + e.dst_strides]
 * (for e over dims) into input j's adjoint. `covers` says whether the copy
 * writes every element of the input (else a new adjoint starts from zero). */
static clmad_status scatter_grad(clmad_context *ctx, clmad_node *node, int j, clmad_tensor *src,
                                 size_t src_off, const size_t *src_strides, size_t dst_off,
                                 const size_t *dst_strides, int nd, const size_t *dims, int covers)
{
    clmad_adjoint_target t;
    clmad_status st = clmad__adjoint_open(ctx, node, j, !covers, &t);
    if (st != CLMAD_OK || !t.slot)
        return st;
    st = clmad__strided_copy(ctx, t.tensor, dst_off, dst_strides, src, src_off, src_strides, nd, dims, 1.0,
                             t.accumulate);
    return clmad__adjoint_close(&t, st);
}

static clmad_status check_axis(clmad_context *ctx, const char *name, const clmad_tensor *x, int *axis)
{
    int a = *axis < 0 ? *axis + x->ndim : *axis;
    if (a < 0 || a >= x->ndim)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s: axis %d is out of range for a rank-%d tensor", name,
                           *axis, x->ndim);
    *axis = a;
    return CLMAD_OK;
}

/* ---- slice ---------------------------------------------------------------- */

static clmad_status slice_backward(clmad_context *ctx, clmad_node *node)
{
    shape_data *d = node->data;
    clmad_tensor *x = node->inputs[0], *adj = node->out_adj[0];
    size_t xs[CLMAD_MAX_DIMS], as[CLMAD_MAX_DIMS];
    clmad__contiguous_strides(x->ndim, x->shape, xs);
    clmad__contiguous_strides(adj->ndim, adj->shape, as);
    return scatter_grad(ctx, node, 0, adj, 0, as, d->start * xs[d->axis], xs, adj->ndim, adj->shape,
                        adj->shape[d->axis] == x->shape[d->axis]);
}

const clmad_op clmad__op_slice = {.name = "clmad_slice", .backward = slice_backward,
                                  .free_data = clmad__free_node_data, .kind = CLMAD_OP_SHAPE};

clmad_status clmad_slice(clmad_context *ctx, clmad_tensor *x, int axis, size_t start, size_t stop,
                         clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_slice");
    READS_ONLY(ctx, x, NULL);
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_slice: ctx is NULL");
    if (!x || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_slice: NULL argument");
    clmad_status checked = clmad__check_same_context(ctx, x, "clmad_slice", "x");
    if (checked != CLMAD_OK)
        return checked;
    clmad_status st = check_axis(ctx, "clmad_slice", x, &axis);
    if (st != CLMAD_OK)
        return st;
    if (start > stop || stop > x->shape[axis])
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "clmad_slice: [%zu, %zu) is not within axis %d of size %zu",
                           start, stop, axis, x->shape[axis]);
    shape_data *d = calloc(1, sizeof *d);
    if (!d)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in clmad_slice");
    d->axis = axis;
    d->start = start;
    size_t shape[CLMAD_MAX_DIMS], xs[CLMAD_MAX_DIMS], ys[CLMAD_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[axis] = stop - start;
    clmad_tensor *y = NULL;
    st = clmad_tensor_create(ctx, x->dtype, x->ndim, shape, NULL, &y);
    if (st == CLMAD_OK) {
        clmad__contiguous_strides(x->ndim, x->shape, xs);
        clmad__contiguous_strides(x->ndim, shape, ys);
        st = clmad__strided_copy(ctx, y, 0, ys, x, start * xs[axis], xs, x->ndim, shape, 1.0, 0);
    }
    return clmad__finish_op(ctx, &clmad__op_slice, &x, 1, y, d, st, out);
}

/* ---- concat --------------------------------------------------------------- */

static clmad_status concat_backward(clmad_context *ctx, clmad_node *node)
{
    shape_data *d = node->data;
    clmad_tensor *adj = node->out_adj[0];
    size_t as[CLMAD_MAX_DIMS], xs[CLMAD_MAX_DIMS], offset = 0;
    clmad__contiguous_strides(adj->ndim, adj->shape, as);
    clmad_status st = CLMAD_OK;
    for (int i = 0; i < node->n_inputs && st == CLMAD_OK; i++) {
        clmad_tensor *x = node->inputs[i];
        clmad__contiguous_strides(x->ndim, x->shape, xs);
        st = scatter_grad(ctx, node, i, adj, offset * as[d->axis], as, 0, xs, x->ndim, x->shape, 1);
        offset += x->shape[d->axis];
    }
    return st;
}

const clmad_op clmad__op_concat = {.name = "clmad_concat", .backward = concat_backward,
                                   .free_data = clmad__free_node_data, .kind = CLMAD_OP_SHAPE};

clmad_status clmad_concat(clmad_context *ctx, int n, clmad_tensor *const *xs, int axis,
                          clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_concat");
    clmad_status ready = clmad__region_inputs_ready(ctx, xs, n);
    if (ready != CLMAD_OK)
        return ready;
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_concat: ctx is NULL");
    if (n < 1 || !xs || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_concat: NULL argument or n < 1");
    for (int i = 0; i < n; i++)
        if (!xs[i])
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_concat: input %d is NULL", i);
    for (int i = 0; i < n; i++) {
        clmad_status checked = clmad__check_same_context(ctx, xs[i], "clmad_concat", "xs[%d]", i);
        if (checked != CLMAD_OK)
            return checked;
    }
    clmad_status st = check_axis(ctx, "clmad_concat", xs[0], &axis);
    if (st != CLMAD_OK)
        return st;
    size_t shape[CLMAD_MAX_DIMS];
    memcpy(shape, xs[0]->shape, sizeof shape);
    shape[axis] = 0;
    for (int i = 0; i < n; i++) {
        const clmad_tensor *x = xs[i];
        if (x->dtype != xs[0]->dtype)
            return clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_concat: input %d has another dtype", i);
        int ok = x->ndim == xs[0]->ndim;
        for (int dim = 0; ok && dim < x->ndim; dim++)
            ok = dim == axis || x->shape[dim] == xs[0]->shape[dim];
        if (!ok)
            return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                               "clmad_concat: input %d does not match input 0 outside axis %d", i, axis);
        if (x->shape[axis] > SIZE_MAX - shape[axis])
            return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY,
                               "clmad_concat: the sizes along axis %d overflow size_t at input %d", axis, i);
        shape[axis] += x->shape[axis];
    }
    shape_data *d = calloc(1, sizeof *d);
    if (!d)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in clmad_concat");
    d->axis = axis;
    clmad_tensor *y = NULL;
    st = clmad_tensor_create(ctx, xs[0]->dtype, xs[0]->ndim, shape, NULL, &y);
    size_t ys[CLMAD_MAX_DIMS], s[CLMAD_MAX_DIMS], offset = 0;
    if (st == CLMAD_OK)
        clmad__contiguous_strides(y->ndim, shape, ys);
    for (int i = 0; i < n && st == CLMAD_OK; i++) {
        clmad__contiguous_strides(xs[i]->ndim, xs[i]->shape, s);
        st = clmad__strided_copy(ctx, y, offset * ys[axis], ys, xs[i], 0, s, y->ndim, xs[i]->shape, 1.0, 0);
        offset += xs[i]->shape[axis];
    }
    return clmad__finish_op(ctx, &clmad__op_concat, xs, n, y, d, st, out);
}

/* ---- reshape -------------------------------------------------------------- */

static clmad_status reshape_backward(clmad_context *ctx, clmad_node *node)
{
    clmad_tensor *x = node->inputs[0], *adj = node->out_adj[0];
    size_t dims[1] = {x->numel}, one[1] = {1};
    return scatter_grad(ctx, node, 0, adj, 0, one, 0, one, 1, dims, 1);
}

const clmad_op clmad__op_reshape = {.name = "clmad_reshape", .backward = reshape_backward, .kind = CLMAD_OP_SHAPE};

clmad_status clmad_reshape(clmad_context *ctx, clmad_tensor *x, int ndim, const size_t *shape,
                           clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_reshape");
    READS_ONLY(ctx, x, NULL);
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_reshape: ctx is NULL");
    if (!x || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_reshape: NULL argument");
    clmad_status checked = clmad__check_same_context(ctx, x, "clmad_reshape", "x");
    if (checked != CLMAD_OK)
        return checked;
    size_t numel;
    clmad_status st = clmad__shape_numel(ctx, ndim, shape, clmad_dtype_size(x->dtype), &numel);
    if (st != CLMAD_OK)
        return st;
    if (numel != x->numel)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "clmad_reshape: %zu elements cannot take a shape of %zu",
                           x->numel, numel);
    clmad_tensor *y = NULL;
    st = clmad_tensor_create(ctx, x->dtype, ndim, shape, NULL, &y);
    if (st == CLMAD_OK && numel > 0) {
        cl_int err = clEnqueueCopyBuffer(ctx->queue, x->mem, y->mem, 0, 0, clmad__tensor_bytes(x), 0,
                                         NULL, NULL);
        if (err != CL_SUCCESS)
            st = clmad__fail_cl(ctx, err, "clEnqueueCopyBuffer");
    }
    return clmad__finish_op(ctx, &clmad__op_reshape, &x, 1, y, NULL, st, out);
}

/* ---- transpose ------------------------------------------------------------ */

static clmad_status transpose_backward(clmad_context *ctx, clmad_node *node)
{
    shape_data *d = node->data;
    clmad_tensor *x = node->inputs[0], *adj = node->out_adj[0];
    size_t xs[CLMAD_MAX_DIMS], as[CLMAD_MAX_DIMS], ps[CLMAD_MAX_DIMS];
    clmad__contiguous_strides(x->ndim, x->shape, xs);
    clmad__contiguous_strides(adj->ndim, adj->shape, as);
    for (int i = 0; i < x->ndim; i++)
        ps[i] = xs[d->perm[i]];
    return scatter_grad(ctx, node, 0, adj, 0, as, 0, ps, adj->ndim, adj->shape, 1);
}

const clmad_op clmad__op_transpose = {.name = "clmad_transpose", .backward = transpose_backward,
                                      .free_data = clmad__free_node_data, .kind = CLMAD_OP_SHAPE};

clmad_status clmad_transpose(clmad_context *ctx, clmad_tensor *x, const int *perm, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_transpose");
    READS_ONLY(ctx, x, NULL);
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_transpose: ctx is NULL");
    if (!x || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_transpose: NULL argument");
    clmad_status checked = clmad__check_same_context(ctx, x, "clmad_transpose", "x");
    if (checked != CLMAD_OK)
        return checked;
    shape_data *d = calloc(1, sizeof *d);
    if (!d)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in clmad_transpose");
    int seen[CLMAD_MAX_DIMS] = {0};
    for (int i = 0; i < x->ndim; i++) {
        int p = perm ? perm[i] : x->ndim - 1 - i;
        if (p < 0 || p >= x->ndim || seen[p]++) {
            free(d);
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                               "clmad_transpose: perm is not a permutation of 0..%d", x->ndim - 1);
        }
        d->perm[i] = p;
    }
    size_t shape[CLMAD_MAX_DIMS], xs[CLMAD_MAX_DIMS], src[CLMAD_MAX_DIMS], ys[CLMAD_MAX_DIMS];
    clmad__contiguous_strides(x->ndim, x->shape, xs);
    for (int i = 0; i < x->ndim; i++) {
        shape[i] = x->shape[d->perm[i]];
        src[i] = xs[d->perm[i]];
    }
    clmad_tensor *y = NULL;
    clmad_status st = clmad_tensor_create(ctx, x->dtype, x->ndim, shape, NULL, &y);
    if (st == CLMAD_OK) {
        clmad__contiguous_strides(x->ndim, shape, ys);
        st = clmad__strided_copy(ctx, y, 0, ys, x, 0, src, x->ndim, shape, 1.0, 0);
    }
    return clmad__finish_op(ctx, &clmad__op_transpose, &x, 1, y, d, st, out);
}

clmad_shape_op clmad__shape_node(const clmad_node *node, int *axis, size_t *start, int *perm)
{
    /* The operation first: only a shape node's data is a shape_data. */
    const clmad_shape_op op = node->op == &clmad__op_reshape     ? CLMAD_SHAPE_RESHAPE
                              : node->op == &clmad__op_slice     ? CLMAD_SHAPE_SLICE
                              : node->op == &clmad__op_concat    ? CLMAD_SHAPE_CONCAT
                              : node->op == &clmad__op_transpose ? CLMAD_SHAPE_TRANSPOSE
                                                                 : CLMAD_SHAPE_NONE;
    const shape_data *d = node->data;
    if (op == CLMAD_SHAPE_NONE || op == CLMAD_SHAPE_RESHAPE || !d)
        return op == CLMAD_SHAPE_RESHAPE || d ? op : CLMAD_SHAPE_NONE;
    *axis = d->axis;
    *start = d->start;
    for (int i = 0; i < CLMAD_MAX_DIMS; i++)
        perm[i] = d->perm[i];
    return op;
}
