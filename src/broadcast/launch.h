/* SPDX-License-Identifier: Apache-2.0 */
/* Running a broadcast kernel over a plan: the variant, its arguments, the
 * launch, new outputs, the primal forward and the chunked partials. */
#ifndef CLMAD_BROADCAST_LAUNCH_H
#define CLMAD_BROADCAST_LAUNCH_H

#include "broadcast/kernel.h"

/* Tensors handed to a generated kernel, by argument kind (codegen.h). */
typedef struct clmad_launch_args {
    clmad_tensor **values;         /* PRIMAL/PARTIALS/JVP: n_outputs outputs; VJP, STORED: the
                                      adjoints (entries whose adj_mask bit is clear are ignored) */
    clmad_tensor **derivs;         /* PARTIALS: n_outputs * K (output-major); JVP: n_outputs;
                                      VJP, STORED: K gradient targets */
    clmad_tensor *const *inputs;   /* n_inputs (not read by STORED) */
    clmad_tensor *const *tangents; /* JVP only: n_inputs, NULL entries skipped */
    clmad_tensor **adj_scales;     /* VJP, STORED: per output, the scale of a scaled adjoint */
    clmad_tensor **stored;         /* STORED: the partials, n_outputs * K (output-major) */
    clmad_tensor **out_tangents;   /* SECOND: n_outputs tangents of the values */
    clmad_tensor **deriv_tangents; /* SECOND: n_outputs * K, the partials' directional derivatives */
    clmad_tensor *sums;            /* LOSS: `parts` partial sums (derivs: the K gradients) */
    clmad_tensor *const *weights;  /* LOSS: WEIGHT s's tensor (dot's w: CLMAD_LOSS_DOT_WEIGHT) */
    clmad_tensor *const *stage_grads; /* LOSS: STAGE_GRAD s's tensor (values: VALUE 0, y's) */
    clmad_tensor *const *const *stage_inputs; /* LOSS: user stage s's inputs (STAGE_INPUT s j) */
    clmad_tensor *const *user_grads;          /* LOSS: USER_GRAD u's tensor */
    double loss_adj;               /* LOSS with loss_adj: the adjoint A, as a `real` */
    size_t parts;                  /* LOSS: work-items */
} clmad_launch_args;

/* The dtype of a call of k: its T inputs' (integer parameters have their own). */
static inline clmad_dtype clmad__bcast_dtype(const clmad_kernel *k, clmad_tensor *const *inputs)
{
    return inputs[k->first_T]->dtype;
}

/* Input j's access class in v, and the step of its last collapsed
 * dimension where it is strided (v->nd set). */
void clmad__variant_access(clmad_variant *v, const clmad_bcast_plan *plan, int j);

/* A variant of k for plan in mode, every input unseeded. */
void clmad__bcast_variant(const clmad_kernel *k, const clmad_bcast_plan *plan, clmad_dtype dtype,
                          clmad_mode mode, clmad_variant *v);

/* v's element loop: `items` elements per work-item (1: one each), in
 * runs along rows where strided inputs allow it (row_runs), else with
 * coordinates per element. */
void clmad__bcast_variant_runs(clmad_variant *v, const clmad_bcast_plan *plan, int items);

/* Builds (or finds) variant v of k and enqueues it over plan. */
clmad_status clmad__bcast_launch(clmad_kernel *k, const clmad_variant *v, const clmad_bcast_plan *plan,
                                 const clmad_launch_args *a);

/* n new uninitialised tensors of the plan's output shape (all or none). */
clmad_status clmad__bcast_new_outputs(clmad_context *ctx, const clmad_bcast_plan *plan,
                                      clmad_dtype dtype, int n, clmad_tensor **out);

/* Releases t[0..n) and sets them to NULL. */
void clmad__release_all(clmad_tensor **t, int n);

/* The primal forward: k's n_outputs values over a checked plan, as new
 * tensors (all or none). */
clmad_status clmad__bcast_primal(clmad_kernel *k, const clmad_bcast_plan *plan,
                                 clmad_tensor *const *inputs, clmad_tensor **values);

/* Outputs and partials (see clmad_broadcast_partials) over a checked plan;
 * integer parameters are never active (their partials stay NULL). */
clmad_status clmad__bcast_run_partials(clmad_kernel *k, const clmad_bcast_plan *plan,
                                       clmad_tensor *const *inputs, const int *active,
                                       clmad_tensor **outputs, clmad_tensor **partials);

/* Second order (see clmad_broadcast_second) over a checked plan; tangents
 * holds one tensor per active input (of its shape), others unread. */
clmad_status clmad__bcast_run_second(clmad_kernel *k, const clmad_bcast_plan *plan, clmad_tensor *const *inputs,
                                     clmad_tensor *const *tangents, const int *active, clmad_tensor **outputs,
                                     clmad_tensor **out_tangents, clmad_tensor **partials,
                                     clmad_tensor **partial_tangents);

#endif
