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

#endif
