/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_mpi's collective calls: the broadcast of parameters and the
 * reduction of their gradients. After the agreement (agreement.h), the
 * values move packed one buffer per dtype through the context's staging
 * area (clmad_context_staging). Errors are reported through the public
 * clmad_set_error, so that clmad_last_error(ctx) says why: the component
 * uses clmad's public API only, as any library built on it. */
#include "agreement.h"

#include <stdlib.h>

static MPI_Datatype mpi_type(clmad_dtype dt) { return dt == CLMAD_F64 ? MPI_DOUBLE : MPI_FLOAT; }

/* The tensors of one dtype, in order, and their bytes. */
static int of_dtype(clmad_tensor *const *ts, int n, clmad_dtype dt, clmad_tensor **out, size_t *bytes)
{
    int m = 0;
    *bytes = 0;
    for (int k = 0; k < n; k++)
        if (clmad_tensor_dtype(ts[k]) == dt) {
            out[m++] = ts[k];
            *bytes += clmad_tensor_numel(ts[k]) * clmad_dtype_size(dt);
        }
    return m;
}

/* What a collective does with the count values of one dtype at host. */
typedef clmad_status (*mover)(agreement *a, clmad_dtype dt, void *host, size_t count, const void *how);

/* For each dtype that ts hold (f32, then f64): its values packed in the
 * staging area (this rank's with send, else room for them), every rank
 * there, moved, and with receive, written back to ts. */
static clmad_status per_dtype(agreement *a, clmad_tensor *const *ts, int n, int send, int receive, mover move,
                              const void *how)
{
    clmad_tensor **group = malloc(sizeof *group * (size_t)(n ? n : 1));
    clmad_status st = CLMAD_OK;
    if (!group)
        st = clmad_set_error(a->ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory", a->call);
    for (int d = 0; d < 2 && st == CLMAD_OK; d++) {
        clmad_dtype dt = d ? CLMAD_F64 : CLMAD_F32;
        size_t bytes;
        int m = of_dtype(ts, n, dt, group, &bytes);
        if (bytes == 0)
            continue;
        clmad_staging *s;
        void *host = NULL;
        st = clmad_context_staging(a->ctx, bytes, &s);
        if (st == CLMAD_OK)
            st = send ? clmad_staging_gather(s, group, m, &host) : clmad_staging_map(s, &host);
        st = clmad_mpi__all_ok(a, st);
        if (st == CLMAD_OK)
            st = move(a, dt, host, bytes / clmad_dtype_size(dt), how);
        if (st == CLMAD_OK && receive)
            st = clmad_staging_scatter(s, group, m);
    }
    free(group);
    return st;
}

/* ---- broadcast ------------------------------------------------------------ */

static clmad_status broadcast(agreement *a, clmad_dtype dt, void *host, size_t count, const void *root)
{
    int rc = MPI_Bcast(host, (int)count, mpi_type(dt), *(const int *)root, a->comm);
    return rc == MPI_SUCCESS ? CLMAD_OK : clmad_mpi__failed(a->ctx, rc, "MPI_Bcast");
}

clmad_status clmad_mpi_broadcast(clmad_context *ctx, MPI_Comm comm, clmad_tensor *const *params, int n, int root)
{
    agreement a;
    clmad_status st = clmad_mpi__start(&a, "clmad_mpi_broadcast", ctx, comm);
    if (st != CLMAD_OK)
        return st;
    clmad_status local = clmad_mpi__local_checks(&a, params, n);
    if (local == CLMAD_OK && root < 0)
        local = clmad_set_error(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_mpi_broadcast: root %d < 0", root);
    a.header[H_N] = n;
    a.header[H_ROOT] = root;
    a.header[H_NO_GRAD] = -1;
    a.header[H_HASH] = local == CLMAD_OK ? (int64_t)clmad_mpi__params_hash(params, n) : 0;
    st = clmad_mpi__agree(&a, local, params, n);
    if (st == CLMAD_OK)
        st = per_dtype(&a, params, n, a.rank == root, a.rank != root, broadcast, &root);
    free(a.all);
    return st;
}

/* ---- the reduction of gradients -------------------------------------------- */

/* The sum over ranks, in rank order, from every rank's packed values. */
#define SUM_IN_ORDER(type)                                                                    \
    do {                                                                                      \
        type *out = host;                                                                     \
        const type *in = gathered;                                                            \
        for (size_t i = 0; i < count; i++) {                                                  \
            type acc = in[i];                                                                 \
            for (int r = 1; r < size; r++)                                                    \
                acc += in[(size_t)r * count + i];                                             \
            out[i] = acc;                                                                     \
        }                                                                                     \
    } while (0)

static clmad_status reduce(agreement *a, clmad_dtype dt, void *host, size_t count, int flags)
{
    int rc;
    if (!(flags & CLMAD_MPI_DETERMINISTIC)) {
        rc = MPI_Allreduce(MPI_IN_PLACE, host, (int)count, mpi_type(dt), MPI_SUM, a->comm);
        return rc == MPI_SUCCESS ? CLMAD_OK : clmad_mpi__failed(a->ctx, rc, "MPI_Allreduce");
    }
    size_t elem = clmad_dtype_size(dt);
    void *gathered = malloc(elem * count * (size_t)a->size);
    int ok = gathered != NULL, every = 0;
    rc = MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, a->comm);
    if (rc == MPI_SUCCESS && every)
        rc = MPI_Allgather(host, (int)count, mpi_type(dt), gathered, (int)count, mpi_type(dt), a->comm);
    clmad_status st = CLMAD_OK;
    if (rc != MPI_SUCCESS)
        st = clmad_mpi__failed(a->ctx, rc, "MPI_Allgather");
    else if (!every)
        st = clmad_set_error(a->ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory for %zu x %d values on some rank",
                         a->call, count, a->size);
    else {
        int size = a->size;
        if (dt == CLMAD_F64)
            SUM_IN_ORDER(double);
        else
            SUM_IN_ORDER(float);
    }
    free(gathered);
    return st;
}

static void scale(clmad_dtype dt, void *host, size_t count, int size)
{
    if (dt == CLMAD_F64)
        for (size_t i = 0; i < count; i++)
            ((double *)host)[i] /= size;
    else
        for (size_t i = 0; i < count; i++)
            ((float *)host)[i] /= (float)size;
}

typedef struct {
    clmad_mpi_op op;
    int flags;
} reduction;

static clmad_status reduce_grads(agreement *a, clmad_dtype dt, void *host, size_t count, const void *how)
{
    const reduction *r = how;
    clmad_status st = reduce(a, dt, host, count, r->flags);
    if (st == CLMAD_OK && r->op == CLMAD_MPI_AVERAGE)
        scale(dt, host, count, a->size);
    return st;
}

clmad_status clmad_mpi_allreduce_grads(clmad_context *ctx, MPI_Comm comm, clmad_tensor *const *params, int n,
                                       clmad_mpi_op op, int flags)
{
    agreement a;
    clmad_status st = clmad_mpi__start(&a, "clmad_mpi_allreduce_grads", ctx, comm);
    if (st != CLMAD_OK)
        return st;
    clmad_status local = clmad_mpi__local_checks(&a, params, n);
    if (local == CLMAD_OK && (op != CLMAD_MPI_AVERAGE && op != CLMAD_MPI_SUM))
        local = clmad_set_error(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_mpi_allreduce_grads: unknown op %d", (int)op);
    if (local == CLMAD_OK && (flags & ~CLMAD_MPI_DETERMINISTIC))
        local = clmad_set_error(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_mpi_allreduce_grads: unknown flags 0x%x", flags);
    /* The gradients, in the parameters' order (new references). */
    clmad_tensor **grads = local == CLMAD_OK ? calloc((size_t)(n ? n : 1), sizeof *grads) : NULL;
    if (local == CLMAD_OK && !grads)
        local = clmad_set_error(ctx, CLMAD_ERR_OUT_OF_MEMORY, "clmad_mpi_allreduce_grads: out of host memory");
    a.header[H_NO_GRAD] = -1;
    for (int k = 0; k < n && local == CLMAD_OK; k++) {
        local = clmad_tensor_grad(params[k], &grads[k]);
        if (local == CLMAD_OK && !grads[k] && a.header[H_NO_GRAD] < 0)
            a.header[H_NO_GRAD] = k;
    }
    a.header[H_N] = n;
    a.header[H_OP] = op;
    a.header[H_FLAGS] = flags;
    a.header[H_HASH] = local == CLMAD_OK ? (int64_t)clmad_mpi__params_hash(params, n) : 0;
    st = clmad_mpi__agree(&a, local, params, n);
    reduction how = {op, flags};
    if (st == CLMAD_OK)
        st = per_dtype(&a, grads, n, 1, 1, reduce_grads, &how);
    for (int k = 0; grads && k < n; k++)
        clmad_tensor_release(grads[k]);
    free(grads);
    free(a.all);
    return st;
}
