/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_bmm: batched matrix products, out[i] = op(a[i]) op(b[i]), and their
 * adjoints (those of clmad_matmul per matrix). One CLBlast GEMM per matrix
 * at its offset: the GEMM kernels that clmad_matmul has compiled already
 * serve (CLBlast's batched GEMM is another program, tens of seconds to
 * compile on POCL), at the price of one launch per matrix. */
#include "ops/ops.h"
#include "ops/region.h"
#include "runtime/context_guard.h"

#include <stdlib.h>

static clmad_status bmm_f32(clmad_context *ctx, clmad_tensor *const *in, const void *args, clmad_tensor **out)
{
    const int *t = args;
    return clmad_bmm(ctx, in[0], in[1], t[0], t[1], out);
}

clmad_status clmad_bmm(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, int trans_a, int trans_b,
                       clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_bmm");
    READS_ONLY(ctx, a, b);
    clmad_status st = clmad__check_operands(ctx, "clmad_bmm", a, b, out);
    if (st != CLMAD_OK)
        return st;
    if (clmad__widens(a, b)) {
        const int t[2] = {trans_a, trans_b};
        clmad_tensor *in[2] = {a, b};
        return clmad__through_f32(ctx, 2, in, bmm_f32, t, 1, out);
    }
    if (a->ndim != 3 || b->ndim != 3)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "clmad_bmm: operands must be 3-d (batch, rows, cols) (ranks %d and %d)", a->ndim,
                           b->ndim);
    if (a->dtype != b->dtype)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_bmm: operands of different dtypes");
    st = clmad__require_float(ctx, a, "clmad_bmm", "a");
    if (st != CLMAD_OK)
        return st;
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
        st = clmad__batched_gemm(ctx, a->dtype, shape[0], trans_a != 0, trans_b != 0, m, n, k, clmad__mat_of(a),
                                 clmad__mat_of(b), 0.0, c);
    return clmad__finish_product(ctx, &clmad__op_bmm, a, b, trans_a != 0, trans_b != 0, c, st, out);
}
