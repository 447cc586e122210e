/* SPDX-License-Identifier: Apache-2.0 */
/* The kernels of cl/train.cl, one program per context and dtype, as
 * ops_kernels.c builds cl/ops.cl. */
#include "runtime/primitives.h"
#include "runtime/context.h"
#include "base/embedded.h"
#include "base/strbuf.h"

static const char *const TRAIN_NAMES[CLMAD_TRAIN_COUNT] = {
    [CLMAD_TRAIN_RAND] = "clmad_rand",
    [CLMAD_TRAIN_AXPBY] = "clmad_axpby",
    [CLMAD_TRAIN_SGD] = "clmad_sgd",
    [CLMAD_TRAIN_ADAM] = "clmad_adam",
};

clmad_status clmad__train_kernel(clmad_context *ctx, clmad_dtype dtype, clmad_train_kernel_id id,
                                 cl_kernel *kernel)
{
    cl_kernel *slot = &ctx->train[dtype == CLMAD_F64][id];
    if (*slot) {
        *kernel = *slot;
        return CLMAD_OK;
    }
    clmad_strbuf sb = {0};
    if (dtype == CLMAD_F64)
        clmad__sb_append(&sb, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\ntypedef double real;\n"
                              "#define CLMAD_F64 1\n");
    else
        clmad__sb_append(&sb, "typedef float real;\n");
    clmad__sb_append(&sb, "#line 1 \"train.cl\"\n");
    clmad__sb_append(&sb, clmad__embedded_source("train.cl"));
    if (sb.failed) {
        clmad__sb_free(&sb);
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory building train.cl");
    }
    cl_program program;
    clmad_status st = clmad__program_get(ctx, sb.data, "", &program, NULL);
    clmad__sb_free(&sb);
    if (st != CLMAD_OK)
        return st;
    cl_int err;
    *slot = clCreateKernel(program, TRAIN_NAMES[id], &err);
    if (err != CL_SUCCESS) {
        *slot = NULL;
        return clmad__fail_cl(ctx, err, "clCreateKernel(train.cl)");
    }
    *kernel = *slot;
    return CLMAD_OK;
}
