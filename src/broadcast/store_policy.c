/* SPDX-License-Identifier: Apache-2.0 */
/* The partials policy a broadcast node is recorded under (DESIGN.md 5). */
#include "broadcast/node.h"

int clmad__bcast_choose_store(const clmad_context *ctx, const clmad_bcast_plan *plan, int n_active, int n_outputs,
                              clmad_dtype dtype)
{
    switch (ctx->tape.policy) {
    case CLMAD_PARTIALS_STORE: return 1;
    case CLMAD_PARTIALS_RECOMPUTE: return 0;
    default: {
        /* GPUs are bound by memory traffic, which storing the partials
         * adds to (written forward, read backward), while recomputing them
         * costs arithmetic that GPUs have to spare; CPUs are bound by the
         * arithmetic (the transcendental functions), which RECOMPUTE does
         * twice. bench_hmlstm, 2048 x 2048: RECOMPUTE 0.91x the time of
         * STORE on an H100, 1.46x on POCL. */
        if (ctx->info.type == CLMAD_DEVICE_GPU)
            return 0;
        double bytes = (double)plan->numel * n_active * n_outputs * (double)clmad_dtype_size(clmad__compute_dtype(dtype));
        return bytes <= (double)ctx->info.global_mem_bytes / 4;
    }
    }
}
