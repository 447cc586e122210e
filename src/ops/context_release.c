/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_context_release: drops what each layer keeps, then the user's reference. */
#include "ops/builtins.h"
#include "tape/tape.h"
#include "runtime/context_guard.h"

void clmad_context_release(clmad_context *ctx)
{
    CLMAD_GUARD_WAIT(ctx);
    if (!ctx || ctx->released) /* a second release has no reference left to drop */
        return;
    clmad__context_release_begin(ctx);
    /* Drop what the context keeps itself (the tape's references to tensors
     * and kernels, the builtins, the staging area, the pooled buffers),
     * then the user's reference: the rest goes with the last tensor or
     * kernel. */
    clmad__tape_drop(ctx);
    clmad__builtins_drop(ctx);
    clmad__staging_drop_owned(ctx);
    clmad__context_release_end(ctx);
}
