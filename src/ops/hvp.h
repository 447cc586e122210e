/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_hvp's rules per recorded operation: the forward-mode rule of the
 * operation (its outputs' tangents) and of its backward (its inputs'
 * adjoints and their tangents). */
#ifndef CLMAD_OPS_HVP_H
#define CLMAD_OPS_HVP_H

#include "tape/tape.h"

/* One node's tensors during clmad_hvp; NULL stands for zero everywhere.
 * Arrays by the node's arity. Results are new references. */
typedef struct clmad_hvp_io {
    clmad_tensor **in_tan;        /* inputs' tangents */
    clmad_tensor **out_tan;       /* forward: the outputs' tangents (set) */
    clmad_tensor **out_adj;       /* backward: the outputs' adjoints, full shape */
    clmad_tensor **out_adj_tan;   /* backward: their tangents */
    const unsigned char *want;    /* backward: 1 for an input whose adjoint is needed */
    clmad_tensor **in_adj;        /* backward: the inputs' adjoints (set) */
    clmad_tensor **in_adj_tan;    /* backward: their tangents (set) */
} clmad_hvp_io;

/* 1 if node's operation has its second-order rules. */
int clmad__hvp_supported(const clmad_node *node);

/* The outputs' tangents from the inputs' (the JVP of the operation). */
clmad_status clmad__hvp_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);

/* The inputs' adjoints and their tangents (the JVP of the backward). */
clmad_status clmad__hvp_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);

/* *acc += x (or *acc = x when *acc is NULL), taking x: the sums of
 * tangents and adjoint tangents. */
clmad_status clmad__hvp_add_into(clmad_context *ctx, clmad_tensor **acc, clmad_tensor *x);

/* *acc += a * b (or -= when negate); nothing when a or b is zero (NULL). */
clmad_status clmad__hvp_mul_into(clmad_context *ctx, clmad_tensor **acc, clmad_tensor *a, clmad_tensor *b,
                                 int negate);

/* A matrix product op(a) op(b) (clmad_matmul, clmad_bmm, clmad__matmul_nd). */
typedef clmad_status (*clmad_hvp_product_fn)(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, int ta,
                                             int tb, clmad_tensor **out);

/* *acc += product(a, b, ta, tb); nothing when a or b is zero (NULL). */
clmad_status clmad__hvp_product_into(clmad_context *ctx, clmad_tensor **acc, clmad_hvp_product_fn product,
                                     clmad_tensor *a, clmad_tensor *b, int ta, int tb);

/* The shape operations' rules (hvp_shape.c): 0 if node is not one; else 1,
 * having run its forward (backward = 0) or backward rule with *st its
 * status. With ctx NULL only answers whether node is one. */
int clmad__hvp_shape(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io, int backward, clmad_status *st);

/* The axis operations' rules (hvp_axis.c: clmad_max, clmad_logsumexp,
 * clmad_softmax, clmad_log_softmax), answering as clmad__hvp_shape. */
int clmad__hvp_axis(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io, int backward, clmad_status *st);
/* The index operations' and cast's rules (hvp_index.c), and those of
 * clmad_matmul by NumPy's rules (hvp_matmul_nd.c): as clmad__hvp_shape. */
int clmad__hvp_index(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io, int backward, clmad_status *st);
int clmad__hvp_matmul_nd(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io, int backward, clmad_status *st);

#endif
