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
 * and returns its outputs. */
clmad_status clmad__bcast_record(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                 const clmad_bcast_plan *plan, clmad_tensor **outputs);

/* 1 if node is a broadcast's: then *k is its kernel (not retained) and
 * *active has bit j set when input j needed a gradient (clmad_hvp). */
int clmad__bcast_node(const clmad_node *node, clmad_kernel **k, uint64_t *active);

#endif
