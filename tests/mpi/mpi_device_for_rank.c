/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_mpi_device_for_rank as a plain unit, on made-up device lists (it
 * needs neither MPI running nor OpenCL): local ranks cycle over the GPUs
 * when there are any, else over every device; a device request (spec, as
 * CLMAD_DEVICE) decides for every rank alike, as clmad_device_choose does;
 * errors for an empty list, a request that matches nothing, NULL and a
 * negative rank. Runs as one process, without mpiexec. */
#include <clmad.h>
#include <clmad_mpi.h>

#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: FAILED: ", __FILE__, __LINE__);                       \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fprintf(stderr, "\n");                                                        \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)

static clmad_device_info device(int platform, int index, clmad_device_type type, const char *name)
{
    clmad_device_info d;
    memset(&d, 0, sizeof d);
    d.platform_index = platform;
    d.device_index = index;
    d.type = type;
    snprintf(d.name, sizeof d.name, "%s", name);
    snprintf(d.platform_name, sizeof d.platform_name, "Platform %d", platform);
    snprintf(d.vendor, sizeof d.vendor, "Vendor");
    snprintf(d.version, sizeof d.version, "OpenCL 1.2");
    d.compute_units = 4;
    d.global_mem_bytes = 1u << 30;
    d.max_alloc_bytes = 1u << 28;
    d.max_work_group_size = 256;
    d.fp64 = 1;
    return d;
}

/* The index rank r takes, or (size_t)-1 with the status printed. */
static size_t pick(const clmad_device_info *list, size_t n, int rank, const char *spec)
{
    size_t idx = (size_t)-1;
    clmad_status st = clmad_mpi_device_for_rank(list, n, rank, spec, &idx);
    if (st != CLMAD_OK) {
        fprintf(stderr, "rank %d, spec %s: %s: %s\n", rank, spec ? spec : "NULL", clmad_status_string(st),
                clmad_last_error(NULL));
        return (size_t)-1;
    }
    return idx;
}

int main(void)
{
    /* A node with a CPU platform and two GPU platforms: GPUs at 1, 3, 4. */
    clmad_device_info mixed[5] = {
        device(0, 0, CLMAD_DEVICE_CPU, "pthread-skylake"),
        device(1, 0, CLMAD_DEVICE_GPU, "NVIDIA H100"),
        device(0, 1, CLMAD_DEVICE_ACCELERATOR, "FPGA emulator"),
        device(1, 1, CLMAD_DEVICE_GPU, "NVIDIA H100"),
        device(2, 0, CLMAD_DEVICE_GPU, "Radeon Pro"),
    };
    const size_t gpus[3] = {1, 3, 4};
    for (int r = 0; r < 7; r++) {
        size_t got = pick(mixed, 5, r, NULL);
        CHECK(got == gpus[r % 3], "GPUs: local rank %d takes %zu, expected %zu", r, got, gpus[r % 3]);
        size_t empty = pick(mixed, 5, r, "");
        CHECK(empty == got, "spec \"\" is the default: rank %d takes %zu, expected %zu", r, empty, got);
    }

    /* No GPU: the ranks cycle over every device. */
    clmad_device_info cpus[3] = {
        device(0, 0, CLMAD_DEVICE_CPU, "pthread-haswell"),
        device(1, 0, CLMAD_DEVICE_CPU, "Intel CPU"),
        device(1, 1, CLMAD_DEVICE_OTHER, "custom"),
    };
    for (int r = 0; r < 6; r++) {
        size_t got = pick(cpus, 3, r, NULL);
        CHECK(got == (size_t)(r % 3), "no GPU: local rank %d takes %zu, expected %d", r, got, r % 3);
    }
    /* One device: every rank shares it (the tests' case on POCL). */
    for (int r = 0; r < 4; r++)
        CHECK(pick(cpus, 1, r, NULL) == 0, "one device: local rank %d must take it", r);

    /* A request decides for every rank alike, as clmad_device_choose. */
    const char *specs[] = {"cpu", "gpu", "1:1", "radeon", "0:1", "h100"};
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        size_t want = (size_t)-1;
        clmad_status st = clmad_device_choose(mixed, 5, specs[s], &want);
        CHECK(st == CLMAD_OK, "clmad_device_choose(%s): %s", specs[s], clmad_status_string(st));
        for (int r = 0; r < 5; r++) {
            size_t got = pick(mixed, 5, r, specs[s]);
            CHECK(got == want, "spec %s: local rank %d takes %zu, expected %zu (as clmad_device_choose)", specs[s],
                  r, got, want);
        }
    }
    CHECK(pick(mixed, 5, 2, "1:1") == 3, "spec 1:1 is entry 3");
    CHECK(pick(mixed, 5, 1, "cpu") == 0, "spec cpu is entry 0");

    /* Errors. */
    size_t idx = 99;
    clmad_status st = clmad_mpi_device_for_rank(mixed, 0, 0, NULL, &idx);
    CHECK(st == CLMAD_ERR_NO_DEVICE, "empty list: %s, expected CLMAD_ERR_NO_DEVICE", clmad_status_string(st));
    st = clmad_mpi_device_for_rank(mixed, 5, 0, "no such device", &idx);
    CHECK(st == CLMAD_ERR_NO_DEVICE, "spec matching nothing: %s, expected CLMAD_ERR_NO_DEVICE",
          clmad_status_string(st));
    printf("spec matching nothing: %s\n", clmad_last_error(NULL));
    st = clmad_mpi_device_for_rank(mixed, 5, 0, "7:0", &idx);
    CHECK(st == CLMAD_ERR_NO_DEVICE, "spec 7:0: %s, expected CLMAD_ERR_NO_DEVICE", clmad_status_string(st));
    st = clmad_mpi_device_for_rank(NULL, 5, 0, NULL, &idx);
    CHECK(st == CLMAD_ERR_INVALID_ARGUMENT, "NULL list: %s", clmad_status_string(st));
    st = clmad_mpi_device_for_rank(mixed, 5, 0, NULL, NULL);
    CHECK(st == CLMAD_ERR_INVALID_ARGUMENT, "NULL index: %s", clmad_status_string(st));
    st = clmad_mpi_device_for_rank(mixed, 5, -1, NULL, &idx);
    CHECK(st == CLMAD_ERR_INVALID_ARGUMENT, "local rank -1: %s", clmad_status_string(st));
    printf("local rank -1: %s\n", clmad_last_error(NULL));
    CHECK(idx == 99, "a failed call changed *index to %zu", idx);

    printf("mpi_device_for_rank: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
