/* SPDX-License-Identifier: Apache-2.0 */
/* The builtin elementwise operations: one list, their ids, the context's cache. */
#ifndef CLMAD_BUILTINS_H
#define CLMAD_BUILTINS_H

#include "runtime/context.h"

/* X(ID, name, arity, source): each a one-operation broadcast kernel named
 * after its public function, so that an error names the call, e.g.
 * "clmad_broadcast(clmad_add): input 1 of shape ...". The comparisons
 * follow clmad_compare_op's order. */
#define CLMAD_BUILTIN_LIST(X)                                                                          \
    X(ADD, "clmad_add", 2, "T clmad_add(T a, T b) { return ad_add(a, b); }")                           \
    X(SUB, "clmad_sub", 2, "T clmad_sub(T a, T b) { return ad_sub(a, b); }")                           \
    X(MUL, "clmad_mul", 2, "T clmad_mul(T a, T b) { return ad_mul(a, b); }")                           \
    X(DIV, "clmad_div", 2, "T clmad_div(T a, T b) { return ad_div(a, b); }")                           \
    X(POW, "clmad_pow", 2, "T clmad_pow(T a, T b) { return ad_pow(a, b); }")                           \
    X(NEG, "clmad_neg", 1, "T clmad_neg(T a) { return ad_neg(a); }")                                   \
    X(EXP, "clmad_exp", 1, "T clmad_exp(T a) { return ad_exp(a); }")                                   \
    X(LOG, "clmad_log", 1, "T clmad_log(T a) { return ad_log(a); }")                                   \
    X(TANH, "clmad_tanh", 1, "T clmad_tanh(T a) { return ad_tanh(a); }")                               \
    X(SIGMOID, "clmad_sigmoid", 1, "T clmad_sigmoid(T a) { return ad_sigmoid(a); }")                   \
    X(RELU, "clmad_relu", 1, "T clmad_relu(T a) { return ad_relu(a); }")                               \
    X(SQRT, "clmad_sqrt", 1, "T clmad_sqrt(T a) { return ad_sqrt(a); }")                               \
    X(WHERE, "clmad_where", 3, "T clmad_where(T c, T a, T b) { return ad_select(ad_val(c) != 0, a, b); }") \
    X(LT, "clmad_compare_lt", 2, "T clmad_compare_lt(T a, T b) { return ad_const(ad_val(a) < ad_val(b) ? 1 : 0); }")   \
    X(LE, "clmad_compare_le", 2, "T clmad_compare_le(T a, T b) { return ad_const(ad_val(a) <= ad_val(b) ? 1 : 0); }")  \
    X(GT, "clmad_compare_gt", 2, "T clmad_compare_gt(T a, T b) { return ad_const(ad_val(a) > ad_val(b) ? 1 : 0); }")   \
    X(GE, "clmad_compare_ge", 2, "T clmad_compare_ge(T a, T b) { return ad_const(ad_val(a) >= ad_val(b) ? 1 : 0); }")  \
    X(EQ, "clmad_compare_eq", 2, "T clmad_compare_eq(T a, T b) { return ad_const(ad_val(a) == ad_val(b) ? 1 : 0); }")  \
    X(NE, "clmad_compare_ne", 2, "T clmad_compare_ne(T a, T b) { return ad_const(ad_val(a) != ad_val(b) ? 1 : 0); }")

typedef enum clmad_builtin_id {
#define CLMAD_BUILTIN_ID(id, name, arity, source) CLMAD_BUILTIN_##id,
    CLMAD_BUILTIN_LIST(CLMAD_BUILTIN_ID)
#undef CLMAD_BUILTIN_ID
    CLMAD_BUILTIN_COUNT
} clmad_builtin_id;

/* The kernels made so far, made on first use (NULL: none yet). */
struct clmad_builtins {
    clmad_kernel *kernels[CLMAD_BUILTIN_COUNT];
};

/* The loss stage (CLMAD_STAGE_*, broadcast/codegen.h) that builtin id is,
 * else 0 (CLMAD_STAGE_NONE). */
int clmad__builtin_stage_of(clmad_builtin_id id);

/* The loss stage that k is, when it is one of ctx's builtins; else 0. */
int clmad__builtin_stage(const clmad_context *ctx, const clmad_kernel *k);

/* Releases the builtin kernels of ctx (clmad_context_release). */
void clmad__builtins_drop(clmad_context *ctx);

#endif
