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

/* The user stages' other inputs that need a gradient into the form, for a
 * loss over z whose chain starts at the held broadcast y (as node.c's
 * take_partial, the last stage's takes its partial whole into an empty
 * slot under stage_raw). 0 if they are too many, or if a tensor would get
 * a gradient twice from the loss kernel (an input of the broadcast y, a
 * stage's w, dot's w, another stage's input): one contribution each keeps
 * the order of the sums eager's. */
int clmad__fused_user_grads(clmad_context *ctx, clmad_loss_form *form, const clmad_tensor *z, clmad_tensor *y);

/* 1 if the inputs of y's broadcast that need a gradient, which the loss
 * kernel writes at the element index, have y's shape and are distinct. A
 * held broadcast over a held input may have others (held.c holds a
 * stage's learnable row, and clmad_mul(z, z)) where no chain of stages
 * took it. */
int clmad__fused_distinct_targets(clmad_context *ctx, clmad_tensor *y);

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
