/* SPDX-License-Identifier: Apache-2.0 */
/* Broadcast kernel objects and their compiled variants. */
#ifndef CLMAD_KERNEL_H
#define CLMAD_KERNEL_H

#include "broadcast/chunks.h"

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
    int refcount;                   /* the user's reference + one per tape node */
    clmad_kernel_variant *variants; /* variants.c */
};

#endif
