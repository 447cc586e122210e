/* SPDX-License-Identifier: Apache-2.0 */
/* Builtin elementwise operations: one-operation broadcast kernels, so a
 * chain of them is plain ("unfused") reverse mode. */
#include "broadcast/kernel.h"
#include "broadcast/codegen.h"
#include "ops/builtins.h"
#include "broadcast/held.h"
#include "ops/region.h"
#include "tape/tape.h"
#include "runtime/context_guard.h"

#include <stdlib.h>

typedef struct builtin_def {
    const char *name;
    const char *source;
    int n_inputs;
} builtin_def;

static const builtin_def BUILTINS[] = {
#define BUILTIN_DEF(id, name, arity, source) [CLMAD_BUILTIN_##id] = {name, source, arity},
    CLMAD_BUILTIN_LIST(BUILTIN_DEF)
#undef BUILTIN_DEF
};

_Static_assert(sizeof BUILTINS / sizeof BUILTINS[0] == CLMAD_BUILTIN_COUNT, "one definition per builtin id");
_Static_assert(CLMAD_BUILTIN_LT + CLMAD_LT == CLMAD_BUILTIN_LT && CLMAD_BUILTIN_LT + CLMAD_LE == CLMAD_BUILTIN_LE &&
                   CLMAD_BUILTIN_LT + CLMAD_GT == CLMAD_BUILTIN_GT && CLMAD_BUILTIN_LT + CLMAD_GE == CLMAD_BUILTIN_GE &&
                   CLMAD_BUILTIN_LT + CLMAD_EQ == CLMAD_BUILTIN_EQ && CLMAD_BUILTIN_LT + CLMAD_NE == CLMAD_BUILTIN_NE &&
                   CLMAD_BUILTIN_NE + 1 == CLMAD_BUILTIN_COUNT,
               "the comparisons follow clmad_compare_op");

void clmad__builtins_drop(clmad_context *ctx)
{
    if (!ctx->builtins)
        return;
    for (int b = 0; b < CLMAD_BUILTIN_COUNT; b++)
        clmad_kernel_release(ctx->builtins->kernels[b]);
    free(ctx->builtins);
    ctx->builtins = NULL;
}

/* The inputs whose partial is exactly 1 (bit j): an add's both, a sub's
 * first. Backward hands them the adjoint as it is (broadcast/node.c). */
static uint64_t identity_inputs(clmad_builtin_id id)
{
    return id == CLMAD_BUILTIN_ADD ? 3u : id == CLMAD_BUILTIN_SUB ? 1u : 0u;
}

/* 1 if builtin id over inputs may be held as a loss's stage: it is one
 * (clmad__builtin_stage_of), one input is a held broadcast a loss may fuse (a stage
 * too), the other (if any) of its shape, or needing no gradient and
 * broadcast to it (0-d, a row, a column), or, for clmad_mul, the same
 * tensor (a square).
 * clmad_sum or clmad_mean over it then fuse it (ops/fused_loss.c); any
 * other use writes them. */
static int holds_stage(clmad_context *ctx, clmad_builtin_id id, clmad_tensor *const *inputs)
{
    const int stage = clmad__builtin_stage_of(id);
    if (!stage || !inputs || !inputs[0] || inputs[0]->ctx != ctx)
        return 0;
    if (stage >= CLMAD_STAGE_NEG)
        return clmad__bcast_loss_fusible(ctx, inputs[0], NULL, 0);
    if (!inputs[1] || inputs[1]->ctx != ctx)
        return 0;
    if (inputs[0] == inputs[1]) /* clmad_mul(z, z): the square stage */
        return id == CLMAD_BUILTIN_MUL && clmad__bcast_loss_fusible(ctx, inputs[0], NULL, 0);
    const int flags = CLMAD_LOSS_W_SCALAR | CLMAD_LOSS_W_GRAD | CLMAD_LOSS_W_BROADCAST;
    return clmad__bcast_loss_fusible(ctx, inputs[0], inputs[1], flags) ||
           clmad__bcast_loss_fusible(ctx, inputs[1], inputs[0], flags);
}

/* An order of the float dtypes by what they hold: 16-bit 1, f32 2, f64 3;
 * 0 for the others. */
static int width(clmad_dtype dtype)
{
    return dtype == CLMAD_F64 ? 3 : dtype == CLMAD_F32 ? 2 : clmad__dtype_is_16bit(dtype) ? 1 : 0;
}

/* The dtype that inputs of several float dtypes promote to (PyTorch's and
 * JAX's rule): the widest, where f16 and bf16 together make f32, which
 * holds both; 0 when they share one, or hold a NULL, an integer tensor or
 * another context's (the checks of clmad_broadcast name those). */
static int promotion(clmad_context *ctx, clmad_tensor *const *inputs, int n, clmad_dtype *to)
{
    for (int j = 0; j < n; j++)
        if (!inputs[j] || inputs[j]->ctx != ctx || !width(inputs[j]->dtype))
            return 0;
    int mixed = 0;
    *to = inputs[0]->dtype;
    for (int j = 1; j < n; j++) {
        const clmad_dtype d = inputs[j]->dtype;
        if (d == *to)
            continue;
        mixed = 1;
        *to = width(d) > width(*to) ? d : width(d) < width(*to) ? *to : CLMAD_F32;
    }
    return mixed;
}

static clmad_status builtin(clmad_context *ctx, clmad_builtin_id id, clmad_tensor *const *inputs,
                            clmad_tensor **out);

/* The builtin over its inputs cast to `to` (recorded: gradients flow back
 * to each input in its own dtype). */
static clmad_status promoted(clmad_context *ctx, clmad_builtin_id id, clmad_tensor *const *inputs, clmad_dtype to,
                             clmad_tensor **out)
{
    clmad_tensor *cast[3] = {NULL, NULL, NULL};
    clmad_status st = CLMAD_OK;
    for (int j = 0; j < BUILTINS[id].n_inputs && st == CLMAD_OK; j++)
        st = inputs[j]->dtype == to ? (cast[j] = clmad_tensor_retain(inputs[j]), CLMAD_OK)
                                    : clmad_cast(ctx, inputs[j], to, &cast[j]);
    if (st == CLMAD_OK)
        st = builtin(ctx, id, cast, out);
    for (int j = 0; j < 3; j++)
        clmad_tensor_release(cast[j]);
    return st;
}

static clmad_status builtin(clmad_context *ctx, clmad_builtin_id id, clmad_tensor *const *inputs,
                            clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, BUILTINS[id].name);
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "builtin operation: ctx is NULL");
    if (!out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "builtin operation: out is NULL");
    clmad_status usable = clmad__check_open(ctx, BUILTINS[id].name);
    if (usable != CLMAD_OK)
        return usable;
    clmad_dtype to;
    if (inputs && promotion(ctx, inputs, BUILTINS[id].n_inputs, &to))
        return promoted(ctx, id, inputs, to, out);
    /* Fusion: op(y, w) over a held broadcast y is held too, and a sum over
     * it fuses the op (ops/fused_loss.c); otherwise its held inputs are
     * written first, a chain whose values between were released as one
     * region (ops/region.h). It reads nothing else: other held work stays
     * held (a regulariser computed after a fused loss leaves its y
     * unwritten). */
    if (!holds_stage(ctx, id, inputs)) {
        usable = clmad__region_inputs_ready(ctx, inputs, BUILTINS[id].n_inputs);
        if (usable != CLMAD_OK)
            return usable;
    }
    if (!ctx->builtins && !(ctx->builtins = calloc(1, sizeof *ctx->builtins)))
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in %s", BUILTINS[id].name);
    clmad_kernel **k = &ctx->builtins->kernels[id];
    if (!*k) {
        clmad_status st = clmad_kernel_create(ctx, BUILTINS[id].source, BUILTINS[id].name, BUILTINS[id].n_inputs,
                                              1, k);
        if (st != CLMAD_OK)
            return st;
        (*k)->identity_inputs = identity_inputs(id);
    }
    return clmad_broadcast(ctx, *k, inputs, out);
}

#define UNARY(name, id)                                                               \
    clmad_status name(clmad_context *ctx, clmad_tensor *x, clmad_tensor **out)        \
    {                                                                                 \
        clmad_tensor *in[1] = {x};                                                    \
        return builtin(ctx, id, in, out);                                             \
    }
#define BINARY(name, id)                                                                           \
    clmad_status name(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, clmad_tensor **out)    \
    {                                                                                              \
        clmad_tensor *in[2] = {a, b};                                                              \
        return builtin(ctx, id, in, out);                                                          \
    }

BINARY(clmad_add, CLMAD_BUILTIN_ADD)
BINARY(clmad_sub, CLMAD_BUILTIN_SUB)
BINARY(clmad_mul, CLMAD_BUILTIN_MUL)
BINARY(clmad_div, CLMAD_BUILTIN_DIV)
BINARY(clmad_pow, CLMAD_BUILTIN_POW)
UNARY(clmad_neg, CLMAD_BUILTIN_NEG)
UNARY(clmad_exp, CLMAD_BUILTIN_EXP)
UNARY(clmad_log, CLMAD_BUILTIN_LOG)
UNARY(clmad_tanh, CLMAD_BUILTIN_TANH)
UNARY(clmad_sigmoid, CLMAD_BUILTIN_SIGMOID)
UNARY(clmad_relu, CLMAD_BUILTIN_RELU)
UNARY(clmad_sqrt, CLMAD_BUILTIN_SQRT)

clmad_status clmad_where(clmad_context *ctx, clmad_tensor *cond, clmad_tensor *a, clmad_tensor *b,
                         clmad_tensor **out)
{
    /* An integer mask (u8, i32, i64) is converted to a's dtype first: the
     * builtin's inputs share one dtype, and nonzero stays nonzero. */
    if (ctx && cond && a && !clmad__dtype_is_float(cond->dtype) && !clmad__dtype_is_16bit(cond->dtype) &&
        (clmad__dtype_is_float(a->dtype) || clmad__dtype_is_16bit(a->dtype)) &&
        cond->ctx == ctx) {
        CLMAD_GUARD_HOLDING(ctx, "clmad_where"); /* clmad_cast and builtin() ready the inputs */
        clmad_tensor *mask = NULL;
        clmad_status st = clmad_cast(ctx, cond, a->dtype, &mask);
        if (st != CLMAD_OK)
            return st;
        clmad_tensor *in[3] = {mask, a, b};
        st = builtin(ctx, CLMAD_BUILTIN_WHERE, in, out);
        clmad_tensor_release(mask);
        return st;
    }
    clmad_tensor *in[3] = {cond, a, b};
    return builtin(ctx, CLMAD_BUILTIN_WHERE, in, out);
}

clmad_status clmad_compare(clmad_context *ctx, clmad_compare_op op, clmad_tensor *a, clmad_tensor *b,
                           clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_compare"); /* builtin() readies a and b */
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_compare: ctx is NULL");
    if ((int)op < 0 || op > CLMAD_NE)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_compare: unknown operator %d", (int)op);
    clmad_tensor *in[2] = {a, b};
    int was = ctx->tape.grad_enabled;
    ctx->tape.grad_enabled = 0; /* a mask has no gradient: record nothing */
    clmad_status st = builtin(ctx, (clmad_builtin_id)(CLMAD_BUILTIN_LT + (int)op), in, out);
    ctx->tape.grad_enabled = was;
    return st;
}
