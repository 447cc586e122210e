/* SPDX-License-Identifier: Apache-2.0 */
/* The tape node of a broadcast: record and backward. */
#ifndef CLMAD_BROADCAST_NODE_H
#define CLMAD_BROADCAST_NODE_H

#include "broadcast/kernel.h"

/* Records a broadcast node for k over a checked plan (tape.h's machinery)
 * and returns its outputs. */
clmad_status clmad__bcast_record(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                 const clmad_bcast_plan *plan, clmad_tensor **outputs);

#endif
