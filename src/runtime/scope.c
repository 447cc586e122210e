/* SPDX-License-Identifier: Apache-2.0 */
/* Scopes: clmad_scope_end releases the caller's reference to every tensor
 * made since the innermost mark and still alive, so that a training step
 * needs no release of its intermediates (the list: scope_list.c). */
#include "runtime/scope.h"
#include "runtime/context_guard.h"

#include <stdlib.h>

clmad_status clmad_scope_begin(clmad_context *ctx)
{
    CLMAD_GUARD(ctx, "clmad_scope_begin");
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_scope_begin: ctx is NULL");
    clmad_status st = clmad__check_open(ctx, "clmad_scope_begin");
    if (st != CLMAD_OK)
        return st;
    if (ctx->scope.depth == ctx->scope.marks_cap) {
        size_t cap = ctx->scope.marks_cap ? 2 * ctx->scope.marks_cap : 8;
        size_t *grown = realloc(ctx->scope.marks, cap * sizeof *grown);
        if (!grown)
            return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory opening a scope");
        ctx->scope.marks = grown;
        ctx->scope.marks_cap = cap;
    }
    ctx->scope.marks[ctx->scope.depth++] = ctx->scope.count;
    return CLMAD_OK;
}

clmad_status clmad_scope_end(clmad_context *ctx)
{
    CLMAD_GUARD(ctx, "clmad_scope_end");
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_scope_end: ctx is NULL");
    if (ctx->scope.depth == 0)
        return clmad__fail(ctx, CLMAD_ERR_STATE, "clmad_scope_end: no scope is open (clmad_scope_begin)");
    size_t mark = ctx->scope.marks[--ctx->scope.depth];
    clmad__context_retain(ctx); /* a released context must outlive the loop */
    /* Newest first, as a hand-written loop would release them. Releasing
     * one tensor never frees another of the list (tensors hold no tensors
     * but their gradient, which backward makes outside any scope). */
    while (ctx->scope.count > mark) {
        clmad_tensor *t = ctx->scope.list[--ctx->scope.count];
        if (t) {
            t->scope_slot = 0;
            clmad_tensor_release(t);
        }
    }
    clmad__context_unref(ctx);
    return CLMAD_OK;
}

clmad_status clmad_scope_keep(clmad_tensor *t)
{
    CLMAD_GUARD(t ? t->ctx : NULL, "clmad_scope_keep");
    if (!t)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_scope_keep: t is NULL");
    clmad__scope_forget(t);
    return CLMAD_OK;
}

int clmad_scope_depth(const clmad_context *ctx)
{
    CLMAD_GUARD_WAIT(ctx);
    return ctx ? (int)ctx->scope.depth : 0;
}
