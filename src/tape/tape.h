/* SPDX-License-Identifier: Apache-2.0 */
/* The reverse-mode tape: nodes, gradient routing, backward. */
#ifndef CLMAD_TAPE_H
#define CLMAD_TAPE_H

#include "runtime/tensor.h"

typedef struct clmad_node clmad_node;

/* Computes the adjoints of the node's inputs from node->out_adj and hands
 * each to clmad__accumulate_input. out_adj entries may be NULL (zero). */
typedef clmad_status (*clmad_backward_fn)(clmad_context *ctx, clmad_node *node);

/* What fusion needs to know of an operation: the shape of its work. */
typedef enum clmad_op_kind {
    CLMAD_OP_ELEMENTWISE, /* each output element from the inputs' elements at its index */
    CLMAD_OP_REDUCTION,   /* one output element from many: clmad_op.reduction says how */
    CLMAD_OP_SHAPE,       /* moves elements, computes none: slice, concat, reshape, transpose */
    CLMAD_OP_OPAQUE       /* anything else: matrix products, index operations, softmax, cast */
} clmad_op_kind;

typedef enum clmad_reduction {
    CLMAD_REDUCTION_NONE,
    CLMAD_REDUCTION_SUM,
    CLMAD_REDUCTION_MEAN,
    CLMAD_REDUCTION_DOT, /* the sum of the product of two inputs */
    CLMAD_REDUCTION_MAX,
    CLMAD_REDUCTION_LOGSUMEXP
} clmad_reduction;

/* An operation's descriptor: a constant beside the operation's backward,
 * which each of its nodes points at. A node is recognised by it
 * (node->op == &clmad__op_dot). clmad_hvp finds its second-order rules by
 * it too, in the table of ops/hvp_rules.c: those rules call the operation
 * itself (and a broadcast's lie a layer above it), so pointers to them here
 * would make the files call each other in a cycle. */
typedef struct clmad_op {
    const char *name;                     /* for messages, unless the node has its own */
    clmad_backward_fn backward;
    void (*free_data)(clmad_node *node);  /* releases node->data; NULL when it keeps none */
    clmad_op_kind kind;
    clmad_reduction reduction;            /* CLMAD_OP_REDUCTION: which */
    const char *source;                   /* CLMAD_OP_ELEMENTWISE: the value in the ad_ vocabulary;
                                             NULL when each node's kernel has its own (broadcast) */
    /* 1: backward may finish without reading the adjoint's values (a fused
     * loss's, which only asks whether it is the seed), so clmad_backward
     * may hand it the seed unwritten (held); backward makes it ready
     * (clmad__tensor_ready) before it reads it. 0: it gets it written. */
    int reads_adjoint_late;
} clmad_op;

/* A node and its per-input and per-output arrays are one allocation sized
 * by the operation's arity: every recorded operation has a node, so it must
 * stay small (a few hundred bytes for a binary operation). */
struct clmad_node {
    const clmad_op *op;
    const char *name;                     /* for messages: op->name, or a broadcast's kernel name */
    void *data;                           /* released by op->free_data */
    uint64_t saved_bytes;                 /* device bytes node->data keeps */
    int n_inputs;
    clmad_tensor **inputs;                /* n_inputs strong references */
    int n_outputs;
    clmad_dtype dtype;
    /* Per output, n_outputs of each: */
    int *out_ndim;
    size_t (*out_shape)[CLMAD_MAX_DIMS];
    clmad_tensor **out_adj;               /* adjoints gathered during backward */
    /* Lazy adjoints, never expanded to the output's shape: out_adj[o] is one
     * value for every element (out_adj_scalar[o]) and/or is to be multiplied
     * by the one-element out_adj_scale[o]; it may be another node's tensor
     * (read only). Handed over by clmad__give_adjoint; only nodes with
     * lazy_adjoints set see them, the others get full tensors. */
    clmad_tensor **out_adj_scale;
    unsigned char *out_adj_scalar;
    unsigned char *out_adj_lazy;
    int lazy_adjoints;                    /* backward reads lazy adjoints (broadcast nodes) */
};

/* 1 if gradients must flow to t: a leaf that requires them, or the output
 * of a node on the current tape. */
int clmad__needs_grad(const clmad_context *ctx, const clmad_tensor *t);

/* 1 if the current tape still needs t's values: a node keeps it as an
 * input, or t is the output of a node on the tape. Writing into such a
 * tensor outside the tape would make backward wrong. */
int clmad__tape_holds(const clmad_context *ctx, const clmad_tensor *t);

/* CLMAD_ERR_STATE, naming `call` and `what`, when the tape holds t. */
clmad_status clmad__check_not_on_tape(clmad_context *ctx, const clmad_tensor *t, const char *call,
                                      const char *what);

/* 1 if an operation on these inputs must be recorded. */
int clmad__should_record(const clmad_context *ctx, clmad_tensor *const *inputs, int n);

/* Creates a node of op over inputs (retained) and outputs (marked as
 * produced by it), with data (may be NULL) released by op->free_data. The
 * node owns data from the call on: when recording fails, data is freed at
 * once. On success the tape owns the node; *node (if not NULL) is it. */
clmad_status clmad__record_op(clmad_context *ctx, const clmad_op *op, clmad_tensor *const *inputs, int n_inputs,
                              clmad_tensor **outputs, int n_outputs, void *data, clmad_node **node);

/* Frees data (may be NULL) with op->free_data, for a node that was not made. */
void clmad__discard_data(const clmad_op *op, void *data);

/* A free_data that frees node->data with free(). */
void clmad__free_node_data(clmad_node *node);

/* Adds bytes to what node keeps on the device for backward (and to the
 * context's tape_saved_bytes). */
void clmad__node_keeps(clmad_context *ctx, clmad_node *node, uint64_t bytes);

/* Where the adjoint of input j of node accumulates: the producing node's
 * out_adj slot, or the leaf's grad. NULL when the input needs no gradient. */
clmad_tensor **clmad__adjoint_slot(clmad_context *ctx, clmad_node *node, int j);

/* Where a backward writes the adjoint of one input (clmad__adjoint_open). */
typedef struct clmad_adjoint_target {
    clmad_tensor **slot;   /* NULL: the input needs no gradient, write nothing */
    clmad_tensor *tensor;  /* write (or add, when accumulate) the gradient here */
    int accumulate;        /* tensor is the slot's own: add into it; else it is
                              new, of the input's shape, for the slot */
} clmad_adjoint_target;

/* Opens the adjoint of input j of node for a kernel that writes it whole
 * (or adds into it): the slot's tensor when it has one (a lazy one is
 * expanded first), else a new tensor of the input's shape, zeroed when
 * `zeroed` (for a kernel that writes only part of it). t->slot NULL: no
 * gradient wanted. Always pair with clmad__adjoint_close. */
clmad_status clmad__adjoint_open(clmad_context *ctx, clmad_node *node, int j, int zeroed,
                                 clmad_adjoint_target *t);

/* After the kernel (status st): installs a new tensor in the slot when st
 * is CLMAD_OK, else releases it. Returns st. */
clmad_status clmad__adjoint_close(clmad_adjoint_target *t, clmad_status st);

/* *slot += g (same shape), or *slot = g when empty; takes g. */
clmad_status clmad__adjoint_add(clmad_context *ctx, clmad_tensor **slot, clmad_tensor *g);

/* Adds g (of input j's shape; ownership passes to the callee) into the
 * adjoint slot of input j of node. */
clmad_status clmad__accumulate_input(clmad_context *ctx, clmad_node *node, int j, clmad_tensor *g);

/* Hands input j of node the adjoint a (times the one-element scale, if not
 * NULL); a has one element (read for every element of the input) or the
 * input's:
 * lazily when the input's producer takes lazy adjoints and has none yet,
 * else expanded into a new tensor and accumulated. a and scale stay the
 * caller's (retained as needed). */
clmad_status clmad__give_adjoint(clmad_context *ctx, clmad_node *node, int j, clmad_tensor *a,
                                 clmad_tensor *scale);

/* 1 if out_adj[o] of node is exactly 1 for every element: the ones that
 * clmad_backward seeds a one-element loss with, handed on unscaled and
 * unexpanded (the loss sums the output, as clmad_sum does). */
int clmad__adjoint_is_one(const clmad_context *ctx, const clmad_node *node, int o);

/* 1 if out_adj[o] of node is the ones clmad_backward seeded it with (node
 * is the loss; the seed is only ever handed on, never added into: nodes
 * recorded after the loss have no adjoint). */
int clmad__adjoint_is_seed(const clmad_context *ctx, const clmad_node *node, int o);

/* Writes out_adj[o] of node and its scale if they are held: backward's
 * seed may be (clmad_op.reads_adjoint_late). */
clmad_status clmad__adjoint_ready(clmad_node *node, int o);

/* Replaces a lazy out_adj[o] of node by a full tensor of the output's shape. */
clmad_status clmad__materialize_adjoint(clmad_context *ctx, clmad_node *node, int o);

/* dst += src, same shape and dtype. */
clmad_status clmad__accumulate_into(clmad_context *ctx, clmad_tensor *dst, clmad_tensor *src);

/* The nodes of the current tape in the order they were recorded (*count of
 * them; none before the first record), for walks other than backward
 * (clmad_hvp). Valid until the next record or clear. */
clmad_node *const *clmad__tape_nodes(const clmad_context *ctx, size_t *count);

/* 1 if t is the output of a node on the current tape (not of a cleared one). */
int clmad__output_on_tape(const clmad_context *ctx, const clmad_tensor *t);

/* Frees every node (releasing what they keep) and bumps the generation. */
void clmad__tape_free_nodes(clmad_context *ctx);

/* Frees the nodes and the tape itself (clmad_context_release): a released
 * context records nothing more. */
void clmad__tape_drop(clmad_context *ctx);

/* 1 if a and b have the same shape. */
static inline int clmad__same_shape(const clmad_tensor *a, const clmad_tensor *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

#endif
