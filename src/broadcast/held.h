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
 * gradient (1 to the chunk cap of them) are distinct (but for held ones:
 * clmad_mul(z, z) over a held z, a loss's stage), and no input is a
 * wrapped buffer (the caller could write it behind clmad's back), and
 * none of them is one value (0-d, or y's one element) unless an input is
 * held. Those read at a broadcast offset (a learnable bias row) keep it
 * from being a loss kernel's own broadcast, not a region's (fused_loss.h). Else NULL:
 * run it now. Hand it to clmad__hold with the output, after recording the
 * node as held. */
clmad_held *clmad__bcast_held_new(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                  const clmad_bcast_plan *plan);

/* The gradients a loss kernel wrote: per input of y's node that needs one,
 * per stage whose w needs one, and y's values for a clmad_dot's w. */
typedef struct clmad_loss_grads {
    int n;
    int input[CLMAD_MAX_INPUTS];          /* which input of the node */
    clmad_tensor *grad[CLMAD_MAX_INPUTS]; /* of that input's shape */
    clmad_tensor *stage_grad[CLMAD_MAX_LOSS_STAGES]; /* w_i's, or NULL */
    clmad_tensor *user_grad[CLMAD_MAX_USER_GRADS];   /* the user stages' inputs' (form's order) */
    clmad_tensor *y_values;               /* or NULL */
} clmad_loss_grads;

/* z, a held broadcast, gets the values a region's forward wrote into v
 * (of z's shape and dtype; v gets z's buffer), and its held work is
 * dropped unrun. */
void clmad__bcast_region_written(clmad_tensor *z, clmad_tensor *v);

/* 1 if a broadcast to y's shape reads x at the element index (plan.c's
 * CLMAD_ACCESS_FULL): its gradient then goes to x's slot as it is, else
 * (one value, a row, a column) it is summed to x's shape from y's. */
static inline int clmad__element_index(const clmad_tensor *x, const clmad_tensor *y)
{
    return x->numel != 1 && x->numel == y->numel;
}

/* Releases every tensor of g and empties it. */
void clmad__loss_grads_release(clmad_loss_grads *g);

/* 1 if y is a held broadcast's output on the current tape that no loss
 * kernel has read yet, and w (NULL for a plain sum) is not held, has y's
 * dtype and shape (or is 0-d: CLMAD_LOSS_W_SCALAR; or broadcasts to y's
 * shape, a row or a column: CLMAD_LOSS_W_BROADCAST) and needs no gradient
 * (or, with CLMAD_LOSS_W_GRAD, does, and is none of y's broadcast's
 * inputs: its gradient then has one contribution here, summed to its
 * shape from y's as the stage's node sums its temporary). */
enum { CLMAD_LOSS_W_SCALAR = 1, CLMAD_LOSS_W_GRAD = 2, CLMAD_LOSS_W_BROADCAST = 4 };
int clmad__bcast_loss_fusible(clmad_context *ctx, clmad_tensor *y, clmad_tensor *w, int flags);

/* 1 if k over inputs may be a user stage of a loss kernel (CLMAD_STAGE_USER,
 * codegen.h): fusion is on, k has one output and T inputs only, input *pos
 * is a held broadcast a loss may fuse (clmad__bcast_loss_fusible) of the
 * output's shape, and every other input is not held and has that shape or
 * broadcasts to it: 0-d, a row, a column (one that needs a gradient gets
 * its contributions summed to its shape in backward: fused_loss.c). */
int clmad__bcast_user_stage(clmad_context *ctx, const clmad_kernel *k, clmad_tensor *const *inputs, int *pos);

/* 1 if t is a held broadcast's output that no loss kernel has read: *k
 * its kernel and *inputs its inputs (borrowed). */
int clmad__bcast_held_call(const clmad_tensor *t, clmad_kernel **k, clmad_tensor *const **inputs);

/* What a loss kernel sums over held y: y, y * w (clmad_dot), or the last
 * of a chain of builtin stages z_i = op_i(z_i-1, w_i) (op_i(w_i, z_i-1)
 * when stage_y[i] is 1, op_i(z_i-1) for one operand) from z_0 = y, each
 * summed value with adjoint 1 or `adj`. */
typedef struct clmad_loss_form {
    clmad_tensor *w;       /* dot's w, else NULL */
    int self_dot;          /* clmad_dot(z, z): z's own values are w (w NULL) */
    int n_stages;          /* 0 to CLMAD_MAX_LOSS_STAGES (codegen.h) */
    int stage[CLMAD_MAX_LOSS_STAGES], stage_y[CLMAD_MAX_LOSS_STAGES]; /* CLMAD_STAGE_*; z_i-1's operand */
    clmad_tensor *stage_w[CLMAD_MAX_LOSS_STAGES]; /* w_i: y's shape, or (needing no gradient) 0-d
                                                     or broadcast to it; NULL for one operand */
    /* CLMAD_STAGE_USER: the user kernel and its inputs (z_i-1 at stage_y[i],
     * the others y's shape, or broadcast to it and needing no gradient:
     * clmad__bcast_user_stage) */
    clmad_kernel *stage_kernel[CLMAD_MAX_LOSS_STAGES];
    clmad_tensor *const *stage_inputs[CLMAD_MAX_LOSS_STAGES];
    /* the user stages' other inputs that need a gradient: stage, input, and
     * 1 when the gradient is the partial itself (the last stage's STORE
     * node's, taken whole) */
    int n_user_grads;
    int user_grad_stage[CLMAD_MAX_USER_GRADS], user_grad_input[CLMAD_MAX_USER_GRADS];
    int user_grad_raw[CLMAD_MAX_USER_GRADS];
    clmad_tensor *z[CLMAD_MAX_LOSS_STAGES];       /* z_i, held, read by this loss from now on */
    double adj;            /* clmad_mean's 1/n as its backward makes it (a `real`), or 1 */
    int raw;               /* no stage, no w, adjoint 1: the partials are the gradients */
    int stage_raw;         /* adjoint 1: the last stage's partial is z's adjoint (STORE) */
    int stage_wgrad[CLMAD_MAX_LOSS_STAGES]; /* w_i needs a gradient: 1, or 2 for the last
                                              stage's partial taken whole (STORE) */
    int write_y;           /* clmad_dot's w needs a gradient: y's values, kept */
    /* A lazy region's kernel instead of a loss's (ops/region.c): nothing
     * summed. CLMAD_REGION_VALUES (with write_y, no w): the last stage's
     * value alone into y_values; CLMAD_REGION_GRADS: the gradients for the
     * adjoint w of the last stage's value. */
    int region;
} clmad_loss_form;

/* Runs the loss kernel over held y (clmad__bcast_loss_fusible): sums gets
 * the `parts` partial sums of the form's values that the first pass of
 * clmad_sum (clmad_dot) makes, ranges as runtime/reduce.c chooses; g the
 * gradients of y's node's inputs for the form's adjoint, formed as
 * backward forms them (the partials themselves when raw), with the stages'
 * w gradients and y's values the form asks for. y (and z) stay held. For
 * a region's kernel (form->region) sums, parts and ranges are unused, and
 * the region's values get no gradients. */
clmad_status clmad__bcast_fused_loss(clmad_context *ctx, clmad_tensor *y, const clmad_loss_form *form,
                                     clmad_tensor *sums, size_t parts, int ranges, clmad_loss_grads *g);

#endif
