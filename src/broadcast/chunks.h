/* SPDX-License-Identifier: Apache-2.0 */
/* How derivative work is cut: chunks of active inputs under the chunk cap,
 * and elements per work-item. */
#ifndef CLMAD_BROADCAST_CHUNKS_H
#define CLMAD_BROADCAST_CHUNKS_H

#include "broadcast/codegen.h"

/* Elements per work-item of the generated kernels (context.h). */
int clmad__items_per_work_item(const clmad_context *ctx);

/* Chunk size for n active inputs under cap: fewest chunks, most even. */
int clmad__chunk_size(int n, int cap);

/* The active inputs act[0..n) in chunks of clmad__chunk_size(n, cap):
 *     clmad_chunks c = clmad__chunks(act, n, cap);
 *     while (clmad__next_chunk(&c)) ... act[c.first .. c.first + c.K) ... */
typedef struct clmad_chunks {
    const int *act;
    int n, size;
    int first, K; /* the current chunk */
} clmad_chunks;

clmad_chunks clmad__chunks(const int *act, int n, int cap);

/* Moves to the next chunk; 0 when there is none. */
int clmad__next_chunk(clmad_chunks *c);

/* Seeds the current chunk in v (K, and slot s for input act[first + s]) and,
 * where per_input is not NULL, gathers its columns for the kernel:
 * chunk[o * K + s] = per_input[o * n_inputs + act[first + s]]. */
void clmad__chunk_seed(const clmad_chunks *c, clmad_variant *v, clmad_tensor *const *per_input,
                       clmad_tensor **chunk);

#endif
