/* SPDX-License-Identifier: Apache-2.0 */
/* GEMM: small products through clmad's own kernel, the others through
 * CLBlast, its first call of the process serialised. */
#include "ops/ops.h"
#include "base/log.h"
#include "runtime/clblast_tuning.h"

#include <clblast_c.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* CLBlast (1.5.3, Debian 12's) fills its static tuning database lazily, in
 * clblast::Database::Database, when the first routine object of the
 * process is built, without a lock: when two threads' first GEMMs overlap,
 * one copies database entries that the other frees (AddressSanitizer:
 * heap-use-after-free in clblast::database::DatabaseVendor's copy
 * constructor, freed in Database::Database on the other thread; seen in
 * tests/test_threads.c). Contexts on separate threads must be independent,
 * so the CLBlast calls are serialised until one has succeeded; from then on
 * the database is only read and the calls run concurrently (CLBlast's own
 * caches of programs and databases take their locks). */
static pthread_mutex_t clblast_first_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int clblast_ready;

/* The devices whose GEMM parameters clmad has set from the tuning table or
 * the device's tuning file (under clblast_first_lock): once per device and
 * process, before its first GEMM, so that every program CLBlast builds and
 * keeps for the device was built with the parameters its launches use
 * (CLBlast keeps the parameters per device, its programs per context). CLMAD_CLBLAST_TABLE=0 keeps
 * CLBlast's own (benchmarks compare the two). */
#define MAX_SET_DEVICES 64
static cl_device_id clblast_set[MAX_SET_DEVICES];
static int clblast_set_count;

static CLBlastStatusCode override_params(cl_device_id device, const clmad_clblast_tuning *t)
{
    const char *names[CLMAD_XGEMM_PARAMS] = CLMAD_XGEMM_NAMES;
    CLBlastStatusCode s =
        CLBlastOverrideParameters(device, "Xgemm", CLBlastPrecisionSingle, CLMAD_XGEMM_PARAMS, names, t->xgemm);
    const char *routine[] = {"XGEMM_MIN_INDIRECT_SIZE"};
    if (s == CLBlastSuccess)
        s = CLBlastOverrideParameters(device, "GemmRoutine", CLBlastPrecisionSingle, 1, routine, &t->min_indirect);
    return s;
}

static void set_clblast_params(clmad_context *ctx)
{
    pthread_mutex_lock(&clblast_first_lock);
    int known = clblast_set_count == MAX_SET_DEVICES; /* more devices: CLBlast's own */
    for (int i = 0; i < clblast_set_count && !known; i++)
        known = clblast_set[i] == ctx->device;
    if (!known) {
        /* A refusal leaves CLBlast's own parameters: slower, not wrong. */
        const char *env = getenv("CLMAD_CLBLAST_TABLE");
        if (!(env && strcmp(env, "0") == 0)) {
            CLBlastStatusCode s = override_params(ctx->device, ctx->clblast_f32);
            const char *whose = ctx->clblast_f32 == &ctx->tuned.clblast_f32 ? "the device's tuning file's"
                                                                           : "the tuning table's";
            clmad__log("CLBlast Sgemm on \"%s\": %s parameters (status %d)", ctx->info.name,
                       s == CLBlastSuccess ? whose : "CLBlast's own", (int)s);
        }
        clblast_set[clblast_set_count++] = ctx->device;
    }
    pthread_mutex_unlock(&clblast_first_lock);
    ctx->clblast_checked = 1;
}

/* The row-major C = op(A) op(B) as the column-major C^T = op(B)^T op(A)^T
 * (a row-major buffer is its transpose in column-major order, and the
 * transpose flags carry over): CLBlast's tiled kernel wants column-major
 * operands, and given row-major ones it transposed A and C around every
 * product (TransposeMatrix: about 0.3 ms of bench_mlp's 6.5 ms step on an
 * H100). */
static CLBlastStatusCode call_gemm(clmad_dtype dtype, CLBlastTranspose at, CLBlastTranspose bt, size_t m,
                                   size_t n, size_t k, cl_mem a, size_t a_off, size_t lda, cl_mem b,
                                   size_t b_off, size_t ldb, double beta, cl_mem c, size_t c_off, size_t ldc,
                                   cl_command_queue *queue)
{
    if (dtype == CLMAD_F32)
        return CLBlastSgemm(CLBlastLayoutColMajor, bt, at, n, m, k, 1.0f, b, b_off, ldb, a, a_off, lda,
                            (float)beta, c, c_off, ldc, queue, NULL);
    return CLBlastDgemm(CLBlastLayoutColMajor, bt, at, n, m, k, 1.0, b, b_off, ldb, a, a_off, lda, beta, c,
                        c_off, ldc, queue, NULL);
}

clmad_status clmad__gemm_clblast(clmad_context *ctx, clmad_dtype dtype, int ta, int tb, size_t m, size_t n,
                                 size_t k, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb,
                                 double beta, cl_mem c, size_t c_off, size_t ldc)
{
    CLBlastTranspose at = ta ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose bt = tb ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode s;
    /* CLBlast compiles its kernels on the first GEMM of a precision in the
     * process (its cache is in memory): tens of seconds on POCL, said when
     * CLMAD_LOG=info. */
    static atomic_int logged[2];
    int first = clmad__log_info() && !atomic_exchange(&logged[dtype == CLMAD_F64], 1);
    double start = 0;
    if (first) {
        clmad__log("first CLBlast %cgemm on \"%s\": CLBlast builds its kernels (tens of seconds on POCL the first time)",
                   dtype == CLMAD_F32 ? 'S' : 'D', ctx->info.name);
        start = clmad__seconds();
    }
    if (ctx->clblast_f32 && !ctx->clblast_checked)
        set_clblast_params(ctx);
    if (atomic_load_explicit(&clblast_ready, memory_order_acquire)) {
        s = call_gemm(dtype, at, bt, m, n, k, a, a_off, lda, b, b_off, ldb, beta, c, c_off, ldc, &ctx->queue);
    } else {
        pthread_mutex_lock(&clblast_first_lock);
        s = call_gemm(dtype, at, bt, m, n, k, a, a_off, lda, b, b_off, ldb, beta, c, c_off, ldc, &ctx->queue);
        if (s == CLBlastSuccess)
            atomic_store_explicit(&clblast_ready, 1, memory_order_release);
        pthread_mutex_unlock(&clblast_first_lock);
    }
    if (first)
        clmad__log("first CLBlast %cgemm done in %.2f s", dtype == CLMAD_F32 ? 'S' : 'D', clmad__seconds() - start);
    if (s != CLBlastSuccess)
        return clmad__fail(ctx, CLMAD_ERR_OPENCL, "CLBlast %cgemm failed with status %d on device \"%s\"",
                           dtype == CLMAD_F32 ? 'S' : 'D', (int)s, ctx->info.name);
    return CLMAD_OK;
}

/* Products of at most SMALL_GEMM_MACS multiply-adds, k at most SMALL_GEMM_K,
 * run clmad_gemm_small (cl/ops.cl), unless CLMAD_SMALL_GEMM=0. CLBlast's
 * first GEMM of a process builds its whole GEMM program: 4.4 s of CPU on
 * POCL, 40% of the first epoch of a small network (python/examples/
 * digits.py), whose products (64 x 64 x 64, 359 x 64 x 64) are this size.
 * The bounds keep the simple kernel (runs of 8 elements per work-item, no
 * tiling in local memory) to products where it is not slower: on POCL, on
 * a busy 2-core host, it took 0.3x to 0.8x CLBlast's time from 64 x 64 x 64
 * to 128 x 128 x 128 and 32 x 2048 x 32, NN, NT and TN (one sample of
 * 128^3 NN: 1.2x); 2^21 multiply-adds is 128^3, and a long k would
 * serialise on a GPU. Not measured on GPUs (none here). */
#define SMALL_GEMM_MACS (UINT64_C(1) << 21)
#define SMALL_GEMM_K 256

static int small_product(size_t m, size_t n, size_t k)
{
    if (k > SMALL_GEMM_K || (uint64_t)m * n > SMALL_GEMM_MACS / k)
        return 0;
    const char *env = getenv("CLMAD_SMALL_GEMM");
    return !(env && strcmp(env, "0") == 0);
}

static clmad_status gemm_small(clmad_context *ctx, clmad_dtype dtype, int ta, int tb, size_t m, size_t n,
                               size_t k, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb,
                               double beta, cl_mem c, size_t c_off, size_t ldc)
{
    cl_kernel kernel;
    clmad_status st = clmad__cached_kernel(ctx, dtype, CLMAD_OPS_GEMM_SMALL, &kernel);
    if (st != CLMAD_OK)
        return st;
    const cl_ulong ao = a_off, la = lda, bo = b_off, lb = ldb, co = c_off, lc = ldc, mm = m, nn = n, kk = k;
    const cl_int ta_ = ta != 0, tb_ = tb != 0;
    clmad_real_arg beta_arg;
    const size_t beta_size = clmad__real_arg(dtype, beta, &beta_arg);
    const void *values[] = {&a, &ao, &la, &ta_, &b, &bo, &lb, &tb_, &c, &co, &lc, &mm, &nn, &kk, &beta_arg};
    const size_t sizes[] = {sizeof a,   sizeof ao, sizeof la, sizeof ta_, sizeof b, sizeof bo, sizeof lb, sizeof tb_,
                            sizeof c,   sizeof co, sizeof lc, sizeof mm,  sizeof nn, sizeof kk, beta_size};
    st = clmad__set_kernel_args(ctx, kernel, 15, sizes, values);
    if (st != CLMAD_OK)
        return st;
    const uint64_t elements = (uint64_t)m * k + (uint64_t)k * n + (uint64_t)m * n * (beta != 0.0 ? 2 : 1);
    return clmad__enqueue_1d(ctx, kernel, m * ((n + 7) / 8), elements * clmad_dtype_size(dtype));
}

clmad_status clmad__gemm_at(clmad_context *ctx, clmad_dtype dtype, int ta, int tb, size_t m, size_t n,
                            size_t k, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb,
                            double beta, cl_mem c, size_t c_off, size_t ldc)
{
    if (small_product(m, n, k))
        return gemm_small(ctx, dtype, ta, tb, m, n, k, a, a_off, lda, b, b_off, ldb, beta, c, c_off, ldc);
    return clmad__gemm_clblast(ctx, dtype, ta, tb, m, n, k, a, a_off, lda, b, b_off, ldb, beta, c, c_off, ldc);
}
