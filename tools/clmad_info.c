/* SPDX-License-Identifier: Apache-2.0 */
/* clmad-info: lists every OpenCL device and marks the one clmad would use
 * (and, built with the MPI component, the one each local MPI rank would
 * take); with --lower FILE, prints a broadcast function lowered from plain
 * syntax to the ad_ vocabulary (what clmad_kernel_create compiles); with
 * --warm-up, builds the library's programs for the default device ahead. */
#include "tune.h"

#include <clmad.h>
#ifdef CLMAD_INFO_MPI
#include <clmad_mpi.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *read_file(const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f)
        return NULL;
    size_t n = 0, cap = 4096;
    char *s = malloc(cap);
    for (size_t got; s && (got = fread(s + n, 1, cap - 1 - n, f)) > 0;) {
        n += got;
        if (n == cap - 1) {
            char *s2 = realloc(s, cap *= 2);
            if (!s2)
                free(s);
            s = s2;
        }
    }
    if (s)
        s[n] = 0;
    if (f != stdin)
        fclose(f);
    return s;
}

static int lower(const char *path)
{
    char *source = read_file(path), *lowered = NULL;
    if (!source) {
        fprintf(stderr, "clmad-info: cannot read %s\n", path);
        return 1;
    }
    clmad_status st = clmad_lower_source(source, &lowered);
    free(source);
    if (st != CLMAD_OK) {
        fprintf(stderr, "clmad-info: %s: %s\n", path, clmad_last_error(NULL));
        return 1;
    }
    fputs(lowered, stdout);
    clmad_string_free(lowered);
    return 0;
}

static int usage(FILE *out, int status)
{
    fprintf(out, "usage: clmad-info               list the OpenCL devices, mark the one clmad would use\n"
#ifdef CLMAD_INFO_MPI
                 "       clmad-info --ranks K     ... and show the device of MPI local ranks 0..K-1\n"
                 "                                (default: one per device of the default kind, at least 2)\n"
#endif
                 "       clmad-info --lower FILE  print FILE's broadcast functions lowered from plain\n"
                 "                                syntax to the ad_ vocabulary (FILE - reads stdin)\n"
                 "       clmad-info --tune        measure the elements per work-item that suit the\n"
                 "                                default device best and store them in the cache\n"
                 "       clmad-info --warm-up     build clmad's own programs, CLBlast's GEMM kernels and\n"
                 "                                a small training step's kernels for the default\n"
                 "                                device into the caches, ahead of a first run\n"
                 "                                (clmad_context_warm_up)\n"
                 "       clmad-info --version     print the version of libclmad\n"
                 "       clmad-info --help        print this text\n");
    return status;
}

/* --warm-up: clmad_context_warm_up on the default device, each step said
 * on stderr as it starts, then what was built and how long it took. */
static int warm_up(void)
{
    clmad_context *ctx = NULL;
    clmad_device_info device;
    clmad_stats before, after;
    if (clmad_context_create(NULL, &ctx) != CLMAD_OK || clmad_context_device(ctx, &device) != CLMAD_OK ||
        clmad_context_stats(ctx, &before) != CLMAD_OK) {
        fprintf(stderr, "clmad-info: %s\n", clmad_last_error(ctx));
        clmad_context_release(ctx);
        return 1;
    }
    clmad_context_set_notice(ctx, clmad_notice_stderr, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clmad_status st = clmad_context_warm_up(ctx, CLMAD_WARM_UP_ALL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (st != CLMAD_OK || clmad_context_stats(ctx, &after) != CLMAD_OK) {
        fprintf(stderr, "clmad-info: warm-up failed: %s\n", clmad_last_error(ctx));
        clmad_context_release(ctx);
        return 1;
    }
    printf("warm-up of \"%s\" in %.2f s: %llu programs compiled, %llu loaded from clmad's disk cache, "
           "CLBlast's GEMM kernels for f32%s, a training step\n",
           device.name, seconds, (unsigned long long)(after.programs_compiled - before.programs_compiled),
           (unsigned long long)(after.programs_from_disk - before.programs_from_disk),
           device.fp64 ? " and f64" : "");
    if (after.disk_cache_problem[0])
        printf("note: %s\n", after.disk_cache_problem);
    clmad_context_release(ctx);
    return 0;
}

#ifdef CLMAD_INFO_MPI
/* The device each of the local ranks 0..ranks-1 of a node would take in
 * clmad_mpi_context_create; ranks 0 means one per device of the default
 * kind (GPUs if any, else all), and at least 2, to show the cycle. */
static int show_ranks(const clmad_device_info *list, size_t n, const char *spec, int ranks)
{
    if (ranks == 0) {
        size_t gpus = 0;
        for (size_t i = 0; i < n; i++)
            gpus += list[i].type == CLMAD_DEVICE_GPU;
        size_t k = gpus ? gpus : n;
        ranks = k < 2 ? 2 : k > 64 ? 64 : (int)k; /* a readable list */
    }
    printf("with MPI (clmad_mpi_context_create), local rank r of a node would use%s%s%s:\n",
           spec && spec[0] ? " (CLMAD_DEVICE=" : "", spec && spec[0] ? spec : "",
           spec && spec[0] ? ", every rank alike)" : "");
    for (int r = 0; r < ranks; r++) {
        size_t idx = 0;
        clmad_status st = clmad_mpi_device_for_rank(list, n, r, spec, &idx);
        if (st != CLMAD_OK) {
            printf("  rank %d: no device: %s\n", r, clmad_last_error(NULL));
            return 1;
        }
        printf("  rank %d: %d:%d %s\n", r, list[idx].platform_index, list[idx].device_index, list[idx].name);
    }
    return 0;
}
#endif

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--lower"))
        return lower(argv[2]);
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
        return usage(stdout, 0);
    if (argc == 2 && !strcmp(argv[1], "--warm-up"))
        return warm_up();
    if (argc == 2 && !strcmp(argv[1], "--tune"))
        return clmad_info_tune();
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("clmad-info %s (libclmad %s)\n", CLMAD_VERSION_STRING, clmad_version_string());
        return 0;
    }
    int ranks = 0;
#ifdef CLMAD_INFO_MPI
    if (argc == 3 && !strcmp(argv[1], "--ranks")) {
        char *end = NULL;
        long k = strtol(argv[2], &end, 10);
        if (!*argv[2] || *end || k < 1 || k > 4096)
            return usage(stderr, 2);
        ranks = (int)k;
        argc = 1;
    }
#endif
    if (argc != 1)
        return usage(stderr, 2);
    clmad_device_info *list = NULL;
    size_t n = 0;
    clmad_status st = clmad_device_list(&list, &n);
    if (st != CLMAD_OK) {
        fprintf(stderr, "clmad-info: %s: %s\n", clmad_status_string(st), clmad_last_error(NULL));
        return 1;
    }
    const char *spec = getenv("CLMAD_DEVICE");
    size_t chosen = 0;
    clmad_status choice = n ? clmad_device_choose(list, n, spec, &chosen) : CLMAD_ERR_NO_DEVICE;

    printf("clmad %d.%d.%d: %zu OpenCL device%s\n", CLMAD_VERSION_MAJOR, CLMAD_VERSION_MINOR,
           CLMAD_VERSION_PATCH, n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) {
        const clmad_device_info *d = &list[i];
        printf("%s %d:%d  %s\n", choice == CLMAD_OK && i == chosen ? "*" : " ", d->platform_index,
               d->device_index, d->name);
        printf("      platform: %s\n", d->platform_name);
        printf("      type: %s, vendor: %s\n", clmad_device_type_name(d->type), d->vendor);
        printf("      version: %s, driver: %s\n", d->version, d->driver_version);
        printf("      compute units: %u, max work-group: %zu\n", d->compute_units,
               d->max_work_group_size);
        printf("      global memory: %.1f MiB, max allocation: %.1f MiB\n",
               d->global_mem_bytes / 1048576.0, d->max_alloc_bytes / 1048576.0);
        printf("      fp64: %s, host-unified memory: %s\n", d->fp64 ? "yes" : "no",
               d->host_unified_memory ? "yes" : "no");
    }
    if (choice == CLMAD_OK && spec && spec[0])
        printf("clmad would use %d:%d %s (CLMAD_DEVICE=%s)\n", list[chosen].platform_index,
               list[chosen].device_index, list[chosen].name, spec);
    else if (choice == CLMAD_OK)
        printf("clmad would use %d:%d %s (default: first GPU, else first device)\n",
               list[chosen].platform_index, list[chosen].device_index, list[chosen].name);
    else
        printf("clmad would use no device: %s\n", n ? clmad_last_error(NULL) : "none reported");
    int status = choice == CLMAD_OK ? 0 : 1;
    clmad_context *ctx = NULL;
    clmad_tuning tuning;
    if (status == 0 && clmad_context_create(NULL, &ctx) == CLMAD_OK &&
        clmad_context_tuning(ctx, &tuning) == CLMAD_OK)
        printf("its tuning: %d element%s per work-item, chunk cap %d, inline pragma %s (%s)\n",
               tuning.items_per_work_item, tuning.items_per_work_item == 1 ? "" : "s", tuning.chunk_cap,
               tuning.inline_pragma ? "on" : "off", tuning.origin);
    clmad_context_release(ctx);
#ifdef CLMAD_INFO_MPI
    if (status == 0)
        status = show_ranks(list, n, spec, ranks);
#else
    (void)ranks;
#endif
    clmad_device_list_free(list);
    return status;
}
