/* SPDX-License-Identifier: Apache-2.0 */
/* What the index operations (ops/index_*.c, kernels in cl/index.cl) share:
 * the check of index tensors, the view of a tensor along an axis, and
 * their launches. */
#ifndef CLMAD_OPS_INDEX_H
#define CLMAD_OPS_INDEX_H

#include "ops/ops.h"

/* A tensor seen along one axis: outer x len x inner. */
typedef struct clmad_axis_view {
    int axis;         /* in 0..ndim-1 */
    size_t outer, len, inner;
} clmad_axis_view;

/* The view of t along axis (negative counts from the end); CLMAD_ERR_INVALID_ARGUMENT
 * naming `call` when the axis is outside t's rank. */
clmad_status clmad__axis_view(clmad_context *ctx, const char *call, const clmad_tensor *t, int axis,
                              clmad_axis_view *v);

/* Checks an index tensor argument `what` of `call`: not NULL, of ctx, of
 * dtype i64 (CLMAD_ERR_DTYPE otherwise), every element in [0, limit): a
 * kernel checks them on the device and the call waits for its one flag
 * (CLMAD_ERR_INVALID_ARGUMENT naming the first bad index and its value). */
clmad_status clmad__check_indices(clmad_context *ctx, const char *call, const char *what, clmad_tensor *idx,
                                  size_t limit);

/* The node data of an index operation: the axis view of its source and
 * the length of the index along it. */
typedef struct clmad_index_data {
    clmad_axis_view v;
    size_t k_len;
} clmad_index_data;

/* dst (+)= src gathered (CLMAD_INDEX_GATHER: dst and idx of one shape) or
 * scattered (CLMAD_INDEX_SCATTER_ADD: src and idx of one shape) along the
 * axis of view v (of the larger-or-scattered-into tensor), k_len indices
 * along it; with accumulate 0 every element of dst is written. */
clmad_status clmad__index_move(clmad_context *ctx, clmad_kernel_id id, clmad_tensor *dst, clmad_tensor *src,
                               clmad_tensor *idx, clmad_axis_view v, size_t k_len, int accumulate);

/* The descriptors of the index operations' nodes (tape.h): index_select and
 * embedding (index_select.c), gather and scatter_add (index_gather.c),
 * cast (index_cast.c). */
extern const clmad_op clmad__op_index_select, clmad__op_embedding;
extern const clmad_op clmad__op_gather, clmad__op_scatter_add;
extern const clmad_op clmad__op_cast;

/* ---- for clmad_hvp (ops/hvp_index.c) ---------------------------------------
 * The select operation's linear map or its adjoint applied to other tensors
 * (tangents) with the node's index. */

/* The rows of x (shaped like the select node's input) that the node's index
 * picks: a new tensor of the node's output shape. */
clmad_status clmad__select_apply(clmad_context *ctx, const clmad_node *node, clmad_tensor *x, clmad_tensor **out);

/* g (shaped like the select node's output) added back into the rows it came
 * from: a new tensor of the node's input shape. */
clmad_status clmad__select_adjoint(clmad_context *ctx, const clmad_node *node, clmad_tensor *g, clmad_tensor **out);

#endif
