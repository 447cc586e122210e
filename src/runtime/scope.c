/* SPDX-License-Identifier: Apache-2.0 */
/* Scopes: a mark in the list of tensors made since the first open scope;
 * clmad_scope_end releases the caller's reference to every tensor made
 * since the innermost mark and still alive, so that a training step needs
 * no release of its intermediates. Entries are weak: a tensor freed before
 * the end empties its own entry (scope_slot). */
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

clmad_status clmad_scope_begin(clmad_context *ctx)
{
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
    if (!t)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_scope_keep: t is NULL");
    clmad__scope_forget(t);
    return CLMAD_OK;
}

int clmad_scope_depth(const clmad_context *ctx)
{
    return ctx ? (int)ctx->scope.depth : 0;
}
