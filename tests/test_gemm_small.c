/* SPDX-License-Identifier: Apache-2.0 */
/* Small matrix products run clmad's own kernel (ops/gemm.c; CLBlast's first
 * GEMM costs seconds of compiling): its results against a host product in
 * double, and against CLBlast's (CLMAD_SMALL_GEMM=0), for each
 * transposition, matrices at offsets (bmm), and gradients that accumulate
 * (beta 1). Larger ones run CLBlast's tiled kernel, with the tuning table's
 * parameters where it has them (POCL on a CPU), or those of the device's
 * tuning file. */
#include "support.h"

#include <criterion/redirect.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A value of element i of a test matrix: small integers over 8, exact in f32. */
static float value(unsigned seed, size_t i)
{
    return (float)((int)((seed * 2654435761u + (unsigned)i * 40503u) % 17u) - 8) / 8.0f;
}

static clmad_tensor *matrix(clmad_context *ctx, size_t rows, size_t cols, unsigned seed, float *host)
{
    for (size_t i = 0; i < rows * cols; i++)
        host[i] = value(seed, i);
    size_t shape[2] = {rows, cols};
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, shape, host, &t));
    return t;
}

/* op(A) op(B) on the device, with A (ta ? k x m : m x k) and B (tb ? n x k : k x n). */
static void product(clmad_context *ctx, int ta, int tb, size_t m, size_t n, size_t k, float *got, double *want)
{
    float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b);
    clmad_tensor *ta_t = matrix(ctx, ta ? k : m, ta ? m : k, 1, a);
    clmad_tensor *tb_t = matrix(ctx, tb ? n : k, tb ? k : n, 2, b);
    clmad_tensor *c = NULL;
    CHECK_OK(ctx, clmad_matmul(ctx, ta_t, tb_t, ta, tb, &c));
    CHECK_OK(ctx, clmad_tensor_read(c, got, m * n * sizeof *got));
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double sum = 0;
            for (size_t l = 0; l < k; l++)
                sum += (double)(ta ? a[l * m + i] : a[i * k + l]) * (tb ? b[j * k + l] : b[l * n + j]);
            want[i * n + j] = sum;
        }
    clmad_tensor_release(c);
    clmad_tensor_release(tb_t);
    clmad_tensor_release(ta_t);
    free(a);
    free(b);
}

Test(gemm_small, every_transposition_against_the_host_and_clblast)
{
    /* The last two go to CLBlast either way (k above 256, more than 2^21 multiply-adds). */
    static const size_t sizes[][3] = {{1, 1, 1},       {3, 5, 7},   {64, 10, 64},   {17, 33, 256},
                                      {128, 128, 128}, {2, 3, 300}, {130, 130, 130}};
    clmad_context *ctx = test_context();
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
        float *got = malloc(m * n * sizeof *got), *blas = malloc(m * n * sizeof *blas);
        double *want = malloc(m * n * sizeof *want);
        for (int t = 0; t < 4; t++) {
            const int ta = t & 1, tb = t >> 1;
            test_set_case("%zu x %zu x %zu, ta %d, tb %d", m, n, k, ta, tb);
            unsetenv("CLMAD_SMALL_GEMM");
            product(ctx, ta, tb, m, n, k, got, want);
            setenv("CLMAD_SMALL_GEMM", "0", 1);
            product(ctx, ta, tb, m, n, k, blas, want);
            unsetenv("CLMAD_SMALL_GEMM");
            /* Elements are multiples of 1/8 in [-1, 1]: each product is a
             * multiple of 1/64, each partial sum one of magnitude at most
             * k, exact in f32: both agree with the host bit for bit. */
            for (size_t i = 0; i < m * n; i++) {
                cr_assert_eq((double)got[i], want[i], "%s: element %zu: %g, host %g", test_case(), i,
                             (double)got[i], want[i]);
                cr_assert_eq((double)blas[i], want[i], "%s: CLBlast's element %zu: %g, host %g", test_case(),
                             i, (double)blas[i], want[i]);
            }
        }
        free(got);
        free(blas);
        free(want);
    }
    clmad_context_release(ctx);
}

Test(gemm_small, clblasts_tiled_kernel_against_the_host)
{
    /* At least 256^3 multiply-adds: CLBlast's tiled Xgemm where the tuning
     * table sets its parameters (from there on), its direct kernel where
     * CLBlast's database decides; no size a multiple of the tiles (64 x 64
     * x 32 on POCL), so that CLBlast pads and copies each operand. */
    static const size_t sizes[][3] = {{257, 300, 263}, {70, 1030, 301}, {256, 256, 256}};
    clmad_context *ctx = test_context();
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
        float *got = malloc(m * n * sizeof *got);
        double *want = malloc(m * n * sizeof *want);
        for (int t = 0; t < 4; t++) {
            const int ta = t & 1, tb = t >> 1;
            test_set_case("%zu x %zu x %zu, ta %d, tb %d", m, n, k, ta, tb);
            product(ctx, ta, tb, m, n, k, got, want);
            /* Exact in f32, as above (partial sums of multiples of 1/64 up to k). */
            for (size_t i = 0; i < m * n; i++)
                cr_assert_eq((double)got[i], want[i], "%s: element %zu: %g, host %g", test_case(), i,
                             (double)got[i], want[i]);
        }
        free(got);
        free(want);
    }
    clmad_context_release(ctx);
}

/* The products of clblasts_tiled_kernel_against_the_host (exact in f32). */
static void products_against_the_host(clmad_context *ctx)
{
    static const size_t sizes[][3] = {{257, 300, 263}, {70, 1030, 301}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
        float *got = malloc(m * n * sizeof *got);
        double *want = malloc(m * n * sizeof *want);
        for (int t = 0; t < 4; t++) {
            test_set_case("%zu x %zu x %zu, ta %d, tb %d", m, n, k, t & 1, t >> 1);
            product(ctx, t & 1, t >> 1, m, n, k, got, want);
            for (size_t i = 0; i < m * n; i++)
                cr_assert_eq((double)got[i], want[i], "%s: element %zu: %g, host %g", test_case(), i,
                             (double)got[i], want[i]);
        }
        free(got);
        free(want);
    }
}

static void redirect(void)
{
    cr_redirect_stderr();
}

Test(gemm_small, a_tuning_file_gives_clblast_its_parameters, .init = redirect)
{
    /* CLBlast keeps parameters per device and process: this test's process
     * sets them once, from the file (32 x 32 x 32 tiles, vectors of 2: in
     * no row of the table; the tiled kernel from 64^3). */
    setenv("CLMAD_LOG", "info", 1);
    char cache[1200];
    snprintf(cache, sizeof cache, "%s", test_fresh_dir("gemm-tuned"));
    const char *line = "clblast_xgemm_f32 0 32 32 32 8 8 8 8 2 2 2 0 0 1 1 1 64";
    test_tuning_file_with(cache, line);

    clmad_context *b = test_context_with_cache(cache);
    clmad_tuning got;
    CHECK_OK(b, clmad_context_tuning(b, &got));
    cr_assert(test_contains(got.origin, "tuned:") && test_contains(got.origin, "CLBlast's F32 GEMM parameters"),
              "%s", got.origin);
    products_against_the_host(b);
    fflush(stderr);
    static char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, cr_get_redirected_stderr());
    text[n] = '\0';
    cr_assert(test_contains(text, "the device's tuning file's parameters (status 0)"), "%s", text);

    /* Saved again (clmad-info --tune), the file keeps the line. */
    CHECK_OK(b, clmad_tuning_save(b, &got));
    cr_assert(test_tuning_file_has(cache, line), "clmad_tuning_save dropped the CLBlast line");
    clmad_context_release(b);

    /* A line of 16 numbers: the whole file is ignored, as any bad file. */
    test_append_to_tuning_file(cache, "clblast_xgemm_f32 0 32 32 32 8 8 8 8 2 2 2 0 0 1 1 1");
    const char *origin = test_tuning_origin(cache);
    cr_assert(!test_contains(origin, "tuned:"), "%s", origin);
}

Test(gemm_small, batches_at_offsets_and_accumulated_gradients)
{
    clmad_context *ctx = test_context();
    enum { B = 3, M = 4, K = 5, N = 2 };
    float a[B * M * K], b[B * K * N], w[K * N];
    for (size_t i = 0; i < B * M * K; i++)
        a[i] = value(3, i);
    for (size_t i = 0; i < B * K * N; i++)
        b[i] = value(4, i);
    for (size_t i = 0; i < K * N; i++)
        w[i] = value(5, i);
    size_t a_shape[3] = {B, M, K}, b_shape[3] = {B, K, N}, w_shape[2] = {K, N};
    clmad_tensor *ta = NULL, *tb = NULL, *tw = NULL, *c = NULL, *a0 = NULL, *p = NULL, *q = NULL, *s = NULL,
                 *loss = NULL, *grad = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 3, a_shape, a, &ta));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 3, b_shape, b, &tb));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, w_shape, w, &tw));
    /* Batch i of bmm reads a and b at offsets i * M * K and i * K * N. */
    CHECK_OK(ctx, clmad_bmm(ctx, ta, tb, 0, 0, &c));
    float got[B * M * N];
    CHECK_OK(ctx, clmad_tensor_read(c, got, sizeof got));
    for (size_t i = 0; i < B; i++)
        for (size_t r = 0; r < M; r++)
            for (size_t j = 0; j < N; j++) {
                double sum = 0;
                for (size_t l = 0; l < K; l++)
                    sum += (double)a[i * M * K + r * K + l] * b[i * K * N + l * N + j];
                cr_assert_eq((double)got[i * M * N + r * N + j], sum, "batch %zu (%zu, %zu)", i, r, j);
            }
    /* a0 (M x K) used twice: its gradient is written, then added to (beta 1). */
    size_t a0_shape[2] = {M, K};
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, a0_shape, a, &a0));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(a0, 1));
    CHECK_OK(ctx, clmad_matmul(ctx, a0, tw, 0, 0, &p));
    CHECK_OK(ctx, clmad_matmul(ctx, a0, tw, 0, 0, &q));
    CHECK_OK(ctx, clmad_add(ctx, p, q, &s));
    CHECK_OK(ctx, clmad_sum(ctx, s, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(a0, &grad));
    float g[M * K];
    CHECK_OK(ctx, clmad_tensor_read(grad, g, sizeof g));
    for (size_t r = 0; r < M; r++)
        for (size_t l = 0; l < K; l++) {
            double row_sum = 0;
            for (size_t j = 0; j < N; j++)
                row_sum += w[l * N + j];
            cr_assert_eq((double)g[r * K + l], 2 * row_sum, "gradient (%zu, %zu): %g", r, l, (double)g[r * K + l]);
        }
    clmad_tensor *all[] = {grad, loss, s, q, p, a0, c, tw, tb, ta};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}
