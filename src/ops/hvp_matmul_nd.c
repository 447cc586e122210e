/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clmad_hvp's rules for clmad_matmul by NumPy's rules (matmul_nd.c: 1-d
 * operands, batch axes that broadcast). The product is bilinear:
 *   Cdot = P(Adot, B) + P(A, Bdot),
 *   Abar = G_A(Cbar, B),  Abardot = G_A(Cbardot, B) + G_A(Cbar, Bdot),
 *   Bbar = G_B(A, Cbar),  Bbardot = G_B(A, Cbardot) + G_B(Adot, Cbar),
 * with G_A, G_B matmul_nd's own adjoint products, which sum over the batch
 * axes an operand was broadcast along. A tangent has its primal's shape,
 * so every product here has the node's plan.
 */
#include "ops/hvp.h"
#include "ops/ops.h"

/* *acc += P(a, b), nothing when either is zero (NULL). */
static clmad_status product_into(clmad_context *ctx, clmad_tensor **acc, clmad_tensor *a, clmad_tensor *b, int ta,
                                 int tb)
{
    return clmad__hvp_product_into(ctx, acc, clmad__matmul_nd, a, b, ta, tb);
}

/* *acc += the gradient of operand j for the result's adjoint g, with
 * `other` (the other operand or its tangent) in place of the other
 * operand; nothing when either is zero. */
static clmad_status grad_into(clmad_context *ctx, clmad_node *node, int ta, int tb, int j, clmad_tensor *other,
                              clmad_tensor *g, clmad_tensor **acc)
{
    if (!other || !g)
        return CLMAD_OK;
    const clmad_tensor *a = j == 0 ? node->inputs[0] : other, *b = j == 0 ? other : node->inputs[1];
    clmad_tensor *d;
    clmad_status st = clmad__matmul_nd_grad(ctx, a, b, ta, tb, g, j, &d);
    return st == CLMAD_OK ? clmad__hvp_add_into(ctx, acc, d) : st;
}

clmad_status clmad__hvp_matmul_nd_forward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    int ta, tb;
    clmad__matmul_nd_flags(node, &ta, &tb);
    clmad_status st = product_into(ctx, &io->out_tan[0], io->in_tan[0], node->inputs[1], ta, tb);
    return st == CLMAD_OK ? product_into(ctx, &io->out_tan[0], node->inputs[0], io->in_tan[1], ta, tb) : st;
}

clmad_status clmad__hvp_matmul_nd_backward(clmad_context *ctx, clmad_node *node, clmad_hvp_io *io)
{
    int ta, tb;
    clmad__matmul_nd_flags(node, &ta, &tb);
    clmad_status st = CLMAD_OK;
    for (int j = 0; j < 2 && st == CLMAD_OK; j++) {
        if (!io->want[j])
            continue;
        clmad_tensor *other = node->inputs[1 - j], *other_tan = io->in_tan[1 - j];
        st = grad_into(ctx, node, ta, tb, j, other, io->out_adj[0], &io->in_adj[j]);
        if (st == CLMAD_OK)
            st = grad_into(ctx, node, ta, tb, j, other, io->out_adj_tan[0], &io->in_adj_tan[j]);
        if (st == CLMAD_OK)
            st = grad_into(ctx, node, ta, tb, j, other_tan, io->out_adj[0], &io->in_adj_tan[j]);
    }
    return st;
}
