/* SPDX-License-Identifier: Apache-2.0 */
/* Host memory per tape node (issue 13, item 5): a node is sized by its
 * operation's arity, not by the most inputs and outputs a kernel may have.
 * Recording N adds of one-element tensors (their outputs released at once,
 * so their device buffers are reused from the pool) grows the heap by the
 * nodes alone (and, under STORE, the partials they keep); that growth per
 * node is bounded, and freeing the tape gives it back. */
#include "support.h"

#include <malloc.h>
#include <stdlib.h>
#include <time.h>

/* Host bytes in use: malloc'ed chunks of every arena plus mmapped blocks. */
static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void record_adds(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, int n)
{
    for (int i = 0; i < n; i++) {
        clmad_tensor *c;
        CHECK_OK(ctx, clmad_add(ctx, a, b, &c));
        clmad_tensor_release(c);
    }
    CHECK_OK(ctx, clmad_finish(ctx));
}

static clmad_context *small_pool_context(void)
{
    /* A pool of 64 KiB: released partials are not all kept for reuse. */
    clmad_options opt;
    clmad_options_init(&opt);
    opt.pool_limit_bytes = 64 * 1024;
    return test_context_with(&opt);
}

/* Host bytes per live one-element tensor, written to (POCL backs a buffer
 * with host memory at its first use). */
static double bytes_per_tensor(void)
{
    enum { N = 20000 };
    clmad_context *ctx = small_pool_context();
    clmad_tensor **ts = calloc(N, sizeof *ts);
    cr_assert_not_null(ts);
    size_t one[1] = {1};
    size_t before = heap_in_use();
    for (int i = 0; i < N; i++)
        CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, one, &ts[i]));
    CHECK_OK(ctx, clmad_finish(ctx));
    double per_tensor = ((double)heap_in_use() - (double)before) / N;
    for (int i = 0; i < N; i++)
        clmad_tensor_release(ts[i]);
    free(ts);
    clmad_context_release(ctx);
    return per_tensor;
}

/* The heap in use once the driver has retired the commands it ran: the
 * heap is the process's, and rusticl frees its commands' records on a
 * thread of its own, later under load. Waits until two looks 20 ms apart
 * agree, at most 2 s. */
static size_t settled_heap(clmad_context *ctx)
{
    CHECK_OK(ctx, clmad_finish(ctx));
    size_t now = heap_in_use(), last = 0;
    for (int i = 0; now != last && i < 100; i++) {
        struct timespec ms = {0, 20000000};
        nanosleep(&ms, NULL);
        last = now;
        now = heap_in_use();
    }
    return now;
}

/* Host bytes per recorded add of one-element tensors (a requires a
 * gradient, b not) under the policy; checks that clearing the tape gives
 * them back and that the tape still works. */
static double bytes_per_add(clmad_partials_policy policy, double per_tensor)
{
    enum { N = 20000 };
    clmad_context *ctx = small_pool_context();
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, policy));
    size_t one[1] = {1};
    clmad_tensor *a, *b;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, one, 1.0, &a));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, one, 2.0, &b));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(a, 1));
    record_adds(ctx, a, b, 100); /* compiles the kernels, fills the pool */
    clmad_tape_clear(ctx);

    size_t before = settled_heap(ctx);
    record_adds(ctx, a, b, N);
    size_t after = settled_heap(ctx);
    clmad_stats stats;
    CHECK_OK(ctx, clmad_context_stats(ctx, &stats));
    cr_assert_eq(stats.tape_nodes, (uint64_t)N);
    double per_node = ((double)after - (double)before) / N;

    clmad_tape_clear(ctx);
    double kept = (double)settled_heap(ctx) - (double)before;
    /* The tape keeps its array of node pointers (its capacity, doubled up
     * to N), the pool at most 256 one-element buffers: 512 KiB in all on
     * POCL; where buffers are host memory of the process, up to 1.5 times
     * what a live one-element tensor costs each (rusticl's llvmpipe: 2.3 KB
     * a live tensor, 3.0 KB a pooled buffer). The nodes are gone. */
    const double pool = 256 * 1.5 * per_tensor > 512 * 1024 ? 256 * 1.5 * per_tensor : 512 * 1024;
    cr_assert_lt(kept, 2.0 * N * sizeof(void *) + pool,
                 "the cleared tape kept %.0f bytes (a live one-element tensor: %.0f)", kept, per_tensor);

    /* The tape still works: d(a + b + a + a)/da = 3. */
    clmad_tensor *s = NULL, *t = NULL, *g = NULL;
    CHECK_OK(ctx, clmad_add(ctx, a, b, &s));
    for (int i = 0; i < 2; i++) {
        CHECK_OK(ctx, clmad_add(ctx, s, a, &t));
        clmad_tensor_release(s);
        s = t;
    }
    CHECK_OK(ctx, clmad_backward(ctx, s, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(a, &g));
    float v = 0;
    CHECK_OK(ctx, clmad_tensor_read(g, &v, sizeof v));
    cr_assert_eq(v, 3.0f);
    clmad_tensor_release(g);
    clmad_tensor_release(s);
    clmad_tensor_release(a);
    clmad_tensor_release(b);
    clmad_context_release(ctx);
    return per_node;
}

/* The node alone: a node of two inputs and one output, its broadcast data
 * and its slot on the tape take about 300 bytes (POCL, x86-64); sized for
 * 64 inputs and 16 outputs they took about 14 KB. */
Test(node_memory, a_recomputed_add_costs_a_few_hundred_bytes)
{
    double per_node = bytes_per_add(CLMAD_PARTIALS_RECOMPUTE, bytes_per_tensor());
    cr_log_info("host memory per recorded add (RECOMPUTE): %.0f bytes", per_node);
    cr_assert_lt(per_node, 512.0, "%.0f bytes of host memory per recorded add", per_node);
}

/* The node and the one stored partial of a: beyond the partial (a live
 * one-element tensor, which costs about 1 KB of host memory on POCL), the
 * same few hundred bytes. */
Test(node_memory, a_stored_add_costs_its_partial_and_a_few_hundred_bytes)
{
    double per_tensor = bytes_per_tensor();
    double per_node = bytes_per_add(CLMAD_PARTIALS_STORE, per_tensor);
    cr_log_info("host memory per recorded add (STORE): %.0f bytes, per one-element tensor: %.0f bytes",
                per_node, per_tensor);
    cr_assert_lt(per_node - per_tensor, 512.0,
                 "%.0f bytes of host memory per recorded add, %.0f per one-element tensor", per_node,
                 per_tensor);
}
