/* SPDX-License-Identifier: Apache-2.0 */
/* The tape's nodes: the tape layer's own state behind ctx->tape.state. */
#ifndef CLMAD_TAPE_STATE_H
#define CLMAD_TAPE_STATE_H

#include "tape/tape.h"

/* One allocation, grown by realloc; made by the first record, freed by
 * clmad__tape_drop. While ctx->tape.state is NULL the tape is empty and no
 * tensor's node is current. */
struct clmad_tape {
    uint64_t generation; /* bumped when the tape is cleared */
    size_t count, cap;
    /* During clmad_backward without a seed: the tensor of ones it seeds the
     * loss with (clmad__adjoint_is_one), else NULL. */
    clmad_tensor *ones_seed;
    clmad_node *nodes[];
};

/* 1 if t is the output of a node on the current tape. */
static inline int clmad__node_current(const clmad_context *ctx, const clmad_tensor *t)
{
    const struct clmad_tape *tape = ctx->tape.state;
    return t->node && tape && t->node_gen == tape->generation;
}

/* Releases what node keeps for its backward: its data and its inputs. */
void clmad__node_drop_saved(clmad_context *ctx, clmad_node *node);

/* out_adj[o] of node = full (a full tensor, or NULL), releasing what was there. */
void clmad__set_adjoint(clmad_node *node, int o, clmad_tensor *full);

#endif
