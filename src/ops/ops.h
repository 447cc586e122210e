/* SPDX-License-Identifier: Apache-2.0 */
/* Internal building blocks shared by the builtin operations and the tape. */
#ifndef CLMAD_OPS_H
#define CLMAD_OPS_H

#include "runtime/primitives.h"
#include "tape/tape.h"

/* C = op(A) op(B) + beta C, row-major, each matrix at an element offset
 * in its buffer with its leading dimension; m, n, k > 0: small products
 * through clmad's kernel (gemm.c says which), the others through CLBlast. */
clmad_status clmad__gemm_at(clmad_context *ctx, clmad_dtype dtype, int ta, int tb, size_t m, size_t n,
                            size_t k, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb,
                            double beta, cl_mem c, size_t c_off, size_t ldc);

/* The same through CLBlast whatever the size (the warm-up builds its
 * kernels). The first CLBlast call of the process is serialised (gemm.c
 * says why). */
clmad_status clmad__gemm_clblast(clmad_context *ctx, clmad_dtype dtype, int ta, int tb, size_t m, size_t n,
                                 size_t k, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb,
                                 double beta, cl_mem c, size_t c_off, size_t ldc);

/* One matrix of a 2-d tensor, or of each of a (batch, rows, cols) one. */
typedef struct clmad_mat {
    cl_mem mem;
    size_t rows, cols, stride; /* stride: elements from one matrix to the next */
} clmad_mat;

/* The matrix of t (its last two dimensions). */
clmad_mat clmad__mat_of(const clmad_tensor *t);

/* C[i] = op(A[i]) op(B[i]) + beta C[i] for each of `batch` matrices, C[i]
 * m x n (contiguous in c), inner size k. */
clmad_status clmad__batched_gemm(clmad_context *ctx, clmad_dtype dtype, size_t batch, int ta, int tb,
                                 size_t m, size_t n, size_t k, clmad_mat a, clmad_mat b, double beta,
                                 clmad_tensor *c);

/* ---- the descriptors of the operations that record nodes (tape.h) ---- */
extern const clmad_op clmad__op_matmul, clmad__op_bmm;       /* product.c: 2-d and batched 3-d */
extern const clmad_op clmad__op_matmul_nd;                   /* matmul_nd.c: clmad_matmul, other ranks */
extern const clmad_op clmad__op_dot;                         /* dot.c */
extern const clmad_op clmad__op_sum, clmad__op_mean;         /* sum.c */
extern const clmad_op clmad__op_slice, clmad__op_concat, clmad__op_reshape, clmad__op_transpose; /* shape.c */
extern const clmad_op clmad__op_max, clmad__op_logsumexp;    /* axis.c */
extern const clmad_op clmad__op_softmax, clmad__op_log_softmax;

/* What a product's node keeps: which operands were transposed. */
typedef struct clmad_product_data {
    int ta, tb;
} clmad_product_data;

/* Ends clmad_matmul or clmad_bmm (op: clmad__op_matmul or clmad__op_bmm) of
 * c = op(a) op(b) as clmad__finish_op does, its node keeping ta and tb. */
clmad_status clmad__finish_product(clmad_context *ctx, const clmad_op *op, clmad_tensor *a, clmad_tensor *b,
                                   int ta, int tb, clmad_tensor *c, clmad_status st, clmad_tensor **out);

/* clmad_matmul for operands other than two 2-d ones (matmul_nd.c): NumPy's
 * rules, batches broadcast; after clmad__check_operands. */
clmad_status clmad__matmul_nd(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, int trans_a, int trans_b,
                              clmad_tensor **out);

/* The flags a clmad__op_matmul_nd node was called with. */
void clmad__matmul_nd_flags(const clmad_node *node, int *trans_a, int *trans_b);

/* The gradient of operand j (0: a, 1: b) of clmad__matmul_nd(a, b, trans_a,
 * trans_b) for the result's adjoint dc, summed over the batch axes that
 * operand was broadcast along: a new tensor of that operand's shape. Only
 * the other operand's values are read (j = 0 reads b, j = 1 reads a). */
clmad_status clmad__matmul_nd_grad(clmad_context *ctx, const clmad_tensor *a, const clmad_tensor *b, int trans_a,
                                   int trans_b, const clmad_tensor *dc, int j, clmad_tensor **out);

/* Which shape operation node is (CLMAD_SHAPE_NONE: none), with its axis
 * (slice, concat), start (slice) and perm (transpose, CLMAD_MAX_DIMS). */
typedef enum clmad_shape_op {
    CLMAD_SHAPE_NONE,
    CLMAD_SHAPE_SLICE,
    CLMAD_SHAPE_CONCAT,
    CLMAD_SHAPE_RESHAPE,
    CLMAD_SHAPE_TRANSPOSE
} clmad_shape_op;
clmad_shape_op clmad__shape_node(const clmad_node *node, int *axis, size_t *start, int *perm);

/* Of a clmad_sum or clmad_mean node: reduce[d] (CLMAD_MAX_DIMS entries) is
 * 1 for a summed axis of the input, *scale 1 or 1/count. */
void clmad__sum_params(const clmad_node *node, int *reduce, double *scale);

/* ---- the axis operations (axis.c), for clmad_hvp ---- */
/* Which axis operation node is (CLMAD_AXIS_NONE: none), with the axis of
 * its input it runs along and its output *y (borrowed from the node). */
typedef enum clmad_axis_op {
    CLMAD_AXIS_NONE,
    CLMAD_AXIS_MAX,
    CLMAD_AXIS_LOGSUMEXP,
    CLMAD_AXIS_SOFTMAX,
    CLMAD_AXIS_LOG_SOFTMAX
} clmad_axis_op;
clmad_axis_op clmad__axis_node(const clmad_node *node, int *axis, clmad_tensor **y);

/* The adjoint of the input of an axis node for the output adjoint adj
 * (the output's shape, not NULL) into *g (new, the input's shape): the
 * node's backward kernel. It is linear in adj; for clmad_max it routes
 * each row's adjoint to the element backward picks (the first maximal). */
clmad_status clmad__axis_pullback(clmad_context *ctx, const clmad_node *node, clmad_tensor *adj,
                                  clmad_tensor **g);

/* Ends an operation with the one output y made with status st: on success
 * records its node of op when the inputs need gradients (data, may be NULL,
 * goes to the node) and hands y to *out; otherwise, or when recording
 * fails, releases y. data is freed with op->free_data on every path where
 * no node takes it. */
clmad_status clmad__finish_op(clmad_context *ctx, const clmad_op *op, clmad_tensor *const *ins, int n,
                              clmad_tensor *y, void *data, clmad_status st, clmad_tensor **out);

/* The common checks of a call on two operands: ctx, a, b and out not NULL
 * (CLMAD_ERR_INVALID_ARGUMENT naming the first that is), a and b of ctx
 * (clmad__check_same_context). */
clmad_status clmad__check_operands(clmad_context *ctx, const char *call, const clmad_tensor *a,
                                   const clmad_tensor *b, const void *out);

/* 16-bit operands of an operation that computes in f32 and f64 only
 * (through_f32.c): 1 when a is 16-bit and b is NULL or of a's dtype. */
int clmad__widens(const clmad_tensor *a, const clmad_tensor *b);

/* The operation in f32 over in[0..n) (n <= 4), given as op with its other
 * arguments in args. */
typedef clmad_status (*clmad__f32_op)(clmad_context *ctx, clmad_tensor *const *in, const void *args,
                                      clmad_tensor **out);

/* op over the inputs, each 16-bit one widened to f32 by a recorded
 * clmad_cast; with round_result its result is cast back to in[0]'s dtype.
 * Gradients flow through the casts. */
clmad_status clmad__through_f32(clmad_context *ctx, int n, clmad_tensor *const *in, clmad__f32_op op,
                                const void *args, int round_result, clmad_tensor **out);

#endif
