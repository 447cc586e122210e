/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clmad_hvp's rules for clmad_matmul of two matrices and clmad_bmm, C =
 * op(A) op(B) per matrix (product.c). The product is bilinear:
 *   Cdot = P(Adot, B) + P(A, Bdot),
 * and the adjoints, bilinear in (Cbar, B) and (A, Cbar), likewise:
 *   Abardot = G_A(Cbardot, B) + G_A(Cbar, Bdot), and B's.
 */
#include "ops/hvp.h"
#include "ops/ops.h"

/* op(A) op(B), batched for 3-d operands. */
static clmad_status product(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, int ta, int tb,
                            clmad_tensor **out)
{
    return a->ndim == 3 ? clmad_bmm(ctx, a, b, ta, tb, out) : clmad_matmul(ctx, a, b, ta, tb, out);
}

/* P(X, Y) added into *acc, nothing when either is zero. */
static clmad_status product_into(clmad_context *ctx, clmad_tensor **acc, clmad_tensor *x, clmad_tensor *y, int ta,
                                 int tb)
{
    return clmad__hvp_product_into(ctx, acc, product, x, y, ta, tb);
}

/* dA from (G, B): G op(B)^T, or op(B) G^T for a transposed A. */
static clmad_status adjoint_a(clmad_context *ctx, clmad_tensor **acc, clmad_tensor *g, clmad_tensor *b, int ta,
                              int tb)
{
    return ta ? product_into(ctx, acc, b, g, tb, 1) : product_into(ctx, acc, g, b, 0, !tb);
}

/* dB from (A, G): op(A)^T G, or G^T op(A) for a transposed B. */
static clmad_status adjoint_b(clmad_context *ctx, clmad_tensor **acc, clmad_tensor *a, clmad_tensor *g, int ta,
                              int tb)
{
    return tb ? product_into(ctx, acc, g, a, 1, ta) : product_into(ctx, acc, a, g, !ta, 0);
}

clmad_status clmad__hvp_product_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    const clmad_product_data *d = node->data;
    clmad_tensor *a = node->inputs[0], *b = node->inputs[1];
    clmad_status st = product_into(ctx, &io->out_tan[0], io->in_tan[0], b, d->ta, d->tb);
    return st == CLMAD_OK ? product_into(ctx, &io->out_tan[0], a, io->in_tan[1], d->ta, d->tb) : st;
}

clmad_status clmad__hvp_product_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    const clmad_product_data *d = node->data;
    const int ta = d->ta, tb = d->tb;
    clmad_tensor *a = node->inputs[0], *b = node->inputs[1], *g = io->out_adj[0], *gt = io->out_adj_tan[0];
    clmad_status st = CLMAD_OK;
    if (io->want[0]) {
        st = adjoint_a(ctx, &io->in_adj[0], g, b, ta, tb);
        if (st == CLMAD_OK)
            st = adjoint_a(ctx, &io->in_adj_tan[0], gt, b, ta, tb);
        if (st == CLMAD_OK)
            st = adjoint_a(ctx, &io->in_adj_tan[0], g, io->in_tan[1], ta, tb);
    }
    if (io->want[1] && st == CLMAD_OK) {
        st = adjoint_b(ctx, &io->in_adj[1], a, g, ta, tb);
        if (st == CLMAD_OK)
            st = adjoint_b(ctx, &io->in_adj_tan[1], a, gt, ta, tb);
        if (st == CLMAD_OK)
            st = adjoint_b(ctx, &io->in_adj_tan[1], io->in_tan[0], g, ta, tb);
    }
    return st;
}
