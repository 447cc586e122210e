/* SPDX-License-Identifier: Apache-2.0 */
/* Lazy regions (docs/fusion.md): a chain of held elementwise calls read by
 * a call that reads only its inputs (a GEMM) runs as one kernel when
 * nobody but the chain holds its intermediates, and backward forms the
 * chain's gradients in one kernel too. */
#ifndef CLMAD_OPS_REGION_H
#define CLMAD_OPS_REGION_H

#include "ops/ops.h"

/* clmad__inputs_ready (held.h) for ts[0..n), for a call that reads them
 * and writes only new tensors: a held t that ends a chain of stages over
 * a held broadcast y (the chains a loss kernel takes: fused_loss.h), whose
 * y and values between are held by nobody but the chain and the tape, is
 * written by one kernel from y's inputs, y and the values between left
 * held (then counted in clmad_stats.fused_regions). Same values as
 * eager. */
clmad_status clmad__region_inputs_ready(clmad_context *ctx, clmad_tensor *const *ts, int n);

/* After CLMAD_GUARD_HOLDING in a call that reads a and b (b may be NULL)
 * and writes only new tensors: their held work (a region where one
 * ends), returning its error. */
#define READS_ONLY(ctx, a, b)                                                               \
    do {                                                                                    \
        clmad_tensor *reads_only_[2] = {(a), (b)};                                          \
        const clmad_status reads_only_status_ = clmad__region_inputs_ready(ctx, reads_only_, 2); \
        if (reads_only_status_ != CLMAD_OK)                                                 \
            return reads_only_status_;                                                      \
    } while (0)

#endif
