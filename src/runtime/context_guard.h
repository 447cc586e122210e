/* SPDX-License-Identifier: Apache-2.0 */
/* The context's busy mark: a context is used by one thread at a time, and
 * a public call that finds another thread inside the same context fails
 * with CLMAD_ERR_CONCURRENT_USE instead of corrupting it (wrong sums, double
 * frees in the driver were seen without it). Every public entry point that
 * takes a context or one of its objects starts with CLMAD_GUARD; the calls
 * that cannot report an error (releases, clmad_tape_clear, ...) start with
 * CLMAD_GUARD_WAIT and wait for the other thread's call to end instead.
 * Calls the library makes to its own public functions on the thread that
 * holds the mark pass through (re-entrant). */
#ifndef CLMAD_CONTEXT_GUARD_H
#define CLMAD_CONTEXT_GUARD_H

#include "clmad.h"

/* One guarded call on this thread: on the thread's stack, linked to the
 * calls it runs inside, so that a context destroyed during the call (its
 * last object released) is forgotten before the call leaves it. */
typedef struct clmad_guard {
    clmad_context *ctx;        /* the context marked by this call, NULL: nothing to leave */
    struct clmad_guard *outer; /* the guarded call this one runs inside, on this thread */
    int linked;                /* this call is in the thread's chain (it marked ctx) */
} clmad_guard;

/* Marks ctx busy for this thread (NULL: nothing to mark). CLMAD_OK, or,
 * when another thread holds it and mode is CLMAD_GUARD_REFUSE or
 * CLMAD_GUARD_KEEPS_HELD, CLMAD_ERR_CONCURRENT_USE with the message naming
 * `call` (read through clmad_last_error(ctx) on this thread). With
 * CLMAD_GUARD_WAITS, waits for the other thread's call to end. The
 * outermost CLMAD_GUARD_REFUSE call then flushes the held tensors
 * (held.h), returning the flush's error. */
clmad_status clmad__guard_enter(clmad_guard *g, const clmad_context *ctx, const char *call, int mode);

/* Ends the call of g: the outermost call on the thread clears the mark. */
void clmad__guard_leave(clmad_guard *g);

/* ctx is being destroyed inside a call of this thread: its guards forget it. */
void clmad__guard_forget(const clmad_context *ctx);

#if defined(__GNUC__)
#define CLMAD_GUARD_CLEANUP __attribute__((cleanup(clmad__guard_leave)))
#else
#define CLMAD_GUARD_CLEANUP
#endif

/* First statement of a public call on ctx (may be NULL): returns
 * CLMAD_ERR_CONCURRENT_USE when another thread is inside ctx; then, in the
 * outermost call, runs the work fusion holds back (held.h) and returns its
 * error if it fails; leaves the mark on every return (cleanup attribute;
 * compilers without it get no detection and no fusion: the guard is then
 * a no-op). CLMAD_GUARD_HOLDING is for the calls that handle held tensors
 * themselves (they fuse them or run what they read, their inputs'
 * (clmad__inputs_ready): clmad_dot, clmad_sum, clmad_mul, clmad_broadcast, the products, the
 * losses, the row and shape operations and gathers (clmad_matmul, clmad_cross_entropy,
 * clmad_softmax, clmad_reshape, clmad_gather, clmad_compare, clmad_cast, ...: ops/region.h READS_ONLY),
 * clmad_backward, clmad_tensor_read) and for
 * those that read no tensor (clmad_kernel_create, and clmad_tensor_create,
 * clmad_tensor_fill, clmad_tensor_zeros and clmad_tensor_scalar, which write only their new
 * tensor: a scalar made for a user stage, g(y, 0.5) in Python, keeps y held;
 * and clmad_set_partials_policy, whose setting the held nodes do not read);
 * CLMAD_GUARD_WAIT runs none
 * (releases drop held work, they never need it). */
enum { CLMAD_GUARD_REFUSE = 0, CLMAD_GUARD_WAITS = 1, CLMAD_GUARD_KEEPS_HELD = 2 };
#if defined(__GNUC__)
#define CLMAD_GUARD_MODE(ctx, call, mode)                                        \
    clmad_guard clmad_guard_ CLMAD_GUARD_CLEANUP;                                \
    const clmad_status clmad_guard_status_ =                                     \
        clmad__guard_enter(&clmad_guard_, (ctx), (call), (mode));                \
    if (clmad_guard_status_ != CLMAD_OK)                                         \
    return clmad_guard_status_
#define CLMAD_GUARD(ctx, call) CLMAD_GUARD_MODE(ctx, call, CLMAD_GUARD_REFUSE)
#define CLMAD_GUARD_HOLDING(ctx, call) CLMAD_GUARD_MODE(ctx, call, CLMAD_GUARD_KEEPS_HELD)
#define CLMAD_GUARD_WAIT(ctx)                                                    \
    clmad_guard clmad_guard_ CLMAD_GUARD_CLEANUP;                                \
    clmad__guard_enter(&clmad_guard_, (ctx), NULL, CLMAD_GUARD_WAITS)
#else
#define CLMAD_GUARD(ctx, call) (void)0
#define CLMAD_GUARD_HOLDING(ctx, call) (void)0
#define CLMAD_GUARD_WAIT(ctx) (void)0
#endif

#endif
