/* SPDX-License-Identifier: Apache-2.0 */
/* The accumulator of clmad_hvp's tangents and adjoint tangents, in a file
 * of its own: the walk (hvp.c) and every file of rules (hvp_rules.c,
 * hvp_axis.c) call it, and the rules' files call each other one way only
 * (check-layers.sh forbids cycles between files). */
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
