/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_mpi: device placement, the broadcast of parameters and the
 * reduction of their gradients across the ranks of an MPI communicator.
 *
 * Every collective call first exchanges a small header per rank (its own
 * argument checks, the parameter count, a hash of the dtypes and shapes,
 * ...; MPI_Allgather), and every rank draws the same verdict from the same
 * headers: a mismatch fails on every rank with the same message, where a
 * reduction of mismatched sizes would hang or mix unrelated values. Only
 * then do values move, packed one buffer per dtype through the context's
 * staging area (clmad_context_staging). Errors are reported through the
 * public clmad_set_error, so that clmad_last_error(ctx) says why: the
 * component uses clmad's public API only, as any library built on it. */
#include "clmad_mpi.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- placement ---------------------------------------------------------- */

clmad_status clmad_mpi_device_for_rank(const clmad_device_info *list, size_t count, int local_rank,
                                       const char *spec, size_t *index)
{
    if (!index || (!list && count > 0) || local_rank < 0)
        return clmad_set_error(NULL, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_mpi_device_for_rank: NULL list or index, or local rank %d < 0", local_rank);
    if (spec && spec[0])
        return clmad_device_choose(list, count, spec, index);
    if (count == 0)
        return clmad_set_error(NULL, CLMAD_ERR_NO_DEVICE, "clmad_mpi_device_for_rank: no OpenCL device");
    size_t gpus = 0;
    for (size_t i = 0; i < count; i++)
        gpus += list[i].type == CLMAD_DEVICE_GPU;
    size_t pick = (size_t)local_rank % (gpus ? gpus : count);
    for (size_t i = 0; i < count; i++)
        if (!gpus || list[i].type == CLMAD_DEVICE_GPU) {
            if (pick-- == 0) {
                *index = i;
                return CLMAD_OK;
            }
        }
    return clmad_set_error(NULL, CLMAD_ERR_NO_DEVICE, "clmad_mpi_device_for_rank: no device left"); /* unreachable */
}

static clmad_status mpi_failed(const clmad_context *ctx, int rc, const char *call)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return clmad_set_error(ctx, CLMAD_ERR_UNSUPPORTED, "%s failed: %s", call, text);
}

clmad_status clmad_mpi_context_create(MPI_Comm comm, const clmad_options *opt, clmad_context **ctx)
{
    /* The split is collective: every rank makes it before any check of its own. */
    MPI_Comm node;
    int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS)
        return mpi_failed(NULL, rc, "clmad_mpi_context_create: MPI_Comm_split_type");
    int local = 0;
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    if (!ctx)
        return clmad_set_error(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_mpi_context_create: ctx is NULL");
    clmad_options o;
    if (opt)
        o = *opt;
    else
        clmad_options_init(&o);
    const char *env = getenv("CLMAD_DEVICE");
    char spec[32];
    if (!o.device && !(env && env[0])) {
        clmad_device_info *list = NULL;
        size_t count = 0, index = 0;
        clmad_status st = clmad_device_list(&list, &count);
        if (st == CLMAD_OK)
            st = clmad_mpi_device_for_rank(list, count, local, NULL, &index);
        if (st == CLMAD_OK)
            snprintf(spec, sizeof spec, "%d:%d", list[index].platform_index, list[index].device_index);
        clmad_device_list_free(list);
        if (st != CLMAD_OK)
            return st;
        o.device = spec;
    }
    return clmad_context_create(&o, ctx);
}

/* ---- the agreement between ranks ----------------------------------------- */

enum { H_OK, H_N, H_ROOT, H_OP, H_FLAGS, H_NO_GRAD, H_HASH, H_WORDS };

typedef struct {
    const char *call;
    clmad_context *ctx;
    MPI_Comm comm;
    int rank, size;
    int64_t header[H_WORDS];
    int64_t *all; /* size x H_WORDS */
} agreement;

static uint64_t fnv(uint64_t h, uint64_t v)
{
    for (int b = 0; b < 8; b++, v >>= 8)
        h = (h ^ (v & 0xff)) * 1099511628211ull;
    return h;
}

static uint64_t params_hash(clmad_tensor *const *params, int n)
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
    clmad_status st = rc == MPI_SUCCESS ? CLMAD_OK : mpi_failed(a->ctx, rc, "MPI_Allgather");
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

/* The exchange and the common verdict. local: this rank's own checks. */
static clmad_status agree(agreement *a, clmad_status local, clmad_tensor *const *params, int n)
{
    a->header[H_OK] = local == CLMAD_OK;
    a->all = malloc(sizeof(int64_t) * H_WORDS * (size_t)a->size);
    if (!a->all)
        return clmad_set_error(a->ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory", a->call);
    int rc = MPI_Allgather(a->header, H_WORDS, MPI_INT64_T, a->all, H_WORDS, MPI_INT64_T, a->comm);
    if (rc != MPI_SUCCESS)
        return mpi_failed(a->ctx, rc, "MPI_Allgather");
    const int64_t *h0 = a->all;
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

static clmad_status local_checks(agreement *a, clmad_tensor *const *params, int n)
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
            return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: params[%d] has an unknown dtype", a->call, k);
        elements[dt == CLMAD_F64] += clmad_tensor_numel(params[k]);
    }
    /* MPI counts are ints. */
    if (elements[0] > INT32_MAX || elements[1] > INT32_MAX)
        return clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "%s: more than 2^31 - 1 elements of one dtype in one call; split the list", a->call);
    return CLMAD_OK;
}

static clmad_status start(agreement *a, const char *call, clmad_context *ctx, MPI_Comm comm)
{
    memset(a, 0, sizeof *a);
    a->call = call;
    a->ctx = ctx;
    a->comm = comm;
    int rc = MPI_Comm_rank(comm, &a->rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(comm, &a->size);
    return rc == MPI_SUCCESS ? CLMAD_OK : mpi_failed(ctx, rc, call);
}

/* ---- moving values --------------------------------------------------------- */

static MPI_Datatype mpi_type(clmad_dtype dt) { return dt == CLMAD_F64 ? MPI_DOUBLE : MPI_FLOAT; }

/* Whether every rank got this far: a rank that failed to stage its values
 * must not leave the others waiting in a transfer of mismatched sizes. */
static clmad_status all_ok(agreement *a, clmad_status st)
{
    int ok = st == CLMAD_OK, every = 0;
    int rc = MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, a->comm);
    if (st != CLMAD_OK)
        return st;
    if (rc != MPI_SUCCESS)
        return mpi_failed(a->ctx, rc, "MPI_Allreduce");
    return every ? CLMAD_OK
                 : clmad_set_error(a->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                               "%s: another rank failed to stage its values (its message says why)", a->call);
}

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

clmad_status clmad_mpi_broadcast(clmad_context *ctx, MPI_Comm comm, clmad_tensor *const *params, int n, int root)
{
    agreement a;
    clmad_status st = start(&a, "clmad_mpi_broadcast", ctx, comm);
    if (st != CLMAD_OK)
        return st;
    clmad_status local = local_checks(&a, params, n);
    if (local == CLMAD_OK && root < 0)
        local = clmad_set_error(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_mpi_broadcast: root %d < 0", root);
    a.header[H_N] = n;
    a.header[H_ROOT] = root;
    a.header[H_NO_GRAD] = -1;
    a.header[H_HASH] = local == CLMAD_OK ? (int64_t)params_hash(params, n) : 0;
    st = agree(&a, local, params, n);
    clmad_tensor **group = st == CLMAD_OK ? malloc(sizeof *group * (size_t)(n ? n : 1)) : NULL;
    if (st == CLMAD_OK && !group)
        st = clmad_set_error(ctx, CLMAD_ERR_OUT_OF_MEMORY, "clmad_mpi_broadcast: out of host memory");
    for (int d = 0; d < 2 && st == CLMAD_OK; d++) {
        clmad_dtype dt = d ? CLMAD_F64 : CLMAD_F32;
        size_t bytes;
        int m = of_dtype(params, n, dt, group, &bytes);
        if (bytes == 0)
            continue;
        clmad_staging *s;
        void *host = NULL;
        st = clmad_context_staging(ctx, bytes, &s);
        if (st == CLMAD_OK)
            st = a.rank == root ? clmad_staging_gather(s, group, m, &host) : clmad_staging_map(s, &host);
        st = all_ok(&a, st);
        if (st != CLMAD_OK)
            break;
        int rc = MPI_Bcast(host, (int)(bytes / clmad_dtype_size(dt)), mpi_type(dt), root, comm);
        st = rc == MPI_SUCCESS ? CLMAD_OK : mpi_failed(ctx, rc, "MPI_Bcast");
        if (st == CLMAD_OK && a.rank != root)
            st = clmad_staging_scatter(s, group, m);
    }
    free(group);
    free(a.all);
    return st;
}

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
        return rc == MPI_SUCCESS ? CLMAD_OK : mpi_failed(a->ctx, rc, "MPI_Allreduce");
    }
    size_t elem = clmad_dtype_size(dt);
    void *gathered = malloc(elem * count * (size_t)a->size);
    int ok = gathered != NULL, every = 0;
    rc = MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, a->comm);
    if (rc == MPI_SUCCESS && every)
        rc = MPI_Allgather(host, (int)count, mpi_type(dt), gathered, (int)count, mpi_type(dt), a->comm);
    clmad_status st = CLMAD_OK;
    if (rc != MPI_SUCCESS)
        st = mpi_failed(a->ctx, rc, "MPI_Allgather");
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

clmad_status clmad_mpi_allreduce_grads(clmad_context *ctx, MPI_Comm comm, clmad_tensor *const *params, int n,
                                       clmad_mpi_op op, int flags)
{
    agreement a;
    clmad_status st = start(&a, "clmad_mpi_allreduce_grads", ctx, comm);
    if (st != CLMAD_OK)
        return st;
    clmad_status local = local_checks(&a, params, n);
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
    a.header[H_HASH] = local == CLMAD_OK ? (int64_t)params_hash(params, n) : 0;
    st = agree(&a, local, params, n);
    clmad_tensor **group = st == CLMAD_OK ? malloc(sizeof *group * (size_t)(n ? n : 1)) : NULL;
    if (st == CLMAD_OK && !group)
        st = clmad_set_error(ctx, CLMAD_ERR_OUT_OF_MEMORY, "clmad_mpi_allreduce_grads: out of host memory");
    for (int d = 0; d < 2 && st == CLMAD_OK; d++) {
        clmad_dtype dt = d ? CLMAD_F64 : CLMAD_F32;
        size_t bytes;
        int m = of_dtype(grads, n, dt, group, &bytes);
        if (bytes == 0)
            continue;
        clmad_staging *s;
        void *host = NULL;
        st = clmad_context_staging(ctx, bytes, &s);
        if (st == CLMAD_OK)
            st = clmad_staging_gather(s, group, m, &host);
        st = all_ok(&a, st);
        if (st == CLMAD_OK)
            st = reduce(&a, dt, host, bytes / clmad_dtype_size(dt), flags);
        if (st == CLMAD_OK && op == CLMAD_MPI_AVERAGE)
            scale(dt, host, bytes / clmad_dtype_size(dt), a.size);
        if (st == CLMAD_OK)
            st = clmad_staging_scatter(s, group, m);
    }
    for (int k = 0; grads && k < n; k++)
        clmad_tensor_release(grads[k]);
    free(grads);
    free(group);
    free(a.all);
    return st;
}
