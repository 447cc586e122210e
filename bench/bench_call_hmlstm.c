/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_call_hmlstm: the HM-LSTM step of bench/python_overhead.py, from C,
 * so that the script can alternate it with the same step from Python in
 * one run: loss = dot(cell(z, zb, c, f, i, g), w) and backward, with one
 * partials policy, run after run as the Python loop does (each run waits
 * for the device before and after, and drops the gradients after).
 * Inputs: c, f, i, g uniform on [-2, 2) requiring gradients, w uniform on
 * [-1, 1), the controls z, zb of shape (1, dims), random 0/1.
 * Prints one JSON object on stdout: the median of --reps runs in ms.
 * Usage: bench_call_hmlstm [--dims N] [--reps N] [--policy store|recompute]
 */
#include "bench_common.h"

static const char *CELL = "T cell_update(T z, T zb, T c, T f, T i, T g)\n"
                          "{\n"
                          "    if (z == 1)  return sigmoid(i) * tanh(g);\n"
                          "    if (zb == 0) return c;\n"
                          "    return sigmoid(f) * c + sigmoid(i) * tanh(g);\n"
                          "}\n";

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A (1, dims) row of 0/1, each 1 with probability p (a fixed LCG). */
static clmad_tensor *control_row(clmad_context *ctx, size_t dims, double p, uint64_t seed)
{
    float *row = malloc(dims * sizeof *row);
    if (!row)
        exit(1);
    for (size_t j = 0; j < dims; j++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        row[j] = (double)(seed >> 11) / 9007199254740992.0 < p;
    }
    const size_t shape[2] = {1, dims};
    clmad_tensor *t;
    BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, shape, row, &t));
    free(row);
    return t;
}

int main(int argc, char **argv)
{
    size_t dims = 1024;
    int reps = 10;
    const char *policy = "store";
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--dims") && a + 1 < argc) {
            dims = (size_t)atol(argv[++a]);
        } else if (!strcmp(argv[a], "--reps") && a + 1 < argc) {
            reps = atoi(argv[++a]);
        } else if (!strcmp(argv[a], "--policy") && a + 1 < argc) {
            policy = argv[++a];
        } else {
            fprintf(stderr, "usage: %s [--dims N] [--reps N] [--policy store|recompute]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || dims < 1 || (strcmp(policy, "store") && strcmp(policy, "recompute"))) {
        fprintf(stderr, "bench_call_hmlstm: --reps and --dims positive, --policy store or recompute\n");
        return 2;
    }
    clmad_context *ctx = NULL;
    if (clmad_context_create(NULL, &ctx) != CLMAD_OK) {
        fprintf(stderr, "bench_call_hmlstm: %s\n", clmad_last_error(NULL));
        return 1;
    }
    const size_t shape[2] = {dims, dims};
    clmad_tensor *in[6], *w;
    clmad_kernel *cell;
    in[0] = control_row(ctx, dims, 1.0 / 3, 1);
    in[1] = control_row(ctx, dims, 0.5, 2);
    for (int k = 0; k < 4; k++) {
        BENCH_CHECK(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_F32, 2, shape, -2.0, 2.0, 10 + k, &in[2 + k]));
        BENCH_CHECK(ctx, clmad_tensor_set_requires_grad(in[2 + k], 1));
    }
    BENCH_CHECK(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_F32, 2, shape, -1.0, 1.0, 20, &w));
    BENCH_CHECK(ctx, clmad_kernel_create(ctx, CELL, "cell_update", 6, 1, &cell));
    BENCH_CHECK(ctx, clmad_set_partials_policy(ctx, strcmp(policy, "store") ? CLMAD_PARTIALS_RECOMPUTE
                                                                            : CLMAD_PARTIALS_STORE));
    double *ms = malloc((size_t)reps * sizeof *ms);
    if (!ms)
        return 1;
    for (int r = 0; r < reps + 2; r++) { /* two warm-up runs, as the Python loop */
        BENCH_CHECK(ctx, clmad_finish(ctx));
        double t0 = bench_now();
        clmad_tensor *y, *loss;
        BENCH_CHECK(ctx, clmad_broadcast(ctx, cell, in, &y));
        BENCH_CHECK(ctx, clmad_dot(ctx, y, w, &loss));
        BENCH_CHECK(ctx, clmad_backward(ctx, loss, NULL));
        clmad_tensor_release(y);
        clmad_tensor_release(loss);
        BENCH_CHECK(ctx, clmad_finish(ctx));
        if (r >= 2)
            ms[r - 2] = 1e3 * (bench_now() - t0);
        for (int k = 0; k < 4; k++)
            clmad_tensor_zero_grad(in[2 + k]);
    }
    qsort(ms, (size_t)reps, sizeof *ms, by_value);
    printf("{\"dims\": %zu, \"reps\": %d, \"policy\": \"%s\", \"median_ms\": %.4f}\n", dims, reps, policy,
           reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]));
    free(ms);
    clmad_kernel_release(cell);
    for (int k = 0; k < 6; k++)
        clmad_tensor_release(in[k]);
    clmad_tensor_release(w);
    clmad_context_release(ctx);
    return 0;
}
