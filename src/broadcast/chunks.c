/* SPDX-License-Identifier: Apache-2.0 */
/* The chunk cap (public), chunks of active inputs, elements per work-item. */
#include "broadcast/chunks.h"
#include "runtime/context.h"
#include "runtime/context_guard.h"

int clmad_chunk_cap(const clmad_context *ctx)
{
    CLMAD_GUARD_WAIT(ctx);
    if (!ctx)
        return 0;
    return ctx->chunk_cap > 0 ? ctx->chunk_cap : ctx->tuning.chunk_cap;
}

clmad_status clmad_set_chunk_cap(clmad_context *ctx, int cap)
{
    CLMAD_GUARD(ctx, "clmad_set_chunk_cap");
    return clmad__set_param(ctx, "clmad_set_chunk_cap", CLMAD_PARAM_CHUNK_CAP, cap);
}

int clmad__items_per_work_item(const clmad_context *ctx)
{
    return ctx->tuning.items_per_work_item;
}

/* Splits n active inputs into chunks of at most cap: the fewest chunks, then
 * the most even sizes (ForwardDiff's rule). Returns the chunk size. */
int clmad__chunk_size(int n, int cap)
{
    if (n <= cap)
        return n;
    int chunks = (n + cap - 1) / cap;
    return (n + chunks - 1) / chunks;
}

clmad_chunks clmad__chunks(const int *act, int n, int cap)
{
    return (clmad_chunks){.act = act, .n = n, .size = clmad__chunk_size(n, cap)};
}

int clmad__next_chunk(clmad_chunks *c)
{
    c->first += c->K;
    c->K = c->n - c->first < c->size ? c->n - c->first : c->size;
    return c->K > 0;
}

void clmad__chunk_seed(const clmad_chunks *c, clmad_variant *v, clmad_tensor *const *per_input,
                       clmad_tensor **chunk)
{
    const int K = c->K;
    v->K = K;
    for (int s = 0; s < K; s++) {
        const int j = c->act[c->first + s];
        v->slot[j] = (signed char)s;
        if (per_input)
            for (int o = 0; o < v->n_outputs; o++)
                chunk[o * K + s] = per_input[o * v->n_inputs + j];
    }
}
