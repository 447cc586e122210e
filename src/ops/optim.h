/* SPDX-License-Identifier: Apache-2.0 */
/* The optimizer's fields, for the layer above that saves and loads its
 * state (io/optim_state.c). */
#ifndef CLMAD_OPS_OPTIM_H
#define CLMAD_OPS_OPTIM_H

#include "clmad.h"

struct clmad_optimizer {
    clmad_context *ctx;
    clmad_optimizer_options opt;
    int n;
    uint64_t steps;          /* clmad_optimizer_step calls past their checks */
    uint64_t *param_steps;   /* n: the steps each parameter took (PyTorch's state['step']) */
    clmad_tensor **params;   /* n, retained */
    clmad_tensor **state;    /* 2 n: SGD the velocity (NULL without momentum); Adam m, v */
};

#endif
