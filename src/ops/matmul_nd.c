/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_matmul beyond two 2-d operands, by NumPy's rules (np.matmul): a
 * 1-d operand is a row (a) or column (b) vector whose axis the result
 * drops, the leading axes of both are batches that broadcast. One CLBlast
 * GEMM per matrix of the result at its offsets (a broadcast operand is read
 * again at the same offset), as clmad_bmm does, on the GEMM kernels that
 * clmad_matmul has compiled already. A batch against one matrix b with a
 * not transposed is one GEMM of the stacked rows of a. Gradients of a
 * broadcast operand add the batch's products into it (beta = 1). */
#include "ops/ops.h"

#include <stdio.h>
#include <stdlib.h>

/* How the product is laid out, from the operands' shapes and flags. */
typedef struct nd_plan {
    int ta, tb;                       /* as applied: 0 for a 1-d operand */
    size_t m, n, k;
    size_t a_cols, b_cols;            /* stored columns: leading dimensions */
    int rank;                         /* of the broadcast batch */
    size_t batch[CLMAD_MAX_DIMS];     /* the result's batch shape */
    size_t a_step[CLMAD_MAX_DIMS];    /* matrices of a per step along batch axis d; 0 where broadcast */
    size_t b_step[CLMAD_MAX_DIMS];
    size_t count, a_count, b_count;   /* matrices of the result, a and b */
    int out_ndim;
    size_t out_shape[CLMAD_MAX_DIMS];
} nd_plan;

/* "(2, 3, 4)" into buf, for messages. */
static const char *shape_text(const clmad_tensor *t, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < t->ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%zu", i ? ", " : "", t->shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, t->ndim == 1 ? ",)" : ")");
    return buf;
}

/* The batch axes of t: all but its matrix axes (none for a 1-d t). */
static int batch_rank(const clmad_tensor *t)
{
    return t->ndim >= 2 ? t->ndim - 2 : 0;
}

/* Matrices of t per step along each of its batch axes (row-major). */
static size_t batch_counts(const clmad_tensor *t, size_t *steps)
{
    size_t c = 1;
    for (int d = batch_rank(t) - 1; d >= 0; d--) {
        steps[d] = c;
        c *= t->shape[d];
    }
    return c;
}

static clmad_status plan_of(clmad_context *ctx, const clmad_tensor *a, const clmad_tensor *b, int trans_a,
                            int trans_b, nd_plan *p)
{
    char as[96], bs[96];
    *p = (nd_plan){0};
    if (a->ndim == 0 || b->ndim == 0)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "clmad_matmul: operands must have rank 1 or more (a is %s, b is %s): use clmad_mul for a scalar",
                           shape_text(a, as, sizeof as), shape_text(b, bs, sizeof bs));
    /* A 1-d operand is its own transpose (as x.T is x in NumPy). */
    p->ta = a->ndim >= 2 && trans_a;
    p->tb = b->ndim >= 2 && trans_b;
    size_t a_rows = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1, b_cols = b->ndim >= 2 ? b->shape[b->ndim - 1] : 1;
    p->a_cols = a->shape[a->ndim - 1];
    size_t b_rows = b->ndim >= 2 ? b->shape[b->ndim - 2] : b->shape[0];
    p->b_cols = b_cols;
    p->m = p->ta ? p->a_cols : a_rows;
    p->k = p->ta ? a_rows : p->a_cols;
    size_t kb = p->tb ? b_cols : b_rows;
    p->n = p->tb ? b_rows : b_cols;
    if (p->k != kb)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "clmad_matmul: a %s%s and b %s%s: inner sizes %zu and %zu differ",
                           shape_text(a, as, sizeof as), p->ta ? " transposed" : "", shape_text(b, bs, sizeof bs),
                           p->tb ? " transposed" : "", p->k, kb);
    int ra = batch_rank(a), rb = batch_rank(b);
    size_t a_steps[CLMAD_MAX_DIMS], b_steps[CLMAD_MAX_DIMS];
    p->a_count = batch_counts(a, a_steps);
    p->b_count = batch_counts(b, b_steps);
    p->rank = ra > rb ? ra : rb;
    p->count = 1;
    for (int d = 0; d < p->rank; d++) {
        /* Axes aligned from the right; a missing axis is of size 1. */
        int da = d - (p->rank - ra), db = d - (p->rank - rb);
        size_t sa = da >= 0 ? a->shape[da] : 1, sb = db >= 0 ? b->shape[db] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                               "clmad_matmul: batch axes of a %s and b %s do not broadcast (%zu against %zu)",
                               shape_text(a, as, sizeof as), shape_text(b, bs, sizeof bs), sa, sb);
        p->batch[d] = sa == 1 ? sb : sa;
        p->a_step[d] = sa == 1 ? 0 : a_steps[da];
        p->b_step[d] = sb == 1 ? 0 : b_steps[db];
        p->count *= p->batch[d];
    }
    int nd = 0;
    for (int d = 0; d < p->rank; d++)
        p->out_shape[nd++] = p->batch[d];
    if (a->ndim >= 2)
        p->out_shape[nd++] = p->m;
    if (b->ndim >= 2)
        p->out_shape[nd++] = p->n;
    p->out_ndim = nd;
    return CLMAD_OK;
}

/* The matrices of a and b that the result's matrix i reads. */
static void operands_of(const nd_plan *p, size_t i, size_t *ia, size_t *ib)
{
    *ia = *ib = 0;
    for (int d = p->rank - 1; d >= 0; d--) {
        size_t c = i % p->batch[d];
        i /= p->batch[d];
        *ia += c * p->a_step[d];
        *ib += c * p->b_step[d];
    }
}

/* One batch of b's single matrix against a's stacked rows. */
static int stacks(const nd_plan *p)
{
    return p->b_count == 1 && !p->ta && p->a_count == p->count;
}

static clmad_status forward(clmad_context *ctx, const nd_plan *p, const clmad_tensor *a, const clmad_tensor *b,
                            clmad_tensor *c)
{
    if (c->numel == 0)
        return CLMAD_OK;
    if (p->k == 0) /* an empty inner size: zeros (the pooled buffer may hold NaN) */
        return clmad__fill(ctx, c->mem, c->dtype, c->numel, 0.0);
    if (stacks(p))
        return clmad__gemm_at(ctx, c->dtype, 0, p->tb, p->count * p->m, p->n, p->k, a->mem, 0, p->a_cols,
                              b->mem, 0, p->b_cols, 0.0, c->mem, 0, p->n);
    const size_t a_size = p->m * p->k, b_size = p->k * p->n, c_size = p->m * p->n;
    for (size_t i = 0; i < p->count; i++) {
        size_t ia, ib;
        operands_of(p, i, &ia, &ib);
        clmad_status st = clmad__gemm_at(ctx, c->dtype, p->ta, p->tb, p->m, p->n, p->k, a->mem, ia * a_size,
                                         p->a_cols, b->mem, ib * b_size, p->b_cols, 0.0, c->mem, i * c_size,
                                         p->n);
        if (st != CLMAD_OK)
            return st;
    }
    return CLMAD_OK;
}

/* What a node of this product keeps: the flags as given. */
typedef struct nd_data {
    int trans_a, trans_b;
} nd_data;

/* Whether the gradient of operand j needs a zeroed start and beta = 1:
 * matrices that take several products, and GEMMs with an empty inner size
 * (which write nothing). */
static int grad_summed(const nd_plan *p, int j)
{
    const int stacked = stacks(p);
    const size_t own = j == 0 ? p->a_count : p->b_count;
    const size_t inner = j == 0 ? p->n : (stacked ? p->count * p->m : p->m);
    return (!stacked && own != p->count) || inner == 0 || p->count == 0;
}

/* Adds (beta = 1) or writes the gradient of operand j into g: for each
 * matrix i of the result, dA[ia] (+)= dC[i] op(B[ib])^T or dB[ib] (+)=
 * op(A[ia])^T dC[i], arranged for transposed operands; a stacked batch in
 * one GEMM. g holds operand j's elements; zeroed first when grad_summed. */
static clmad_status grad_gemms(clmad_context *ctx, const nd_plan *p, const clmad_tensor *a, const clmad_tensor *b,
                               const clmad_tensor *dc, int j, clmad_tensor *g, double beta)
{
    const size_t inner = j == 0 ? p->n : (stacks(p) ? p->count * p->m : p->m);
    if (inner == 0 || g->numel == 0 || p->count == 0)
        return CLMAD_OK;
    const clmad_dtype dt = g->dtype;
    const size_t m = p->m, n = p->n, k = p->k, lda = p->a_cols, ldb = p->b_cols;
    clmad_status st = CLMAD_OK;
    if (stacks(p)) {
        const size_t rows = p->count * m;
        if (j == 0) /* dA (rows x k) = dC op(B)^T */
            return clmad__gemm_at(ctx, dt, 0, !p->tb, rows, k, n, dc->mem, 0, n, b->mem, 0, ldb, beta, g->mem, 0,
                                  k);
        if (!p->tb) /* dB (k x n) = A^T dC */
            return clmad__gemm_at(ctx, dt, 1, 0, k, n, rows, a->mem, 0, lda, dc->mem, 0, n, beta, g->mem, 0, n);
        /* dB (n x k) = dC^T A */
        return clmad__gemm_at(ctx, dt, 1, 0, n, k, rows, dc->mem, 0, n, a->mem, 0, lda, beta, g->mem, 0, k);
    }
    const size_t a_size = m * k, b_size = k * n, c_size = m * n;
    for (size_t i = 0; i < p->count && st == CLMAD_OK; i++) {
        size_t ia, ib;
        operands_of(p, i, &ia, &ib);
        size_t ao = ia * a_size, bo = ib * b_size, co = i * c_size;
        if (j == 0 && !p->ta) /* dA (m x k) = dC op(B)^T */
            st = clmad__gemm_at(ctx, dt, 0, !p->tb, m, k, n, dc->mem, co, n, b->mem, bo, ldb, beta, g->mem, ao,
                                lda);
        else if (j == 0) /* dA (k x m) = op(B) dC^T */
            st = clmad__gemm_at(ctx, dt, p->tb, 1, k, m, n, b->mem, bo, ldb, dc->mem, co, n, beta, g->mem, ao,
                                lda);
        else if (!p->tb) /* dB (k x n) = op(A)^T dC */
            st = clmad__gemm_at(ctx, dt, !p->ta, 0, k, n, m, a->mem, ao, lda, dc->mem, co, n, beta, g->mem, bo,
                                ldb);
        else /* dB (n x k) = dC^T op(A) */
            st = clmad__gemm_at(ctx, dt, 1, p->ta, n, k, m, dc->mem, co, n, a->mem, ao, lda, beta, g->mem, bo,
                                ldb);
    }
    return st;
}

/* The gradient of input j into its adjoint slot. */
static clmad_status grad_of(clmad_context *ctx, clmad_node *node, int j, const nd_plan *p)
{
    const int summed = grad_summed(p, j);
    clmad_adjoint_target t;
    clmad_status st = clmad__adjoint_open(ctx, node, j, summed, &t);
    if (st != CLMAD_OK || !t.slot)
        return st;
    st = grad_gemms(ctx, p, node->inputs[0], node->inputs[1], node->out_adj[0], j, t.tensor,
                    t.accumulate || summed ? 1.0 : 0.0);
    return clmad__adjoint_close(&t, st);
}

static clmad_status nd_backward(clmad_context *ctx, clmad_node *node)
{
    const nd_data *d = node->data;
    nd_plan p;
    clmad_status st = plan_of(ctx, node->inputs[0], node->inputs[1], d->trans_a, d->trans_b, &p);
    if (st == CLMAD_OK)
        st = grad_of(ctx, node, 0, &p);
    return st != CLMAD_OK ? st : grad_of(ctx, node, 1, &p);
}

const clmad_op clmad__op_matmul_nd = {.name = "clmad_matmul", .backward = nd_backward,
                                      .free_data = clmad__free_node_data, .kind = CLMAD_OP_OPAQUE};

clmad_status clmad__matmul_nd(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, int trans_a, int trans_b,
                              clmad_tensor **out)
{
    if (a->dtype != b->dtype)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_matmul: operands of different dtypes");
    if (a->dtype != CLMAD_F32 && a->dtype != CLMAD_F64)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_matmul: operands must be f32 or f64");
    nd_plan p;
    clmad_status st = plan_of(ctx, a, b, trans_a, trans_b, &p);
    if (st != CLMAD_OK)
        return st;
    clmad_tensor *c = NULL;
    st = clmad_tensor_create(ctx, a->dtype, p.out_ndim, p.out_shape, NULL, &c);
    if (st == CLMAD_OK)
        st = forward(ctx, &p, a, b, c);
    clmad_tensor *ins[2] = {a, b};
    nd_data *d = NULL;
    if (st == CLMAD_OK && clmad__should_record(ctx, ins, 2)) {
        d = malloc(sizeof *d);
        if (d)
            *d = (nd_data){trans_a != 0, trans_b != 0};
        else
            st = clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in clmad_matmul");
    }
    return clmad__finish_op(ctx, &clmad__op_matmul_nd, ins, 2, c, d, st, out);
}

void clmad__matmul_nd_flags(const clmad_node *node, int *trans_a, int *trans_b)
{
    const nd_data *d = node->data;
    *trans_a = d->trans_a;
    *trans_b = d->trans_b;
}

clmad_status clmad__matmul_nd_grad(clmad_context *ctx, const clmad_tensor *a, const clmad_tensor *b, int trans_a,
                                   int trans_b, const clmad_tensor *dc, int j, clmad_tensor **out)
{
    nd_plan p;
    clmad_status st = plan_of(ctx, a, b, trans_a, trans_b, &p);
    if (st != CLMAD_OK)
        return st;
    const clmad_tensor *x = j == 0 ? a : b;
    const int summed = grad_summed(&p, j);
    clmad_tensor *g = NULL;
    st = summed ? clmad_tensor_zeros(ctx, x->dtype, x->ndim, x->shape, &g)
                : clmad_tensor_create(ctx, x->dtype, x->ndim, x->shape, NULL, &g);
    if (st == CLMAD_OK)
        st = grad_gemms(ctx, &p, a, b, dc, j, g, summed ? 1.0 : 0.0);
    if (st != CLMAD_OK) {
        clmad_tensor_release(g);
        return st;
    }
    *out = g;
    return CLMAD_OK;
}
