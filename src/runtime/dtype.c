/* SPDX-License-Identifier: Apache-2.0 */
/* Element types: their sizes, and whether a context can run them. */
#include "runtime/context.h"

size_t clmad_dtype_size(clmad_dtype dtype)
{
    switch (dtype) {
    case CLMAD_F32: return sizeof(float);
    case CLMAD_F64: return sizeof(double);
    }
    return 0;
}

clmad_status clmad__check_dtype(const clmad_context *ctx, clmad_dtype dtype)
{
    if (dtype == CLMAD_F32)
        return CLMAD_OK;
    if (dtype != CLMAD_F64)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "unknown dtype %d", (int)dtype);
    if (!ctx->fp64)
        return clmad__fail(ctx, CLMAD_ERR_UNSUPPORTED,
                           "dtype f64 is not supported on device \"%s\"%s", ctx->info.name,
                           ctx->info.fp64 ? " (fp64 disabled by the disable_fp64 option)"
                                          : " (the device reports no fp64 support)");
    return CLMAD_OK;
}
