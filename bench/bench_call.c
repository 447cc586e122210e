/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_call: calls per second of a small broadcast from C, the reference
 * of bench/python_overhead.py (the same loops through the Python package).
 * Two loops over x, a, w of n f32 elements:
 *   forward   y = f(x, a) with recording off, y released (one call)
 *   fwd+bwd   y = f(x, a) with x requiring a gradient, loss = dot(y, w),
 *             backward, y, loss released, x's gradient dropped
 * with f(x, a) = a * x + 1. Prints one JSON object on stdout.
 * Usage: bench_call [--n ELEMENTS] [--calls N]
 */
#include "bench_common.h"

static const char *SOURCE = "T f(T x, T a) { return a * x + 1; }\n";

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
    printf("{\"n\": %zu, \"calls\": %d, \"forward_calls_per_s\": %.1f, \"fwd_bwd_calls_per_s\": %.1f}\n", n,
           calls, fwd, bwd);
    clmad_kernel_release(k);
    clmad_tensor_release(x);
    clmad_tensor_release(a);
    clmad_tensor_release(w);
    clmad_context_release(ctx);
    return 0;
}
