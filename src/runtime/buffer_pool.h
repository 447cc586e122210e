/* SPDX-License-Identifier: Apache-2.0 */
/* Reuse of device buffers, so that tensors come and go off the hot path. */
#ifndef CLMAD_BUFFER_POOL_H
#define CLMAD_BUFFER_POOL_H

#include <stdint.h>

#include "runtime/error.h"

typedef struct clmad_pool_block {
    cl_mem mem;
    size_t bytes; /* capacity: the size class the buffer was made for */
    struct clmad_pool_block *next;
} clmad_pool_block;

typedef struct clmad_buffer_pool {
    clmad_pool_block *free_blocks;
    uint64_t kept_bytes;
    uint64_t limit_bytes;
    int poison; /* CLMAD_POISON_BUFFERS=1: every buffer handed out is first filled with 0xFF bytes */
} clmad_buffer_pool;

/* A buffer of at least `bytes` (> 0): from the pool, else new. *capacity is
 * what must be passed back to clmad__buffer_return. Poisoned (above), a
 * kernel that reads what nobody wrote reads NaN (-1 in integers): a check
 * for tests on real devices, where Oclgrind's own is not reliable across
 * reused buffers (docs/testing.md). */
clmad_status clmad__buffer_acquire(clmad_context *ctx, size_t bytes, cl_mem *mem, size_t *capacity);

/* Hands a buffer back: kept for reuse within the pool limit, else released. */
void clmad__buffer_return(clmad_context *ctx, cl_mem mem, size_t capacity);

/* Releases every buffer the pool keeps. */
void clmad__buffer_pool_clear(clmad_context *ctx);

#endif
