/* SPDX-License-Identifier: Apache-2.0 */
/* Fused losses: clmad_dot(y, w) and clmad_sum(y) over a held broadcast y
 * as one loss kernel (broadcast/held.h), and their backward. */
#ifndef CLMAD_FUSED_LOSS_H
#define CLMAD_FUSED_LOSS_H

#include "broadcast/held.h"
#include "ops/ops.h"
#include "runtime/held.h"

typedef struct clmad_fused_loss clmad_fused_loss;

/* The loss sum(y) (w NULL) times scale (clmad_mean's 1/n, else 1) or
 * dot(y, w) of out_ndim/out_shape, by a loss kernel when y is a held
 * broadcast (clmad__bcast_loss_fusible) or a held builtin stage op(f, w)
 * of one (ops/elementwise.c): *out the value, bitwise that of the
 * eager calls, and *fused what its node keeps for backward (free with
 * clmad__fused_loss_free). Otherwise (or when the loss kernel cannot be
 * built: said at CLMAD_LOG=info) *out is NULL and every held tensor has
 * been written: the caller goes on eagerly. */
clmad_status clmad__fused_loss(clmad_context *ctx, clmad_tensor *y, clmad_tensor *w, double scale, int out_ndim,
                               const size_t *out_shape, clmad_fused_loss **fused, clmad_tensor **out);


/* Backward of a fused loss's node, whose input y_input was y: when its
 * adjoint is clmad_backward's seed (so nothing else reaches y), hands the loss
 * kernel's gradients to y's node's inputs and sets *done (nothing reaches
 * y); else releases them, counts a fallback and leaves *done 0 (the
 * caller's eager backward). Only the first backward uses them. */
clmad_status clmad__fused_loss_backward(clmad_context *ctx, clmad_node *node, int y_input,
                                        clmad_fused_loss *fused, int *done);

void clmad__fused_loss_free(clmad_fused_loss *fused);

/* A stage's call when z is no longer held (a region's last stage, written):
 * its node's kernel and inputs. */
typedef struct clmad_stage_call {
    clmad_kernel *k;
    clmad_tensor *const *inputs;
} clmad_stage_call;

/* The chain of a loss (times scale) over z into *form (its w, self_dot
 * and adj set by the caller): 1 if z is the last of a chain of held stages
 * (at most CLMAD_MAX_LOSS_STAGES) over a held broadcast *y, with the
 * stages, their operands and the user stages' gradients filled in. z's
 * own call is top's when given (z then need not be held nor be a tensor:
 * z is read only for a loss without w, scale 1). Else 0 and *form holds
 * w, self_dot and adj alone. */
int clmad__stage_chain(clmad_context *ctx, clmad_tensor *z, const clmad_stage_call *top, double scale,
                       clmad_loss_form *form, clmad_tensor **y);

/* Hands g (y's shape; owned) to input j of node: summed first to the
 * input's shape where it has another (a row, a column, 0-d), as the node
 * sums the temporary it writes for such an input (node.c). */
clmad_status clmad__hand_to_input(clmad_context *ctx, clmad_node *node, int j, clmad_tensor *g);

/* The user stages' other inputs that need a gradient into the form, for a
 * loss over z whose chain starts at the held broadcast y (as node.c's
 * take_partial, the last stage's takes its partial whole into an empty
 * slot under stage_raw). 0 if they are too many, or if a tensor would get
 * a gradient twice from the loss kernel (an input of the broadcast y, a
 * stage's w, dot's w, another stage's input): one contribution each keeps
 * the order of the sums eager's. */
int clmad__fused_user_grads(clmad_context *ctx, clmad_loss_form *form, const clmad_tensor *z, clmad_tensor *y);

/* 1 if the inputs of y's broadcast that need a gradient, which the loss
 * kernel writes at the element index, are distinct and have y's shape
 * (or any, any_shape: a region's kernel writes those of other shapes at
 * y's, and backward sums them). A held broadcast may have others (a
 * learnable bias row, clmad_mul(z, z) over a held z). */
int clmad__fused_distinct_targets(clmad_context *ctx, clmad_tensor *y, int any_shape);

/* 1 if nothing but the chain from the loss node down through the stages'
 * nodes (stages[0] the lowest) to the broadcast's node `head` reads the
 * chain's tensors or the tensors the loss kernel writes gradients for: no
 * other node on the tape takes any of them (tape_refs). A loss under a
 * builtin add keeps clmad_backward's seed as its adjoint (broadcast/node.c)
 * without being the root; then only this makes its gradients eager's. */
int clmad__fused_sole_path(clmad_context *ctx, const clmad_node *loss, clmad_node *const *stages, int n_stages,
                           const clmad_node *head);

/* An op's free_data for node data that begins with a clmad_fused_loss *
 * (sum_data, dot_data): frees that, then the data. */
void clmad__free_fused_data(clmad_node *node);

#endif
