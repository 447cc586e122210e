/* SPDX-License-Identifier: Apache-2.0 */
/* Scopes: the tensors made since a mark, released together (scope.c). */
#ifndef CLMAD_SCOPE_H
#define CLMAD_SCOPE_H

#include "runtime/tensor.h"

/* Enters t, just made, in the innermost open scope of its context (a no-op
 * when none is open or tracking is paused). The scope takes a reference of
 * its own: t then has the caller's (scope_caller_ref until the caller
 * releases it) and the scope's; clmad_scope_end drops the scope's and the
 * caller's when still there, and when the scope's is the last one left,
 * clmad__tensor_unref frees t at once. CLMAD_ERR_OUT_OF_MEMORY when the
 * list cannot grow. */
clmad_status clmad__scope_track(clmad_tensor *t);

/* Empties t's entry, its reference not dropped (tensor.c, scope.c). */
void clmad__scope_forget(clmad_tensor *t);

/* Takes t out of its scope, leaving the caller exactly one reference from
 * its creation (clmad_scope_keep; clmad keeps its own temporaries with it,
 * e.g. what a tape node holds past the scope). */
void clmad__scope_keep(clmad_tensor *t);

/* Tensors made between pause and resume are not entered in a scope: clmad
 * holds them itself (gradients, stored partials, optimizer state), and a
 * scope must not release the reference it keeps. */
void clmad__scope_pause(clmad_context *ctx);
void clmad__scope_resume(clmad_context *ctx);

/* Frees the lists (context destruction). */
void clmad__scope_free(clmad_context *ctx);

#endif
