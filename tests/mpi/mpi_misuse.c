/* SPDX-License-Identifier: Apache-2.0 */
/* Misuse of the collective calls is detected on every rank, not a hang:
 * parameter lists that differ across ranks (count, a shape, a dtype), a
 * parameter without a gradient on one rank, bad roots (on every rank, on
 * one rank, or different valid ones), and arguments that are bad on one
 * rank only (n < 0, NULL, an unknown op, other flags). Every rank must
 * return CLMAD_ERR_INVALID_ARGUMENT with a message that names the problem
 * (printed here, one line per rank); afterwards the ranks must still be in
 * step: a correct allreduce right after each case gives the right sum.
 * A case that hangs is ended by the watchdog (mpi_support.c), and its name
 * is the last line printed. */
#include "mpi_support.h"

#include <stdio.h>
#include <string.h>

enum { A, B, C, D, E, NT };

/* A f32 2x3, B f64 4, C f32 3x2 (A's size, another shape), D f64 2x3 (A's
 * shape, another dtype), E f32 5. */
static const clmad_dtype dtypes[NT] = {CLMAD_F32, CLMAD_F64, CLMAD_F32, CLMAD_F64, CLMAD_F32};
static const int ndims[NT] = {2, 1, 2, 2, 1};
static const size_t shapes[NT][2] = {{2, 3}, {4, 0}, {3, 2}, {2, 3}, {5, 0}};

static clmad_context *ctx;
static clmad_tensor *t[NT], *c[NT];

static double grad_of(int r, int k, size_t i)
{
    return (r + 1) * 0.5 + k + (double)i * 0.25;
}

/* Every rank's gradients of A and B back to its own, then a correct SUM
 * allreduce of {A, B}, checked against the host's sum. */
static void check_in_step(const char *after)
{
    clmad_tensor *ab[2] = {t[A], t[B]}, *cab[2] = {c[A], c[B]};
    mt_set_grads(ctx, ab, cab, 2);
    clmad_status st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, ab, 2, CLMAD_MPI_SUM, 0);
    if (st != CLMAD_OK) {
        mt_fail(__FILE__, __LINE__, "after %s: a correct allreduce fails: %s: %s", after, clmad_status_string(st),
                clmad_last_error(ctx));
        return;
    }
    double g[6];
    for (int k = A; k <= B; k++) {
        size_t n = clmad_tensor_numel(t[k]);
        if (mt_read(t[k], 1, g, n) != 0)
            continue;
        for (size_t i = 0; i < n; i++) {
            double want = 0;
            for (int r = 0; r < mt_size; r++)
                want += grad_of(r, k, i);
            if (g[i] != want) {
                mt_fail(__FILE__, __LINE__, "after %s: a correct allreduce gives %.17g, expected %.17g", after,
                        g[i], want);
                break;
            }
        }
    }
}

/* Checks the outcome of one case on this rank and prints its message; the
 * message must contain one of the words in `words` (|-separated); on the
 * ranks other than the one that passed the bad argument (offender >= 0),
 * one of `others` instead (they cannot know the details: the message names
 * the offending rank). */
static void expect_invalid(const char *name, clmad_status st, const char *words, int offender,
                           const char *others)
{
    const char *msg = clmad_last_error(ctx);
    printf("  %s: rank %d: %s: %s\n", name, mt_rank, clmad_status_string(st), msg ? msg : "(none)");
    if (st != CLMAD_ERR_INVALID_ARGUMENT) {
        mt_fail(__FILE__, __LINE__, "%s: %s, expected CLMAD_ERR_INVALID_ARGUMENT", name, clmad_status_string(st));
        return;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", offender >= 0 && mt_rank != offender ? others : words);
    int found = 0;
    for (char *w = strtok(buf, "|"); w && !found; w = strtok(NULL, "|"))
        found = mt_contains(msg, w);
    MT_CHECK(found, "%s: the message does not name the problem (one of: %s): %s", name,
             offender >= 0 && mt_rank != offender ? others : words, msg ? msg : "");
}

static void start_case(const char *name)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (mt_rank == 0)
        printf("case: %s\n", name);
    fflush(stdout);
}

#define LAST (mt_rank == mt_size - 1)
/* What the other ranks hear when one rank rejects its own arguments. */
#define ONE_RANK "rejected its arguments"

int main(int argc, char **argv)
{
    mt_begin(&argc, &argv, "mpi_misuse", 2);
    ctx = mt_context();
    for (int k = 0; k < NT; k++) {
        double vals[6];
        size_t n = 1;
        for (int d = 0; d < ndims[k]; d++)
            n *= shapes[k][d];
        for (size_t i = 0; i < n; i++)
            vals[i] = 1.0 + i;
        t[k] = mt_tensor(ctx, dtypes[k], ndims[k], shapes[k], vals);
        for (size_t i = 0; i < n; i++)
            vals[i] = grad_of(mt_rank, k, i);
        c[k] = mt_tensor(ctx, dtypes[k], ndims[k], shapes[k], vals);
        if (!t[k] || !c[k])
            return mt_end();
        MT_OK(ctx, clmad_tensor_set_requires_grad(t[k], 1));
    }
    mt_set_grads(ctx, t, c, NT);
    check_in_step("set-up");
    if (mt_failures())
        return mt_end(); /* the cases below need a working allreduce */

    clmad_tensor *ab[2] = {t[A], t[B]}, *abe[3] = {t[A], t[B], t[E]};
    clmad_tensor *cb[2] = {t[C], t[B]}, *db[2] = {t[D], t[B]}, *anull[2] = {t[A], NULL};
    clmad_status st;

    start_case("allreduce: n differs (the last rank has one more parameter)");
    mt_set_grads(ctx, t, c, NT);
    st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, LAST ? abe : ab, LAST ? 3 : 2, CLMAD_MPI_SUM, 0);
    expect_invalid("n differs", st, "2 parameters", -1, NULL);
    check_in_step("n differs");

    start_case("allreduce: a shape differs (2x3 against 3x2, same size)");
    mt_set_grads(ctx, t, c, NT);
    st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, LAST ? cb : ab, 2, CLMAD_MPI_SUM, 0);
    expect_invalid("shape differs", st, "shape|(3, 2)", -1, NULL);
    check_in_step("shape differs");

    start_case("allreduce: a dtype differs (f32 against f64, same shape)");
    mt_set_grads(ctx, t, c, NT);
    st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, LAST ? db : ab, 2, CLMAD_MPI_AVERAGE, 0);
    expect_invalid("dtype differs", st, "dtype|f64", -1, NULL);
    check_in_step("dtype differs");

    start_case("allreduce: a 16-bit parameter (bf16) on every rank");
    {
        size_t two = 2;
        clmad_tensor *half = NULL;
        MT_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_BF16, 1, &two, &half));
        clmad_tensor *ah[2] = {t[A], half};
        st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, ah, 2, CLMAD_MPI_SUM, 0);
        expect_invalid("bf16 parameter", st, "(dtype bf16)", -1, NULL);
        clmad_tensor_release(half);
    }
    check_in_step("bf16 parameter");

    start_case("allreduce: a parameter without gradient on the last rank");
    mt_set_grads(ctx, t, c, NT);
    if (LAST)
        clmad_tensor_zero_grad(t[B]);
    st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, ab, 2, CLMAD_MPI_AVERAGE, 0);
    expect_invalid("no gradient", st, "no gradient", -1, NULL);
    check_in_step("no gradient");

    start_case("allreduce: n < 0 on the last rank");
    st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, ab, LAST ? -1 : 2, CLMAD_MPI_SUM, 0);
    expect_invalid("n < 0 on one rank", st, "-1 parameters|n < 0", mt_size - 1, ONE_RANK);
    check_in_step("n < 0 on one rank");

    start_case("allreduce: params NULL on the last rank");
    st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, LAST ? NULL : ab, 2, CLMAD_MPI_SUM, 0);
    expect_invalid("params NULL on one rank", st, "null|(nil)", mt_size - 1, ONE_RANK);
    check_in_step("params NULL on one rank");

    start_case("allreduce: params[1] NULL on the last rank");
    st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, LAST ? anull : ab, 2, CLMAD_MPI_SUM, 0);
    expect_invalid("params[1] NULL on one rank", st, "params[1] is NULL", mt_size - 1, ONE_RANK);
    check_in_step("params[1] NULL on one rank");

    start_case("allreduce: an unknown op on the last rank");
    st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, ab, 2, LAST ? (clmad_mpi_op)7 : CLMAD_MPI_SUM, 0);
    expect_invalid("unknown op on one rank", st, "unknown op|op 7", mt_size - 1, ONE_RANK);
    check_in_step("unknown op on one rank");

    start_case("allreduce: the op differs (SUM on rank 0, AVERAGE elsewhere)");
    st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, ab, 2, mt_rank == 0 ? CLMAD_MPI_SUM : CLMAD_MPI_AVERAGE,
                                   0);
    expect_invalid("op differs", st, "operation|op", -1, NULL);
    check_in_step("op differs");

    start_case("allreduce: the flags differ (DETERMINISTIC on rank 0 only)");
    st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, ab, 2, CLMAD_MPI_SUM,
                                   mt_rank == 0 ? CLMAD_MPI_DETERMINISTIC : 0);
    expect_invalid("flags differ", st, "flag", -1, NULL);
    check_in_step("flags differ");

    start_case("broadcast: a bad root on every rank (root = P, then -1)");
    st = clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, ab, 2, mt_size);
    expect_invalid("root = P", st, "root", -1, NULL);
    st = clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, ab, 2, -1);
    expect_invalid("root = -1", st, "root", -1, NULL);
    check_in_step("a bad root");

    start_case("broadcast: a bad root on the last rank only");
    st = clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, ab, 2, LAST ? mt_size + 3 : 0);
    expect_invalid("bad root on one rank", st, "root", -1, NULL);
    check_in_step("a bad root on one rank");

    start_case("broadcast: roots differ (each rank names itself)");
    st = clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, ab, 2, mt_rank);
    expect_invalid("roots differ", st, "root", -1, NULL);
    check_in_step("roots differ");

    start_case("broadcast: n differs");
    st = clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, LAST ? abe : ab, LAST ? 3 : 2, 0);
    expect_invalid("broadcast n differs", st, "2 parameters", -1, NULL);
    check_in_step("broadcast n differs");

    start_case("broadcast: a shape differs");
    st = clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, LAST ? cb : ab, 2, 0);
    expect_invalid("broadcast shape differs", st, "shape|(3, 2)", -1, NULL);
    check_in_step("broadcast shape differs");

    start_case("broadcast: a dtype differs");
    st = clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, LAST ? db : ab, 2, 0);
    expect_invalid("broadcast dtype differs", st, "dtype|f64", -1, NULL);
    check_in_step("broadcast dtype differs");

    /* Ranks in different calls: before the call's identity was in the
     * agreement, rank 0's broadcast passed it and returned OK while the
     * others waited in the allreduce for ever (the watchdog ends a hang).
     * AVERAGE (0) and no flags: every other word of the two headers agrees. */
    start_case("different calls: broadcast on rank 0, allreduce on the others");
    mt_set_grads(ctx, t, c, NT);
    st = mt_rank == 0 ? clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, ab, 2, 0)
                      : clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, ab, 2, CLMAD_MPI_AVERAGE, 0);
    expect_invalid("different calls", st, "different collective calls", -1, NULL);
    MT_CHECK(mt_contains(clmad_last_error(ctx), "rank 0 in clmad_mpi_broadcast") &&
                 mt_contains(clmad_last_error(ctx), "in clmad_mpi_allreduce_grads"),
             "different calls: the message does not name both calls: %s", clmad_last_error(ctx));
    check_in_step("different calls");

    start_case("different calls: context creation on the last rank, broadcast on the others");
    clmad_context *other = NULL;
    st = LAST ? clmad_mpi_context_create(MPI_COMM_WORLD, NULL, &other)
              : clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, ab, 2, 0);
    {
        const char *msg = LAST ? clmad_last_error(NULL) : clmad_last_error(ctx);
        printf("  context creation against broadcast: rank %d: %s: %s\n", mt_rank, clmad_status_string(st), msg);
        MT_CHECK(st == CLMAD_ERR_INVALID_ARGUMENT, "context creation against broadcast: %s",
                 clmad_status_string(st));
        MT_CHECK(mt_contains(msg, "in clmad_mpi_context_create") && mt_contains(msg, "in clmad_mpi_broadcast"),
                 "context creation against broadcast: the message does not name both calls: %s", msg);
        clmad_context_release(other);
    }
    check_in_step("context creation against broadcast");

    /* Nothing was overwritten by the failed broadcasts: A still holds this
     * rank's own values (1, 2, ...), which were never broadcast. */
    double v[6];
    if (mt_read(t[A], 0, v, 6) == 0)
        MT_CHECK(v[5] == 6.0, "a failed broadcast changed the values: %.17g", v[5]);

    for (int k = 0; k < NT; k++) {
        clmad_tensor_release(t[k]);
        clmad_tensor_release(c[k]);
    }
    clmad_context_release(ctx);
    return mt_end();
}
