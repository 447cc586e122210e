/* SPDX-License-Identifier: Apache-2.0 */
/* Held tensors: the context's list of them, running and dropping their work. */
#include "runtime/held.h"

static void unlink_held(clmad_tensor *t)
{
    for (clmad_tensor **p = &t->ctx->held_first; *p; p = &(*p)->held_next)
        if (*p == t) {
            *p = t->held_next;
            break;
        }
    t->held_next = NULL;
}

void clmad__hold(clmad_tensor *t, clmad_held *h)
{
    t->held = h;
    /* At the end: flushing runs the oldest first, the order eager ran them. */
    clmad_tensor **p = &t->ctx->held_first;
    while (*p)
        p = &(*p)->held_next;
    *p = t;
    t->held_next = NULL;
}

clmad_status clmad__tensor_ready(clmad_tensor *t)
{
    if (!t || !t->held)
        return CLMAD_OK;
    clmad_held *h = t->held;
    t->held = NULL;
    unlink_held(t);
    return h->run(h, t);
}

clmad_status clmad__tensors_ready(clmad_tensor *const *ts, int n)
{
    clmad_status st = CLMAD_OK;
    for (int i = 0; i < n && st == CLMAD_OK; i++)
        st = clmad__tensor_ready(ts[i]);
    return st;
}

clmad_status clmad__inputs_ready(clmad_context *ctx, clmad_tensor *const *ts, int n)
{
    clmad_status st = CLMAD_OK;
    for (int i = 0; i < n && st == CLMAD_OK; i++)
        if (ts && ts[i] && ts[i]->ctx == ctx)
            st = clmad__tensor_ready(ts[i]);
    return st;
}

clmad_status clmad__flush_held(clmad_context *ctx)
{
    clmad_status st = CLMAD_OK;
    while (ctx->held_first && st == CLMAD_OK)
        st = clmad__tensor_ready(ctx->held_first);
    return st;
}

void clmad__held_forget(clmad_tensor *t)
{
    if (!t->held)
        return;
    clmad_held *h = t->held;
    t->held = NULL;
    unlink_held(t);
    h->drop(h);
}

int clmad__fusion_enabled(const clmad_context *ctx)
{
#if defined(__GNUC__)
    return !ctx->fusion_disabled;
#else
    (void)ctx;
    return 0; /* no guards: nothing would run the held work */
#endif
}
