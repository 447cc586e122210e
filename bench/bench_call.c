/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_call: calls per second of a small broadcast from C, the reference
 * of bench/python_overhead.py (the same loops through the Python package).
 * Two loops over x, a, w of n f32 elements:
 *   forward   y = f(x, a) with recording off, y released (one call)
 *   fwd+bwd   y = f(x, a) with x requiring a gradient, loss = dot(y, w),
 *             backward, y, loss released, x's gradient dropped
 * with f(x, a) = a * x + 1, and two loops over a chain before a product
 * (x, a of 1 x n, W of n x 1):
 *   chain     y = f(x, a), z = tanh(y), m = z W, loss = sum(m), backward,
 *             y released after m: the eager step
 *   region    the same with y released before m: a lazy region
 *             (docs/fusion.md), one kernel forward and one backward
 * Prints one JSON object on stdout.
 * Usage: bench_call [--n ELEMENTS] [--calls N]
 */
#include "bench_common.h"

static const char *SOURCE = "T f(T x, T a) { return a * x + 1; }\n";

/* CPU time of the calling thread: the host's own cost of a step (clmad's
 * and the OpenCL runtime's API calls), without the device's work, which a
 * CPU runtime runs on its own threads, and without waits. */
static double thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double loop(clmad_context *ctx, clmad_kernel *k, clmad_tensor *x, clmad_tensor *a, clmad_tensor *w,
                   int calls, int backward)
{
    clmad_tensor *in[2] = {x, a};
    BENCH_CHECK(ctx, clmad_finish(ctx));
    double t0 = bench_now();
    for (int c = 0; c < calls; c++) {
        clmad_tensor *y, *loss;
        BENCH_CHECK(ctx, clmad_broadcast(ctx, k, in, &y));
        if (backward) {
            BENCH_CHECK(ctx, clmad_dot(ctx, y, w, &loss));
            BENCH_CHECK(ctx, clmad_backward(ctx, loss, NULL));
            clmad_tensor_release(loss);
            clmad_tensor_zero_grad(x);
        }
        clmad_tensor_release(y);
    }
    BENCH_CHECK(ctx, clmad_finish(ctx));
    return calls / (bench_now() - t0);
}

/* The chain's step: released_first, y goes before the product (a region). */
static double chain_loop(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *in, clmad_tensor *W, int calls,
                         int released_first, double *host_us)
{
    BENCH_CHECK(ctx, clmad_finish(ctx));
    double t0 = bench_now(), cpu0 = thread_cpu_now();
    for (int c = 0; c < calls; c++) {
        clmad_tensor *y, *z, *m, *loss;
        BENCH_CHECK(ctx, clmad_broadcast(ctx, k, in, &y));
        BENCH_CHECK(ctx, clmad_tanh(ctx, y, &z));
        if (released_first)
            clmad_tensor_release(y);
        BENCH_CHECK(ctx, clmad_matmul(ctx, z, W, 0, 0, &m));
        if (!released_first)
            clmad_tensor_release(y);
        BENCH_CHECK(ctx, clmad_sum(ctx, m, 0, NULL, 0, &loss));
        BENCH_CHECK(ctx, clmad_backward(ctx, loss, NULL));
        clmad_tensor_release(z);
        clmad_tensor_release(m);
        clmad_tensor_release(loss);
        clmad_tensor_zero_grad(in[0]);
    }
    BENCH_CHECK(ctx, clmad_finish(ctx));
    *host_us = 1e6 * (thread_cpu_now() - cpu0) / calls;
    return calls / (bench_now() - t0);
}

int main(int argc, char **argv)
{
    size_t n = 16;
    int calls = 20000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) {
            n = (size_t)atol(argv[++i]);
        } else if (!strcmp(argv[i], "--calls") && i + 1 < argc) {
            calls = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--n ELEMENTS] [--calls N]\n", argv[0]);
            return 2;
        }
    }
    clmad_context *ctx = NULL;
    if (clmad_context_create(NULL, &ctx) != CLMAD_OK) {
        fprintf(stderr, "bench_call: %s\n", clmad_last_error(NULL));
        return 1;
    }
    clmad_tensor *x, *a, *w;
    clmad_kernel *k;
    BENCH_CHECK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 0.5, &x));
    BENCH_CHECK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 2.0, &a));
    BENCH_CHECK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 1.0, &w));
    BENCH_CHECK(ctx, clmad_kernel_create(ctx, SOURCE, "f", 2, 1, &k));
    BENCH_CHECK(ctx, clmad_set_grad_enabled(ctx, 0));
    loop(ctx, k, x, a, w, calls / 10 + 1, 0); /* warm-up: compiles, fills the pool */
    double fwd = loop(ctx, k, x, a, w, calls, 0);
    BENCH_CHECK(ctx, clmad_set_grad_enabled(ctx, 1));
    BENCH_CHECK(ctx, clmad_tensor_set_requires_grad(x, 1));
    loop(ctx, k, x, a, w, calls / 10 + 1, 1);
    double bwd = loop(ctx, k, x, a, w, calls, 1);
    size_t row[2] = {1, n}, col[2] = {n, 1};
    clmad_tensor *x2, *a2, *W;
    BENCH_CHECK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 2, row, 0.5, &x2));
    BENCH_CHECK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 2, row, 2.0, &a2));
    BENCH_CHECK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 2, col, 1.0, &W));
    BENCH_CHECK(ctx, clmad_tensor_set_requires_grad(x2, 1));
    clmad_tensor *in2[2] = {x2, a2};
    clmad_stats s0, s1;
    double chain = 0, region = 0, chain_host = 0, region_host = 0;
    for (int round = 0; round < 2; round++) { /* the first warms up */
        chain = chain_loop(ctx, k, in2, W, round ? calls : calls / 10 + 1, 0, &chain_host);
        BENCH_CHECK(ctx, clmad_context_stats(ctx, &s0));
        region = chain_loop(ctx, k, in2, W, round ? calls : calls / 10 + 1, 1, &region_host);
        BENCH_CHECK(ctx, clmad_context_stats(ctx, &s1));
    }
    if (s1.fused_regions - s0.fused_regions != (uint64_t)calls)
        fprintf(stderr, "bench_call: %llu regions in %d region steps\n",
                (unsigned long long)(s1.fused_regions - s0.fused_regions), calls);
    printf("{\"n\": %zu, \"calls\": %d, \"forward_calls_per_s\": %.1f, \"fwd_bwd_calls_per_s\": %.1f, "
           "\"chain_steps_per_s\": %.1f, \"region_steps_per_s\": %.1f, \"chain_host_us\": %.2f, "
           "\"region_host_us\": %.2f}\n",
           n, calls, fwd, bwd, chain, region, chain_host, region_host);
    clmad_tensor_release(x2);
    clmad_tensor_release(a2);
    clmad_tensor_release(W);
    clmad_kernel_release(k);
    clmad_tensor_release(x);
    clmad_tensor_release(a);
    clmad_tensor_release(w);
    clmad_context_release(ctx);
    return 0;
}
