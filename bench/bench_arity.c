/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_arity: the paper's occupancy experiment. A fixed-shape function of
 * N = 1..16 full-shape active inputs, y = sum_k sin(x_k) * x_{k+1 mod N},
 * evaluated with all N partials (clmad_broadcast_partials) under several
 * chunk caps. Reports time per element, bytes per element, achieved
 * bandwidth and what the device says about the dual kernel (private memory,
 * work-group size). Used to pick the default chunk cap (README).
 * Usage: bench_arity [--elements N] [--reps N] [--out folder] [--one-chunk]
 * (--one-chunk: only cap 16, every N in one chunk; for slow compilers).
 * Writes <out>/<device>.arity.json and .csv; progress on stderr.
 */
#include "bench_common.h"
#include "internal.h"

#define MAX_N 16

static void kernel_source(int n, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "T f(");
    for (int k = 0; k < n; k++)
        used += (size_t)snprintf(buf + used, cap - used, "%sT x%d", k ? ", " : "", k);
    used += (size_t)snprintf(buf + used, cap - used, ")\n{\n    T y = ad_const(0);\n");
    for (int k = 0; k < n; k++)
        used += (size_t)snprintf(buf + used, cap - used, "    y = ad_add(y, ad_mul(ad_sin(x%d), x%d));\n", k,
                                 (k + 1) % n);
    snprintf(buf + used, cap - used, "    return y;\n}\n");
}

int main(int argc, char **argv)
{
    size_t elements = (size_t)1 << 20;
    int reps = 7;
    const char *outdir = "bench/results";
    int first_cap = 0; /* index into caps: 3 with --one-chunk */
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--elements") && a + 1 < argc)
            elements = (size_t)atol(argv[++a]);
        else if (!strcmp(argv[a], "--reps") && a + 1 < argc)
            reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--out") && a + 1 < argc)
            outdir = argv[++a];
        else if (!strcmp(argv[a], "--one-chunk"))
            first_cap = 3;
        else {
            fprintf(stderr, "usage: %s [--elements N] [--reps N] [--out folder] [--one-chunk]\n", argv[0]);
            return 2;
        }
    }
    clmad_context *ctx;
    BENCH_CHECK(NULL, clmad_context_create(NULL, &ctx));
    clmad_device_info dev;
    clmad_context_device(ctx, &dev);
    char slug[256], path[1024];
    bench_slug(dev.name, slug, sizeof slug);
    snprintf(path, sizeof path, "%s/%s.arity.csv", outdir, slug);
    FILE *csv = fopen(path, "w");
    snprintf(path, sizeof path, "%s/%s.arity.json", outdir, slug);
    FILE *json = fopen(path, "w");
    if (!csv || !json) {
        fprintf(stderr, "bench_arity: cannot write into %s\n", outdir);
        return 1;
    }
    fprintf(csv, "device,n_inputs,chunk_cap,ns_per_element,bytes_per_element,gbps,private_bytes,work_group\n");
    fprintf(json, "{\n  \"benchmark\": \"arity\",\n  \"device\": \"%s\",\n  \"platform\": \"%s\",\n"
                  "  \"elements\": %zu,\n  \"repetitions\": %d,\n  \"runs\": [",
            dev.name, dev.platform_name, elements, reps);
    printf("Arity scaling, %zu elements f32, %s (%s), median of %d\n", elements, dev.name,
           dev.platform_name, reps);
    printf("   N  cap   ns/elem  bytes/elem    GB/s  private  work-group\n");

    clmad_tensor *x[MAX_N];
    float *h = malloc(elements * sizeof *h);
    for (int k = 0; k < MAX_N; k++) {
        for (size_t e = 0; e < elements; e++)
            h[e] = (float)((e * 2654435761u + (unsigned)k * 97u) % 1000) / 500.0f - 1.0f;
        BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &elements, h, &x[k]));
    }
    free(h);
    const int caps[] = {2, 4, 8, 16};
    int first = 1;
    char src[4096];
    for (int n = 1; n <= MAX_N; n++) {
        kernel_source(n, src, sizeof src);
        clmad_kernel *k;
        BENCH_CHECK(ctx, clmad_kernel_create(ctx, src, "f", n, 1, &k));
        for (int ci = first_cap; ci < 4; ci++) {
            int cap = caps[ci];
            if (ci > first_cap && caps[ci - 1] >= n)
                break; /* a larger cap gives the same single chunk */
            BENCH_CHECK(ctx, clmad_set_chunk_cap(ctx, cap));
            double t[64];
            for (int r = -1; r < reps && r < 64; r++) {
                fprintf(stderr, "\rbench_arity: N %2d cap %2d round %d   ", n, cap, r + 2);
                clmad_tensor *y, *p[MAX_N];
                clmad_finish(ctx);
                double t0 = bench_now();
                BENCH_CHECK(ctx, clmad_broadcast_partials(ctx, k, x, NULL, &y, p));
                clmad_finish(ctx);
                if (r >= 0)
                    t[r] = bench_now() - t0;
                clmad_tensor_release(y);
                for (int j = 0; j < n; j++)
                    clmad_tensor_release(p[j]);
            }
            double med = bench_median(t, reps);
            /* The variant just used is at the head of the kernel's list. */
            cl_ulong priv = 0;
            size_t wg = 0;
            cl_device_id device;
            bench_cl(ctx, &device, NULL);
            clGetKernelWorkGroupInfo(k->variants->kernel, device, CL_KERNEL_PRIVATE_MEM_SIZE,
                                     sizeof priv, &priv, NULL);
            clGetKernelWorkGroupInfo(k->variants->kernel, device, CL_KERNEL_WORK_GROUP_SIZE,
                                     sizeof wg, &wg, NULL);
            int chunks = (n + cap - 1) / cap;
            /* Each chunk reads all N inputs; partials and the value are written once. */
            double bytes = 4.0 * (chunks * n + n + 1);
            double ns = med / (double)elements * 1e9;
            printf("  %2d  %3d  %8.3f  %10.0f  %6.2f  %7llu  %10zu\n", n, cap, ns, bytes,
                   bytes / ns, (unsigned long long)priv, wg);
            fprintf(csv, "\"%s\",%d,%d,%.4f,%.0f,%.3f,%llu,%zu\n", dev.name, n, cap, ns, bytes, bytes / ns,
                    (unsigned long long)priv, wg);
            fprintf(json, "%s\n    {\"n_inputs\": %d, \"chunk_cap\": %d, \"ns_per_element\": %.4f, "
                          "\"bytes_per_element\": %.0f, \"gbps\": %.3f, \"private_bytes\": %llu, "
                          "\"work_group\": %zu}",
                    first ? "" : ",", n, cap, ns, bytes, bytes / ns, (unsigned long long)priv, wg);
            first = 0;
        }
        clmad_kernel_release(k);
    }
    fprintf(stderr, "\n");
    fprintf(json, "\n  ]\n}\n");
    fclose(json);
    fclose(csv);
    for (int k = 0; k < MAX_N; k++)
        clmad_tensor_release(x[k]);
    clmad_context_release(ctx);
    return 0;
}
