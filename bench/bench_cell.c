/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_cell: the HM-LSTM cell update at dims x dims (default 2048), f32.
 * Side by side in one run, on one device:
 *   dual   the fused forward-mode kernel of clmad (value + 4 partials)
 *   dual_plain  the same cell written in plain syntax (operators and math
 *          names on T, lowered to the ad_ form by clmad_kernel_create)
 *   hand   a hand-written fused kernel computing the same value + 4 partials,
 *          as written (hand) and with the shared math hoisted (hand_hoisted)
 *   primal the value alone (clmad_broadcast), primal_plain from the plain cell
 *   copy   a plain copy kernel (the device's bandwidth reference)
 * Prints medians and the ratios dual/hand and dual/primal, and writes JSON.
 * The plain and ad_ cells run back to back in every repetition (their order
 * alternates), so plain/ad_ is also reported as the median and quartiles of
 * the per-repetition ratios: lowering must cost nothing (issue 15).
 * Usage: bench_cell [dims] [repetitions] [results folder]
 */
#include "bench_common.h"
#include "hmlstm_cell.h"
#include "internal.h"

#include <math.h>

/* The same cell in plain syntax. */
static const char *CELL_PLAIN_SOURCE =
    "T cell_update(T z, T zb, T c, T f, T i, T g)\n"
    "{\n"
    "    if (z == 1)  return sigmoid(i) * tanh(g);\n"
    "    if (zb == 0) return c;\n"
    "    return sigmoid(f) * c + sigmoid(i) * tanh(g);\n"
    "}\n";

/* Hand-written fused kernels for value + 4 partials. "hand" keeps the
 * template's structure (the math inside each branch), so dual / hand is the
 * cost of the dual numbers themselves. "hand_hoisted" computes the shared
 * transcendentals before branching, which SIMD compilers (POCL's work-group
 * vectoriser) need in order to vectorise divergent code: it shows what
 * restructuring the template would gain. */
#define HAND_SIGNATURE(name)                                                            \
    "__kernel void " name "(ulong n, ulong cols, __global const float *restrict z,\n"   \
    "    __global const float *restrict zb, __global const float *restrict c,\n"        \
    "    __global const float *restrict f, __global const float *restrict i,\n"         \
    "    __global const float *restrict g, __global float *restrict y,\n"               \
    "    __global float *restrict dc, __global float *restrict df,\n"                   \
    "    __global float *restrict di, __global float *restrict dg)\n"                   \
    "{\n"                                                                               \
    "    ulong e = get_global_id(0);\n"                                                 \
    "    if (e >= n) return;\n"                                                         \
    "    ulong col = e % cols;\n"                                                       \
    "    float cv = c[e], fv = f[e], iv = i[e], gv = g[e];\n"

static const char *HAND_SOURCE =
    HAND_SIGNATURE("cell_hand")
    "    if (z[col] == 1.0f) {\n"
    "        float si = 1.0f / (1.0f + exp(-iv)), tg = tanh(gv);\n"
    "        y[e] = si * tg; dc[e] = 0.0f; df[e] = 0.0f;\n"
    "        di[e] = si * (1.0f - si) * tg; dg[e] = si * (1.0f - tg * tg);\n"
    "    } else if (zb[col] == 0.0f) {\n"
    "        y[e] = cv; dc[e] = 1.0f; df[e] = 0.0f; di[e] = 0.0f; dg[e] = 0.0f;\n"
    "    } else {\n"
    "        float sf = 1.0f / (1.0f + exp(-fv));\n"
    "        float si = 1.0f / (1.0f + exp(-iv)), tg = tanh(gv);\n"
    "        y[e] = sf * cv + si * tg; dc[e] = sf; df[e] = sf * (1.0f - sf) * cv;\n"
    "        di[e] = si * (1.0f - si) * tg; dg[e] = si * (1.0f - tg * tg);\n"
    "    }\n"
    "}\n";

static const char *HAND_HOISTED_SOURCE =
    HAND_SIGNATURE("cell_hand_hoisted")
    "    float si = 1.0f / (1.0f + exp(-iv)), tg = tanh(gv);\n"
    "    float sf = 1.0f / (1.0f + exp(-fv));\n"
    "    float dsi = si * (1.0f - si), dtg = 1.0f - tg * tg;\n"
    "    if (z[col] == 1.0f) {\n"
    "        y[e] = si * tg; dc[e] = 0.0f; df[e] = 0.0f; di[e] = dsi * tg; dg[e] = si * dtg;\n"
    "    } else if (zb[col] == 0.0f) {\n"
    "        y[e] = cv; dc[e] = 1.0f; df[e] = 0.0f; di[e] = 0.0f; dg[e] = 0.0f;\n"
    "    } else {\n"
    "        y[e] = sf * cv + si * tg; dc[e] = sf; df[e] = sf * (1.0f - sf) * cv;\n"
    "        di[e] = dsi * tg; dg[e] = si * dtg;\n"
    "    }\n"
    "}\n";

static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* The p-quantile (nearest rank) of v[0..n), which it sorts. */
static double quantile(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[(int)(p * (n - 1) + 0.5)];
}

static cl_kernel build(clmad_context *ctx, const char *source, const char *name)
{
    cl_program p;
    BENCH_CHECK(ctx, clmad__program_get(ctx, source, "", &p, NULL));
    cl_int err;
    cl_kernel k = clCreateKernel(p, name, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clCreateKernel(%s): %d\n", name, err);
        exit(1);
    }
    return k;
}

static void run_nd(clmad_context *ctx, cl_kernel k, size_t n)
{
    size_t global = (n + 63) / 64 * 64;
    cl_command_queue queue;
    bench_cl(ctx, NULL, &queue);
    cl_int err = clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, NULL, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "enqueue: %d\n", err);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    size_t dims = argc > 1 ? (size_t)atol(argv[1]) : 2048;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    const char *outdir = argc > 3 ? argv[3] : "bench/results";
    size_t n = dims * dims;

    clmad_context *ctx;
    BENCH_CHECK(NULL, clmad_context_create(NULL, &ctx));
    clmad_device_info dev;
    clmad_context_device(ctx, &dev);
    fprintf(stderr, "bench_cell: %zu x %zu on %s (%s), %d repetitions\n", dims, dims, dev.name,
            dev.platform_name, reps);

    float *host = malloc(n * sizeof *host), *ctl = malloc(dims * sizeof *ctl);
    size_t mat[2] = {dims, dims}, row[2] = {1, dims};
    clmad_tensor *in[6];
    for (int j = 0; j < 2; j++) {
        for (size_t k = 0; k < dims; k++)
            ctl[k] = uniform() < 0.5 ? 1.0f : 0.0f;
        BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, row, ctl, &in[j]));
    }
    for (int j = 2; j < 6; j++) {
        for (size_t k = 0; k < n; k++)
            host[k] = (float)(4.0 * uniform() - 2.0);
        BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, mat, host, &in[j]));
    }

    clmad_kernel *cell, *cell_plain;
    BENCH_CHECK(ctx, clmad_kernel_create(ctx, CELL_SOURCE, "cell_update", 6, 1, &cell));
    BENCH_CHECK(ctx, clmad_kernel_create(ctx, CELL_PLAIN_SOURCE, "cell_update", 6, 1, &cell_plain));
    const int active[6] = {0, 0, 1, 1, 1, 1};

    cl_kernel hand = build(ctx, HAND_SOURCE, "cell_hand");
    cl_kernel hoisted = build(ctx, HAND_HOISTED_SOURCE, "cell_hand_hoisted");
    char copy_src[4096];
    snprintf(copy_src, sizeof copy_src, "typedef float real;\n%s", clmad__embedded_source("copy.cl"));
    cl_kernel copy = build(ctx, copy_src, "clmad_copy");
    clmad_tensor *hout[5], *cdst;
    for (int j = 0; j < 5; j++)
        BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, mat, NULL, &hout[j]));
    BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, mat, NULL, &cdst));
    cl_ulong nn = n, cols = dims;
    cl_kernel hands[2] = {hand, hoisted};
    for (int h = 0; h < 2; h++) {
        clSetKernelArg(hands[h], 0, sizeof nn, &nn);
        clSetKernelArg(hands[h], 1, sizeof cols, &cols);
        for (int j = 0; j < 6; j++)
            bench_arg_tensor(hands[h], 2 + (cl_uint)j, in[j]);
        for (int j = 0; j < 5; j++)
            bench_arg_tensor(hands[h], 8 + (cl_uint)j, hout[j]);
    }
    bench_arg_tensor(copy, 0, in[2]);
    bench_arg_tensor(copy, 1, cdst);
    clSetKernelArg(copy, 2, sizeof nn, &nn);

    enum { DUAL, DUAL_PLAIN, HAND, HOISTED, PRIMAL, PRIMAL_PLAIN, COPY, NV };
    const char *names[NV] = {"dual", "dual_plain", "hand", "hand_hoisted", "primal", "primal_plain", "copy"};
    /* Bytes each variant must move per element (the controls are negligible). */
    const double bytes[NV] = {4 * 4 + 5 * 4, 4 * 4 + 5 * 4, 4 * 4 + 5 * 4, 4 * 4 + 5 * 4, 4 * 4 + 4, 4 * 4 + 4, 8};
    /* Odd repetitions run each plain variant before its ad_ twin. */
    const int swapped[NV] = {DUAL_PLAIN, DUAL, HAND, HOISTED, PRIMAL_PLAIN, PRIMAL, COPY};
    double *t[NV];
    for (int v = 0; v < NV; v++)
        t[v] = malloc((size_t)reps * sizeof(double));
    clmad_tensor *last[NV][5] = {{0}}; /* the last repetition's clmad results */

    for (int r = -2; r < reps; r++) { /* two warm-up rounds */
        for (int slot = 0; slot < NV; slot++) {
            int v = r % 2 ? swapped[slot] : slot;
            clmad_kernel *k = v == DUAL_PLAIN || v == PRIMAL_PLAIN ? cell_plain : cell;
            clmad_finish(ctx);
            double t0 = bench_now();
            clmad_tensor *y = NULL, *p[6] = {0};
            if (v == DUAL || v == DUAL_PLAIN)
                BENCH_CHECK(ctx, clmad_broadcast_partials(ctx, k, in, active, &y, p));
            else if (v == PRIMAL || v == PRIMAL_PLAIN)
                BENCH_CHECK(ctx, clmad_broadcast(ctx, k, in, &y));
            else
                run_nd(ctx, v == HAND ? hand : v == HOISTED ? hoisted : copy, n);
            clmad_finish(ctx);
            double dt = bench_now() - t0;
            if (r >= 0)
                t[v][r] = dt;
            if (v == DUAL && r == reps - 1) {
                /* Honesty check: the fused dual kernel agrees with the hand-written one. */
                float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
                double worst = 0;
                clmad_tensor *mine[5] = {y, p[2], p[3], p[4], p[5]};
                for (int j = 0; j < 5; j++) {
                    clmad_tensor_read(mine[j], a, n * sizeof *a);
                    clmad_tensor_read(hout[j], b, n * sizeof *b);
                    for (size_t k = 0; k < n; k++)
                        worst = fmax(worst, fabs((double)a[k] - b[k]) / fmax(1.0, fabs((double)b[k])));
                }
                fprintf(stderr, "bench_cell: dual vs hand, worst relative difference %.2e\n", worst);
                free(a);
                free(b);
            }
            if (r == reps - 1) {
                clmad_tensor *mine[5] = {y, p[2], p[3], p[4], p[5]};
                memcpy(last[v], mine, sizeof mine);
            } else {
                clmad_tensor_release(y);
                for (int j = 2; j < 6; j++)
                    clmad_tensor_release(p[j]);
            }
        }
    }
    /* Honesty check: the plain cell computes exactly what the ad_ cell does. */
    for (int pair = 0; pair < 2; pair++) {
        int a = pair ? PRIMAL : DUAL, b = pair ? PRIMAL_PLAIN : DUAL_PLAIN;
        float *ha = malloc(n * sizeof *ha), *hb = malloc(n * sizeof *hb);
        int same = 1;
        for (int j = 0; j < (pair ? 1 : 5); j++) {
            BENCH_CHECK(ctx, clmad_tensor_read(last[a][j], ha, n * sizeof *ha));
            BENCH_CHECK(ctx, clmad_tensor_read(last[b][j], hb, n * sizeof *hb));
            same &= memcmp(ha, hb, n * sizeof *ha) == 0;
        }
        free(ha);
        free(hb);
        fprintf(stderr, "bench_cell: %s plain vs ad_: %s\n", pair ? "primal" : "dual",
                same ? "bitwise identical" : "DIFFERENT");
        if (!same)
            return 1;
        for (int v = a; v <= b; v += b - a)
            for (int j = 0; j < 5; j++)
                clmad_tensor_release(last[v][j]);
    }
    /* plain / ad_ per repetition (run back to back), before the sorts below. */
    double *ratio[2];
    for (int pair = 0; pair < 2; pair++) {
        ratio[pair] = malloc((size_t)reps * sizeof(double));
        for (int r = 0; r < reps; r++)
            ratio[pair][r] = pair ? t[PRIMAL_PLAIN][r] / t[PRIMAL][r] : t[DUAL_PLAIN][r] / t[DUAL][r];
    }
    double q[2][3]; /* quartiles of the per-repetition ratios */
    for (int pair = 0; pair < 2; pair++)
        for (int k = 0; k < 3; k++)
            q[pair][k] = quantile(ratio[pair], reps, 0.25 * (k + 1));
    double med[NV];
    for (int v = 0; v < NV; v++)
        med[v] = bench_median(t[v], reps);

    printf("HM-LSTM cell update, %zu x %zu f32, %s (%s), median of %d\n", dims, dims, dev.name,
           dev.platform_name, reps);
    for (int v = 0; v < NV; v++)
        printf("  %-12s %9.3f ms  %7.2f GB/s\n", names[v], med[v] * 1e3, bytes[v] * n / med[v] * 1e-9);
    printf("  dual / hand          = %.3f  (target <= 1.25)\n", med[DUAL] / med[HAND]);
    printf("  dual / hand_hoisted  = %.3f\n", med[DUAL] / med[HOISTED]);
    printf("  dual / primal        = %.3f\n", med[DUAL] / med[PRIMAL]);
    for (int pair = 0; pair < 2; pair++)
        printf("  plain / ad_ (%s) = %.3f  (per repetition: median %.3f, quartiles %.3f - %.3f)\n",
               pair ? "primal" : "dual  ", pair ? med[PRIMAL_PLAIN] / med[PRIMAL] : med[DUAL_PLAIN] / med[DUAL],
               q[pair][1], q[pair][0], q[pair][2]);
    printf("  dual bandwidth / copy bandwidth = %.3f\n",
           (bytes[DUAL] / med[DUAL]) / (bytes[COPY] / med[COPY]));

    char slug[256], path[1024];
    bench_slug(dev.name, slug, sizeof slug);
    snprintf(path, sizeof path, "%s/bench_cell-%s.json", outdir, slug);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "{\n  \"benchmark\": \"bench_cell\",\n  \"device\": \"%s\",\n  \"platform\": \"%s\",\n"
                   "  \"dims\": %zu,\n  \"repetitions\": %d,\n  \"median_ms\": {",
                dev.name, dev.platform_name, dims, reps);
        for (int v = 0; v < NV; v++)
            fprintf(f, "%s\"%s\": %.6f", v ? ", " : "", names[v], med[v] * 1e3);
        fprintf(f, "},\n  \"dual_over_hand\": %.4f,\n  \"dual_over_hand_hoisted\": %.4f,\n"
                   "  \"dual_over_primal\": %.4f,\n",
                med[DUAL] / med[HAND], med[DUAL] / med[HOISTED], med[DUAL] / med[PRIMAL]);
        fprintf(f, "  \"dual_plain_over_dual\": %.4f,\n  \"primal_plain_over_primal\": %.4f,\n",
                med[DUAL_PLAIN] / med[DUAL], med[PRIMAL_PLAIN] / med[PRIMAL]);
        fprintf(f, "  \"plain_over_ad_per_repetition\": {\"dual\": {\"q1\": %.4f, \"median\": %.4f, \"q3\": %.4f}, "
                   "\"primal\": {\"q1\": %.4f, \"median\": %.4f, \"q3\": %.4f}}\n}\n",
                q[0][0], q[0][1], q[0][2], q[1][0], q[1][1], q[1][2]);
        fclose(f);
        fprintf(stderr, "bench_cell: wrote %s\n", path);
    }

    for (int v = 0; v < NV; v++)
        free(t[v]);
    free(ratio[0]);
    free(ratio[1]);
    for (int j = 0; j < 5; j++)
        clmad_tensor_release(hout[j]);
    clmad_tensor_release(cdst);
    for (int j = 0; j < 6; j++)
        clmad_tensor_release(in[j]);
    clReleaseKernel(hand);
    clReleaseKernel(hoisted);
    clReleaseKernel(copy);
    clmad_kernel_release(cell);
    clmad_kernel_release(cell_plain);
    clmad_context_release(ctx);
    free(host);
    free(ctl);
    return 0;
}
