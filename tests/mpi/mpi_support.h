/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the MPI tests (tests/mpi/): small C programs that ctest runs
 * through mpiexec with 2 (or 3) ranks. Every rank counts its failures; at
 * the end they are summed over the ranks, so that every rank exits non-zero
 * when any rank failed. A watchdog turns a hang into a failure. */
#ifndef CLMAD_MPI_TEST_SUPPORT_H
#define CLMAD_MPI_TEST_SUPPORT_H

#include <clmad.h>
#include <clmad_mpi.h>

#include <stddef.h>

/* This rank and the number of ranks of MPI_COMM_WORLD (after mt_begin). */
extern int mt_rank, mt_size;

/* MPI_Init, then per rank: a POCL kernel cache of its own (POCL_CACHE_DIR
 * gets "/rank<r>": POCL's cache is not safe for processes that fill it at
 * once, see tests/CMakeLists.txt), line-buffered output, and a watchdog
 * that ends the process after CLMAD_MPI_TEST_WATCHDOG seconds (default 90;
 * mpiexec then ends the other ranks). Fails unless there are at least
 * min_ranks ranks. */
void mt_begin(int *argc, char ***argv, const char *name, int min_ranks);

/* Sums the failures over the ranks, prints the verdict (rank 0), calls
 * MPI_Finalize; returns the exit status: 0 when no rank failed. */
int mt_end(void);

/* Records a failure of this rank with a message (prefixed "rank R: "). */
void mt_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The number of failures of this rank so far. */
int mt_failures(void);

#define MT_CHECK(cond, ...)                                                                   \
    do {                                                                                      \
        if (!(cond))                                                                          \
            mt_fail(__FILE__, __LINE__, __VA_ARGS__);                                         \
    } while (0)

/* A clmad call that must succeed; its status and message on failure. */
#define MT_OK(ctx, call)                                                                      \
    do {                                                                                      \
        clmad_status st_ = (call);                                                            \
        if (st_ != CLMAD_OK)                                                                  \
            mt_fail(__FILE__, __LINE__, "%s -> %s: %s", #call, clmad_status_string(st_),      \
                    clmad_last_error(ctx));                                                   \
    } while (0)

/* This rank's context (clmad_mpi_context_create on MPI_COMM_WORLD); exits
 * (through MPI_Abort) when it cannot be made: nothing else can run. On a
 * device without fp64 (or with CLMAD_TEST_NO_FP64=1) every rank exits 77,
 * which ctest reports as skipped. */
clmad_context *mt_context(void);

/* 1 if the device of ctx has fp64. */
int mt_has_fp64(clmad_context *ctx);

/* A tensor of dtype and shape from the doubles vals[0..numel) (rounded to
 * dtype); NULL (and a failure) on error. */
clmad_tensor *mt_tensor(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                        const double *vals);

/* Reads t (or its gradient, when grad is 1) into out[0..numel) as doubles
 * (exact for both dtypes); 0 on success, -1 (and a failure) on error. */
int mt_read(clmad_tensor *t, int grad, double *out, size_t numel);

/* Sets the gradient of each leaf ps[k] to exactly cs[k] (a tensor of its
 * shape and dtype), by a backward through clmad_dot(ps[k], cs[k]) per
 * parameter, after dropping the gradients they had. */
void mt_set_grads(clmad_context *ctx, clmad_tensor *const *ps, clmad_tensor *const *cs, int n);

/* 1 if haystack contains needle, ignoring case. */
int mt_contains(const char *haystack, const char *needle);

#endif
