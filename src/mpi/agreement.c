/* SPDX-License-Identifier: Apache-2.0 */
/* The agreement between ranks (agreement.h): every collective call
 * first exchanges a small header per rank (its own argument checks, the
 * parameter count, a hash of the dtypes and shapes, ...; MPI_Allgather),
 * and every rank draws the same verdict from the same headers: a mismatch
 * fails on every rank with the same message, where a reduction of
 * mismatched sizes would hang or mix unrelated values. */
#include "agreement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

clmad_status clmad_mpi__failed(const clmad_context *ctx, int rc, const char *call)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return clmad_set_error(ctx, CLMAD_ERR_UNSUPPORTED, "%s failed: %s", call, text);
}

static uint64_t fnv(uint64_t h, uint64_t v)
{
    for (int b = 0; b < 8; b++, v >>= 8)
        h = (h ^ (v & 0xff)) * 1099511628211ull;
    return h;
}

uint64_t clmad_mpi__params_hash(clmad_tensor *const *params, int n)
{
    uint64_t h = 14695981039346656037ull;
    for (int k = 0; k < n; k++) {
        int nd = clmad_tensor_ndim(params[k]);
        h = fnv(fnv(h, (uint64_t)clmad_tensor_dtype(params[k])), (uint64_t)nd);
        for (int i = 0; i < nd; i++)
            h = fnv(h, clmad_tensor_dim(params[k], i));
    }
    return h;
}

static const char *op_name(int64_t op)
{
    return op == CLMAD_MPI_AVERAGE ? "CLMAD_MPI_AVERAGE" : op == CLMAD_MPI_SUM ? "CLMAD_MPI_SUM" : "?";
}

/* The collective calls, by their identity in H_CALL (index + 1). */
static const char *const CALLS[] = {"clmad_mpi_context_create", "clmad_mpi_broadcast", "clmad_mpi_allreduce_grads"};
enum { N_CALLS = sizeof CALLS / sizeof CALLS[0] };

static int64_t call_id(const char *call)
{
    for (int i = 0; i < N_CALLS; i++)
        if (strcmp(call, CALLS[i]) == 0)
            return i + 1;
    return 0;
}

static const char *call_name(int64_t id) { return id >= 1 && id <= N_CALLS ? CALLS[id - 1] : "an unknown call"; }

static const char *dtype_name(int64_t dt) { return dt == CLMAD_F64 ? "f64" : dt == CLMAD_F32 ? "f32" : "?"; }

/* Describes parameter k of every rank (a second exchange; only when the
 * hashes differ) and names the first rank that differs from rank 0. */
static clmad_status name_difference(agreement *a, clmad_tensor *const *params, int n)
{
    enum { D = 2 + CLMAD_MAX_DIMS };
    int64_t *mine = calloc((size_t)n * D + 1, sizeof *mine);
    int64_t *all = calloc(((size_t)n * D + 1) * (size_t)a->size, sizeof *all);
    if (!mine || !all) {
        free(mine);
        free(all);
        return clmad_set_error(a->ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory", a->call);
    }
    for (int k = 0; k < n; k++) {
        mine[k * D] = clmad_tensor_dtype(params[k]);
        mine[k * D + 1] = clmad_tensor_ndim(params[k]);
        for (int i = 0; i < (int)mine[k * D + 1]; i++)
            mine[k * D + 2 + i] = (int64_t)clmad_tensor_dim(params[k], i);
    }
    int count = n * D + 1;
    int rc = MPI_Allgather(mine, count, MPI_INT64_T, all, count, MPI_INT64_T, a->comm);
    clmad_status st = rc == MPI_SUCCESS ? CLMAD_OK : clmad_mpi__failed(a->ctx, rc, "MPI_Allgather");
    for (int r = 1; r < a->size && st == CLMAD_OK; r++)
        for (int k = 0; k < n && st == CLMAD_OK; k++) {
            const int64_t *p0 = all + k * D, *pr = all + (size_t)r * (size_t)count + (size_t)k * D;
            if (memcmp(p0, pr, D * sizeof *p0) == 0)
                continue;
            char s0[160], sr[160];
            const int64_t *ps[2] = {p0, pr};
            char *out[2] = {s0, sr};
            for (int j = 0; j < 2; j++) {
                int u = snprintf(out[j], 160, "%s (", dtype_name(ps[j][0]));
                for (int i = 0; i < ps[j][1] && u < 140; i++)
                    u += snprintf(out[j] + u, (size_t)(160 - u), i ? ", %lld" : "%lld", (long long)ps[j][2 + i]);
                snprintf(out[j] + u, (size_t)(160 - u), ")");
            }
            st = clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                             "%s: parameter lists differ across ranks: parameter %d is %s on rank 0 and %s on "
                             "rank %d",
                             a->call, k, s0, sr, r);
        }
    free(mine);
    free(all);
    return st;
}

clmad_status clmad_mpi__agree(agreement *a, clmad_status local, clmad_tensor *const *params, int n)
{
    a->header[H_OK] = local == CLMAD_OK;
    a->all = malloc(sizeof(int64_t) * H_WORDS * (size_t)a->size);
    if (!a->all)
        return clmad_set_error(a->ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory", a->call);
    int rc = MPI_Allgather(a->header, H_WORDS, MPI_INT64_T, a->all, H_WORDS, MPI_INT64_T, a->comm);
    if (rc != MPI_SUCCESS)
        return clmad_mpi__failed(a->ctx, rc, "MPI_Allgather");
    const int64_t *h0 = a->all;
    /* First the call: the rest of two different calls' headers means nothing. */
    for (int r = 1; r < a->size; r++)
        if (a->all[(size_t)r * H_WORDS + H_CALL] != h0[H_CALL])
            return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                                   "%s: the ranks are in different collective calls: rank 0 in %s, rank %d in %s "
                                   "(every rank must make the same clmad_mpi calls in the same order)",
                                   a->call, call_name(h0[H_CALL]), r,
                                   call_name(a->all[(size_t)r * H_WORDS + H_CALL]));
    for (int r = 0; r < a->size; r++) {
        const int64_t *h = a->all + (size_t)r * H_WORDS;
        if (!h[H_OK])
            return local != CLMAD_OK ? local
                                     : clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                                                   "%s: rank %d rejected its arguments (its message says why)",
                                                   a->call, r);
    }
    for (int r = 1; r < a->size; r++) {
        const int64_t *h = a->all + (size_t)r * H_WORDS;
        if (h[H_N] != h0[H_N])
            return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                               "%s: parameter lists differ across ranks: rank 0 passes %lld parameters, rank %d "
                               "passes %lld",
                               a->call, (long long)h0[H_N], r, (long long)h[H_N]);
        if (h[H_ROOT] != h0[H_ROOT])
            return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: ranks 0 and %d disagree on the root (%lld and %lld)",
                               a->call, r, (long long)h0[H_ROOT], (long long)h[H_ROOT]);
        if (h[H_OP] != h0[H_OP])
            return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: ranks 0 and %d disagree on the operation (%s and %s)",
                               a->call, r, op_name(h0[H_OP]), op_name(h[H_OP]));
        if (h[H_FLAGS] != h0[H_FLAGS])
            return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: ranks 0 and %d disagree on the flags (0x%llx and 0x%llx)",
                               a->call, r, (unsigned long long)h0[H_FLAGS], (unsigned long long)h[H_FLAGS]);
    }
    if (h0[H_ROOT] >= a->size)
        return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: root %lld, but the communicator has %d ranks",
                           a->call, (long long)h0[H_ROOT], a->size);
    for (int r = 1; r < a->size; r++)
        if (a->all[(size_t)r * H_WORDS + H_HASH] != h0[H_HASH])
            return name_difference(a, params, n);
    for (int r = 0; r < a->size; r++) {
        int64_t k = a->all[(size_t)r * H_WORDS + H_NO_GRAD];
        if (k >= 0)
            return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                               "%s: parameter %lld has no gradient on rank %d (run clmad_backward first)", a->call,
                               (long long)k, r);
    }
    return CLMAD_OK;
}

clmad_status clmad_mpi__local_checks(agreement *a, clmad_tensor *const *params, int n)
{
    if (!a->ctx)
        return clmad_set_error(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", a->call);
    if (n < 0)
        return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: n < 0 (%d parameters)", a->call, n);
    if (n > 0 && !params)
        return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: params is NULL (n is %d)", a->call, n);
    size_t elements[2] = {0, 0};
    for (int k = 0; k < n; k++) {
        if (!params[k])
            return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: params[%d] is NULL", a->call, k);
        clmad_dtype dt = clmad_tensor_dtype(params[k]);
        if (dt != CLMAD_F32 && dt != CLMAD_F64)
            return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                                   "%s: params[%d] is not an f32 or f64 tensor (dtype %s)", a->call, k,
                                   clmad_dtype_name(dt));
        elements[dt == CLMAD_F64] += clmad_tensor_numel(params[k]);
    }
    /* MPI counts are ints. */
    if (elements[0] > INT32_MAX || elements[1] > INT32_MAX)
        return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "%s: more than 2^31 - 1 elements of one dtype in one call; split the list", a->call);
    return CLMAD_OK;
}

clmad_status clmad_mpi__start(agreement *a, const char *call, clmad_context *ctx, MPI_Comm comm)
{
    memset(a, 0, sizeof *a);
    a->call = call;
    a->ctx = ctx;
    a->comm = comm;
    a->header[H_CALL] = call_id(call);
    int rc = MPI_Comm_rank(comm, &a->rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(comm, &a->size);
    return rc == MPI_SUCCESS ? CLMAD_OK : clmad_mpi__failed(ctx, rc, call);
}


clmad_status clmad_mpi__all_ok(agreement *a, clmad_status st)
{
    int ok = st == CLMAD_OK, every = 0;
    int rc = MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, a->comm);
    if (st != CLMAD_OK)
        return st;
    if (rc != MPI_SUCCESS)
        return clmad_mpi__failed(a->ctx, rc, "MPI_Allreduce");
    return every ? CLMAD_OK
                 : clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                               "%s: another rank failed to stage its values (its message says why)", a->call);
}
