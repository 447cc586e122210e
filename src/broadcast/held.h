/* SPDX-License-Identifier: Apache-2.0 */
/* Held broadcasts (fusion): a recorded broadcast's forward waits for its
 * output's consumer; a loss over it (ops/fused_loss.c) then runs as one
 * loss kernel that never writes the output. */
#ifndef CLMAD_BROADCAST_HELD_H
#define CLMAD_BROADCAST_HELD_H

#include "broadcast/codegen.h"
#include "broadcast/kernel.h"
#include "runtime/held.h"

/* The held forward of k over inputs (retained) when fusion may hold it: it
 * is on, k has one output of at least one element, the inputs that need a
 * gradient (1 to the chunk cap of them) are distinct and read at the
 * element index, and no input is a wrapped buffer (the caller could write
 * it behind clmad's back). Else NULL: run it now. Hand it to clmad__hold
 * with the output, after recording the node as held. */
clmad_held *clmad__bcast_held_new(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                  const clmad_bcast_plan *plan);

/* The gradients a loss kernel wrote: per input of y's node that needs one. */
typedef struct clmad_loss_grads {
    int n;
    int input[CLMAD_MAX_INPUTS];          /* which input of the node */
    clmad_tensor *grad[CLMAD_MAX_INPUTS]; /* of that input's shape */
} clmad_loss_grads;

/* 1 if y is a held broadcast's output on the current tape that no loss
 * kernel has read yet, and w (NULL for a plain sum) has y's shape (or, with
 * scalar_ok, is 0-d) and dtype, needs no gradient and is not held. */
int clmad__bcast_loss_fusible(clmad_context *ctx, clmad_tensor *y, clmad_tensor *w, int scalar_ok);

/* 1 if t is a held broadcast's output that no loss kernel has read: *k
 * its kernel and *inputs its inputs (borrowed). */
int clmad__bcast_held_call(const clmad_tensor *t, clmad_kernel **k, clmad_tensor *const **inputs);

/* What a loss kernel sums over held y: y, y * w (clmad_dot), or the last
 * of a chain of builtin stages z_i = op_i(z_i-1, w_i) (op_i(w_i, z_i-1)
 * when stage_y[i] is 1, op_i(z_i-1) for one operand) from z_0 = y, each
 * summed value with adjoint 1 or `adj`. */
typedef struct clmad_loss_form {
    clmad_tensor *w;       /* dot's w, else NULL */
    int n_stages;          /* 0 to CLMAD_MAX_LOSS_STAGES (codegen.h) */
    int stage[CLMAD_MAX_LOSS_STAGES], stage_y[CLMAD_MAX_LOSS_STAGES]; /* CLMAD_STAGE_*; z_i-1's operand */
    clmad_tensor *stage_w[CLMAD_MAX_LOSS_STAGES]; /* w_i: y's shape or 0-d; NULL for one operand */
    clmad_tensor *z[CLMAD_MAX_LOSS_STAGES];       /* z_i, held, read by this loss from now on */
    double adj;            /* clmad_mean's 1/n as its backward makes it (a `real`), or 1 */
    int raw;               /* no stage, no w, adjoint 1: the partials are the gradients */
    int stage_raw;         /* adjoint 1: the last stage's partial is z's adjoint (STORE) */
} clmad_loss_form;

/* Runs the loss kernel over held y (clmad__bcast_loss_fusible): sums gets
 * the `parts` partial sums of the form's values that the first pass of
 * clmad_sum (clmad_dot) makes, ranges as runtime/reduce.c chooses; g the
 * gradients of y's node's inputs for the form's adjoint, formed as
 * backward forms them (the partials themselves when raw). y (and z) stay
 * held. */
clmad_status clmad__bcast_fused_loss(clmad_context *ctx, clmad_tensor *y, const clmad_loss_form *form,
                                     clmad_tensor *sums, size_t parts, int ranges, clmad_loss_grads *g);

#endif
