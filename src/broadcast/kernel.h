/* SPDX-License-Identifier: Apache-2.0 */
/* Broadcast kernel objects and their compiled variants. */
#ifndef CLMAD_KERNEL_H
#define CLMAD_KERNEL_H

#include "broadcast/codegen.h"

typedef struct clmad_kernel_variant {
    clmad_variant variant;          /* compared whole: clmad__variant_equal */
    cl_kernel kernel;
    struct clmad_kernel_variant *next;
} clmad_kernel_variant;

struct clmad_kernel {
    clmad_context *ctx;
    char *source;                   /* lowered to the ad_ vocabulary (lower.h) */
    char *lower_note;               /* why the front end left it as written, or NULL */
    char *fn_name;
    int n_inputs, n_outputs;
    int refcount;                   /* the user's reference + one per tape node */
    clmad_kernel_variant *variants;
};

/* Tensors handed to a generated kernel (see the argument order in codegen.c). */
typedef struct clmad_launch_args {
    clmad_tensor **values;         /* PRIMAL/PARTIALS/JVP: n_outputs outputs; VJP, STORED: the
                                      adjoints (entries whose adj_mask bit is clear are ignored) */
    clmad_tensor **derivs;         /* PARTIALS: n_outputs * K (output-major); JVP: n_outputs;
                                      VJP, STORED: K gradient targets */
    clmad_tensor *const *inputs;   /* n_inputs (not read by STORED) */
    clmad_tensor *const *tangents; /* JVP only: n_inputs, NULL entries skipped */
    clmad_tensor **adj_scales;     /* VJP, STORED: per output, the scale of a scaled adjoint */
    clmad_tensor **stored;         /* STORED: the partials, n_outputs * K (output-major) */
} clmad_launch_args;

/* Elements per work-item of the generated kernels (context.h). */
int clmad__items_per_work_item(const clmad_context *ctx);

/* Checks the arguments of a broadcast call (`call` names it in messages)
 * and plans the shapes. */
clmad_status clmad__bcast_check_and_plan(clmad_context *ctx, clmad_kernel *k,
                                         clmad_tensor *const *inputs, const char *call,
                                         clmad_bcast_plan *plan);

/* A variant of k for plan in mode, every input unseeded. */
void clmad__bcast_variant(const clmad_kernel *k, const clmad_bcast_plan *plan, clmad_dtype dtype,
                          clmad_mode mode, clmad_variant *v);

/* Builds (or finds) variant v of k and enqueues it over plan. */
clmad_status clmad__bcast_launch(clmad_kernel *k, const clmad_variant *v, const clmad_bcast_plan *plan,
                                 const clmad_launch_args *a);

/* n new uninitialised tensors of the plan's output shape (all or none). */
clmad_status clmad__bcast_new_outputs(clmad_context *ctx, const clmad_bcast_plan *plan,
                                      clmad_dtype dtype, int n, clmad_tensor **out);

/* Releases t[0..n) and sets them to NULL. */
void clmad__release_all(clmad_tensor **t, int n);

/* Chunk size for n active inputs under cap: fewest chunks, most even. */
int clmad__chunk_size(int n, int cap);

/* Outputs and partials (see clmad_broadcast_partials) over a checked plan. */
clmad_status clmad__bcast_run_partials(clmad_kernel *k, const clmad_bcast_plan *plan,
                                       clmad_tensor *const *inputs, const int *active,
                                       clmad_tensor **outputs, clmad_tensor **partials);

/* Records a broadcast node for k (tape.c's machinery; broadcast_node.c). */
clmad_status clmad__bcast_record(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                 const clmad_bcast_plan *plan, clmad_tensor **outputs);

/* The cl_kernel of variant v of k: from k's list, else generated and built
 * (through the context's program cache). Owned by k. */
clmad_status clmad__kernel_variant(clmad_kernel *k, const clmad_variant *v, cl_kernel *out);

#endif
