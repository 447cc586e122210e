/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_half_cell: a training step of the HM-LSTM cell (bench/hmlstm_cell.h)
 * at dims x dims, y = cell(z, zb, c, f, i, g), loss = mean(y), backward to
 * c, f, i and g, and the same step of the memory-bound y = x w + 1, in
 * each storage dtype on the same inputs (bf16 values, so that every dtype
 * holds them exactly), interleaved, medians:
 *   f32          the default (fusion on: the sum is the loss kernel's)
 *   f32 unfused  fusion off, every call eager (as 16-bit tensors run)
 *   bf16, f16    16-bit storage, computed in f32 (on a CPU the partials
 *                stored in the forward, in f32: the default policy)
 *   ... recompute  the same with the partials recomputed in backward
 *                (CLMAD_PARTIALS_RECOMPUTE: no partials in memory)
 * with each time over f32's, and each loss against the f64 loss of the same
 * inputs (the step in f64, when the device has fp64).
 * Usage: bench_half_cell [dims] [repetitions]
 */
#include "bench_common.h"
#include "hmlstm_cell.h"

#include <math.h>

enum { F32, F32_UNFUSED, BF16, F16, BF16_RECOMPUTE, F16_RECOMPUTE, N_WAYS };
static const char *const WAYS[N_WAYS] = {"f32", "f32 unfused", "bf16", "f16", "bf16 recompute", "f16 recompute"};
static const clmad_dtype DTYPE[N_WAYS] = {CLMAD_F32, CLMAD_F32, CLMAD_BF16, CLMAD_F16, CLMAD_BF16, CLMAD_F16};
/* The context of each way: 0 the defaults, 1 fusion off, 2 the partials recomputed in backward. */
static const int CONTEXT[N_WAYS] = {0, 1, 0, 0, 2, 2};
enum { N_CONTEXTS = 3 };

/* The kernels: the cell (z, zb are 1 x dims controls; the gates c, f, i,
 * g dims x dims) and x w + 1 (both dims x dims). */
static const struct {
    const char *title, *source, *name;
    int n_inputs, n_controls; /* the first n_controls inputs: 1 x dims, in {0, 1}, no gradient */
} KERNELS[2] = {{"HM-LSTM cell", NULL, "cell_update", 6, 2},
                {"x * w + 1", "T axpb(T x, T w) { return x * w + 1; }", "axpb", 2, 0}};

typedef struct inputs {
    clmad_tensor *t[6];
    int n, n_controls;
} inputs;

/* The inputs in dtype from the f32 values (exact: they are bf16 values). */
static void make_inputs(clmad_context *ctx, clmad_dtype dtype, clmad_tensor *const *f32, int n, int n_controls,
                        inputs *in)
{
    in->n = n, in->n_controls = n_controls;
    for (int j = 0; j < n; j++) {
        BENCH_CHECK(ctx, clmad_cast(ctx, f32[j], dtype, &in->t[j]));
        if (j >= n_controls)
            BENCH_CHECK(ctx, clmad_tensor_set_requires_grad(in->t[j], 1));
    }
}

/* One step; its time, and the loss in *loss. y is released before the
 * step's clmad_finish, as a training loop's scope releases it: finish
 * writes every held tensor still referenced, and a fused y that nobody
 * reads is never written (with y alive the f32 step took 5 ms more at
 * 2048^2 on POCL, a primal kernel). */
static double step(clmad_context *ctx, clmad_kernel *k, inputs *in, double *loss)
{
    BENCH_CHECK(ctx, clmad_finish(ctx));
    double t0 = bench_now();
    clmad_tensor *y, *l;
    BENCH_CHECK(ctx, clmad_broadcast(ctx, k, in->t, &y));
    BENCH_CHECK(ctx, clmad_mean(ctx, y, 0, NULL, 0, &l));
    BENCH_CHECK(ctx, clmad_backward(ctx, l, NULL));
    clmad_tensor_release(y);
    BENCH_CHECK(ctx, clmad_finish(ctx));
    double t = bench_now() - t0;
    BENCH_CHECK(ctx, clmad_tensor_item(l, loss));
    for (int j = in->n_controls; j < in->n; j++)
        clmad_tensor_zero_grad(in->t[j]);
    clmad_tensor_release(l);
    return t;
}

int main(int argc, char **argv)
{
    size_t dims = argc > 1 ? (size_t)atol(argv[1]) : 2048;
    int reps = argc > 2 ? atoi(argv[2]) : 9;
    if (dims == 0 || reps < 1 || reps > 99) {
        fprintf(stderr, "usage: %s [dims] [repetitions 1..99]\n", argv[0]);
        return 2;
    }
    clmad_context *ctx[N_CONTEXTS] = {NULL, NULL, NULL};
    for (int c = 0; c < N_CONTEXTS; c++) {
        clmad_options opt;
        clmad_options_init(&opt);
        opt.disable_fusion = c == 1;
        if (c == 2)
            opt.partials_policy = CLMAD_PARTIALS_RECOMPUTE;
        if (clmad_context_create(&opt, &ctx[c]) != CLMAD_OK) {
            fprintf(stderr, "bench_half_cell: %s\n", clmad_last_error(NULL));
            return 1;
        }
    }
    size_t n = dims * dims, row[2] = {1, dims}, square[2] = {dims, dims};
    float *host = malloc(n * sizeof *host);
    if (!host)
        return 1;
    clmad_device_info dev;
    clmad_context_device(ctx[0], &dev);
    printf("bench_half_cell: %s, a training step (forward, mean, backward) at %zu x %zu, medians of %d, "
           "interleaved\n",
           dev.name, dims, dims, reps);
    for (int kn = 0; kn < 2; kn++) {
        const int n_in = KERNELS[kn].n_inputs, n_ctl = KERNELS[kn].n_controls;
        clmad_tensor *f32[N_CONTEXTS][6];
        clmad_kernel *k[N_CONTEXTS];
        inputs in[N_WAYS], wide;
        uint32_t s = 2024;
        for (int j = 0; j < n_in; j++) {
            size_t m = j < n_ctl ? dims : n;
            for (size_t e = 0; e < m; e++) {
                s = s * 1664525u + 1013904223u;
                /* controls in {0, 1} (a third of the columns each branch), gates in [-3, 3) */
                float v = j < n_ctl ? (float)((s >> 16) % 3 == (uint32_t)j) : ((float)(s >> 8) * 0x1p-24f * 6 - 3);
                host[e] = clmad_bf16_to_float(clmad_bf16_from_float(v));
            }
            for (int c = 0; c < N_CONTEXTS; c++)
                BENCH_CHECK(ctx[c],
                            clmad_tensor_create(ctx[c], CLMAD_F32, 2, j < n_ctl ? row : square, host, &f32[c][j]));
        }
        for (int c = 0; c < N_CONTEXTS; c++)
            BENCH_CHECK(ctx[c], clmad_kernel_create(ctx[c], KERNELS[kn].source ? KERNELS[kn].source : CELL_SOURCE,
                                                    KERNELS[kn].name, n_in, 1, &k[c]));
        for (int w = 0; w < N_WAYS; w++) {
            const int c = CONTEXT[w];
            make_inputs(ctx[c], DTYPE[w], f32[c], n_in, n_ctl, &in[w]);
        }
        double loss[N_WAYS], loss64 = NAN, times[N_WAYS][99];
        if (dev.fp64) {
            make_inputs(ctx[0], CLMAD_F64, f32[0], n_in, n_ctl, &wide);
            step(ctx[0], k[0], &wide, &loss64);
            for (int j = 0; j < n_in; j++)
                clmad_tensor_release(wide.t[j]);
        }
        for (int w = 0; w < N_WAYS; w++) /* warm-up: builds, pools */
            step(ctx[CONTEXT[w]], k[CONTEXT[w]], &in[w], &loss[w]);
        for (int r = 0; r < reps; r++)
            for (int w = 0; w < N_WAYS; w++)
                times[w][r] = step(ctx[CONTEXT[w]], k[CONTEXT[w]], &in[w], &loss[w]);
        printf("%s:\n", KERNELS[kn].title);
        const double base = bench_median(times[F32], reps);
        for (int w = 0; w < N_WAYS; w++) {
            double t = bench_median(times[w], reps);
            printf("  %-15s %9.3f ms  time / f32 %.2f  loss %.9g", WAYS[w], 1e3 * t, t / base, loss[w]);
            if (dev.fp64)
                printf("  rel. to f64 %.2e", fabs(loss[w] - loss64) / fabs(loss64));
            printf("\n");
        }
        if (dev.fp64)
            printf("  f64 loss %.17g\n", loss64);
        for (int w = 0; w < N_WAYS; w++)
            for (int j = 0; j < n_in; j++)
                clmad_tensor_release(in[w].t[j]);
        for (int c = 0; c < N_CONTEXTS; c++) {
            for (int j = 0; j < n_in; j++)
                clmad_tensor_release(f32[c][j]);
            clmad_kernel_release(k[c]);
        }
    }
    free(host);
    for (int c = 0; c < N_CONTEXTS; c++)
        clmad_context_release(ctx[c]);
    return 0;
}
