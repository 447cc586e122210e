/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_matmul through CLBlast, and its adjoint (dA = dC op(B)^T, dB = op(A)^T dC,
 * arranged for transposed operands). Gradients accumulate with beta = 1. */
#include "ops/ops.h"
#include "base/log.h"

#include <clblast_c.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

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

static CLBlastStatusCode call_gemm(clmad_dtype dtype, CLBlastTranspose at, CLBlastTranspose bt, size_t m,
                                   size_t n, size_t k, cl_mem a, size_t a_off, size_t lda, cl_mem b,
                                   size_t b_off, size_t ldb, double beta, cl_mem c, size_t c_off, size_t ldc,
                                   cl_command_queue *queue)
{
    if (dtype == CLMAD_F32)
        return CLBlastSgemm(CLBlastLayoutRowMajor, at, bt, m, n, k, 1.0f, a, a_off, lda, b, b_off, ldb,
                            (float)beta, c, c_off, ldc, queue, NULL);
    return CLBlastDgemm(CLBlastLayoutRowMajor, at, bt, m, n, k, 1.0, a, a_off, lda, b, b_off, ldb, beta, c,
                        c_off, ldc, queue, NULL);
}

clmad_status clmad__gemm_at(clmad_context *ctx, clmad_dtype dtype, int ta, int tb, size_t m, size_t n,
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

clmad_status clmad_matmul(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, int trans_a,
                          int trans_b, clmad_tensor **out)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_matmul: ctx is NULL");
    if (!a || !b || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_matmul: NULL argument");
    clmad_status st = clmad__check_same_context(ctx, a, "clmad_matmul", "a");
    if (st == CLMAD_OK)
        st = clmad__check_same_context(ctx, b, "clmad_matmul", "b");
    if (st != CLMAD_OK)
        return st;
    if (a->ndim != 2 || b->ndim != 2)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "clmad_matmul: operands must be 2-d (ranks %d and %d)",
                           a->ndim, b->ndim);
    if (a->dtype != b->dtype)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_matmul: operands of different dtypes");
    size_t m = trans_a ? a->shape[1] : a->shape[0], k = trans_a ? a->shape[0] : a->shape[1];
    size_t kb = trans_b ? b->shape[1] : b->shape[0], n = trans_b ? b->shape[0] : b->shape[1];
    if (k != kb)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "clmad_matmul: op(a) is %zu x %zu and op(b) is %zu x %zu: inner sizes differ",
                           m, k, kb, n);
    size_t shape[2] = {m, n};
    clmad_tensor *c = NULL;
    st = clmad_tensor_create(ctx, a->dtype, 2, shape, NULL, &c);
    if (st == CLMAD_OK)
        st = clmad__batched_gemm(ctx, a->dtype, 1, trans_a != 0, trans_b != 0, m, n, k, clmad__mat_of(a),
                                 clmad__mat_of(b), 0.0, c);
    return clmad__finish_product(ctx, "clmad_matmul", a, b, trans_a != 0, trans_b != 0, c, st, out);
}
