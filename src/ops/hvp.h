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

/* A second-order rule of node's operation. The forward rule: the outputs'
 * tangents from the inputs' (the JVP of the operation). The backward rule:
 * the inputs' adjoints and their tangents (the JVP of its backward). */
typedef clmad_status (*clmad_hvp_rule)(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);

/* 1 if node's operation has second-order rules (hvp_rules.c's table). */
int clmad__hvp_supported(const clmad_node *node);

/* Runs node's forward or backward rule; CLMAD_ERR_UNSUPPORTED for an
 * operation without them. */
clmad_status clmad__hvp_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);
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

/* The rules of the operations of other files, for hvp_rules.c's table:
 * clmad_matmul of two matrices and clmad_bmm (hvp_product.c); the shape
 * operations (hvp_shape.c); the axis operations (hvp_axis.c: clmad_max,
 * clmad_logsumexp, clmad_softmax, clmad_log_softmax); the index operations
 * and cast (hvp_index.c); clmad_matmul by NumPy's rules (hvp_matmul_nd.c).
 * Each takes only nodes of its operations. */
clmad_status clmad__hvp_product_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);
clmad_status clmad__hvp_product_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);
clmad_status clmad__hvp_shape_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);
clmad_status clmad__hvp_shape_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);
clmad_status clmad__hvp_axis_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);
clmad_status clmad__hvp_axis_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);
clmad_status clmad__hvp_index_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);
clmad_status clmad__hvp_index_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);
clmad_status clmad__hvp_matmul_nd_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);
clmad_status clmad__hvp_matmul_nd_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io);

#endif
