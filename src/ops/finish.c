/* SPDX-License-Identifier: Apache-2.0 */
/* The common end of a one-output operation: record its node, or clean up. */
#include "ops/ops.h"

clmad_status clmad__finish_op(clmad_context *ctx, const char *name, clmad_backward_fn backward,
                              clmad_tensor *const *ins, int n, clmad_tensor *y, void *data,
                              void (*free_data)(clmad_node *node), clmad_status st, clmad_tensor **out)
{
    if (st == CLMAD_OK && clmad__should_record(ctx, ins, n))
        st = clmad__record_op(ctx, name, backward, ins, n, &y, 1, data, free_data, NULL);
    else
        clmad__discard_data(data, free_data);
    if (st != CLMAD_OK) {
        clmad_tensor_release(y);
        return st;
    }
    *out = y;
    return CLMAD_OK;
}
