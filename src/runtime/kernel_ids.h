/* SPDX-License-Identifier: Apache-2.0 */
/* The ids of the internal kernels that a context builds once per dtype. */
#ifndef CLMAD_KERNEL_IDS_H
#define CLMAD_KERNEL_IDS_H

/* Internal kernels of cl/ops.cl and cl/axis.cl, built once per context and
 * dtype (one program per file). */
typedef enum clmad_ops_kernel_id {
    CLMAD_OPS_STRIDED_COPY,
    CLMAD_OPS_REDUCE_SUM,
    CLMAD_OPS_ACCUMULATE,
    CLMAD_OPS_FILL,
    CLMAD_OPS_EXPAND_SCALED,
    CLMAD_OPS_DOT_PARTS,
    CLMAD_OPS_SUM_RANGES,
    CLMAD_OPS_DOT_RANGES,
    /* cl/axis.cl (src/ops_axis.c, src/ops_losses.c) */
    CLMAD_OPS_AXIS_REDUCE,
    CLMAD_OPS_AXIS_SOFTMAX,
    CLMAD_OPS_AXIS_MAX_GRAD,
    CLMAD_OPS_AXIS_LOGSUMEXP_GRAD,
    CLMAD_OPS_AXIS_SOFTMAX_GRAD,
    CLMAD_OPS_ONE_HOT,
    CLMAD_OPS_COUNT
} clmad_ops_kernel_id;

/* Kernels of cl/train.cl (random initialisation, in-place updates,
 * optimizer steps), built once per context and dtype (train_kernels.c). */
typedef enum clmad_train_kernel_id {
    CLMAD_TRAIN_RAND,
    CLMAD_TRAIN_AXPBY,
    CLMAD_TRAIN_SGD,
    CLMAD_TRAIN_ADAM,
    CLMAD_TRAIN_COUNT
} clmad_train_kernel_id;

#endif
