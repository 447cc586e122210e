/* SPDX-License-Identifier: Apache-2.0 */
#include "mpi_support.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mt_rank, mt_size;
static int failures;
static const char *test_name = "";

static void watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "\n*** clmad MPI test: watchdog: no end in time (a hang?); exiting\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(3);
}

void mt_begin(int *argc, char ***argv, const char *name, int min_ranks)
{
    test_name = name;
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);

    const char *cache = getenv("POCL_CACHE_DIR");
    if (cache && cache[0]) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", cache);
        mkdir(dir, 0700); /* POCL makes the last level only */
        snprintf(dir, sizeof dir, "%s/rank%d", cache, mt_rank);
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            mt_fail(__FILE__, __LINE__, "cannot make %s", dir);
        setenv("POCL_CACHE_DIR", dir, 1);
    }

    const char *limit = getenv("CLMAD_MPI_TEST_WATCHDOG");
    unsigned seconds = limit && atoi(limit) > 0 ? (unsigned)atoi(limit) : 90;
    signal(SIGALRM, watchdog);
    alarm(seconds);

    if (mt_size < min_ranks)
        mt_fail(__FILE__, __LINE__, "%s needs at least %d ranks (mpiexec -n %d), has %d", name, min_ranks,
                min_ranks, mt_size);
}

int mt_end(void)
{
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (mt_rank == 0) {
        if (total)
            printf("%s: FAILED (%d failure%s over %d ranks)\n", test_name, total, total == 1 ? "" : "s",
                   mt_size);
        else
            printf("%s: ok (%d ranks)\n", test_name, mt_size);
    }
    alarm(0);
    MPI_Finalize();
    return total ? 1 : 0;
}

void mt_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rank %d: %s:%d: FAILED: %s\n", mt_rank, file, line, msg);
    fflush(stderr);
    failures++;
}

int mt_failures(void)
{
    return failures;
}

static int no_fp64_requested(void)
{
    const char *v = getenv("CLMAD_TEST_NO_FP64");
    return v && v[0] == '1';
}

clmad_context *mt_context(void)
{
    clmad_options opt;
    clmad_options_init(&opt);
    opt.disable_fp64 = no_fp64_requested();
    clmad_context *ctx = NULL;
    clmad_status st = clmad_mpi_context_create(MPI_COMM_WORLD, &opt, &ctx);
    if (st != CLMAD_OK) {
        fprintf(stderr, "rank %d: clmad_mpi_context_create: %s: %s\n", mt_rank, clmad_status_string(st),
                clmad_last_error(NULL));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Every test mixes f64 cases in: on a device without fp64 all ranks
     * agree to skip (ctest's SKIP_RETURN_CODE 77), saying why. */
    int mine = mt_has_fp64(ctx), all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (mt_rank == 0)
            printf("%s: skipped: the test device has no fp64, which its cases use\n", test_name);
        clmad_context_release(ctx);
        alarm(0);
        MPI_Finalize();
        exit(77);
    }
    return ctx;
}

int mt_has_fp64(clmad_context *ctx)
{
    clmad_device_info info;
    return !no_fp64_requested() && clmad_context_device(ctx, &info) == CLMAD_OK && info.fp64;
}

static size_t numel_of(int ndim, const size_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

clmad_tensor *mt_tensor(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                        const double *vals)
{
    size_t n = numel_of(ndim, shape);
    void *host = malloc(n ? n * clmad_dtype_size(dtype) : 1);
    clmad_tensor *t = NULL;
    if (!host) {
        mt_fail(__FILE__, __LINE__, "out of host memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (dtype == CLMAD_F32)
            ((float *)host)[i] = (float)vals[i];
        else
            ((double *)host)[i] = vals[i];
    }
    MT_OK(ctx, clmad_tensor_create(ctx, dtype, ndim, shape, host, &t));
    free(host);
    return t;
}

int mt_read(clmad_tensor *t, int grad, double *out, size_t numel)
{
    clmad_tensor *src = t;
    if (grad) {
        src = NULL;
        clmad_status st = clmad_tensor_grad(t, &src);
        if (st != CLMAD_OK || !src) {
            mt_fail(__FILE__, __LINE__, "clmad_tensor_grad: %s%s", clmad_status_string(st),
                    st == CLMAD_OK ? " (no gradient)" : "");
            return -1;
        }
    }
    int rc = 0;
    size_t bytes = numel * clmad_dtype_size(clmad_tensor_dtype(src));
    void *host = malloc(bytes ? bytes : 1);
    if (clmad_tensor_numel(src) != numel) {
        mt_fail(__FILE__, __LINE__, "tensor has %zu elements, expected %zu", clmad_tensor_numel(src), numel);
        rc = -1;
    } else if (!host) {
        mt_fail(__FILE__, __LINE__, "out of host memory");
        rc = -1;
    } else {
        clmad_status st = clmad_tensor_read(src, host, bytes);
        if (st != CLMAD_OK) {
            mt_fail(__FILE__, __LINE__, "clmad_tensor_read: %s", clmad_status_string(st));
            rc = -1;
        }
        for (size_t i = 0; rc == 0 && i < numel; i++)
            out[i] = clmad_tensor_dtype(src) == CLMAD_F32 ? (double)((float *)host)[i] : ((double *)host)[i];
    }
    free(host);
    if (grad)
        clmad_tensor_release(src);
    return rc;
}

void mt_set_grads(clmad_context *ctx, clmad_tensor *const *ps, clmad_tensor *const *cs, int n)
{
    for (int k = 0; k < n; k++) {
        clmad_tensor_zero_grad(ps[k]);
        clmad_tensor *loss = NULL;
        MT_OK(ctx, clmad_dot(ctx, ps[k], cs[k], &loss));
        if (loss)
            MT_OK(ctx, clmad_backward(ctx, loss, NULL));
        clmad_tensor_release(loss);
    }
}

int mt_contains(const char *haystack, const char *needle)
{
    if (!haystack || !needle)
        return 0;
    size_t n = strlen(needle);
    for (const char *p = haystack; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}
