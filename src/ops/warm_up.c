/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_context_warm_up: the programs a first run compiles, built ahead. */
#include "ops/ops.h"
#include "runtime/context_guard.h"
#include "runtime/notice.h"

#include <stdio.h>
#include <string.h>

/* The first kernel of each cl/ file: building it builds the file's program
 * for a dtype (kernels.c: one program per file and dtype). */
static const struct {
    clmad_kernel_id id;
    const char *file;
    int any_dtype; /* built for the integer dtypes too (kernels.c) */
} FILES[] = {
    {CLMAD_OPS_STRIDED_COPY, "ops.cl", 1},
    {CLMAD_OPS_AXIS_REDUCE, "axis.cl", 0},
    {CLMAD_TRAIN_RAND, "train.cl", 0},
    {CLMAD_INDEX_CHECK, "index.cl", 1},
};
#define N_FILES (sizeof FILES / sizeof FILES[0])

static const clmad_dtype DTYPES[] = {CLMAD_F32, CLMAD_F64, CLMAD_I32, CLMAD_I64, CLMAD_U8};
#define N_DTYPES (sizeof DTYPES / sizeof DTYPES[0])

/* The transpositions of A and B whose GEMM kernels CLBlast builds: each
 * one is a kernel of its own, which a driver such as POCL compiles
 * further at its first launch. */
static const int TRANSPOSES[4][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
#define N_TRANSPOSES (sizeof TRANSPOSES / sizeof TRANSPOSES[0])

static int dtype_usable(const clmad_context *ctx, clmad_dtype dtype)
{
    return dtype != CLMAD_F64 || ctx->fp64;
}

/* What a warm-up of `flags` does on ctx: programs, then GEMMs. */
static void count_steps(const clmad_context *ctx, unsigned flags, int *programs, int *gemms)
{
    *programs = *gemms = 0;
    for (size_t d = 0; d < N_DTYPES; d++) {
        if (!dtype_usable(ctx, DTYPES[d]))
            continue;
        const int is_float = clmad__dtype_is_float(DTYPES[d]);
        for (size_t f = 0; f < N_FILES; f++)
            *programs += (flags & CLMAD_WARM_UP_PROGRAMS) && (is_float || FILES[f].any_dtype);
        *gemms += (flags & CLMAD_WARM_UP_GEMM) && is_float;
    }
}

static clmad_status warm_programs(clmad_context *ctx, int total, int *done)
{
    for (size_t d = 0; d < N_DTYPES; d++) {
        if (!dtype_usable(ctx, DTYPES[d]))
            continue;
        for (size_t f = 0; f < N_FILES; f++) {
            if (!clmad__dtype_is_float(DTYPES[d]) && !FILES[f].any_dtype)
                continue;
            /* Said only if it compiles (runtime/notice.c): a program in a
             * cache costs its load only. */
            snprintf(ctx->warm_up_step, sizeof ctx->warm_up_step, "warm-up on \"%.96s\": %d of %d: %s for %s",
                     ctx->info.name, ++*done, total, FILES[f].file, clmad_dtype_name(DTYPES[d]));
            cl_kernel kernel;
            clmad_status st = clmad__cached_kernel(ctx, DTYPES[d], FILES[f].id, &kernel);
            ctx->warm_up_step[0] = '\0';
            if (st != CLMAD_OK)
                return st;
        }
    }
    return CLMAD_OK;
}

/* One small GEMM per precision and transposition, into a scratch matrix. */
static clmad_status warm_gemms(clmad_context *ctx, int total, int *done)
{
    enum { SIDE = 8 };
    const size_t shape[2] = {SIDE, SIDE};
    for (size_t d = 0; d < N_DTYPES; d++) {
        const clmad_dtype dtype = DTYPES[d];
        if (!clmad__dtype_is_float(dtype) || !dtype_usable(ctx, dtype))
            continue;
        clmad_tensor *a = NULL, *c = NULL;
        clmad_status st = clmad_tensor_zeros(ctx, dtype, 2, shape, &a);
        if (st == CLMAD_OK)
            st = clmad_tensor_zeros(ctx, dtype, 2, shape, &c);
        /* Said always: whether CLBlast compiles (or its driver's cache has
         * them) cannot be seen from here. */
        clmad__notice(ctx, "warm-up on \"%s\": %d of %d: CLBlast's %cgemm kernels", ctx->info.name, ++*done,
                      total, dtype == CLMAD_F32 ? 'S' : 'D');
        for (size_t t = 0; st == CLMAD_OK && t < N_TRANSPOSES; t++) {
            const int ta = TRANSPOSES[t][0], tb = TRANSPOSES[t][1];
            st = clmad__gemm_at(ctx, dtype, ta, tb, SIDE, SIDE, SIDE, a->mem, 0, SIDE, a->mem, 0, SIDE, 0.0,
                                c->mem, 0, SIDE);
        }
        if (st == CLMAD_OK && clFinish(ctx->queue) != CL_SUCCESS)
            st = clmad__fail(ctx, CLMAD_ERR_OPENCL, "clmad_context_warm_up: clFinish failed");
        clmad_tensor_release(a);
        clmad_tensor_release(c);
        if (st != CLMAD_OK)
            return st;
    }
    return CLMAD_OK;
}

clmad_status clmad_context_warm_up(clmad_context *ctx, unsigned flags)
{
    CLMAD_GUARD(ctx, "clmad_context_warm_up");
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_context_warm_up: ctx is NULL");
    if (flags & ~(unsigned)CLMAD_WARM_UP_ALL)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_context_warm_up: flags 0x%x hold bits outside CLMAD_WARM_UP_ALL (0x%x)",
                           flags, (unsigned)CLMAD_WARM_UP_ALL);
    clmad_status st = clmad__check_open(ctx, "clmad_context_warm_up");
    if (st != CLMAD_OK)
        return st;
    int programs, gemms, done = 0;
    count_steps(ctx, flags, &programs, &gemms);
    /* The warm-up says each step; the first-run notice would say less. */
    const int noticed = ctx->compile_noticed;
    ctx->compile_noticed = 1;
    if (flags & CLMAD_WARM_UP_PROGRAMS)
        st = warm_programs(ctx, programs + gemms, &done);
    if (st == CLMAD_OK && (flags & CLMAD_WARM_UP_GEMM))
        st = warm_gemms(ctx, programs + gemms, &done);
    ctx->compile_noticed = noticed;
    return st;
}
