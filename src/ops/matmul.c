/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_matmul: C = op(A) op(B) through CLBlast; its adjoint is product.c's.
 * Other ranks go to matmul_nd.c; two 2-d operands stay on this path. */
#include "ops/ops.h"
#include "ops/region.h"
#include "runtime/context_guard.h"

static clmad_status matmul_f32(clmad_context *ctx, clmad_tensor *const *in, const void *args, clmad_tensor **out)
{
    const int *t = args;
    return clmad_matmul(ctx, in[0], in[1], t[0], t[1], out);
}

clmad_status clmad_matmul(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, int trans_a,
                          int trans_b, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_matmul");
    READS_ONLY(ctx, a, b); /* a chain of held calls may end here (a region) */
    clmad_status st = clmad__check_operands(ctx, "clmad_matmul", a, b, out);
    if (st != CLMAD_OK)
        return st;
    if (clmad__widens(a, b)) { /* widen, SGEMM, round */
        const int t[2] = {trans_a, trans_b};
        clmad_tensor *in[2] = {a, b};
        return clmad__through_f32(ctx, 2, in, matmul_f32, t, 1, out);
    }
    if (a->ndim != 2 || b->ndim != 2) /* batches and vectors: NumPy's rules */
        return clmad__matmul_nd(ctx, a, b, trans_a, trans_b, out);
    if (a->dtype != b->dtype)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_matmul: operands of different dtypes");
    st = clmad__require_float(ctx, a, "clmad_matmul", "a");
    if (st != CLMAD_OK)
        return st;
    size_t m = trans_a ? a->shape[1] : a->shape[0], k = trans_a ? a->shape[0] : a->shape[1];
    size_t kb = trans_b ? b->shape[1] : b->shape[0], n = trans_b ? b->shape[0] : b->shape[1];
    if (k != kb)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "clmad_matmul: op(a) is %zu x %zu and op(b) is %zu x %zu: inner sizes differ",
                           m, k, kb, n);
    size_t shape[2] = {m, n};
    clmad_tensor *c = NULL;
    st = clmad_tensor_create(ctx, a->dtype, 2, shape, NULL, &c);
    if (st == CLMAD_OK)
        st = clmad__batched_gemm(ctx, a->dtype, 1, trans_a != 0, trans_b != 0, m, n, k, clmad__mat_of(a),
                                 clmad__mat_of(b), 0.0, c);
    return clmad__finish_product(ctx, &clmad__op_matmul, a, b, trans_a != 0, trans_b != 0, c, st, out);
}
