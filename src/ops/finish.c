/* SPDX-License-Identifier: Apache-2.0 */
/* The common start and end of an operation: its operands checked; its node
 * recorded, or its data cleaned up. */
#include "ops/ops.h"

clmad_status clmad__finish_op(clmad_context *ctx, const clmad_op *op, clmad_tensor *const *ins, int n,
                              clmad_tensor *y, void *data, clmad_status st, clmad_tensor **out)
{
    if (st == CLMAD_OK && clmad__should_record(ctx, ins, n))
        st = clmad__record_op(ctx, op, ins, n, &y, 1, data, NULL);
    else
        clmad__discard_data(op, data);
    if (st != CLMAD_OK) {
        clmad_tensor_release(y);
        return st;
    }
    *out = y;
    return CLMAD_OK;
}

clmad_status clmad__check_operands(clmad_context *ctx, const char *call, const clmad_tensor *a,
                                   const clmad_tensor *b, const void *out)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!a || !b || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call, !a ? "a" : !b ? "b" : "out");
    clmad_status st = clmad__check_same_context(ctx, a, call, "a");
    return st == CLMAD_OK ? clmad__check_same_context(ctx, b, call, "b") : st;
}
