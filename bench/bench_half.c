/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_half: the cost of 16-bit storage's conversions (clmad_cast between
 * f32 and f16 or bf16) against moving the same bytes, interleaved, medians:
 *   f32->bf16, bf16->f32, f32->f16, f16->f32   clmad_cast (6 bytes an element)
 *   copy f32                                     clmad_tensor_copy (8 bytes an element)
 *   clEnqueueCopyBuffer f32                      the driver's copy of the same buffers
 * with each time's GB/s (bytes read + written / time), on n random f32
 * values (every exponent of f16's range, so both paths of the rounding run).
 * Then the matrix product of two m x m matrices (--gemm m, default 1024; 0
 * leaves it out) in f32 and in bf16 and f16, whose operands are widened to
 * f32, multiplied by the same SGEMM, and the result rounded (clmad_matmul's
 * path for 16-bit operands: no HGEMM), interleaved, medians, with each
 * time over f32's.
 * Usage: bench_half [--n ELEMENTS] [--reps N] [--gemm M]
 */
#include "bench_common.h"

#include <math.h>

enum { TO_BF16, FROM_BF16, TO_F16, FROM_F16, COPY, COPYBUF, N_WAYS };
static const char *const WAYS[N_WAYS] = {"f32->bf16", "bf16->f32", "f32->f16", "f16->f32", "copy f32",
                                         "clEnqueueCopyBuffer f32"};
static const double BYTES[N_WAYS] = {6, 6, 6, 6, 8, 8}; /* per element */

static double run(clmad_context *ctx, int way, clmad_tensor *x, clmad_tensor *bf, clmad_tensor *h,
                  clmad_tensor *dst)
{
    cl_command_queue q;
    bench_cl(ctx, NULL, &q);
    BENCH_CHECK(ctx, clmad_finish(ctx));
    clmad_tensor *out = NULL;
    double t0 = bench_now();
    switch (way) {
    case TO_BF16: BENCH_CHECK(ctx, clmad_cast(ctx, x, CLMAD_BF16, &out)); break;
    case FROM_BF16: BENCH_CHECK(ctx, clmad_cast(ctx, bf, CLMAD_F32, &out)); break;
    case TO_F16: BENCH_CHECK(ctx, clmad_cast(ctx, x, CLMAD_F16, &out)); break;
    case FROM_F16: BENCH_CHECK(ctx, clmad_cast(ctx, h, CLMAD_F32, &out)); break;
    case COPY: BENCH_CHECK(ctx, clmad_tensor_copy(dst, x)); break;
    default:
        if (clEnqueueCopyBuffer(q, bench_mem(x), bench_mem(dst), 0, 0, 4 * clmad_tensor_numel(x), 0, NULL, NULL)) {
            fprintf(stderr, "bench_half: clEnqueueCopyBuffer failed\n");
            exit(1);
        }
    }
    BENCH_CHECK(ctx, clmad_finish(ctx));
    double t = bench_now() - t0;
    clmad_tensor_release(out);
    return t;
}

/* m x m products in f32, bf16 and f16 (widen, SGEMM, round), interleaved. */
static void bench_gemm(clmad_context *ctx, size_t m, int reps)
{
    static const clmad_dtype DT[3] = {CLMAD_F32, CLMAD_BF16, CLMAD_F16};
    size_t shape[2] = {m, m};
    clmad_tensor *a[3], *b[3], *wide;
    for (int d = 0; d < 3; d++) {
        BENCH_CHECK(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_F32, 2, shape, -1, 1, 7, &wide));
        BENCH_CHECK(ctx, clmad_cast(ctx, wide, DT[d], &a[d]));
        clmad_tensor_release(wide);
        BENCH_CHECK(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_F32, 2, shape, -1, 1, 8, &wide));
        BENCH_CHECK(ctx, clmad_cast(ctx, wide, DT[d], &b[d]));
        clmad_tensor_release(wide);
    }
    double times[3][99];
    for (int r = -1; r < reps; r++) /* r = -1: warm-up (CLBlast's build) */
        for (int d = 0; d < 3; d++) {
            clmad_tensor *c;
            BENCH_CHECK(ctx, clmad_finish(ctx));
            double t0 = bench_now();
            BENCH_CHECK(ctx, clmad_matmul(ctx, a[d], b[d], 0, 0, &c));
            BENCH_CHECK(ctx, clmad_finish(ctx));
            if (r >= 0)
                times[d][r] = bench_now() - t0;
            clmad_tensor_release(c);
        }
    const double base = bench_median(times[0], reps);
    printf("matmul %zu x %zu x %zu (16-bit: widen, SGEMM, round), medians of %d, interleaved\n", m, m, m, reps);
    for (int d = 0; d < 3; d++) {
        double t = bench_median(times[d], reps);
        printf("  %-5s %8.3f ms  %7.1f GFLOP/s  time / f32 %.2f\n", clmad_dtype_name(DT[d]), 1e3 * t,
               2.0 * (double)m * m * m / t / 1e9, t / base);
        clmad_tensor_release(a[d]);
        clmad_tensor_release(b[d]);
    }
}

int main(int argc, char **argv)
{
    size_t n = (size_t)1 << 24;
    int reps = 9;
    size_t gemm = 1024;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) {
            n = (size_t)atol(argv[++i]);
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--gemm") && i + 1 < argc) {
            gemm = (size_t)atol(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--n ELEMENTS] [--reps N] [--gemm M]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || reps > 99 || n == 0) {
        fprintf(stderr, "bench_half: --reps 1..99, --n at least 1\n");
        return 2;
    }
    clmad_context *ctx = NULL;
    if (clmad_context_create(NULL, &ctx) != CLMAD_OK) {
        fprintf(stderr, "bench_half: %s\n", clmad_last_error(NULL));
        return 1;
    }
    float *host = malloc(n * sizeof *host);
    if (!host)
        return 1;
    uint32_t s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        host[i] = ldexpf(1.0f + (float)(s >> 9) * 0x1p-23f, (int)(s % 40) - 25) * (s & 1 ? -1.0f : 1.0f);
    }
    clmad_tensor *x, *bf, *h, *dst;
    BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, host, &x));
    BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, NULL, &dst));
    BENCH_CHECK(ctx, clmad_cast(ctx, x, CLMAD_BF16, &bf));
    BENCH_CHECK(ctx, clmad_cast(ctx, x, CLMAD_F16, &h));
    free(host);
    double times[N_WAYS][99];
    for (int w = 0; w < N_WAYS; w++) /* warm-up: builds, pool */
        run(ctx, w, x, bf, h, dst);
    for (int r = 0; r < reps; r++)
        for (int w = 0; w < N_WAYS; w++)
            times[w][r] = run(ctx, w, x, bf, h, dst);
    clmad_device_info dev;
    clmad_context_device(ctx, &dev);
    printf("bench_half: %s, %zu elements, medians of %d, interleaved\n", dev.name, n, reps);
    double copy = bench_median(times[COPY], reps);
    for (int w = 0; w < N_WAYS; w++) {
        double t = bench_median(times[w], reps);
        printf("  %-24s %8.3f ms  %7.1f GB/s  time / copy f32 %.2f\n", WAYS[w], 1e3 * t, BYTES[w] * n / t / 1e9,
               t / copy);
    }
    clmad_tensor_release(x);
    clmad_tensor_release(bf);
    clmad_tensor_release(h);
    clmad_tensor_release(dst);
    if (gemm)
        bench_gemm(ctx, gemm, reps);
    clmad_context_release(ctx);
    return 0;
}
