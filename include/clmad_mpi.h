/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clmad_mpi: data-parallel training over MPI, one context per device.
 *
 * An optional component (libclmad_mpi, CMake target clmad::mpi, pkg-config
 * clmad-mpi), built when MPI is found. Every rank runs the same program on
 * its share of the batch; parameters start alike (clmad_mpi_broadcast) and
 * gradients are averaged across ranks before each update
 * (clmad_mpi_allreduce_grads), so every rank takes the same step.
 *
 * Every call here is collective over comm: every rank calls it, with the
 * same parameter list (count, order, dtypes and shapes). A rank whose list
 * differs is detected, and every rank returns CLMAD_ERR_INVALID_ARGUMENT
 * with a message naming the ranks and what differs, instead of hanging in
 * a reduction of mismatched sizes.
 */
#ifndef CLMAD_MPI_H
#define CLMAD_MPI_H

#include <clmad.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The device a rank takes: local_rank (the rank among the processes of its
 * node) modulo the number of devices of the default kind (GPUs if there
 * are any, else every device), as an index into list. When spec (usually
 * getenv("CLMAD_DEVICE")) is set and not empty, it decides instead, as in
 * clmad_device_choose, for every rank alike.
 * Errors: CLMAD_ERR_NO_DEVICE (count 0, or spec matches nothing),
 * CLMAD_ERR_INVALID_ARGUMENT (NULL, negative local_rank).
 */
CLMAD_API clmad_status clmad_mpi_device_for_rank(const clmad_device_info *list, size_t count, int local_rank,
                                       const char *spec, size_t *index);

/**
 * Creates this rank's context (collective over comm): as
 * clmad_context_create, on the device clmad_mpi_device_for_rank picks for
 * the rank's local rank (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED),
 * unless opt->device or CLMAD_DEVICE names one. The caller owns *ctx.
 * Errors: those of clmad_context_create and clmad_mpi_device_for_rank;
 * CLMAD_ERR_INVALID_ARGUMENT, on every rank, when the ranks are in
 * different collective calls of clmad_mpi (see clmad_mpi_broadcast);
 * CLMAD_ERR_UNSUPPORTED when an MPI call fails.
 */
CLMAD_API clmad_status clmad_mpi_context_create(MPI_Comm comm, const clmad_options *opt, clmad_context **ctx);

/**
 * Copies rank root's values of params[0..n) into every rank's params
 * (collective; to start every rank from the same initialisation). The
 * tensors keep their identity (gradients, requires_grad); values go
 * through host memory in one message per dtype.
 * Every collective call of clmad_mpi (this one, clmad_mpi_allreduce_grads,
 * clmad_mpi_context_create) opens with the same exchange, which carries
 * the call's identity: ranks in different calls (rank 0 broadcasting while
 * the others reduce gradients) all fail, with a message naming both calls
 * ("clmad_mpi_broadcast: the ranks are in different collective calls:
 * rank 0 in clmad_mpi_broadcast, rank 1 in clmad_mpi_allreduce_grads"),
 * instead of some returning and the others waiting for ever.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, n < 0, a bad root, parameter
 * lists that differ across ranks, ranks in different calls: reported on
 * every rank), those of the
 * tensors' reads and writes; CLMAD_ERR_UNSUPPORTED when an MPI call fails.
 */
CLMAD_API clmad_status clmad_mpi_broadcast(clmad_context *ctx, MPI_Comm comm, clmad_tensor *const *params, int n,
                                 int root);

typedef enum {
    CLMAD_MPI_AVERAGE = 0, /* the mean over ranks: the gradient of the mean loss over the global batch */
    CLMAD_MPI_SUM = 1
} clmad_mpi_op;

/* Flags of clmad_mpi_allreduce_grads. */
enum {
    /* The sum is formed in rank order 0, 1, ..., P-1 on every rank, from
     * all ranks' packed gradients (MPI_Allgather), so that the result is
     * bitwise the same on every rank and from run to run for a given
     * number of ranks, whatever the MPI library's reduction algorithm and
     * the order in which messages arrive. Costs P times the memory and
     * traffic of an allreduce; without it MPI_Allreduce decides the order. */
    CLMAD_MPI_DETERMINISTIC = 1
};

/**
 * Replaces the gradient of every parameter (clmad_tensor_grad) by its sum
 * or average over the ranks of comm (collective). The gradients are packed
 * into one buffer per dtype through the device's host-visible staging
 * memory (clmad_staging), reduced with one MPI_Allreduce per dtype (or an
 * MPI_Allgather with CLMAD_MPI_DETERMINISTIC) and written back. Every
 * parameter needs a gradient on every rank (run clmad_backward first).
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, n < 0, unknown op or flags,
 * parameter lists that differ across ranks, a parameter without a
 * gradient on some rank, ranks in different calls (see
 * clmad_mpi_broadcast): reported on every rank);
 * CLMAD_ERR_OUT_OF_MEMORY; CLMAD_ERR_OPENCL; CLMAD_ERR_UNSUPPORTED when an
 * MPI call fails.
 */
CLMAD_API clmad_status clmad_mpi_allreduce_grads(clmad_context *ctx, MPI_Comm comm, clmad_tensor *const *params, int n,
                                       clmad_mpi_op op, int flags);

#ifdef __cplusplus
}
#endif

#endif
