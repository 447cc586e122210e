/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_region: a lazy region (docs/fusion.md) against the same calls run
 * eagerly, on the HM-LSTM cell:
 *   y = cell(z, zb, c, f, i, g), h = y * w, m = h W (W of n x 16),
 *   loss = sum(m), backward
 * with y released after the product (eager: y, its partials under STORE,
 * and h written; backward through both nodes) or before it (a region: one
 * kernel writes h from the cell's inputs, one writes the gradients of c,
 * f, i, g and w). Controls random in [0, 1) (the third branch everywhere),
 * f32, both partials policies, the two forms interleaved; each step's time
 * includes a clmad_finish. Prints the medians and their ratio.
 * Usage: bench_region [--dims N,...] [--reps R]
 */
#include "bench_common.h"
#include "hmlstm_cell.h"

typedef struct inputs {
    clmad_tensor *cell[6], *w, *W;
} inputs;

/* One step; released_first: y goes before the product (a region). */
static double step(clmad_context *ctx, clmad_kernel *k, inputs *in, int released_first)
{
    clmad_tensor *y, *h, *m, *loss;
    BENCH_CHECK(ctx, clmad_finish(ctx));
    double t0 = bench_now();
    BENCH_CHECK(ctx, clmad_broadcast(ctx, k, in->cell, &y));
    BENCH_CHECK(ctx, clmad_mul(ctx, y, in->w, &h));
    if (released_first)
        clmad_tensor_release(y);
    BENCH_CHECK(ctx, clmad_matmul(ctx, h, in->W, 0, 0, &m));
    if (!released_first)
        clmad_tensor_release(y);
    BENCH_CHECK(ctx, clmad_sum(ctx, m, 0, NULL, 0, &loss));
    BENCH_CHECK(ctx, clmad_backward(ctx, loss, NULL));
    BENCH_CHECK(ctx, clmad_finish(ctx));
    double dt = bench_now() - t0;
    clmad_tensor_release(h);
    clmad_tensor_release(m);
    clmad_tensor_release(loss);
    for (int j = 2; j < 6; j++)
        clmad_tensor_zero_grad(in->cell[j]);
    clmad_tensor_zero_grad(in->w);
    clmad_tensor_zero_grad(in->W);
    return dt;
}

int main(int argc, char **argv)
{
    const char *dims = "1024,2048";
    int reps = 9;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--dims") && a + 1 < argc) {
            dims = argv[++a];
        } else if (!strcmp(argv[a], "--reps") && a + 1 < argc) {
            reps = atoi(argv[++a]);
        } else {
            fprintf(stderr, "usage: %s [--dims N,...] [--reps R]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    clmad_context *ctx = NULL;
    if (clmad_context_create(NULL, &ctx) != CLMAD_OK) {
        fprintf(stderr, "bench_region: %s\n", clmad_last_error(NULL));
        return 1;
    }
    clmad_device_info dev;
    BENCH_CHECK(ctx, clmad_context_device(ctx, &dev));
    clmad_kernel *k;
    BENCH_CHECK(ctx, clmad_kernel_create(ctx, CELL_SOURCE, "cell_update", 6, 1, &k));
    double *t = malloc(2 * (size_t)reps * sizeof *t);
    if (!t)
        return 1;
    printf("HM-LSTM cell times w, then a product with n x 16, sum, backward: eager against a lazy region,\n"
           "f32, %s, median of %d\n", dev.name, reps);
    for (const char *d = dims; *d;) {
        size_t n = (size_t)strtoul(d, (char **)&d, 10), shape[2] = {n, n}, wshape[2] = {n, 16};
        if (*d == ',')
            d++;
        inputs in;
        for (int j = 0; j < 6; j++) {
            BENCH_CHECK(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_F32, 2, shape, j < 2 ? 0.0 : -1.0, 1.0,
                                                       (uint64_t)(100 + j), &in.cell[j]));
            if (j >= 2)
                BENCH_CHECK(ctx, clmad_tensor_set_requires_grad(in.cell[j], 1));
        }
        BENCH_CHECK(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_F32, 2, shape, -1, 1, 7, &in.w));
        BENCH_CHECK(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_F32, 2, wshape, -1, 1, 8, &in.W));
        BENCH_CHECK(ctx, clmad_tensor_set_requires_grad(in.w, 1));
        BENCH_CHECK(ctx, clmad_tensor_set_requires_grad(in.W, 1));
        static const clmad_partials_policy POLICIES[2] = {CLMAD_PARTIALS_STORE, CLMAD_PARTIALS_RECOMPUTE};
        for (int p = 0; p < 2; p++) {
            BENCH_CHECK(ctx, clmad_set_partials_policy(ctx, POLICIES[p]));
            clmad_stats s0, s1;
            BENCH_CHECK(ctx, clmad_context_stats(ctx, &s0));
            for (int r = -2; r < reps; r++)
                for (int v = 0; v < 2; v++) {
                    int form = r % 2 ? 1 - v : v; /* every other round the other first */
                    double dt = step(ctx, k, &in, form);
                    if (r >= 0)
                        t[form * reps + r] = dt;
                }
            BENCH_CHECK(ctx, clmad_context_stats(ctx, &s1));
            double eager = bench_median(t, reps), region = bench_median(t + reps, reps);
            printf("  %5zu^2 %-9s eager %8.3f ms  region %8.3f ms  region/eager %.2f  (%llu regions, %llu "
                   "fallbacks)\n",
                   n, p ? "RECOMPUTE" : "STORE", eager * 1e3, region * 1e3, region / eager,
                   (unsigned long long)(s1.fused_regions - s0.fused_regions),
                   (unsigned long long)(s1.fusion_fallbacks - s0.fusion_fallbacks));
        }
        for (int j = 0; j < 6; j++)
            clmad_tensor_release(in.cell[j]);
        clmad_tensor_release(in.w);
        clmad_tensor_release(in.W);
    }
    free(t);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
    return 0;
}
