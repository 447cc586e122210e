/* SPDX-License-Identifier: Apache-2.0 */
#include "runtime/context_guard.h"
#include "runtime/context.h"
#include "runtime/held.h"

#include <sched.h>
#include <stdatomic.h>

/* This thread's identity (the address of a thread-local byte: distinct per
 * live thread, no system call) and its innermost guarded call. */
static _Thread_local char thread_token;
static _Thread_local clmad_guard *innermost;

clmad_status clmad__guard_enter(clmad_guard *g, const clmad_context *cctx, const char *call, int mode)
{
    g->ctx = NULL;
    g->outer = innermost;
    g->linked = 0;
    if (!cctx)
        return CLMAD_OK;
    /* The mark is bookkeeping, not the context's logical state: a const
     * getter marks it too. */
    clmad_context *ctx = (clmad_context *)cctx;
    void *self = &thread_token;
    if (atomic_load_explicit(&ctx->busy_owner, memory_order_relaxed) == self)
        return CLMAD_OK; /* re-entrant: the outermost call leaves */
    void *expected = NULL;
    while (!atomic_compare_exchange_weak_explicit(&ctx->busy_owner, &expected, self,
                                                  memory_order_acquire, memory_order_relaxed)) {
        if (expected != NULL && mode != CLMAD_GUARD_WAITS)
            return clmad__refuse_concurrent(ctx, call);
        if (expected != NULL)
            sched_yield();
        expected = NULL;
    }
    clmad__forget_refusal(ctx);
    g->ctx = ctx;
    g->linked = 1;
    innermost = g;
    /* Anything this call does may read a held tensor: write them first. */
    if (mode == CLMAD_GUARD_REFUSE && ctx->held_first)
        return clmad__flush_held(ctx);
    return CLMAD_OK;
}

void clmad__guard_leave(clmad_guard *g)
{
    if (g->linked)
        innermost = g->outer;
    if (g->ctx)
        atomic_store_explicit(&g->ctx->busy_owner, NULL, memory_order_release);
}

void clmad__guard_forget(const clmad_context *ctx)
{
    for (clmad_guard *g = innermost; g; g = g->outer)
        if (g->ctx == ctx)
            g->ctx = NULL; /* the context is gone: its mark with it */
}
