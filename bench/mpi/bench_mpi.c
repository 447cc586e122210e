/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_mpi: time per data-parallel training step of the HM-LSTM model of
 * examples/mpi/hmlstm_mpi.c (examples/mpi/hmlstm_dp.h) with P ranks, and
 * the share of it spent in clmad_mpi_allreduce_grads. Strong scaling: the
 * global batch is fixed, each rank takes G/P rows of it.
 *
 * Each timed step, with clmad_finish between the phases:
 *   compute    forward and backward on this rank's rows (and the loss read)
 *   allreduce  clmad_mpi_allreduce_grads (AVERAGE): the agreement on the
 *              parameter list, staging gather, MPI reduction, staging
 *              scatter, and any wait for a slower rank
 *   update     the Adam step
 * Per step the slowest rank's time counts (the ranks meet in the allreduce
 * every step); the figures are medians over the timed steps. Also timed:
 * the allreduce alone right after an MPI_Barrier ("isolated": its own cost,
 * with no wait for a slower rank), on the gradients of one backward.
 *
 * Usage: mpirun -np P bench_mpi [--global-batch G] [--steps S] [--hidden H]
 *            [--reps N] [--deterministic] [--tag T] [--out folder]
 * Writes <out>/<device>.mpi-<P>ranks[-T].json; a summary on stdout.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "bench_common.h"
#include "hmlstm_dp.h"

/* Median of the per-step maximum over ranks; all: size x reps, rank-major. */
static double median_of_max(const double *all, int size, int reps)
{
    double *m = malloc((size_t)reps * sizeof *m);
    for (int k = 0; k < reps; k++) {
        m[k] = all[k];
        for (int r = 1; r < size; r++)
            m[k] = fmax(m[k], all[(size_t)r * (size_t)reps + (size_t)k]);
    }
    double v = bench_median(m, reps);
    free(m);
    return v;
}

static double median_of_rank(const double *all, int rank, int reps)
{
    double *m = malloc((size_t)reps * sizeof *m);
    memcpy(m, all + (size_t)rank * (size_t)reps, (size_t)reps * sizeof *m);
    double v = bench_median(m, reps);
    free(m);
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long global = 64, steps = 8, hidden = 64;
    int reps = 30, flags = 0;
    const char *outdir = "bench/results", *tag = NULL;
    for (int k = 1; k < argc; k++) {
        const char *a = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;
        if (!strcmp(a, "--deterministic"))
            flags |= CLMAD_MPI_DETERMINISTIC;
        else if (v && !strcmp(a, "--global-batch"))
            global = atol(v), k++;
        else if (v && !strcmp(a, "--steps"))
            steps = atol(v), k++;
        else if (v && !strcmp(a, "--hidden"))
            hidden = atol(v), k++;
        else if (v && !strcmp(a, "--reps"))
            reps = atoi(v), k++;
        else if (v && !strcmp(a, "--tag"))
            tag = v, k++;
        else if (v && !strcmp(a, "--out"))
            outdir = v, k++;
        else {
            if (rank == 0)
                fprintf(stderr,
                        "usage: %s [--global-batch G] [--steps S] [--hidden H] [--reps N] [--deterministic] "
                        "[--tag T] [--out folder]\n",
                        argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    if (global < 1 || global % size || steps < 1 || steps > MAX_STEPS || hidden < 1 || reps < 1) {
        if (rank == 0)
            fprintf(stderr, "bench_mpi: bad sizes (the global batch must be a multiple of the ranks)\n");
        MPI_Finalize();
        return 2;
    }
    size_t rows = (size_t)(global / size), first = (size_t)rank * rows;
    if (clmad_mpi_context_create(comm, NULL, &ctx) != CLMAD_OK) {
        fprintf(stderr, "rank %d: no context: %s\n", rank, clmad_last_error(NULL));
        MPI_Abort(comm, 1);
    }
    clmad_device_info dev;
    CHECK(clmad_context_device(ctx, &dev));
    char loadavg[64] = "unknown";
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (!fgets(loadavg, sizeof loadavg, la))
            strcpy(loadavg, "unknown");
        loadavg[strcspn(loadavg, "\n")] = 0;
        fclose(la);
    }

    model m;
    model_init(&m, (size_t)hidden, 0x9E3779B97F4A7C15ull + (unsigned long long)rank);
    CHECK(clmad_mpi_broadcast(ctx, comm, m.p, NPARAM, 0));
    size_t elements = 0;
    for (int j = 0; j < NPARAM; j++)
        elements += clmad_tensor_numel(m.p[j]);

    const int warmup = 3;
    double *t_compute = malloc((size_t)reps * sizeof(double)), *t_reduce = malloc((size_t)reps * sizeof(double));
    double *t_step = malloc((size_t)reps * sizeof(double)), *t_alone = malloc((size_t)reps * sizeof(double));
    unsigned long long data = 0x2545F4914F6CDD1Dull;
    for (int it = 1; it <= warmup + reps; it++) {
        if (rank == 0)
            fprintf(stderr, "\rbench_mpi: %d ranks, step %d/%d   ", size, it, warmup + reps);
        batch b;
        batch_make(&b, &data, (size_t)steps, (size_t)global, first, rows, 0);
        CHECK(clmad_finish(ctx));
        double t0 = now();
        clmad_tensor *loss = model_loss(&m, &b);
        CHECK(clmad_backward(ctx, loss, NULL));
        (void)scalar_of(loss);
        clmad_tensor_release(loss);
        CHECK(clmad_finish(ctx));
        double t1 = now();
        CHECK(clmad_mpi_allreduce_grads(ctx, comm, m.p, NPARAM, CLMAD_MPI_AVERAGE, flags));
        double t2 = now();
        adam_step(&m, it, 0.01);
        CHECK(clmad_finish(ctx));
        double t3 = now();
        if (it > warmup) {
            int k = it - warmup - 1;
            t_compute[k] = t1 - t0, t_reduce[k] = t2 - t1, t_step[k] = t3 - t0;
        }
        batch_free(&b);
    }
    /* The allreduce alone: gradients of one more backward, reduced again and
     * again after a barrier (averaging equal values keeps them). */
    {
        batch b;
        batch_make(&b, &data, (size_t)steps, (size_t)global, first, rows, 0);
        clmad_tensor *loss = model_loss(&m, &b);
        CHECK(clmad_backward(ctx, loss, NULL));
        clmad_tensor_release(loss);
        CHECK(clmad_finish(ctx));
        for (int k = -warmup; k < reps; k++) {
            MPI_Barrier(comm);
            double t0 = now();
            CHECK(clmad_mpi_allreduce_grads(ctx, comm, m.p, NPARAM, CLMAD_MPI_AVERAGE, flags));
            if (k >= 0)
                t_alone[k] = now() - t0;
        }
        batch_free(&b);
    }
    if (rank == 0)
        fprintf(stderr, "\n");

    size_t all_n = (size_t)size * (size_t)reps;
    double *all[4] = {NULL, NULL, NULL, NULL}, *mine[4] = {t_compute, t_reduce, t_step, t_alone};
    for (int q = 0; q < 4; q++) {
        all[q] = rank == 0 ? malloc(all_n * sizeof(double)) : NULL;
        MPI_Gather(mine[q], reps, MPI_DOUBLE, all[q], reps, MPI_DOUBLE, 0, comm);
    }
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int vlen = 0;
    MPI_Get_library_version(version, &vlen);
    version[strcspn(version, "\n,")] = 0;

    int status = 0;
    if (rank == 0) {
        double compute = median_of_max(all[0], size, reps), reduce = median_of_max(all[1], size, reps);
        double step = median_of_max(all[2], size, reps), alone = median_of_max(all[3], size, reps);
        const char *threads = getenv("POCL_MAX_PTHREAD_COUNT");
        char slug[256], path[1024];
        bench_slug(dev.name, slug, sizeof slug);
        snprintf(path, sizeof path, "%s/%s.mpi-%dranks%s%s.json", outdir, slug, size, tag ? "-" : "",
                 tag ? tag : "");
        printf("bench_mpi: %s (%s), %s, %d rank%s%s\n", dev.name, dev.platform_name, version, size,
               size > 1 ? "s" : "", flags ? ", deterministic" : "");
        printf("  HM-LSTM f32: %ld steps x %ld sequences (global batch, %zu per rank), hidden %ld; %zu gradient "
               "elements (%zu bytes)\n",
               steps, global, rows, hidden, elements, elements * sizeof(float));
        printf("  median of %d steps, slowest rank per step (load average at start: %s):\n", reps, loadavg);
        printf("    step %9.3f ms = compute %.3f + allreduce %.3f + update (rest)\n", 1e3 * step, 1e3 * compute,
               1e3 * reduce);
        printf("    communication share (allreduce / step) %.1f%%\n", 100 * reduce / step);
        printf("    allreduce alone, after a barrier %.3f ms\n", 1e3 * alone);
        for (int r = 0; r < size; r++)
            printf("    rank %d: step %.3f ms, compute %.3f ms, allreduce %.3f ms\n", r,
                   1e3 * median_of_rank(all[2], r, reps), 1e3 * median_of_rank(all[0], r, reps),
                   1e3 * median_of_rank(all[1], r, reps));
        FILE *json = fopen(path, "w");
        if (!json) {
            fprintf(stderr, "bench_mpi: cannot write %s\n", path);
            status = 1;
        } else {
            fprintf(json,
                    "{\n  \"benchmark\": \"mpi\",\n  \"device\": \"%s\",\n  \"platform\": \"%s\",\n"
                    "  \"driver\": \"%s\",\n  \"mpi\": \"%s\",\n  \"ranks\": %d,\n  \"deterministic\": %s,\n"
                    "  \"pocl_max_pthread_count\": \"%s\",\n  \"load_average_at_start\": \"%s\",\n"
                    "  \"model\": {\"dtype\": \"f32\", \"steps\": %ld, \"global_batch\": %ld, "
                    "\"rows_per_rank\": %zu, \"hidden\": %ld, \"gradient_elements\": %zu, \"gradient_bytes\": %zu},\n"
                    "  \"repetitions\": %d,\n"
                    "  \"median_ms\": {\"step\": %.4f, \"compute\": %.4f, \"allreduce\": %.4f, "
                    "\"allreduce_alone\": %.4f},\n  \"communication_share\": %.4f,\n  \"per_rank\": [",
                    dev.name, dev.platform_name, dev.driver_version, version, size, flags ? "true" : "false",
                    threads ? threads : "", loadavg, steps, global, rows, hidden, elements,
                    elements * sizeof(float), reps, 1e3 * step, 1e3 * compute, 1e3 * reduce, 1e3 * alone,
                    reduce / step);
            for (int r = 0; r < size; r++)
                fprintf(json, "%s\n    {\"rank\": %d, \"step_ms\": %.4f, \"compute_ms\": %.4f, \"allreduce_ms\": %.4f}",
                        r ? "," : "", r, 1e3 * median_of_rank(all[2], r, reps),
                        1e3 * median_of_rank(all[0], r, reps), 1e3 * median_of_rank(all[1], r, reps));
            fprintf(json, "\n  ]\n}\n");
            fclose(json);
            printf("  wrote %s\n", path);
        }
    }
    for (int q = 0; q < 4; q++)
        free(all[q]), free(mine[q]);
    model_free(&m);
    clmad_context_release(ctx);
    MPI_Bcast(&status, 1, MPI_INT, 0, comm);
    MPI_Finalize();
    return status;
}
