/* SPDX-License-Identifier: Apache-2.0 */
/* The one accumulator of clmad_hvp's tangents and adjoint tangents, in a
 * file of its own below every file of rules (hvp_rules.c, hvp_axis.c,
 * hvp_index.c, hvp_matmul_nd.c): they call down into it and never into
 * each other (check-layers.sh forbids cycles between files). */
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
