/* SPDX-License-Identifier: Apache-2.0 */
#include "runtime/context.h"

#include <stdlib.h>

/* Size classes keep the waste under 25% and make reuse an exact match:
 * round up to a multiple of a quarter of the largest power of two <= n. */
static size_t size_class(size_t n)
{
    size_t p = 256;
    while (p * 2 <= n && p * 2 > p)
        p *= 2;
    size_t step = p >= 1024 ? p / 4 : 256;
    return (n + step - 1) / step * step;
}

void clmad__buffer_pool_clear(clmad_context *ctx)
{
    clmad_pool_block *b = ctx->pool.free_blocks;
    while (b) {
        clmad_pool_block *next = b->next;
        clReleaseMemObject(b->mem);
        free(b);
        b = next;
    }
    ctx->pool.free_blocks = NULL;
    ctx->pool.kept_bytes = 0;
    ctx->stats.pool_bytes = 0;
}

/* A buffer being handed out, filled with 0xFF bytes first where the pool
 * poisons; released if that fails (the caller gets no buffer). */
static clmad_status hand_out(clmad_context *ctx, cl_mem mem, size_t capacity)
{
    if (!ctx->pool.poison)
        return CLMAD_OK;
    const cl_uchar ff = 0xff;
    cl_int err = clEnqueueFillBuffer(ctx->queue, mem, &ff, 1, 0, capacity, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        return CLMAD_OK;
    clReleaseMemObject(mem);
    return clmad__fail_cl(ctx, err, "clEnqueueFillBuffer (CLMAD_POISON_BUFFERS)");
}

clmad_status clmad__buffer_acquire(clmad_context *ctx, size_t bytes, cl_mem *mem, size_t *capacity)
{
    size_t want = size_class(bytes);
    for (clmad_pool_block **link = &ctx->pool.free_blocks; *link; link = &(*link)->next) {
        clmad_pool_block *b = *link;
        if (b->bytes == want) {
            *link = b->next;
            *mem = b->mem;
            *capacity = b->bytes;
            ctx->pool.kept_bytes -= b->bytes;
            ctx->stats.pool_bytes = ctx->pool.kept_bytes;
            ctx->stats.pool_hits++;
            free(b);
            return hand_out(ctx, *mem, *capacity);
        }
    }
    if (want > ctx->info.max_alloc_bytes)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY,
                           "allocation of %zu bytes exceeds the maximum allocation of device \"%s\" "
                           "(%llu bytes)",
                           bytes, ctx->info.name, (unsigned long long)ctx->info.max_alloc_bytes);
    cl_int err;
    cl_mem m = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, want, NULL, &err);
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES) {
        clmad__buffer_pool_clear(ctx); /* give the pooled memory back and retry once */
        m = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, want, NULL, &err);
    }
    if (err != CL_SUCCESS)
        return clmad__fail_cl(ctx, err, "clCreateBuffer");
    ctx->stats.pool_misses++;
    *mem = m;
    *capacity = want;
    return hand_out(ctx, m, want);
}

void clmad__buffer_return(clmad_context *ctx, cl_mem mem, size_t capacity)
{
    clmad_pool_block *b = NULL;
    if (ctx->pool.kept_bytes + capacity <= ctx->pool.limit_bytes)
        b = malloc(sizeof *b);
    if (!b) {
        clReleaseMemObject(mem);
        return;
    }
    b->mem = mem;
    b->bytes = capacity;
    b->next = ctx->pool.free_blocks;
    ctx->pool.free_blocks = b;
    ctx->pool.kept_bytes += capacity;
    ctx->stats.pool_bytes = ctx->pool.kept_bytes;
}
