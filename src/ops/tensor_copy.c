/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_tensor_copy: values into an existing tensor, outside the tape. */
#include "base/strbuf.h"
#include "tape/tape.h"
#include "runtime/context_guard.h"

clmad_status clmad_tensor_copy(clmad_tensor *dst, clmad_tensor *src)
{
    CLMAD_GUARD(dst ? dst->ctx : NULL, "clmad_tensor_copy");
    if (!dst || !src)
        return clmad__fail(dst ? dst->ctx : src ? src->ctx : NULL, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_tensor_copy: %s is NULL", dst ? "src" : "dst");
    clmad_context *ctx = dst->ctx;
    if (src->ctx != ctx)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_tensor_copy: src belongs to another context than dst");
    if (src->dtype != dst->dtype)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_tensor_copy: dst is %s, src %s",
                           clmad_dtype_name(dst->dtype),
                           clmad_dtype_name(src->dtype));
    if (!clmad__same_shape(dst, src)) {
        clmad_strbuf a = {0}, b = {0};
        clmad__sb_shape(&a, dst->ndim, dst->shape);
        clmad__sb_shape(&b, src->ndim, src->shape);
        clmad_status st = clmad__fail(ctx, CLMAD_ERR_SHAPE,
                                      "clmad_tensor_copy: dst has shape %s, src %s",
                                      a.data && !a.failed ? a.data : "(?)",
                                      b.data && !b.failed ? b.data : "(?)");
        clmad__sb_free(&a);
        clmad__sb_free(&b);
        return st;
    }
    clmad_status writable = clmad__check_writable(dst, "clmad_tensor_copy", "dst");
    if (writable != CLMAD_OK)
        return writable;
    /* The tape reads dst's values in backward, or routes gradients through
     * it: new values there would give wrong gradients without a word. */
    if (clmad__tape_holds(ctx, dst))
        return clmad__fail(ctx, CLMAD_ERR_STATE,
                           "clmad_tensor_copy: the tape still holds dst (it is an input or the output "
                           "of a recorded operation); copy after backward or clmad_tape_clear, or "
                           "into another tensor");
    /* Tensors that share a buffer (wrapped twice) share their elements. */
    if (dst->numel == 0 || dst->mem == src->mem)
        return CLMAD_OK;
    cl_int err = clEnqueueCopyBuffer(ctx->queue, src->mem, dst->mem, 0, 0, clmad__tensor_bytes(dst),
                                     0, NULL, NULL);
    return err == CL_SUCCESS ? CLMAD_OK : clmad__fail_cl(ctx, err, "clEnqueueCopyBuffer");
}
