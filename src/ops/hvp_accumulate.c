/* SPDX-License-Identifier: Apache-2.0 */
/* The accumulators of clmad_hvp's tangents and adjoint tangents (a sum, a
 * product, a matrix product added in), in a file of their own below every
 * file of rules (hvp_rules.c, hvp_axis.c, hvp_index.c, hvp_matmul_nd.c):
 * they call down into it and never into each other (check-layers.sh
 * forbids cycles between files). */
#include "ops/hvp.h"

clmad_status clmad__hvp_add_into(clmad_context *ctx, clmad_tensor **acc, clmad_tensor *x)
{
    if (!x)
        return CLMAD_OK;
    if (!*acc) {
        *acc = x;
        return CLMAD_OK;
    }
    clmad_tensor *s;
    clmad_status st = clmad_add(ctx, *acc, x, &s);
    clmad_tensor_release(x);
    if (st != CLMAD_OK)
        return st;
    clmad_tensor_release(*acc);
    *acc = s;
    return CLMAD_OK;
}

clmad_status clmad__hvp_mul_into(clmad_context *ctx, clmad_tensor **acc, clmad_tensor *a, clmad_tensor *b,
                                 int negate)
{
    if (!a || !b)
        return CLMAD_OK;
    clmad_tensor *m, *n;
    clmad_status st = clmad_mul(ctx, a, b, &m);
    if (st == CLMAD_OK && negate) {
        st = clmad_neg(ctx, m, &n);
        clmad_tensor_release(m);
        m = n;
    }
    return st == CLMAD_OK ? clmad__hvp_add_into(ctx, acc, m) : st;
}

clmad_status clmad__hvp_product_into(clmad_context *ctx, clmad_tensor **acc, clmad_hvp_product_fn product,
                                     clmad_tensor *a, clmad_tensor *b, int ta, int tb)
{
    if (!a || !b)
        return CLMAD_OK;
    clmad_tensor *c;
    clmad_status st = product(ctx, a, b, ta, tb, &c);
    return st == CLMAD_OK ? clmad__hvp_add_into(ctx, acc, c) : st;
}
