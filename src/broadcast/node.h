/* SPDX-License-Identifier: Apache-2.0 */
/* The tape node of a broadcast: record and backward. */
#ifndef CLMAD_BROADCAST_NODE_H
#define CLMAD_BROADCAST_NODE_H

#include "broadcast/kernel.h"
#include "tape/tape.h"

/* The descriptor of broadcast nodes (tape.h): elementwise, each node named
 * by its kernel, whose source it keeps. */
extern const clmad_op clmad__op_broadcast;

/* Records a broadcast node for k over a checked plan (tape.h's machinery)
 * and returns its outputs; held: launches nothing (the caller holds the
 * one output: held.h), the node keeps no partials until the held forward
 * stores them (clmad__bcast_node_store). */
clmad_status clmad__bcast_record(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                 const clmad_bcast_plan *plan, int held, clmad_tensor **outputs);

/* 1 if node (a broadcast's) is to keep partials (STORE) and has none yet. */
int clmad__bcast_node_wants_partials(const clmad_node *node);

/* The node keeps partials (n_outputs * n_inputs, output-major, NULL where
 * inactive; taken) from now on. */
void clmad__bcast_node_store(clmad_context *ctx, clmad_node *node, clmad_tensor **partials);

/* 1 if input j of node (a broadcast's) can take its gradient in place: it
 * reads at the element index and no other active input is the same tensor. */
int clmad__bcast_direct_input(const clmad_node *node, const clmad_bcast_plan *plan, int j);

/* 1 if a node for plan with n_active inputs that need a gradient keeps
 * its partials (STORE) under ctx's policy, else 0 (RECOMPUTE). */
int clmad__bcast_choose_store(const clmad_context *ctx, const clmad_bcast_plan *plan, int n_active, int n_outputs,
                              clmad_dtype dtype);

/* A lazy region's backward (ops/region.c), kept by the node of its last
 * stage and tried first, once: *done set when it formed every gradient
 * the node's backward would have formed and those of the chain below it;
 * else the node's own backward runs. */
typedef struct clmad_bcast_region {
    clmad_status (*backward)(clmad_context *ctx, clmad_node *node, int *done);
} clmad_bcast_region;

/* node (a broadcast's) tries region's backward first from now on. */
void clmad__bcast_node_set_region(clmad_node *node, const clmad_bcast_region *region);

/* 1 if node is a broadcast's: then *k is its kernel (not retained) and
 * *active has bit j set when input j needed a gradient (clmad_hvp). */
int clmad__bcast_node(const clmad_node *node, clmad_kernel **k, uint64_t *active);

#endif
