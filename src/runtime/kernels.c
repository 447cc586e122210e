/* SPDX-License-Identifier: Apache-2.0 */
/* The context's cached internal kernels (the table of kernel_ids.h). */
#include "runtime/primitives.h"
#include "runtime/context.h"
#include "base/embedded.h"
#include "base/strbuf.h"
#include "runtime/half.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *file, *name;
} KERNELS[] = {
#define CLMAD__KERNEL_ENTRY(id, file, name) [id] = {file, name},
    CLMAD_CACHED_KERNELS(CLMAD__KERNEL_ENTRY)
#undef CLMAD__KERNEL_ENTRY
};

/* Every id has its entry, with a file and a kernel name. */
_Static_assert(sizeof KERNELS / sizeof KERNELS[0] == CLMAD_KERNEL_COUNT,
               "CLMAD_CACHED_KERNELS: an id without its entry");
#define CLMAD__KERNEL_CHECK(id, file, name)                                       \
    _Static_assert(sizeof file > 1 && sizeof name > 1, #id ": an empty file or kernel name");
CLMAD_CACHED_KERNELS(CLMAD__KERNEL_CHECK)
#undef CLMAD__KERNEL_CHECK

clmad_status clmad__cached_kernel(clmad_context *ctx, clmad_dtype dtype, clmad_kernel_id id,
                                  cl_kernel *kernel)
{
    if ((unsigned)dtype >= CLMAD__DTYPE_COUNT || (unsigned)id >= CLMAD_KERNEL_COUNT)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "internal kernel %d for dtype %d", (int)id,
                           (int)dtype);
    /* A safety net behind the checks of the calls (clmad__require_float):
     * only the files written for any element type build for integers. */
    if (!clmad__dtype_is_float(dtype) && strcmp(KERNELS[id].file, "ops.cl") != 0 &&
        strcmp(KERNELS[id].file, "index.cl") != 0)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "internal kernel %s takes f32 or f64 elements, not %s",
                           KERNELS[id].name, clmad_dtype_name(dtype));
    cl_kernel *slot = &ctx->kernels[dtype][id];
    if (*slot) {
        *kernel = *slot;
        return CLMAD_OK;
    }
    /* real, clmad__stored and clmad__real8 come from cl/real.clh, which
     * each file includes: for an integer dtype `real` is that integer type
     * (CLMAD_ELEM_INT); a 16-bit float is stored as its bits and computes
     * in float (CLMAD_STORE_16). */
    static const char *const INT_TYPES[CLMAD__DTYPE_COUNT] = {
        [CLMAD_I32] = "int", [CLMAD_I64] = "long", [CLMAD_U8] = "uchar"};
    clmad_strbuf sb = {0};
    clmad__sb_printf(&sb, "#define CLMAD_REAL_DOUBLE %d\n#define CLMAD_VW %d\n", dtype == CLMAD_F64,
                     ctx->vector_width);
    if (INT_TYPES[dtype])
        clmad__sb_printf(&sb, "#define CLMAD_ELEM_INT %s\n#define CLMAD_ELEM_INT8 %s8\n", INT_TYPES[dtype],
                         INT_TYPES[dtype]);
    if (clmad__dtype_is_16bit(dtype))
        clmad__sb_printf(&sb, "#define CLMAD_STORE_16 %d\n", dtype == CLMAD_F16 ? 1 : 2);
    clmad__sb_printf(&sb, "#line 1 \"%s\"\n", KERNELS[id].file);
    clmad__sb_append(&sb, clmad__embedded_source(KERNELS[id].file));
    if (sb.failed) {
        clmad__sb_free(&sb);
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory building %s", KERNELS[id].file);
    }
    cl_program program;
    clmad_status st = clmad__program_get(ctx, sb.data, "", &program, NULL);
    clmad__sb_free(&sb);
    if (st != CLMAD_OK)
        return st;
    cl_int err;
    *slot = clCreateKernel(program, KERNELS[id].name, &err);
    if (err != CL_SUCCESS) {
        *slot = NULL;
        char what[64];
        snprintf(what, sizeof what, "clCreateKernel(%s)", KERNELS[id].name);
        return clmad__fail_cl(ctx, err, what);
    }
    *kernel = *slot;
    return CLMAD_OK;
}

clmad_status clmad__set_kernel_args(clmad_context *ctx, cl_kernel k, int n, const size_t *sizes,
                                    const void *const *values)
{
    for (int i = 0; i < n; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, sizes[i], values[i]);
        if (err != CL_SUCCESS)
            return clmad__fail_cl(ctx, err, "clSetKernelArg");
    }
    return CLMAD_OK;
}

/* One launch of global work-items (local: the work-group size, or NULL for
 * the driver's choice), counted in the stats. */
static clmad_status enqueue(clmad_context *ctx, cl_kernel kernel, size_t global, const size_t *local,
                            uint64_t bytes)
{
    if (global == 0)
        return CLMAD_OK;
    cl_int err = clEnqueueNDRangeKernel(ctx->queue, kernel, 1, NULL, &global, local, 0, NULL, NULL);
    if (err == CL_SUCCESS) {
        ctx->stats.kernels_launched++;
        ctx->stats.bytes_moved += bytes;
    }
    return err == CL_SUCCESS ? CLMAD_OK : clmad__fail_cl(ctx, err, "clEnqueueNDRangeKernel");
}

clmad_status clmad__enqueue_1d(clmad_context *ctx, cl_kernel kernel, size_t n, uint64_t bytes)
{
    const size_t group = 64;
    return enqueue(ctx, kernel, (n + group - 1) / group * group, NULL, bytes);
}

clmad_status clmad__enqueue_flat(clmad_context *ctx, cl_kernel kernel, size_t n, uint64_t bytes)
{
    const size_t w = (size_t)ctx->vector_width;
    return clmad__enqueue_1d(ctx, kernel, (n + w - 1) / w, bytes);
}

clmad_status clmad__enqueue_groups(clmad_context *ctx, cl_kernel kernel, size_t n_groups, size_t group,
                                   uint64_t bytes)
{
    return enqueue(ctx, kernel, n_groups * group, &group, bytes);
}

size_t clmad__real_arg(clmad_dtype dtype, double value, clmad_real_arg *arg)
{
    switch (dtype) {
    case CLMAD_F32: arg->f = (float)value; break;
    case CLMAD_F64: arg->d = value; break;
    case CLMAD_I32: arg->i = (cl_int)value; break;
    case CLMAD_I64: arg->l = (cl_long)value; break;
    case CLMAD_U8: arg->u = (cl_uchar)value; break;
    case CLMAD_F16: /* computed in float (CLMAD_STORE_16; clmad__fill stores bits) */
    case CLMAD_BF16: arg->f = (float)value; return sizeof(float);
    }
    return clmad_dtype_size(dtype);
}

clmad_status clmad__fill(clmad_context *ctx, cl_mem mem, clmad_dtype dtype, size_t n, double value)
{
    if (n == 0)
        return CLMAD_OK;
    cl_kernel kernel;
    clmad_status st = clmad__cached_kernel(ctx, dtype, CLMAD_OPS_FILL, &kernel);
    if (st != CLMAD_OK)
        return st;
    clmad_real_arg arg; /* the element as stored: a 16-bit float's bits */
    size_t arg_size = clmad__real_arg(dtype, value, &arg);
    if (clmad__dtype_is_16bit(dtype)) {
        arg.h = dtype == CLMAD_F16 ? clmad__f16_from_double(value) : clmad__bf16_from_double(value);
        arg_size = sizeof arg.h;
    }
    cl_ulong count = n;
    const void *values[] = {&mem, &arg, &count};
    const size_t sizes[] = {sizeof mem, arg_size, sizeof count};
    st = clmad__set_kernel_args(ctx, kernel, 3, sizes, values);
    if (st != CLMAD_OK)
        return st;
    return clmad__enqueue_flat(ctx, kernel, n, (uint64_t)n * clmad_dtype_size(dtype));
}

clmad_status clmad__convert_half(clmad_context *ctx, clmad_tensor *dst, clmad_tensor *src)
{
    const int widen = clmad__dtype_is_16bit(src->dtype);
    const clmad_tensor *half = widen ? src : dst, *wide = widen ? dst : src;
    const clmad_kernel_id id = widen ? (half->dtype == CLMAD_F16 ? CLMAD_HALF_F16_TO_REAL : CLMAD_HALF_BF16_TO_REAL)
                                     : (half->dtype == CLMAD_F16 ? CLMAD_HALF_REAL_TO_F16 : CLMAD_HALF_REAL_TO_BF16);
    cl_ulong n = dst->numel;
    const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof n};
    const void *values[] = {&dst->mem, &src->mem, &n};
    return clmad__launch_cached(ctx, wide->dtype, id, 3, sizes, values, dst->numel,
                                (uint64_t)n * (clmad_dtype_size(dst->dtype) + clmad_dtype_size(src->dtype)));
}

clmad_status clmad__launch_cached(clmad_context *ctx, clmad_dtype dtype, clmad_kernel_id id, int n,
                                  const size_t *sizes, const void *const *values, size_t work, uint64_t bytes)
{
    cl_kernel k;
    clmad_status st = clmad__cached_kernel(ctx, dtype, id, &k);
    if (st == CLMAD_OK)
        st = clmad__set_kernel_args(ctx, k, n, sizes, values);
    return st == CLMAD_OK ? clmad__enqueue_1d(ctx, k, work, bytes) : st;
}

clmad_status clmad__launch_cached_groups(clmad_context *ctx, clmad_dtype dtype, clmad_kernel_id id, int n,
                                         const size_t *sizes, const void *const *values, size_t n_groups,
                                         size_t group, uint64_t bytes)
{
    cl_kernel k;
    clmad_status st = clmad__cached_kernel(ctx, dtype, id, &k);
    if (st == CLMAD_OK)
        st = clmad__set_kernel_args(ctx, k, n, sizes, values);
    return st == CLMAD_OK ? clmad__enqueue_groups(ctx, k, n_groups, group, bytes) : st;
}
