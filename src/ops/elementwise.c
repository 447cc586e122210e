/* SPDX-License-Identifier: Apache-2.0 */
/* Builtin elementwise operations: one-operation broadcast kernels, so a
 * chain of them is plain ("unfused") reverse mode. */
#include "broadcast/kernel.h"
#include "ops/builtins.h"
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

/* The kernels made so far, made on first use (NULL: none yet). */
struct clmad_builtins {
    clmad_kernel *kernels[CLMAD_BUILTIN_COUNT];
};

void clmad__builtins_drop(clmad_context *ctx)
{
    if (!ctx->builtins)
        return;
    for (int b = 0; b < CLMAD_BUILTIN_COUNT; b++)
        clmad_kernel_release(ctx->builtins->kernels[b]);
    free(ctx->builtins);
    ctx->builtins = NULL;
}

static clmad_status builtin(clmad_context *ctx, clmad_builtin_id id, clmad_tensor *const *inputs,
                            clmad_tensor **out)
{
    CLMAD_GUARD(ctx, BUILTINS[id].name);
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "builtin operation: ctx is NULL");
    if (!out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "builtin operation: out is NULL");
    clmad_status usable = clmad__check_open(ctx, BUILTINS[id].name);
    if (usable != CLMAD_OK)
        return usable;
    if (!ctx->builtins && !(ctx->builtins = calloc(1, sizeof *ctx->builtins)))
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in %s", BUILTINS[id].name);
    clmad_kernel **k = &ctx->builtins->kernels[id];
    if (!*k) {
        clmad_status st = clmad_kernel_create(ctx, BUILTINS[id].source, BUILTINS[id].name, BUILTINS[id].n_inputs,
                                              1, k);
        if (st != CLMAD_OK)
            return st;
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
    if (ctx && cond && a && !clmad__dtype_is_float(cond->dtype) && clmad__dtype_is_float(a->dtype) &&
        cond->ctx == ctx) {
        CLMAD_GUARD(ctx, "clmad_where");
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
    CLMAD_GUARD(ctx, "clmad_compare");
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
