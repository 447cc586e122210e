/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a program's device time goes, kernel by kernel, on any OpenCL
 * implementation, with no change to the program: preloaded, this library
 * turns on profiling in every command queue the program creates with
 * clCreateCommandQueue (clmad's), keeps an event for every kernel launch,
 * and at exit prints each kernel's launches, total and mean device time
 * (by kernel name and global size, largest total first) on stderr:
 *
 *   LD_PRELOAD=build/libclmad-kernel-profile.so build/bench_mlp --dims 4096x1024x4096x1000
 *
 * CLBlast's kernels count too (they go through clmad's queue). Profiling
 * may itself slow a queue a little: compare steps without it. It found the
 * softmax rows and the column sums of docs/design-notes.md on an H100.
 */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Launches kept at most (an event each); later ones are counted, not timed. */
#define MOST_LAUNCHES (1u << 20)

typedef struct launch {
    char name[64];
    size_t global;
    cl_event event;
} launch;

typedef struct kernel_total {
    char name[64];
    size_t global;
    double ms;
    long count;
} kernel_total;

static launch *launches;
static size_t n_launches, capacity, untimed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

typedef cl_command_queue (*create_queue_fn)(cl_context, cl_device_id, cl_command_queue_properties, cl_int *);
typedef cl_int (*enqueue_fn)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *,
                             cl_uint, const cl_event *, cl_event *);

/* Exported whatever the build's default visibility: the loader must find
 * these before the ICD loader's. */
#define INTERPOSED __attribute__((visibility("default")))

INTERPOSED cl_command_queue clCreateCommandQueue(cl_context context, cl_device_id device, cl_command_queue_properties props,
                                      cl_int *err)
{
    create_queue_fn real = (create_queue_fn)dlsym(RTLD_NEXT, "clCreateCommandQueue");
    return real(context, device, props | CL_QUEUE_PROFILING_ENABLE, err);
}

static void keep(cl_kernel kernel, cl_uint dims, const size_t *global, cl_event event)
{
    pthread_mutex_lock(&lock);
    if (n_launches == capacity && capacity < MOST_LAUNCHES) {
        size_t grown = capacity ? 2 * capacity : 4096;
        launch *more = realloc(launches, grown * sizeof *more);
        if (more) {
            launches = more;
            capacity = grown;
        }
    }
    if (n_launches < capacity) {
        launch *l = &launches[n_launches++];
        l->name[0] = '\0';
        clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof l->name, l->name, NULL);
        l->name[sizeof l->name - 1] = '\0';
        l->global = global[0] * (dims > 1 ? global[1] : 1) * (dims > 2 ? global[2] : 1);
        l->event = event;
    } else {
        untimed++;
        clReleaseEvent(event);
    }
    pthread_mutex_unlock(&lock);
}

INTERPOSED cl_int clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel, cl_uint dims, const size_t *offset,
                              const size_t *global, const size_t *local, cl_uint n_wait, const cl_event *wait,
                              cl_event *event)
{
    enqueue_fn real = (enqueue_fn)dlsym(RTLD_NEXT, "clEnqueueNDRangeKernel");
    cl_event mine;
    cl_int err = real(queue, kernel, dims, offset, global, local, n_wait, wait, &mine);
    if (err != CL_SUCCESS)
        return err;
    if (event) {
        *event = mine;
        clRetainEvent(mine);
    }
    keep(kernel, dims, global, mine);
    return err;
}

static int by_total(const void *a, const void *b)
{
    const double x = ((const kernel_total *)a)->ms, y = ((const kernel_total *)b)->ms;
    return (x < y) - (x > y);
}

__attribute__((destructor)) static void report(void)
{
    if (n_launches == 0 && untimed == 0) /* a child process (system()), or nothing launched */
        return;
    kernel_total *totals = calloc(n_launches + 1, sizeof *totals);
    if (!totals)
        return;
    size_t n_totals = 0;
    double all = 0;
    for (size_t i = 0; i < n_launches; i++) {
        cl_ulong start = 0, end = 0;
        const launch *l = &launches[i];
        if (clGetEventProfilingInfo(l->event, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) != CL_SUCCESS ||
            clGetEventProfilingInfo(l->event, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) != CL_SUCCESS)
            continue;
        size_t t = 0;
        while (t < n_totals && (strcmp(totals[t].name, l->name) || totals[t].global != l->global))
            t++;
        if (t == n_totals) {
            memcpy(totals[t].name, l->name, sizeof totals[t].name);
            totals[t].global = l->global;
            n_totals++;
        }
        const double ms = (double)(end - start) * 1e-6;
        totals[t].ms += ms;
        totals[t].count++;
        all += ms;
    }
    qsort(totals, n_totals, sizeof *totals, by_total);
    fprintf(stderr, "== kernel profile: %zu launches timed (%zu not), %.3f ms of device time\n", n_launches,
            untimed, all);
    for (size_t t = 0; t < n_totals && t < 40; t++)
        fprintf(stderr, "%9.3f ms %6ld x %9.1f us  %-40s global %zu\n", totals[t].ms, totals[t].count,
                1e3 * totals[t].ms / (double)totals[t].count, totals[t].name, totals[t].global);
    free(totals);
}
