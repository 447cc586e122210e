/* SPDX-License-Identifier: Apache-2.0 */
/* NumPy broadcasting of input shapes, reduced to the fewest dimensions that
 * the generated kernel must index, and how each input is read. */
#ifndef CLMAD_BROADCAST_PLAN_H
#define CLMAD_BROADCAST_PLAN_H

#include "runtime/tensor.h"

#define CLMAD_MAX_INPUTS 64
#define CLMAD_MAX_OUTPUTS 16

typedef enum clmad_access {
    CLMAD_ACCESS_FULL = 'F',    /* same elements as the output: read at the element index */
    CLMAD_ACCESS_SCALAR = 'S',  /* one element: read at 0 */
    CLMAD_ACCESS_STRIDED = 'B'  /* genuinely broadcast: index from coordinates and strides */
} clmad_access;

typedef struct clmad_bcast_plan {
    int n_inputs;
    int out_ndim;
    size_t out_shape[CLMAD_MAX_DIMS];
    size_t numel;
    /* Collapsed iteration space: size-1 dimensions dropped, neighbours
     * merged where every input is contiguous (or broadcast) across both. */
    int nd;
    size_t dims[CLMAD_MAX_DIMS];
    clmad_access access[CLMAD_MAX_INPUTS];
    size_t strides[CLMAD_MAX_INPUTS][CLMAD_MAX_DIMS]; /* element strides over dims; 0 = broadcast */
    int any_strided;
} clmad_bcast_plan;

/* Broadcasts the shapes of inputs[0..n) into plan. `what` names the call in
 * messages. Errors: CLMAD_ERR_SHAPE naming the inputs and shapes. */
clmad_status clmad__plan_broadcast(clmad_context *ctx, const char *what, clmad_tensor *const *inputs,
                                   int n, clmad_bcast_plan *plan);

#endif
