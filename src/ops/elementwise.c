/* SPDX-License-Identifier: Apache-2.0 */
/* Builtin elementwise operations: one-operation broadcast kernels, so a
 * chain of them is plain ("unfused") reverse mode. */
#include "broadcast/kernel.h"
#include "tape/tape.h"

#include <stdio.h>

/* Each kernel is named after its public function, so that an error names
 * the call, e.g. "clmad_broadcast(clmad_add): input 1 of shape ...". */
typedef struct builtin_def {
    const char *name;
    const char *source;
    int n_inputs;
} builtin_def;

static const builtin_def BUILTINS[CLMAD_BUILTIN_COUNT] = {
    [CLMAD_BUILTIN_ADD] = {"clmad_add", "T clmad_add(T a, T b) { return ad_add(a, b); }", 2},
    [CLMAD_BUILTIN_SUB] = {"clmad_sub", "T clmad_sub(T a, T b) { return ad_sub(a, b); }", 2},
    [CLMAD_BUILTIN_MUL] = {"clmad_mul", "T clmad_mul(T a, T b) { return ad_mul(a, b); }", 2},
    [CLMAD_BUILTIN_DIV] = {"clmad_div", "T clmad_div(T a, T b) { return ad_div(a, b); }", 2},
    [CLMAD_BUILTIN_POW] = {"clmad_pow", "T clmad_pow(T a, T b) { return ad_pow(a, b); }", 2},
    [CLMAD_BUILTIN_NEG] = {"clmad_neg", "T clmad_neg(T a) { return ad_neg(a); }", 1},
    [CLMAD_BUILTIN_EXP] = {"clmad_exp", "T clmad_exp(T a) { return ad_exp(a); }", 1},
    [CLMAD_BUILTIN_LOG] = {"clmad_log", "T clmad_log(T a) { return ad_log(a); }", 1},
    [CLMAD_BUILTIN_TANH] = {"clmad_tanh", "T clmad_tanh(T a) { return ad_tanh(a); }", 1},
    [CLMAD_BUILTIN_SIGMOID] = {"clmad_sigmoid", "T clmad_sigmoid(T a) { return ad_sigmoid(a); }", 1},
    [CLMAD_BUILTIN_RELU] = {"clmad_relu", "T clmad_relu(T a) { return ad_relu(a); }", 1},
    [CLMAD_BUILTIN_SQRT] = {"clmad_sqrt", "T clmad_sqrt(T a) { return ad_sqrt(a); }", 1},
    [CLMAD_BUILTIN_WHERE] = {"clmad_where", "T clmad_where(T c, T a, T b) { return ad_select(ad_val(c) != 0, a, b); }", 3},
    [CLMAD_BUILTIN_LT] = {"clmad_compare_lt", "T clmad_compare_lt(T a, T b) { return ad_const(ad_val(a) < ad_val(b) ? 1 : 0); }", 2},
    [CLMAD_BUILTIN_LE] = {"clmad_compare_le", "T clmad_compare_le(T a, T b) { return ad_const(ad_val(a) <= ad_val(b) ? 1 : 0); }", 2},
    [CLMAD_BUILTIN_GT] = {"clmad_compare_gt", "T clmad_compare_gt(T a, T b) { return ad_const(ad_val(a) > ad_val(b) ? 1 : 0); }", 2},
    [CLMAD_BUILTIN_GE] = {"clmad_compare_ge", "T clmad_compare_ge(T a, T b) { return ad_const(ad_val(a) >= ad_val(b) ? 1 : 0); }", 2},
    [CLMAD_BUILTIN_EQ] = {"clmad_compare_eq", "T clmad_compare_eq(T a, T b) { return ad_const(ad_val(a) == ad_val(b) ? 1 : 0); }", 2},
    [CLMAD_BUILTIN_NE] = {"clmad_compare_ne", "T clmad_compare_ne(T a, T b) { return ad_const(ad_val(a) != ad_val(b) ? 1 : 0); }", 2},
};

static clmad_status builtin(clmad_context *ctx, clmad_builtin_id id, clmad_tensor *const *inputs,
                            clmad_tensor **out)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "builtin operation: ctx is NULL");
    if (!out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "builtin operation: out is NULL");
    clmad_status usable = clmad__check_open(ctx, BUILTINS[id].name);
    if (usable != CLMAD_OK)
        return usable;
    if (!ctx->builtins[id]) {
        clmad_status st = clmad_kernel_create(ctx, BUILTINS[id].source, BUILTINS[id].name, BUILTINS[id].n_inputs,
                                              1, &ctx->builtins[id]);
        if (st != CLMAD_OK)
            return st;
    }
    return clmad_broadcast(ctx, ctx->builtins[id], inputs, out);
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
    clmad_tensor *in[3] = {cond, a, b};
    return builtin(ctx, CLMAD_BUILTIN_WHERE, in, out);
}

clmad_status clmad_compare(clmad_context *ctx, clmad_compare_op op, clmad_tensor *a, clmad_tensor *b,
                           clmad_tensor **out)
{
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
