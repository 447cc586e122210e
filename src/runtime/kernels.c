/* SPDX-License-Identifier: Apache-2.0 */
#include "runtime/primitives.h"
#include "runtime/context.h"
#include "base/embedded.h"
#include "base/strbuf.h"

#include <stdio.h>
#include <string.h>

/* Each kernel and the file under cl/ that holds it. */
static const struct {
    const char *name, *file;
} OPS[CLMAD_OPS_COUNT] = {
    [CLMAD_OPS_STRIDED_COPY] = {"clmad_strided_copy", "ops.cl"},
    [CLMAD_OPS_REDUCE_SUM] = {"clmad_reduce_sum", "ops.cl"},
    [CLMAD_OPS_ACCUMULATE] = {"clmad_accumulate", "ops.cl"},
    [CLMAD_OPS_FILL] = {"clmad_fill", "ops.cl"},
    [CLMAD_OPS_EXPAND_SCALED] = {"clmad_expand_scaled", "ops.cl"},
    [CLMAD_OPS_DOT_PARTS] = {"clmad_dot_parts", "ops.cl"},
    [CLMAD_OPS_SUM_RANGES] = {"clmad_sum_ranges", "ops.cl"},
    [CLMAD_OPS_DOT_RANGES] = {"clmad_dot_ranges", "ops.cl"},
    [CLMAD_OPS_AXIS_REDUCE] = {"clmad_axis_reduce", "axis.cl"},
    [CLMAD_OPS_AXIS_SOFTMAX] = {"clmad_axis_softmax", "axis.cl"},
    [CLMAD_OPS_AXIS_MAX_GRAD] = {"clmad_axis_max_grad", "axis.cl"},
    [CLMAD_OPS_AXIS_LOGSUMEXP_GRAD] = {"clmad_axis_logsumexp_grad", "axis.cl"},
    [CLMAD_OPS_AXIS_SOFTMAX_GRAD] = {"clmad_axis_softmax_grad", "axis.cl"},
    [CLMAD_OPS_ONE_HOT] = {"clmad_one_hot", "axis.cl"},
};

clmad_status clmad__ops_kernel(clmad_context *ctx, clmad_dtype dtype, clmad_ops_kernel_id id,
                               cl_kernel *kernel)
{
    cl_kernel *slot = &ctx->ops[dtype == CLMAD_F64][id];
    if (*slot) {
        *kernel = *slot;
        return CLMAD_OK;
    }
    clmad_strbuf sb = {0};
    if (dtype == CLMAD_F64)
        clmad__sb_append(&sb, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\ntypedef double real;\n"
                              "typedef double8 real8;\n");
    else
        clmad__sb_append(&sb, "typedef float real;\ntypedef float8 real8;\n");
    clmad__sb_printf(&sb, "#line 1 \"%s\"\n", OPS[id].file);
    clmad__sb_append(&sb, clmad__embedded_source(OPS[id].file));
    if (sb.failed) {
        clmad__sb_free(&sb);
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory building %s", OPS[id].file);
    }
    cl_program program;
    clmad_status st = clmad__program_get(ctx, sb.data, "", &program, NULL);
    clmad__sb_free(&sb);
    if (st != CLMAD_OK)
        return st;
    cl_int err;
    *slot = clCreateKernel(program, OPS[id].name, &err);
    if (err != CL_SUCCESS) {
        *slot = NULL;
        char what[64];
        snprintf(what, sizeof what, "clCreateKernel(%s)", OPS[id].name);
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

clmad_status clmad__enqueue_1d(clmad_context *ctx, cl_kernel kernel, size_t n, uint64_t bytes)
{
    const size_t group = 64;
    size_t global = (n + group - 1) / group * group;
    if (global == 0)
        return CLMAD_OK;
    cl_int err = clEnqueueNDRangeKernel(ctx->queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
    if (err == CL_SUCCESS) {
        ctx->stats.kernels_launched++;
        ctx->stats.bytes_moved += bytes;
    }
    return err == CL_SUCCESS ? CLMAD_OK : clmad__fail_cl(ctx, err, "clEnqueueNDRangeKernel");
}

clmad_status clmad__fill(clmad_context *ctx, cl_mem mem, clmad_dtype dtype, size_t n, double value)
{
    if (n == 0)
        return CLMAD_OK;
    cl_kernel kernel;
    clmad_status st = clmad__ops_kernel(ctx, dtype, CLMAD_OPS_FILL, &kernel);
    if (st != CLMAD_OK)
        return st;
    float value_f = (float)value;
    cl_ulong count = n;
    cl_int err = clSetKernelArg(kernel, 0, sizeof mem, &mem);
    if (err == CL_SUCCESS)
        err = dtype == CLMAD_F32 ? clSetKernelArg(kernel, 1, sizeof value_f, &value_f)
                                 : clSetKernelArg(kernel, 1, sizeof value, &value);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kernel, 2, sizeof count, &count);
    if (err != CL_SUCCESS)
        return clmad__fail_cl(ctx, err, "clSetKernelArg(clmad_fill)");
    return clmad__enqueue_1d(ctx, kernel, n, (uint64_t)n * clmad_dtype_size(dtype));
}
