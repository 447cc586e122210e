/* SPDX-License-Identifier: Apache-2.0 */
/* Held tensors: a layer above may hold back the kernel that writes a
 * tensor until it knows the tensor's consumers (fusion: a loss over a
 * broadcast's output then never writes it). A held tensor has a buffer but
 * no values yet. Every public call that may read it runs the held work
 * first: the guard of every call except the few that know about held
 * tensors flushes them all (context_guard.h), so the work runs before
 * anything else sees the buffer, exactly as the eager call would have. */
#ifndef CLMAD_HELD_H
#define CLMAD_HELD_H

#include "runtime/tensor.h"

/* The held work of one tensor, made by the layer that holds it: run
 * writes t's values and frees h; drop frees h unrun (t is being freed, so
 * nobody can read the values). Both are called at most once. */
typedef struct clmad_held clmad_held;
struct clmad_held {
    clmad_status (*run)(clmad_held *h, clmad_tensor *t);
    void (*drop)(clmad_held *h);
};

/* t's values come from h (owned by t from now on). t must not be held. */
void clmad__hold(clmad_tensor *t, clmad_held *h);

/* Runs t's held work, if any: then t has its values. */
clmad_status clmad__tensor_ready(clmad_tensor *t);

/* clmad__tensor_ready for each of ts[0..n), in order; stops at an error. */
clmad_status clmad__tensors_ready(clmad_tensor *const *ts, int n);

/* clmad__tensor_ready for those of ts[0..n) that belong to ctx (NULL and
 * other contexts' tensors are the caller's to refuse): what a call that
 * reads only ts and writes only new tensors runs, instead of every held
 * tensor's work (a held loss's y then stays unwritten). */
clmad_status clmad__inputs_ready(clmad_context *ctx, clmad_tensor *const *ts, int n);

/* Runs the held work of every tensor of ctx, oldest first. */
clmad_status clmad__flush_held(clmad_context *ctx);

/* t is being freed: its held work is dropped unrun. */
void clmad__held_forget(clmad_tensor *t);

/* 1 if fusion may hold work on ctx: CLMAD_PARAM_DISABLE_FUSION is 0 and
 * the compiler gives the guards (context_guard.h) that flush it. */
int clmad__fusion_enabled(const clmad_context *ctx);

#endif
