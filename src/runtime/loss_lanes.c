/* SPDX-License-Identifier: Apache-2.0 */
/* How many work-items share one partial sum of an interleaved loss kernel
 * (codegen_loss.c's lanes). Any count gives the same bits: a part's terms
 * are added in the one work-item's order. */
#include "runtime/context.h"
#include "runtime/primitives.h"

/* Auto: enough lanes that parts x lanes work-items fill the device, taken
 * as compute units x 2 x its largest group (the 2048 threads an H100's SM
 * holds), in powers of two up to 8. On an H100 (2026-11-28, bench_hmlstm)
 * 8 lanes made the 1024 x 1024 loss (32768 parts) 1.7x faster, and cost
 * 9% at 4096 x 4096 (524288 parts, twice the device's threads). */
enum { MOST_AUTO_LANES = 8 };

int clmad__loss_lanes_for(const clmad_context *ctx, size_t parts)
{
    if (ctx->loss_lanes > 0)
        return ctx->loss_lanes;
    const size_t fill = (size_t)ctx->info.compute_units * 2 * ctx->info.max_work_group_size;
    int lanes = 1;
    while (lanes < MOST_AUTO_LANES && (size_t)lanes * 2 * parts <= fill &&
           (size_t)lanes * 2 * 32 <= ctx->info.max_work_group_size) /* groups of 32 parts x lanes */
        lanes *= 2;
    return lanes;
}

void clmad__sum_as_gpus(clmad_context *ctx, int lanes)
{
    ctx->sums_interleaved = 1;
    ctx->loss_lanes = lanes;
}

int clmad__loss_lanes(clmad_context *ctx, int lanes)
{
    const int before = ctx->loss_lanes;
    if (lanes >= 0)
        ctx->loss_lanes = lanes;
    return before;
}
