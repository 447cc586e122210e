/* SPDX-License-Identifier: Apache-2.0 */
/* 16-bit operands of the operations that compute only in f32 and f64 (the
 * products, the axis operations, the losses): widened to f32 by clmad_cast,
 * the operation run in f32, its result rounded back to the operands' dtype.
 * The casts are recorded, so gradients flow through them, each rounded
 * once into its tensor's dtype. It costs a pass over each operand and one
 * over the result (docs/design-notes.md, 16-bit tensors). */
#include "ops/ops.h"

int clmad__widens(const clmad_tensor *a, const clmad_tensor *b)
{
    return a && clmad__dtype_is_16bit(a->dtype) && (!b || b->dtype == a->dtype);
}

clmad_status clmad__through_f32(clmad_context *ctx, int n, clmad_tensor *const *in, clmad__f32_op op,
                                const void *args, int round_result, clmad_tensor **out)
{
    clmad_tensor *wide[4] = {NULL, NULL, NULL, NULL}, *y = NULL;
    const clmad_dtype dtype = in[0]->dtype;
    clmad_status st = CLMAD_OK;
    for (int j = 0; j < n && st == CLMAD_OK; j++)
        st = clmad__dtype_is_16bit(in[j]->dtype) ? clmad_cast(ctx, in[j], CLMAD_F32, &wide[j])
                                                 : (wide[j] = clmad_tensor_retain(in[j]), CLMAD_OK);
    if (st == CLMAD_OK)
        st = op(ctx, wide, args, &y);
    if (st == CLMAD_OK && round_result) {
        st = clmad_cast(ctx, y, dtype, out);
        clmad_tensor_release(y);
    } else if (st == CLMAD_OK) {
        *out = y;
    }
    for (int j = 0; j < n; j++)
        clmad_tensor_release(wide[j]);
    return st;
}
