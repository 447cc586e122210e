/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers of the benchmark programs: timing, medians, JSON output. */
#ifndef CLMAD_BENCH_COMMON_H
#define CLMAD_BENCH_COMMON_H

#include <clmad.h>
#include <clmad_cl.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A file-name friendly form of a device name. */
static inline void bench_slug(const char *name, char *out, size_t cap)
{
    size_t k = 0;
    int dash = 0;
    for (const char *p = name; *p && k + 1 < cap; p++) {
        if (isalnum((unsigned char)*p)) {
            out[k++] = (char)tolower((unsigned char)*p);
            dash = 0;
        } else if (!dash && k > 0) {
            out[k++] = '-';
            dash = 1;
        }
    }
    while (k > 0 && out[k - 1] == '-')
        k--;
    out[k] = '\0';
}

/* The OpenCL buffer of t (at offset 0: the benchmarks' tensors own theirs). */
static inline cl_mem bench_mem(const clmad_tensor *t)
{
    cl_mem mem = NULL;
    clmad_tensor_get_cl(t, &mem, NULL);
    return mem;
}

/* Kernel argument index: the buffer of t. */
static inline void bench_arg_tensor(cl_kernel k, cl_uint index, const clmad_tensor *t)
{
    cl_mem mem = bench_mem(t);
    clSetKernelArg(k, index, sizeof mem, &mem);
}

/* The OpenCL device and queue of ctx (either may be NULL). */
static inline void bench_cl(const clmad_context *ctx, cl_device_id *device, cl_command_queue *queue)
{
    clmad_context_get_cl(ctx, NULL, device, queue);
}

#define BENCH_CHECK(ctx, call)                                                          \
    do {                                                                                \
        clmad_status st_ = (call);                                                      \
        if (st_ != CLMAD_OK) {                                                          \
            fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,         \
                    clmad_status_string(st_), clmad_last_error(ctx));                   \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#endif
