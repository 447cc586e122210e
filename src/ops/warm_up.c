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

/* What a warm-up of `flags` does on ctx: programs, then GEMMs (and the
 * training step, counted with them). */
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
    *gemms += (flags & CLMAD_WARM_UP_TRAINING) != 0;
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
            st = clmad__gemm_clblast(ctx, dtype, ta, tb, SIDE, SIDE, SIDE, a->mem, 0, SIDE, a->mem, 0, SIDE, 0.0,
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

/* The tensors of the training step, by role. */
enum { X, LABELS, W1, B1, W2, B2, XW1, PRE1, H, HW2, LOGITS, LOSS, EVAL1, EVAL2, EVAL3, EVAL4, N_TENSORS };

/* The forward pass of the step: logits = relu(x @ w1 + b1) @ w2 + b2, each
 * stage into t[first + stage]. */
static clmad_status mlp_forward(clmad_context *ctx, clmad_tensor **t, int first)
{
    clmad_status st = clmad_matmul(ctx, t[X], t[W1], 0, 0, &t[first]);
    if (st == CLMAD_OK)
        st = clmad_add(ctx, t[first], t[B1], &t[first + 1]);
    if (st == CLMAD_OK)
        st = clmad_relu(ctx, t[first + 1], &t[first + 2]);
    if (st == CLMAD_OK)
        st = clmad_matmul(ctx, t[first + 2], t[W2], 0, 0, &t[first + 3]);
    return st;
}

/* One training step of a small multi-layer perceptron in f32 (Python's
 * default dtype), as a first epoch runs it: the forward pass, the softmax
 * cross-entropy against int64 labels, backward, an Adam step, then the
 * forward pass without gradients (an evaluation). It builds the broadcast
 * variants (the builtins', the loss's) of the context's partials policy
 * and fusion setting, which no list can name ahead. */
static clmad_status warm_training(clmad_context *ctx)
{
    if (ctx->stats.tape_nodes)
        return clmad__fail(ctx, CLMAD_ERR_STATE,
                           "clmad_context_warm_up: CLMAD_WARM_UP_TRAINING runs a backward pass, and the tape "
                           "holds %llu nodes: warm up before recording, or clear the tape",
                           (unsigned long long)ctx->stats.tape_nodes);
    enum { ROWS = 4, IN = 3, HIDDEN = 5, CLASSES = 2 };
    const size_t x_shape[2] = {ROWS, IN}, rows[1] = {ROWS}, w1_shape[2] = {IN, HIDDEN}, b1_shape[1] = {HIDDEN},
                 w2_shape[2] = {HIDDEN, CLASSES}, b2_shape[1] = {CLASSES};
    const int64_t labels[ROWS] = {0, 1, 1, 0};
    clmad_tensor *t[N_TENSORS] = {0};
    clmad_optimizer *adam = NULL;
    const int grad_enabled = ctx->tape.grad_enabled, retain = ctx->tape.retain;
    ctx->tape.grad_enabled = 1;
    ctx->tape.retain = 0;
    clmad_status st = clmad_tensor_rand_normal(ctx, CLMAD_F32, 2, x_shape, 0.0, 1.0, 1, &t[X]);
    if (st == CLMAD_OK)
        st = clmad_tensor_create(ctx, CLMAD_I64, 1, rows, labels, &t[LABELS]);
    if (st == CLMAD_OK)
        st = clmad_tensor_rand_normal(ctx, CLMAD_F32, 2, w1_shape, 0.0, 0.5, 2, &t[W1]);
    if (st == CLMAD_OK)
        st = clmad_tensor_zeros(ctx, CLMAD_F32, 1, b1_shape, &t[B1]);
    if (st == CLMAD_OK)
        st = clmad_tensor_rand_normal(ctx, CLMAD_F32, 2, w2_shape, 0.0, 0.5, 3, &t[W2]);
    if (st == CLMAD_OK)
        st = clmad_tensor_zeros(ctx, CLMAD_F32, 1, b2_shape, &t[B2]);
    for (int p = W1; st == CLMAD_OK && p <= B2; p++)
        st = clmad_tensor_set_requires_grad(t[p], 1);
    if (st == CLMAD_OK)
        st = mlp_forward(ctx, t, XW1);
    if (st == CLMAD_OK)
        st = clmad_add(ctx, t[HW2], t[B2], &t[LOGITS]);
    if (st == CLMAD_OK)
        st = clmad_cross_entropy(ctx, t[LOGITS], t[LABELS], &t[LOSS]);
    if (st == CLMAD_OK)
        st = clmad_backward(ctx, t[LOSS], NULL);
    if (st == CLMAD_OK)
        st = clmad_optimizer_adam(ctx, &t[W1], B2 - W1 + 1, 1e-3, &adam);
    if (st == CLMAD_OK)
        st = clmad_optimizer_step(adam);
    ctx->tape.grad_enabled = 0;
    if (st == CLMAD_OK)
        st = mlp_forward(ctx, t, EVAL1);
    if (st == CLMAD_OK && clFinish(ctx->queue) != CL_SUCCESS)
        st = clmad__fail(ctx, CLMAD_ERR_OPENCL, "clmad_context_warm_up: clFinish failed");
    ctx->tape.grad_enabled = grad_enabled;
    ctx->tape.retain = retain;
    clmad_optimizer_release(adam);
    for (int i = 0; i < N_TENSORS; i++)
        clmad_tensor_release(t[i]);
    clmad_tape_clear(ctx);
    return st;
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
    if (st == CLMAD_OK && (flags & CLMAD_WARM_UP_TRAINING)) {
        /* Said always: it is one step of many programs, some of them CLBlast's. */
        clmad__notice(ctx, "warm-up on \"%s\": %d of %d: a training step of a small perceptron (f32)",
                      ctx->info.name, ++done, programs + gemms);
        st = warm_training(ctx);
    }
    ctx->compile_noticed = noticed;
    return st;
}
