/* SPDX-License-Identifier: Apache-2.0 */
/* Element types: their sizes and names, whether a context can run them,
 * and the refusal of integer tensors by float-only operations. */
#include "runtime/tensor.h"

size_t clmad_dtype_size(clmad_dtype dtype)
{
    switch (dtype) {
    case CLMAD_F32: return sizeof(float);
    case CLMAD_F64: return sizeof(double);
    case CLMAD_I32: return sizeof(int32_t);
    case CLMAD_I64: return sizeof(int64_t);
    case CLMAD_U8: return sizeof(uint8_t);
    case CLMAD_F16:
    case CLMAD_BF16: return sizeof(uint16_t);
    }
    return 0;
}

const char *clmad_dtype_name(clmad_dtype dtype)
{
    switch (dtype) {
    case CLMAD_F32: return "f32";
    case CLMAD_F64: return "f64";
    case CLMAD_I32: return "i32";
    case CLMAD_I64: return "i64";
    case CLMAD_U8: return "u8";
    case CLMAD_F16: return "f16";
    case CLMAD_BF16: return "bf16";
    }
    return "unknown";
}

int clmad__dtype_is_float(clmad_dtype dtype)
{
    return dtype == CLMAD_F32 || dtype == CLMAD_F64;
}

int clmad__dtype_is_16bit(clmad_dtype dtype)
{
    return dtype == CLMAD_F16 || dtype == CLMAD_BF16;
}

clmad_status clmad__check_dtype(const clmad_context *ctx, clmad_dtype dtype)
{
    if (clmad_dtype_size(dtype) == 0)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "unknown dtype %d", (int)dtype);
    if (dtype != CLMAD_F64)
        return CLMAD_OK;
    if (!ctx->fp64)
        return clmad__fail(ctx, CLMAD_ERR_UNSUPPORTED,
                           "dtype f64 is not supported on device \"%s\"%s", ctx->info.name,
                           ctx->info.fp64 ? " (fp64 disabled by the disable_fp64 option)"
                                          : " (the device reports no fp64 support)");
    return CLMAD_OK;
}

clmad_status clmad__require_float(const clmad_context *ctx, const clmad_tensor *t, const char *call,
                                  const char *what)
{
    if (!t || clmad__dtype_is_float(t->dtype))
        return CLMAD_OK;
    if (clmad__dtype_is_16bit(t->dtype))
        return clmad__fail(ctx, CLMAD_ERR_DTYPE,
                           "%s: %s is a 16-bit tensor (%s), which this operation does not compute on yet: "
                           "clmad_cast it to f32 first",
                           call, what, clmad_dtype_name(t->dtype));
    return clmad__fail(ctx, CLMAD_ERR_DTYPE,
                       "%s: %s is an integer tensor (%s); this operation takes f32 or f64 tensors "
                       "(integer tensors are labels, indices and masks: see the index operations)",
                       call, what, clmad_dtype_name(t->dtype));
}

clmad_status clmad__require_any_float(const clmad_context *ctx, const clmad_tensor *t, const char *call,
                                      const char *what)
{
    return t && clmad__dtype_is_16bit(t->dtype) ? CLMAD_OK : clmad__require_float(ctx, t, call, what);
}
