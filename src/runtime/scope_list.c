/* SPDX-License-Identifier: Apache-2.0 */
/* The list of tensors made since the first open scope (scope.c holds the
 * public calls over it). Each entry holds one reference of its own (see
 * scope.h); a tensor freed before its scope's end (its other references
 * gone) empties its entry (scope_slot). Nothing here calls into tensors,
 * so that tensor.c can track and forget without a cycle. */
#include "runtime/scope.h"

#include <stdlib.h>

clmad_status clmad__scope_track(clmad_tensor *t)
{
    clmad_context *ctx = t->ctx;
    if (ctx->scope.depth == 0 || ctx->scope.paused > 0)
        return CLMAD_OK;
    if (ctx->scope.count == ctx->scope.cap) {
        size_t cap = ctx->scope.cap ? 2 * ctx->scope.cap : 256;
        clmad_tensor **grown = realloc(ctx->scope.list, cap * sizeof *grown);
        if (!grown)
            return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory growing a scope");
        ctx->scope.list = grown;
        ctx->scope.cap = cap;
    }
    ctx->scope.list[ctx->scope.count++] = t;
    t->scope_slot = ctx->scope.count;
    t->refcount++; /* the scope's own, besides the caller's */
    t->scope_caller_ref = 1;
    return CLMAD_OK;
}

void clmad__scope_forget(clmad_tensor *t)
{
    if (!t || !t->scope_slot)
        return;
    t->ctx->scope.list[t->scope_slot - 1] = NULL;
    t->scope_slot = 0;
}

void clmad__scope_pause(clmad_context *ctx)
{
    ctx->scope.paused++;
}

void clmad__scope_resume(clmad_context *ctx)
{
    ctx->scope.paused--;
}

void clmad__scope_free(clmad_context *ctx)
{
    free(ctx->scope.list);
    free(ctx->scope.marks);
}
