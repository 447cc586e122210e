/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_bmm: batched matrix products, out[i] = op(a[i]) op(b[i]), and their
 * adjoints (those of clmad_matmul per matrix). One CLBlast GEMM per matrix
 * at its offset: the GEMM kernels that clmad_matmul has compiled already
 * serve (CLBlast's batched GEMM is another program, tens of seconds to
 * compile on POCL), at the price of one launch per matrix. */
#include "ops/ops.h"
#include "tape/tape.h"

#include <stdlib.h>

typedef struct bmm_data {
    int ta, tb;
} bmm_data;

/* One matrix of a (batch, rows, cols) tensor. */
typedef struct mat {
    cl_mem mem;
    size_t rows, cols, stride; /* stride: elements from one matrix to the next */
} mat;

static mat mat_of(const clmad_tensor *t)
{
    return (mat){t->mem, t->shape[1], t->shape[2], t->shape[1] * t->shape[2]};
}

/* C[i] = op(A[i]) op(B[i]) + beta C[i] for every i, C[i] m x n, inner k. */
static clmad_status batched_gemm(clmad_context *ctx, clmad_dtype dtype, size_t batch, int ta, int tb,
                                 size_t m, size_t n, size_t k, mat a, mat b, double beta, clmad_tensor *c)
{
    if (m == 0 || n == 0 || batch == 0)
        return CLMAD_OK;
    if (k == 0) /* the product is zero; with beta = 0, overwrite (a pooled buffer may hold NaN) */
        return beta != 0.0 ? CLMAD_OK : clmad__fill(ctx, c->mem, dtype, c->numel, 0.0);
    for (size_t i = 0; i < batch; i++) {
        clmad_status st = clmad__gemm_at(ctx, dtype, ta, tb, m, n, k, a.mem, i * a.stride, a.cols, b.mem,
                                         i * b.stride, b.cols, beta, c->mem, i * m * n, n);
        if (st != CLMAD_OK)
            return st;
    }
    return CLMAD_OK;
}

/* Input j's gradient (m x n per matrix) = op(A) op(B), into its slot. */
static clmad_status grad_gemm(clmad_context *ctx, clmad_node *node, int j, int ta, int tb, size_t m,
                              size_t n, size_t k, mat a, mat b)
{
    clmad_tensor **slot = clmad__adjoint_slot(ctx, node, j);
    if (!slot)
        return CLMAD_OK;
    clmad_tensor *x = node->inputs[j];
    /* A lazy adjoint is expanded first: GEMM adds into the slot's buffer. */
    clmad_status st = clmad__settle_adjoint_slot(ctx, node, j);
    if (st != CLMAD_OK)
        return st;
    if (*slot)
        return batched_gemm(ctx, x->dtype, x->shape[0], ta, tb, m, n, k, a, b, 1.0, *slot);
    clmad_tensor *g;
    st = clmad_tensor_create(ctx, x->dtype, 3, x->shape, NULL, &g);
    if (st == CLMAD_OK)
        st = batched_gemm(ctx, x->dtype, x->shape[0], ta, tb, m, n, k, a, b, 0.0, g);
    if (st != CLMAD_OK) {
        clmad_tensor_release(g);
        return st;
    }
    *slot = g;
    return CLMAD_OK;
}

static clmad_status bmm_backward(clmad_context *ctx, clmad_node *node)
{
    bmm_data *d = node->data;
    clmad_tensor *a = node->inputs[0], *b = node->inputs[1], *dc = node->out_adj[0];
    mat ma = mat_of(a), mb = mat_of(b), mc = mat_of(dc);
    size_t m = dc->shape[1], n = dc->shape[2], k = d->ta ? a->shape[1] : a->shape[2];
    clmad_status st;
    if (!d->ta) /* dA (m x k) = dC op(B)^T */
        st = grad_gemm(ctx, node, 0, 0, !d->tb, m, k, n, mc, mb);
    else        /* dA (k x m) = op(B) dC^T */
        st = grad_gemm(ctx, node, 0, d->tb, 1, k, m, n, mb, mc);
    if (st != CLMAD_OK)
        return st;
    if (!d->tb) /* dB (k x n) = op(A)^T dC */
        return grad_gemm(ctx, node, 1, !d->ta, 0, k, n, m, ma, mc);
    /* dB (n x k) = dC^T op(A) */
    return grad_gemm(ctx, node, 1, 1, d->ta, n, k, m, mc, ma);
}

static void bmm_free(clmad_node *node)
{
    free(node->data);
    node->data = NULL;
}

clmad_status clmad_bmm(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, int trans_a, int trans_b,
                       clmad_tensor **out)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_bmm: ctx is NULL");
    if (!a || !b || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_bmm: %s is NULL",
                           !a ? "a" : !b ? "b" : "out");
    clmad_status st = clmad__check_same_context(ctx, a, "clmad_bmm", "a");
    if (st == CLMAD_OK)
        st = clmad__check_same_context(ctx, b, "clmad_bmm", "b");
    if (st != CLMAD_OK)
        return st;
    if (a->ndim != 3 || b->ndim != 3)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "clmad_bmm: operands must be 3-d (batch, rows, cols) (ranks %d and %d)", a->ndim,
                           b->ndim);
    if (a->dtype != b->dtype)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_bmm: operands of different dtypes");
    if (a->shape[0] != b->shape[0])
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "clmad_bmm: batches of %zu and %zu matrices differ",
                           a->shape[0], b->shape[0]);
    size_t m = trans_a ? a->shape[2] : a->shape[1], k = trans_a ? a->shape[1] : a->shape[2];
    size_t kb = trans_b ? b->shape[2] : b->shape[1], n = trans_b ? b->shape[1] : b->shape[2];
    if (k != kb)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "clmad_bmm: op(a[i]) is %zu x %zu and op(b[i]) is %zu x %zu: inner sizes differ",
                           m, k, kb, n);
    size_t shape[3] = {a->shape[0], m, n};
    clmad_tensor *c = NULL;
    st = clmad_tensor_create(ctx, a->dtype, 3, shape, NULL, &c);
    if (st == CLMAD_OK)
        st = batched_gemm(ctx, a->dtype, shape[0], trans_a != 0, trans_b != 0, m, n, k, mat_of(a), mat_of(b),
                          0.0, c);
    clmad_tensor *ins[2] = {a, b};
    if (st == CLMAD_OK && clmad__should_record(ctx, ins, 2)) {
        bmm_data *d = malloc(sizeof *d);
        clmad_node *node;
        st = d ? clmad__record(ctx, "clmad_bmm", bmm_backward, ins, 2, &c, 1, &node)
               : clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in clmad_bmm");
        if (st == CLMAD_OK) {
            *d = (bmm_data){trans_a != 0, trans_b != 0};
            node->data = d;
            node->free_data = bmm_free;
        } else {
            free(d);
        }
    }
    if (st != CLMAD_OK) {
        clmad_tensor_release(c);
        return st;
    }
    *out = c;
    return CLMAD_OK;
}
