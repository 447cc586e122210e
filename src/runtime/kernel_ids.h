/* SPDX-License-Identifier: Apache-2.0 */
/* The internal kernels that a context builds once per dtype (kernels.c). */
#ifndef CLMAD_KERNEL_IDS_H
#define CLMAD_KERNEL_IDS_H

/* X(id, file under cl/, kernel name). The kernels of one file share one
 * program per context and dtype. */
#define CLMAD_CACHED_KERNELS(X)                                                   \
    X(CLMAD_OPS_STRIDED_COPY, "ops.cl", "clmad_strided_copy")                    \
    X(CLMAD_OPS_REDUCE_SUM, "ops.cl", "clmad_reduce_sum")                        \
    X(CLMAD_OPS_REDUCE_SUM_TAIL, "ops.cl", "clmad_reduce_sum_tail")              \
    X(CLMAD_OPS_ACCUMULATE, "ops.cl", "clmad_accumulate")                        \
    X(CLMAD_OPS_FILL, "ops.cl", "clmad_fill")                                    \
    X(CLMAD_OPS_EXPAND_SCALED, "ops.cl", "clmad_expand_scaled")                  \
    X(CLMAD_OPS_COPY_CONTIGUOUS, "ops.cl", "clmad_copy_contiguous")              \
    X(CLMAD_OPS_DOT_PARTS, "ops.cl", "clmad_dot_parts")                          \
    X(CLMAD_OPS_SUM_RANGES, "ops.cl", "clmad_sum_ranges")                        \
    X(CLMAD_OPS_DOT_RANGES, "ops.cl", "clmad_dot_ranges")                        \
    X(CLMAD_OPS_GEMM_SMALL, "ops.cl", "clmad_gemm_small")                        \
    /* operations along one axis (ops/axis.c, ops/losses.c) */                    \
    X(CLMAD_OPS_AXIS_REDUCE, "axis.cl", "clmad_axis_reduce")                     \
    X(CLMAD_OPS_AXIS_SOFTMAX, "axis.cl", "clmad_axis_softmax")                   \
    X(CLMAD_OPS_AXIS_MAX_GRAD, "axis.cl", "clmad_axis_max_grad")                 \
    X(CLMAD_OPS_AXIS_LOGSUMEXP_GRAD, "axis.cl", "clmad_axis_logsumexp_grad")     \
    X(CLMAD_OPS_AXIS_SOFTMAX_GRAD, "axis.cl", "clmad_axis_softmax_grad")         \
    X(CLMAD_OPS_AXIS_REDUCE_GROUPS, "axis.cl", "clmad_axis_reduce_groups")       \
    X(CLMAD_OPS_AXIS_SOFTMAX_GROUPS, "axis.cl", "clmad_axis_softmax_groups")     \
    X(CLMAD_OPS_AXIS_LOGSUMEXP_GRAD_GROUPS, "axis.cl", "clmad_axis_logsumexp_grad_groups") \
    X(CLMAD_OPS_AXIS_SOFTMAX_GRAD_GROUPS, "axis.cl", "clmad_axis_softmax_grad_groups") \
    X(CLMAD_OPS_ONE_HOT, "axis.cl", "clmad_one_hot")                             \
    /* random initialisation, in-place updates, optimizer steps */                \
    X(CLMAD_TRAIN_RAND, "train.cl", "clmad_rand")                                \
    X(CLMAD_TRAIN_AXPBY, "train.cl", "clmad_axpby")                              \
    X(CLMAD_TRAIN_SGD, "train.cl", "clmad_sgd")                                  \
    X(CLMAD_TRAIN_ADAM, "train.cl", "clmad_adam")                                \
    X(CLMAD_TRAIN_SGD_GROUP, "train.cl", "clmad_sgd_group")                      \
    X(CLMAD_TRAIN_ADAM_GROUP, "train.cl", "clmad_adam_group")                    \
    X(CLMAD_TRAIN_UNSCALE_CHECK, "train.cl", "clmad_unscale_check")              \
    /* index operations (ops/index_*.c); built for integer dtypes too */          \
    X(CLMAD_INDEX_CHECK, "index.cl", "clmad_index_check")                        \
    X(CLMAD_INDEX_ARGEXT, "index.cl", "clmad_argext")                            \
    X(CLMAD_INDEX_SELECT, "index.cl", "clmad_index_select")                      \
    X(CLMAD_INDEX_SELECT_GRAD, "index.cl", "clmad_index_select_grad")            \
    X(CLMAD_INDEX_GATHER, "index.cl", "clmad_gather")                            \
    X(CLMAD_INDEX_SCATTER_ADD, "index.cl", "clmad_scatter_add")                  \
    X(CLMAD_INDEX_ONE_HOT, "index.cl", "clmad_one_hot_index")                    \
    X(CLMAD_INDEX_CAST_F32, "index.cl", "clmad_cast_from_f32")                   \
    X(CLMAD_INDEX_CAST_F64, "index.cl", "clmad_cast_from_f64")                   \
    X(CLMAD_INDEX_CAST_I32, "index.cl", "clmad_cast_from_i32")                   \
    X(CLMAD_INDEX_CAST_I64, "index.cl", "clmad_cast_from_i64")                   \
    X(CLMAD_INDEX_CAST_U8, "index.cl", "clmad_cast_from_u8")                     \
    /* 16-bit floats to and from f32 or f64 (built for the f32 or f64 side) */   \
    X(CLMAD_HALF_F16_TO_REAL, "half.cl", "clmad_f16_to_real")                    \
    X(CLMAD_HALF_BF16_TO_REAL, "half.cl", "clmad_bf16_to_real")                  \
    X(CLMAD_HALF_REAL_TO_F16, "half.cl", "clmad_real_to_f16")                    \
    X(CLMAD_HALF_REAL_TO_BF16, "half.cl", "clmad_real_to_bf16")

typedef enum clmad_kernel_id {
#define CLMAD__KERNEL_ID(id, file, name) id,
    CLMAD_CACHED_KERNELS(CLMAD__KERNEL_ID)
#undef CLMAD__KERNEL_ID
    CLMAD_KERNEL_COUNT
} clmad_kernel_id;

#endif
