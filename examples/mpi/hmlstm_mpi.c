/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hmlstm_mpi: the HM-LSTM training demo of examples/hmlstm.c, data-parallel
 * over MPI (clmad_mpi.h). Every rank holds a replica of the model on its own
 * device and context; each training step
 *   1. draws the global batch of G rows (the same on every rank) and keeps
 *      rows [r * G/P, (r + 1) * G/P): rank r of P;
 *   2. runs forward and backward on its rows (the mean loss over them);
 *   3. averages the gradients over the ranks (clmad_mpi_allreduce_grads,
 *      CLMAD_MPI_AVERAGE): the mean of the P rank means is the gradient of
 *      the mean loss over the global batch, the same as one process gets;
 *   4. takes the same Adam step on every rank.
 * The replicas start alike because rank 0's initial parameters are
 * broadcast (clmad_mpi_broadcast; each rank draws different ones first, so
 * that a missing broadcast would show).
 *
 * With one rank (a plain process, or mpirun -np 1) this is the single-process
 * reference, on the same code path: the same global batch gives the same
 * loss curve up to the order of the f32 sums (examples/mpi/loss_curve_test.sh
 * compares them).
 *
 * Output: the device of each rank, the training loss (the mean over the
 * global batch) of every step as "step N loss X" on rank 0, the held-out
 * loss before and after, whether every replica holds the same parameter bits
 * (a hash), and time per step and in the allreduce.
 *
 * Usage: mpirun -np P example_hmlstm_mpi [--global-batch G] [--iters N]
 *            [--steps S] [--hidden H] [--lr LR] [--deterministic] [--reverse-rows]
 *   --deterministic  reduce with CLMAD_MPI_DETERMINISTIC (rank-order sums:
 *                    the same bits in every run for a given P)
 *   --reverse-rows   lay the global batch out in reverse row order: the same
 *                    data summed in another order (the f32 noise reference)
 * G must be a multiple of P. Exit status 1 when the held-out loss did not
 * fall or the replicas differ.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include "hmlstm_dp.h"

/* The mean over ranks of a per-rank value, summed in rank order (the same
 * bits on every rank and in every run). */
static double mean_over_ranks(MPI_Comm comm, double mine)
{
    int size = 1;
    MPI_Comm_size(comm, &size);
    double *all = malloc((size_t)size * sizeof *all), s = 0;
    MPI_Allgather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, comm);
    for (int r = 0; r < size; r++)
        s += all[r];
    free(all);
    return s / size;
}

/* FNV-1a over the bytes of the parameters: equal hashes on every rank say
 * that the replicas hold the same bits. */
static unsigned long long params_hash(model *m)
{
    unsigned long long h = 14695981039346656037ull;
    for (int j = 0; j < NPARAM; j++) {
        size_t n = clmad_tensor_numel(m->p[j]);
        float *v = malloc(n * sizeof *v);
        CHECK(clmad_tensor_read(m->p[j], v, n * sizeof *v));
        const unsigned char *c = (const unsigned char *)v;
        for (size_t k = 0; k < n * sizeof *v; k++)
            h = (h ^ c[k]) * 1099511628211ull;
        free(v);
    }
    return h;
}

static int usage(const char *argv0, int rank)
{
    if (rank == 0)
        fprintf(stderr,
                "usage: %s [--global-batch G] [--iters N] [--steps S] [--hidden H] [--lr LR]\n"
                "          [--deterministic] [--reverse-rows]\n",
                argv0);
    MPI_Finalize();
    return 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    long global = 16, iters = 40, steps = 8, hidden = 16;
    double lr = 0.01;
    int flags = 0, reverse = 0;
    for (int k = 1; k < argc; k++) {
        const char *a = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;
        if (!strcmp(a, "--deterministic"))
            flags |= CLMAD_MPI_DETERMINISTIC;
        else if (!strcmp(a, "--reverse-rows"))
            reverse = 1;
        else if (v && !strcmp(a, "--global-batch"))
            global = atol(v), k++;
        else if (v && !strcmp(a, "--iters"))
            iters = atol(v), k++;
        else if (v && !strcmp(a, "--steps"))
            steps = atol(v), k++;
        else if (v && !strcmp(a, "--hidden"))
            hidden = atol(v), k++;
        else if (v && !strcmp(a, "--lr"))
            lr = atof(v), k++;
        else
            return usage(argv[0], rank);
    }
    if (global < 1 || iters < 1 || steps < 1 || steps > MAX_STEPS || hidden < 1 || !(lr > 0))
        return usage(argv[0], rank);
    if (global % size) {
        if (rank == 0)
            fprintf(stderr, "the global batch (%ld) must be a multiple of the number of ranks (%d)\n", global,
                    size);
        MPI_Finalize();
        return 2;
    }
    size_t rows = (size_t)(global / size), first = (size_t)rank * rows;

    /* One context per rank, on the device of its local rank (or CLMAD_DEVICE). */
    if (clmad_mpi_context_create(comm, NULL, &ctx) != CLMAD_OK) {
        fprintf(stderr, "rank %d: no context: %s\n", rank, clmad_last_error(NULL));
        MPI_Abort(comm, 1);
    }
    clmad_device_info dev;
    CHECK(clmad_context_device(ctx, &dev));
    for (int r = 0; r < size; r++) { /* one line per rank, in rank order */
        if (r == rank)
            printf("rank %d of %d: %s (%s), rows [%zu, %zu) of %ld\n", rank, size, dev.name,
                   dev.platform_name, first, first + rows, global);
        fflush(stdout);
        MPI_Barrier(comm);
    }
    if (rank == 0)
        printf("hmlstm_mpi: f32, %ld steps x %ld sequences (global batch), hidden %ld, Adam lr %g, %ld "
               "iterations, %s reduction%s\n",
               steps, global, hidden, lr, iters, flags & CLMAD_MPI_DETERMINISTIC ? "deterministic" : "MPI_Allreduce",
               reverse ? ", rows reversed" : "");

    model m;
    model_init(&m, (size_t)hidden, 0x9E3779B97F4A7C15ull + (unsigned long long)rank);
    CHECK(clmad_mpi_broadcast(ctx, comm, m.p, NPARAM, 0));

    unsigned long long data = 0x2545F4914F6CDD1Dull, held_rng = 0xD1B54A32D192ED03ull;
    batch held;
    batch_make(&held, &held_rng, (size_t)steps, (size_t)global, first, rows, reverse);
    CHECK(clmad_set_grad_enabled(ctx, 0));
    clmad_tensor *l0 = model_loss(&m, &held);
    double before = mean_over_ranks(comm, scalar_of(l0));
    clmad_tensor_release(l0);
    CHECK(clmad_set_grad_enabled(ctx, 1));

    double t_steps = 0, t_reduce = 0;
    for (long it = 1; it <= iters; it++) {
        batch b;
        batch_make(&b, &data, (size_t)steps, (size_t)global, first, rows, reverse);
        CHECK(clmad_finish(ctx));
        double t0 = now();
        clmad_tensor *loss = model_loss(&m, &b);
        CHECK(clmad_backward(ctx, loss, NULL));
        float mine = scalar_of(loss);
        clmad_tensor_release(loss);
        CHECK(clmad_finish(ctx));
        double t1 = now();
        CHECK(clmad_mpi_allreduce_grads(ctx, comm, m.p, NPARAM, CLMAD_MPI_AVERAGE, flags));
        double t2 = now();
        adam_step(&m, (int)it, lr);
        CHECK(clmad_finish(ctx));
        double t3 = now();
        if (it > 1) /* the first step compiles kernels */
            t_steps += t3 - t0, t_reduce += t2 - t1;
        batch_free(&b);
        double global_loss = mean_over_ranks(comm, mine);
        if (rank == 0)
            printf("step %ld loss %.9g\n", it, global_loss);
    }

    CHECK(clmad_set_grad_enabled(ctx, 0));
    clmad_tensor *l1 = model_loss(&m, &held);
    double after = mean_over_ranks(comm, scalar_of(l1));
    clmad_tensor_release(l1);
    CHECK(clmad_set_grad_enabled(ctx, 1));

    /* Every replica must hold the same parameters, bit for bit. */
    unsigned long long h = params_hash(&m), *hs = malloc((size_t)size * sizeof *hs);
    MPI_Allgather(&h, 1, MPI_UNSIGNED_LONG_LONG, hs, 1, MPI_UNSIGNED_LONG_LONG, comm);
    int same = 1;
    for (int r = 1; r < size; r++)
        same &= hs[r] == hs[0];
    free(hs);
    double steps_ms = iters > 1 ? 1e3 * t_steps / (double)(iters - 1) : 0;
    double reduce_ms = iters > 1 ? 1e3 * t_reduce / (double)(iters - 1) : 0;
    double worst_steps = 0, worst_reduce = 0; /* the slowest rank sets the pace */
    MPI_Reduce(&steps_ms, &worst_steps, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    MPI_Reduce(&reduce_ms, &worst_reduce, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    int status = !(after < before) || !same;
    if (rank == 0) {
        printf("held-out loss before %.9g after %.9g: %s\n", before, after, after < before ? "fell" : "DID NOT FALL");
        printf("parameters hash %016llx, replicas %s\n", h, same ? "identical" : "DIFFER");
        printf("%.2f ms per step, %.2f ms of it in clmad_mpi_allreduce_grads (mean of steps 2..%ld, slowest "
               "rank)\n",
               worst_steps, worst_reduce, iters);
    }
    batch_free(&held);
    model_free(&m);
    clmad_context_release(ctx);
    MPI_Finalize();
    return status;
}
