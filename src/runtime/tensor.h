/* SPDX-License-Identifier: Apache-2.0 */
/* Tensors: shape, dtype and a device buffer from the pool. */
#ifndef CLMAD_TENSOR_H
#define CLMAD_TENSOR_H

#include "runtime/context.h"

struct clmad_tensor {
    clmad_context *ctx;
    int refcount;
    clmad_dtype dtype;
    int ndim;
    size_t shape[CLMAD_MAX_DIMS];
    size_t numel;
    cl_mem mem;        /* NULL for an empty tensor (numel == 0) */
    size_t capacity;   /* bytes of mem, as the pool made it (0 when wrapped) */
    /* The caller's buffer (clmad_tensor_wrap_cl), retained, or NULL: mem is
     * then that buffer or a sub-buffer of it at wrapped_offset, and never
     * goes to the pool. */
    cl_mem wrapped;
    size_t wrapped_offset;
    int read_only;     /* wrapped CL_MEM_READ_ONLY: kernels may not write mem */
    size_t scope_slot; /* 1 + its index in ctx->scope.list, or 0: not in a scope */
    /* In a scope: 1 while the reference handed to the caller at creation is
     * unreleased (the scope's end drops it with the scope's own). */
    int scope_caller_ref;
    /* Reverse mode (see tape.h). */
    int requires_grad;         /* leaf: set by the user; outputs of recorded ops: 1 */
    clmad_tensor *grad;        /* leaf gradient accumulated by backward, or NULL */
    struct clmad_node *node;   /* producing node, valid while node_gen is current */
    uint64_t node_gen;
    int out_index;             /* which output of node */
    int tape_refs;             /* references held by tape nodes (as an input) */
    /* Fusion (held.h): the work that will write mem, NULL once written. */
    struct clmad_held *held;
    struct clmad_tensor *held_next; /* the context's next held tensor */
};

/* Checks a tensor handed to `call` on ctx: CLMAD_ERR_STATE when ctx was
 * released (clmad__check_open), CLMAD_ERR_INVALID_ARGUMENT when t belongs
 * to another context, the message naming the call and the argument (what,
 * a printf format: "x", "xs[%d]", "input %d"). A NULL t passes (callers
 * check NULL themselves, with their own rules). */
clmad_status clmad__check_same_context(clmad_context *ctx, const clmad_tensor *t, const char *call,
                                       const char *what, ...) CLMAD_PRINTF(4, 5);

/* CLMAD_ERR_INVALID_ARGUMENT, naming `call` and the argument `what`, when
 * t is a wrapped read-only buffer (writing it is undefined in OpenCL):
 * every call that writes into an existing tensor checks it first. */
/* clmad_tensor_read below the ops layer, for callers inside a guarded
 * call (CLMAD_GUARD): t's held work runs as held.h says, without forming a
 * lazy region (ops/tensor_read.c does). */
clmad_status clmad__tensor_read(clmad_tensor *t, void *host, size_t capacity_bytes);

clmad_status clmad__check_writable(const clmad_tensor *t, const char *call, const char *what);

/* A new tensor of ctx with one reference, dtype and shape (numel checked by
 * clmad__shape_numel), and no buffer yet; NULL when the host is out of
 * memory. The caller gives it a buffer and retains ctx for it. */
clmad_tensor *clmad__tensor_header(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                                   size_t numel);

/* Drops a reference that clmad itself holds (one it took with
 * clmad_tensor_retain: the tape's, a node's, an optimizer's). Unlike
 * clmad_tensor_release, never counts as the caller's release of the
 * reference a call handed out inside a scope. NULL is ignored. */
void clmad__tensor_unref(clmad_tensor *t);

/* Size in bytes of the tensor's elements. */
size_t clmad__tensor_bytes(const clmad_tensor *t);

/* Validates rank and shape and computes numel (guarding against overflow). */
clmad_status clmad__shape_numel(const clmad_context *ctx, int ndim, const size_t *shape,
                                size_t elem_size, size_t *numel);

#endif
