/* SPDX-License-Identifier: Apache-2.0 */
/* Matrix products per matrix of a batch, and their adjoints (dA = dC op(B)^T,
 * dB = op(A)^T dC, arranged for transposed operands): clmad_matmul's and
 * clmad_bmm's. Gradients accumulate with beta = 1. */
#include "ops/ops.h"

#include <stdlib.h>

clmad_mat clmad__mat_of(const clmad_tensor *t)
{
    int r = t->ndim - 2;
    return (clmad_mat){t->mem, t->shape[r], t->shape[r + 1], t->shape[r] * t->shape[r + 1]};
}

clmad_status clmad__batched_gemm(clmad_context *ctx, clmad_dtype dtype, size_t batch, int ta, int tb,
                                 size_t m, size_t n, size_t k, clmad_mat a, clmad_mat b, double beta,
                                 clmad_tensor *c)
{
    if (m == 0 || n == 0 || batch == 0)
        return CLMAD_OK;
    if (k == 0) {
        /* An empty inner dimension: the product is zero. With beta = 0 the
         * output is overwritten with zeros (not scaled: a pooled buffer may
         * hold NaN, and 0 * NaN is NaN). */
        return beta != 0.0 ? CLMAD_OK : clmad__fill(ctx, c->mem, dtype, c->numel, 0.0);
    }
    for (size_t i = 0; i < batch; i++) {
        clmad_status st = clmad__gemm_at(ctx, dtype, ta, tb, m, n, k, a.mem, i * a.stride, a.cols, b.mem,
                                         i * b.stride, b.cols, beta, c->mem, i * m * n, n);
        if (st != CLMAD_OK)
            return st;
    }
    return CLMAD_OK;
}

/* Input j's gradient (m x n per matrix) = op(A) op(B), into its adjoint. */
static clmad_status grad_gemm(clmad_context *ctx, clmad_node *node, int j, size_t batch, int ta, int tb,
                              size_t m, size_t n, size_t k, clmad_mat a, clmad_mat b)
{
    clmad_adjoint_target t;
    clmad_status st = clmad__adjoint_open(ctx, node, j, 0, &t);
    if (st != CLMAD_OK || !t.slot)
        return st;
    st = clmad__batched_gemm(ctx, t.tensor->dtype, batch, ta, tb, m, n, k, a, b, t.accumulate ? 1.0 : 0.0,
                             t.tensor);
    return clmad__adjoint_close(&t, st);
}

static clmad_status product_backward(clmad_context *ctx, clmad_node *node)
{
    const clmad_product_data *d = node->data;
    int ta = d->ta, tb = d->tb;
    clmad_tensor *a = node->inputs[0], *b = node->inputs[1], *dc = node->out_adj[0];
    clmad_mat ma = clmad__mat_of(a), mb = clmad__mat_of(b), mc = clmad__mat_of(dc);
    size_t batch = a->ndim == 3 ? a->shape[0] : 1;
    size_t m = mc.rows, n = mc.cols, k = ta ? ma.rows : ma.cols;
    clmad_status st;
    if (!ta) /* dA (m x k) = dC op(B)^T */
        st = grad_gemm(ctx, node, 0, batch, 0, !tb, m, k, n, mc, mb);
    else     /* dA (k x m) = op(B) dC^T */
        st = grad_gemm(ctx, node, 0, batch, tb, 1, k, m, n, mb, mc);
    if (st != CLMAD_OK)
        return st;
    if (!tb) /* dB (k x n) = op(A)^T dC */
        return grad_gemm(ctx, node, 1, batch, !ta, 0, k, n, m, ma, mc);
    /* dB (n x k) = dC^T op(A) */
    return grad_gemm(ctx, node, 1, batch, 1, ta, n, k, m, mc, ma);
}

const clmad_op clmad__op_matmul = {.name = "clmad_matmul", .backward = product_backward,
                                   .free_data = clmad__free_node_data, .kind = CLMAD_OP_OPAQUE};
const clmad_op clmad__op_bmm = {.name = "clmad_bmm", .backward = product_backward,
                                .free_data = clmad__free_node_data, .kind = CLMAD_OP_OPAQUE};

clmad_status clmad__finish_product(clmad_context *ctx, const clmad_op *op, clmad_tensor *a, clmad_tensor *b,
                                   int ta, int tb, clmad_tensor *c, clmad_status st, clmad_tensor **out)
{
    clmad_tensor *ins[2] = {a, b};
    clmad_product_data *d = NULL;
    if (st == CLMAD_OK && clmad__should_record(ctx, ins, 2)) {
        d = malloc(sizeof *d);
        if (d)
            *d = (clmad_product_data){ta, tb};
        else
            st = clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in %s", op->name);
    }
    return clmad__finish_op(ctx, op, ins, 2, c, d, st, out);
}
