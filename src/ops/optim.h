/* SPDX-License-Identifier: Apache-2.0 */
/* The optimizer's insides, shared by its calls (optim.c), its steps of
 * many parameters per launch (optim_group.c) and the layer above that
 * saves and loads its state (io/optim_state.c). */
#ifndef CLMAD_OPS_OPTIM_H
#define CLMAD_OPS_OPTIM_H

#include "runtime/primitives.h"

#include <math.h>

struct clmad_optimizer {
    clmad_context *ctx;
    clmad_optimizer_options opt;
    int n;
    int per_parameter;       /* one launch per parameter (the reference of tests and benchmarks) */
    uint64_t steps;          /* clmad_optimizer_step calls past their checks */
    uint64_t *param_steps;   /* n: the steps each parameter took (PyTorch's state['step']) */
    clmad_tensor **params;   /* n, retained */
    clmad_tensor **state;    /* 2 n: SGD the velocity (NULL without momentum); Adam m, v */
};

/* A kernel argument of the parameters' dtype (runtime/primitives.h's union). */
static inline clmad_real_arg clmad__real_of(clmad_dtype dtype, double x)
{
    clmad_real_arg r;
    clmad__real_arg(dtype, x, &r);
    return r;
}

/* Adam's bias corrections of parameter i, as kernel arguments: lr / (1 -
 * b1^t) and sqrt(1 - b2^t) at its own step t, not the optimizer's: a
 * parameter whose first gradient comes late starts at t = 1, as PyTorch's
 * per-parameter state['step'] does. */
static inline void clmad__adam_corrections(const struct clmad_optimizer *o, int i, clmad_real_arg *step_size,
                                           clmad_real_arg *sqrt_bc2)
{
    const clmad_dtype dt = o->params[i]->dtype;
    const double t = (double)o->param_steps[i];
    const double bc1 = 1 - pow(o->opt.beta1, t), bc2 = 1 - pow(o->opt.beta2, t);
    *step_size = clmad__real_of(dt, o->opt.lr / bc1);
    *sqrt_bc2 = clmad__real_of(dt, sqrt(bc2));
}

/* Updates the parameters of o that have a gradient (their step counts
 * already advanced) and fewer than CLMAD_OPTIM_ALONE elements, up to
 * CLMAD_OPTIM_SLOTS of one dtype per launch; clmad_optimizer_step
 * launches the larger ones alone. */
clmad_status clmad__optimizer_step_grouped(struct clmad_optimizer *o);

/* The kernels' slots per launch (clmad_sgd_group, clmad_adam_group). */
#define CLMAD_OPTIM_SLOTS 8

/* From this size a parameter's own launch costs little beside its work,
 * and the per-parameter kernel reads its buffers directly, where the
 * grouped one picks them per element (vectorised across work-items on
 * CPUs, a gather: 10x the per-parameter time on POCL for 800K elements). */
#define CLMAD_OPTIM_ALONE 65536

/* on: one launch per parameter, as before the grouped kernels; the
 * results are bitwise the same (tests/test_optim_group.c). For tests and
 * benchmarks only. */
void clmad__optimizer_launch_per_parameter(struct clmad_optimizer *o, int on);

#endif
