/* SPDX-License-Identifier: Apache-2.0 */
/* Random initialisation: the device's Philox4x32-10 against a host
 * implementation bit for bit (uniform values expose the top bits of each
 * word), the host implementation against the Random123 known answers, and
 * the distributions statistically. */
#include "support.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void philox(const uint32_t in[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c[4] = {in[0], in[1], in[2], in[3]}, k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n[4] = {(uint32_t)(p1 >> 32) ^ c[1] ^ k0, (uint32_t)p1, (uint32_t)(p0 >> 32) ^ c[3] ^ k1,
                         (uint32_t)p0};
        memcpy(c, n, sizeof c);
    }
    memcpy(out, c, sizeof c);
}

/* The words of block b of seed. */
static void block_words(uint64_t seed, uint64_t b, uint32_t w[4])
{
    uint32_t c[4] = {(uint32_t)b, (uint32_t)(b >> 32), 0, 0}, k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    philox(c, k, w);
}

Test(train_random, host_philox_matches_random123_known_answers)
{
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e,
         0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
         0x5001e420, 0x24126ea1},
    };
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        philox(kat[i], kat[i] + 4, out);
        for (int j = 0; j < 4; j++)
            cr_assert_eq(out[j], kat[i][6 + j], "vector %d word %d: %08x, expected %08x", i, j, out[j],
                         kat[i][6 + j]);
    }
}

static float unit_f32(uint32_t w)
{
    return (float)(w >> 8) * 0x1.0p-24f;
}

static double unit_f64(uint32_t a, uint32_t b)
{
    return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) * 0x1.0p-53;
}

Test(train_random, uniform_bit_for_bit_with_the_host)
{
    clmad_context *ctx = test_context();
    const uint64_t seed = 0x0123456789abcdefull;
    size_t n = 1003; /* not a multiple of a block */
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_F32, 1, &n, -2.0, 3.0, seed, &t));
    float *got = malloc(n * sizeof *got);
    CHECK_OK(ctx, clmad_tensor_read(t, got, n * sizeof *got));
    for (size_t e = 0; e < n; e++) {
        uint32_t w[4];
        block_words(seed, e / 4, w);
        volatile float scaled = 5.0f * unit_f32(w[e % 4]); /* no fma: the kernel rounds twice */
        float want = -2.0f + scaled;
        cr_assert_eq(got[e], want, "f32 element %zu: %.9g, expected %.9g", e, got[e], want);
    }
    clmad_tensor_release(t);
    free(got);

    CHECK_OK(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_F64, 1, &n, 0.0, 1.0, seed, &t));
    double *gd = malloc(n * sizeof *gd);
    CHECK_OK(ctx, clmad_tensor_read(t, gd, n * sizeof *gd));
    for (size_t e = 0; e < n; e++) {
        uint32_t w[4];
        block_words(seed, e / 2, w);
        double want = unit_f64(w[2 * (e % 2)], w[2 * (e % 2) + 1]);
        cr_assert_eq(gd[e], want, "f64 element %zu: %.17g, expected %.17g", e, gd[e], want);
    }
    clmad_tensor_release(t);
    free(gd);
    clmad_context_release(ctx);
}

Test(train_random, normal_matches_host_box_muller)
{
    clmad_context *ctx = test_context();
    size_t shape[2] = {9, 7};
    size_t n = 63;
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_rand_normal(ctx, CLMAD_F64, 2, shape, 1.5, 0.25, 42, &t));
    double got[63];
    CHECK_OK(ctx, clmad_tensor_read(t, got, sizeof got));
    for (size_t e = 0; e < n; e += 2) {
        uint32_t w[4];
        block_words(42, e / 2, w);
        double u0 = unit_f64(w[0], w[1]) + 0x1.0p-53, u1 = unit_f64(w[2], w[3]);
        double r = sqrt(-2 * log(u0)), th = 6.283185307179586 * u1;
        cr_assert_float_eq(got[e], 1.5 + 0.25 * r * cos(th), 1e-12, "element %zu", e);
        if (e + 1 < n)
            cr_assert_float_eq(got[e + 1], 1.5 + 0.25 * r * sin(th), 1e-12, "element %zu", e + 1);
    }
    clmad_tensor_release(t);
    float gf[63];
    CHECK_OK(ctx, clmad_tensor_rand_normal(ctx, CLMAD_F32, 2, shape, 0.0, 1.0, 42, &t));
    CHECK_OK(ctx, clmad_tensor_read(t, gf, sizeof gf));
    for (size_t e = 0; e < n; e++) {
        uint32_t w[4];
        block_words(42, e / 4, w);
        size_t i = e % 4 & ~(size_t)1;
        double u0 = (double)unit_f32(w[i]) + 0x1.0p-24, u1 = unit_f32(w[i + 1]);
        double r = sqrt(-2 * log(u0)), th = 6.283185307179586 * u1;
        double want = e % 2 ? r * sin(th) : r * cos(th);
        cr_assert_float_eq(gf[e], want, 1e-5 * (1 + fabs(want)), "f32 element %zu: %g, expected %g", e,
                           gf[e], want);
    }
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

Test(train_random, statistics_and_reproducibility)
{
    clmad_context *ctx = test_context();
    size_t n = 1 << 20;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    clmad_tensor *t, *u;
    CHECK_OK(ctx, clmad_tensor_rand_normal(ctx, CLMAD_F32, 1, &n, 2.0, 3.0, 7, &t));
    CHECK_OK(ctx, clmad_tensor_read(t, a, n * sizeof *a));
    double mean = 0, var = 0;
    for (size_t i = 0; i < n; i++)
        mean += a[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++)
        var += (a[i] - mean) * (a[i] - mean);
    var /= (double)(n - 1);
    /* 5 standard errors: sigma / sqrt(n) for the mean, sigma^2 sqrt(2/n) for the variance */
    cr_assert(fabs(mean - 2.0) < 5 * 3.0 / sqrt((double)n), "normal mean %g", mean);
    cr_assert(fabs(var - 9.0) < 5 * 9.0 * sqrt(2.0 / (double)n), "normal variance %g", var);
    /* The same seed gives the same bits; a shorter tensor is a prefix. */
    size_t m = 1001;
    CHECK_OK(ctx, clmad_tensor_rand_normal(ctx, CLMAD_F32, 1, &m, 2.0, 3.0, 7, &u));
    CHECK_OK(ctx, clmad_tensor_read(u, b, m * sizeof *b));
    cr_assert(memcmp(a, b, m * sizeof *a) == 0);
    clmad_tensor_release(u);
    CHECK_OK(ctx, clmad_tensor_rand_normal(ctx, CLMAD_F32, 1, &m, 2.0, 3.0, 8, &u));
    CHECK_OK(ctx, clmad_tensor_read(u, b, m * sizeof *b));
    cr_assert(memcmp(a, b, m * sizeof *a) != 0, "another seed, another stream");
    clmad_tensor_release(u);
    clmad_tensor_release(t);

    CHECK_OK(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_F32, 1, &n, -1.0, 1.0, 99, &t));
    CHECK_OK(ctx, clmad_tensor_read(t, a, n * sizeof *a));
    mean = 0;
    double lo = 1, hi = -1;
    size_t below = 0;
    for (size_t i = 0; i < n; i++) {
        mean += a[i];
        lo = fmin(lo, a[i]);
        hi = fmax(hi, a[i]);
        below += a[i] < -0.5f;
    }
    mean /= (double)n;
    cr_assert(lo >= -1.0 && hi <= 1.0, "range [%g, %g]", lo, hi);
    cr_assert(fabs(mean) < 5 * sqrt(1.0 / 3.0 / (double)n), "uniform mean %g", mean);
    double q = (double)below / (double)n; /* P(x < -0.5) = 1/4 */
    cr_assert(fabs(q - 0.25) < 5 * sqrt(0.25 * 0.75 / (double)n), "quartile %g", q);
    clmad_tensor_release(t);
    free(a);
    free(b);
    clmad_context_release(ctx);
}

Test(train_random, bad_arguments)
{
    clmad_context *ctx = test_context();
    size_t n = 4;
    clmad_tensor *t = NULL;
    cr_assert_eq(clmad_tensor_rand_uniform(ctx, CLMAD_F32, 1, &n, 1.0, 0.0, 1, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "clmad_tensor_rand_uniform"));
    cr_assert_eq(clmad_tensor_rand_normal(ctx, CLMAD_F32, 1, &n, 0.0, -1.0, 1, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tensor_rand_normal(ctx, CLMAD_F32, 1, &n, NAN, 1.0, 1, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tensor_rand_normal(ctx, CLMAD_F32, 1, &n, 0.0, 1.0, 1, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_null(t);
    size_t empty = 0;
    CHECK_OK(ctx, clmad_tensor_rand_normal(ctx, CLMAD_F32, 1, &empty, 0.0, 1.0, 1, &t));
    cr_assert_eq(clmad_tensor_numel(t), 0);
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

/* Issue 24 item 8: a range the dtype cannot represent is refused (before:
 * f32 uniform on [-3e38, 3e38] gave +inf everywhere, lo = 1e39 and std =
 * 1e300 were accepted), and the widest accepted ranges give finite values
 * only. */
static void all_finite(clmad_context *ctx, clmad_tensor *t, const char *what)
{
    size_t n = clmad_tensor_numel(t);
    int f64 = clmad_tensor_dtype(t) == CLMAD_F64;
    void *v = malloc(n * (f64 ? sizeof(double) : sizeof(float)));
    cr_assert_not_null(v);
    CHECK_OK(ctx, clmad_tensor_read(t, v, n * (f64 ? sizeof(double) : sizeof(float))));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += !isfinite(f64 ? ((double *)v)[i] : ((float *)v)[i]);
    free(v);
    cr_expect_eq(bad, 0, "%s: %zu of %zu values not finite", what, bad, n);
}

Test(train_random, ranges_the_dtype_cannot_represent)
{
    clmad_context *ctx = test_context();
    size_t n = 1 << 16;
    clmad_tensor *t = NULL;
    struct {
        clmad_dtype dt;
        int normal;
        double a, b;
        const char *needle;
    } refused[] = {
        {CLMAD_F32, 0, -3e38, 3e38, "hi - lo 6e+38 is not finite in f32"},
        {CLMAD_F32, 0, 1e39, 2e39, "lo 1e+39 is not finite in f32"},
        {CLMAD_F32, 0, 0.0, 1e39, "hi 1e+39 is not finite in f32"},
        {CLMAD_F32, 0, -INFINITY, 0.0, "lo -inf is not finite in f32"},
        {CLMAD_F64, 0, -1e308, 1e308, "hi - lo inf is not finite in f64"},
        {CLMAD_F64, 0, 0.0, INFINITY, "hi inf is not finite in f64"},
        {CLMAD_F32, 1, 0.0, 1e300, "std 1e+300 is not finite in f32"},
        {CLMAD_F32, 1, 1e39, 1.0, "mean 1e+39 is not finite in f32"},
        {CLMAD_F32, 1, 0.0, 6e37, "mean 0 + std 6e+37 z overflows f32"},
        {CLMAD_F32, 1, 3e38, 1e37, "overflows f32"},
        {CLMAD_F64, 1, 0.0, 1e308, "mean 0 + std 1e+308 z overflows f64"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        clmad_status st = refused[i].normal
                              ? clmad_tensor_rand_normal(ctx, refused[i].dt, 1, &n, refused[i].a, refused[i].b, 1, &t)
                              : clmad_tensor_rand_uniform(ctx, refused[i].dt, 1, &n, refused[i].a, refused[i].b, 1, &t);
        cr_expect_eq(st, CLMAD_ERR_INVALID_ARGUMENT, "case %zu (%s): %s", i, refused[i].needle,
                     clmad_status_string(st));
        if (st == CLMAD_OK) {
            all_finite(ctx, t, refused[i].needle);
            clmad_tensor_release(t);
            t = NULL;
        } else {
            cr_expect(test_contains(clmad_last_error(ctx), refused[i].needle), "case %zu: %s", i,
                      clmad_last_error(ctx));
        }
    }
    cr_assert_null(t);
    /* The widest accepted: finite values only. */
    CHECK_OK(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_F32, 1, &n, -1.7e38, 1.7e38, 1, &t));
    all_finite(ctx, t, "f32 uniform on [-1.7e38, 1.7e38]");
    clmad_tensor_release(t);
    CHECK_OK(ctx, clmad_tensor_rand_normal(ctx, CLMAD_F32, 1, &n, 0.0, 5e37, 2, &t));
    all_finite(ctx, t, "f32 normal, std 5e37");
    clmad_tensor_release(t);
    CHECK_OK(ctx, clmad_tensor_rand_normal(ctx, CLMAD_F64, 1, &n, 1e39, 1e300, 3, &t));
    all_finite(ctx, t, "f64 normal, mean 1e39, std 1e300");
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}
