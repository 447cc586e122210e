/* SPDX-License-Identifier: Apache-2.0 */
/* Which builtins are loss stages: apart from the builtins' calls, so that
 * the loss and region code that asks does not depend on them (the calls
 * themselves end regions: ops/region.h). */
#include "ops/builtins.h"
#include "broadcast/codegen.h"
#include "runtime/context.h"

int clmad__builtin_stage_of(clmad_builtin_id id)
{
    switch (id) {
    case CLMAD_BUILTIN_ADD: return CLMAD_STAGE_ADD;
    case CLMAD_BUILTIN_SUB: return CLMAD_STAGE_SUB;
    case CLMAD_BUILTIN_MUL: return CLMAD_STAGE_MUL;
    case CLMAD_BUILTIN_DIV: return CLMAD_STAGE_DIV;
    case CLMAD_BUILTIN_POW: return CLMAD_STAGE_POW;
    case CLMAD_BUILTIN_NEG: return CLMAD_STAGE_NEG;
    case CLMAD_BUILTIN_EXP: return CLMAD_STAGE_EXP;
    case CLMAD_BUILTIN_LOG: return CLMAD_STAGE_LOG;
    case CLMAD_BUILTIN_TANH: return CLMAD_STAGE_TANH;
    case CLMAD_BUILTIN_SIGMOID: return CLMAD_STAGE_SIGMOID;
    case CLMAD_BUILTIN_RELU: return CLMAD_STAGE_RELU;
    case CLMAD_BUILTIN_SQRT: return CLMAD_STAGE_SQRT;
    default: return CLMAD_STAGE_NONE;
    }
}

int clmad__builtin_stage(const clmad_context *ctx, const clmad_kernel *k)
{
    for (int id = 0; ctx->builtins && id < CLMAD_BUILTIN_COUNT; id++)
        if (ctx->builtins->kernels[id] == k)
            return clmad__builtin_stage_of((clmad_builtin_id)id);
    return CLMAD_STAGE_NONE;
}

