/* SPDX-License-Identifier: Apache-2.0 */
/* The agreement between ranks that opens every collective call of
 * clmad_mpi: a header per rank exchanged, and one verdict drawn by all. */
#ifndef CLMAD_MPI_AGREEMENT_H
#define CLMAD_MPI_AGREEMENT_H

#include "clmad_mpi.h"

#include <stdint.h>

/* The words of a rank's header. H_CALL says which call the rank is in: the
 * headers of two different calls have the same size, so that a rank in
 * clmad_mpi_broadcast and one in clmad_mpi_allreduce_grads meet in the
 * same exchange and both fail, where each would otherwise go on into its
 * own transfers (a hang). */
enum { H_CALL, H_OK, H_N, H_ROOT, H_OP, H_FLAGS, H_NO_GRAD, H_HASH, H_WORDS };

typedef struct {
    const char *call;
    clmad_context *ctx;
    MPI_Comm comm;
    int rank, size;
    int64_t header[H_WORDS];
    int64_t *all; /* size x H_WORDS */
} agreement;

/* An MPI call that failed, as a clmad error naming it. */
clmad_status clmad_mpi__failed(const clmad_context *ctx, int rc, const char *call);

/* a for the call named call (its rank and the communicator's size, and the
 * call's identity in a->header[H_CALL]). */
clmad_status clmad_mpi__start(agreement *a, const char *call, clmad_context *ctx, MPI_Comm comm);
/* This rank's own checks of ctx, params and n. */
clmad_status clmad_mpi__local_checks(agreement *a, clmad_tensor *const *params, int n);
/* A hash of the parameters' dtypes and shapes, for a->header[H_HASH]. */
uint64_t clmad_mpi__params_hash(clmad_tensor *const *params, int n);
/* The exchange of the headers and the common verdict. local: this rank's
 * own checks. a->all is malloc'd: the caller frees it. */
clmad_status clmad_mpi__agree(agreement *a, clmad_status local, clmad_tensor *const *params, int n);
/* Whether every rank got this far: a rank that failed to stage its values
 * must not leave the others waiting in a transfer of mismatched sizes. */
clmad_status clmad_mpi__all_ok(agreement *a, clmad_status st);

#endif
