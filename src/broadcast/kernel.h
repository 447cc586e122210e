/* SPDX-License-Identifier: Apache-2.0 */
/* Broadcast kernel objects and their compiled variants. */
#ifndef CLMAD_KERNEL_H
#define CLMAD_KERNEL_H

#include "broadcast/chunks.h"
#include "lower/kernel_check.h"

typedef struct clmad_kernel_variant {
    clmad_variant variant;          /* compared whole: clmad__variant_equal */
    cl_kernel kernel;
    cl_program program;             /* a use of the context's cached program, ended with k */
    struct clmad_kernel_variant *next;
} clmad_kernel_variant;

struct clmad_kernel {
    clmad_context *ctx;
    char *source;                   /* lowered to the ad_ vocabulary (lower.h) */
    char *lower_note;               /* why the front end left it as written, or NULL */
    char *fn_name;
    int n_inputs, n_outputs;
    lower_param params[CLMAD_MAX_INPUTS]; /* per input: T or an integer parameter, its name */
    int first_T;                    /* the first T input: it sets the dtype of a call */
    int refcount;                   /* the user's reference + one per tape node */
    clmad_kernel_variant *variants; /* variants.c */
    int loss_failed;                /* a loss kernel of k failed: losses over it run eagerly
                                       (broadcast/held.c), not rebuilt at every step */
    int stage_failed;               /* a loss kernel with k as a stage failed: k is not a
                                       stage again (its output is the loss kernel's y) */
    uint64_t id;                    /* unique in the process: a loss variant names its user
                                       stages by it (codegen.h) */
    uint64_t identity_inputs;       /* bit j: d output / d input j is exactly 1 (a builtin
                                       add's inputs, sub's first: ops/elementwise.c), so
                                       backward hands the adjoint on as it is (node.c) */
};

/* For tests: every broadcast variant of mode (a clmad_mode, codegen.h; 0:
 * none) that ctx builds from now on fails with CLMAD_ERR_BUILD, as a
 * compiler that rejects it would (test_fusion: a loss kernel that cannot be
 * built leaves eager execution's results). */
void clmad__inject_build_failure(clmad_context *ctx, int mode);

/* Variants a kernel keeps, at most (broadcast/variants.c): the least
 * recently used goes when another is built. For tests: clmad__variant_cap
 * sets ctx's cap (0: this one), clmad__kernel_variants counts k's. */
enum { CLMAD_MAX_VARIANTS = 64 };
void clmad__variant_cap(clmad_context *ctx, int cap);
int clmad__kernel_variants(const clmad_kernel *k);

/* 1 if input j of k is an integer parameter (int, long, uchar), not T. */
static inline int clmad__kernel_integer(const clmad_kernel *k, int j)
{
    return k->params[j].dtype != LOWER_PARAM_T;
}

#endif
