/* SPDX-License-Identifier: Apache-2.0 */
/* Scopes: clmad_scope_end drops the scope's own reference to every tensor
 * made since the innermost mark, and the caller's where the caller did not
 * release it, so that a training step needs no release of its
 * intermediates and a release by hand is never counted twice (the list:
 * scope_list.c). */
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
            int caller = t->scope_caller_ref;
            clmad__scope_forget(t);
            t->scope_caller_ref = 0;
            if (caller)
                clmad__tensor_unref(t); /* t has the scope's still: never frees */
            clmad__tensor_unref(t);
        }
    }
    clmad__context_unref(ctx);
    return CLMAD_OK;
}

void clmad__scope_keep(clmad_tensor *t)
{
    if (!t || !t->scope_slot)
        return;
    int caller = t->scope_caller_ref;
    clmad__scope_forget(t);
    t->scope_caller_ref = 0;
    /* The caller ends with one reference from the creation: its own, or,
     * when it released that one already, the scope's handed over. */
    if (caller)
        clmad__tensor_unref(t);
}

clmad_status clmad_scope_keep(clmad_tensor *t)
{
    CLMAD_GUARD(t ? t->ctx : NULL, "clmad_scope_keep");
    if (!t)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_scope_keep: t is NULL");
    clmad__scope_keep(t);
    return CLMAD_OK;
}

int clmad_scope_depth(const clmad_context *ctx)
{
    CLMAD_GUARD_WAIT(ctx);
    return ctx ? (int)ctx->scope.depth : 0;
}
