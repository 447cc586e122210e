/* SPDX-License-Identifier: Apache-2.0 */
/* 16-bit tensors (CLMAD_F16, CLMAD_BF16): every bit pattern widened and
 * narrowed again on the device; narrowing of a million random floats and
 * of doubles against the host functions, and the host functions against
 * rounding to nearest even checked in exact double arithmetic; storage
 * operations by their bits; the refusals of the operations that compute. */
#include "support.h"

#include <math.h>
#include <string.h>

static const clmad_dtype HALVES[2] = {CLMAD_F16, CLMAD_BF16};

static float widen(clmad_dtype dt, uint16_t h)
{
    return dt == CLMAD_F16 ? clmad_f16_to_float(h) : clmad_bf16_to_float(h);
}

static uint16_t narrow(clmad_dtype dt, float x)
{
    return dt == CLMAD_F16 ? clmad_f16_from_float(x) : clmad_bf16_from_float(x);
}

/* The value of a 16-bit pattern, from the format's definition alone. */
static double value_of(clmad_dtype dt, uint16_t h)
{
    int mbits = dt == CLMAD_F16 ? 10 : 7, ebits = 15 - mbits, bias = (1 << (ebits - 1)) - 1;
    int e = (h >> mbits) & ((1 << ebits) - 1), m = h & ((1 << mbits) - 1);
    double sign = h & 0x8000 ? -1 : 1;
    if (e == (1 << ebits) - 1)
        return m ? NAN : sign * INFINITY;
    if (e == 0)
        return sign * ldexp(m, 1 - bias - mbits);
    return sign * ldexp(m + (1 << mbits), e - bias - mbits);
}

/* h is x rounded to nearest, ties to even, in format dt: no finite
 * neighbour of h is nearer x, and on a tie h's last bit is 0. */
static int rounds_to(clmad_dtype dt, double x, uint16_t h)
{
    double v = value_of(dt, h);
    if (isnan(x))
        return isnan(v);
    if (signbit(v) != signbit(x))
        return 0;
    uint16_t mag = h & 0x7fff, top = dt == CLMAD_F16 ? 0x7bff : 0x7f7f; /* the largest finite */
    if (isinf(v)) /* beyond the largest finite plus half its step */
        return fabs(x) >= value_of(dt, top) + (value_of(dt, top) - value_of(dt, top - 1)) / 2;
    double d = fabs(x - v);
    for (int step = -1; step <= 1; step += 2) {
        if ((mag == 0 && step < 0) || (mag == top && step > 0))
            continue;
        double n = value_of(dt, (uint16_t)((h & 0x8000) | (mag + step)));
        double dn = fabs(x - n);
        if (dn < d || (dn == d && (h & 1)))
            return 0;
    }
    return 1;
}

Test(half, sizes_and_names)
{
    cr_assert_eq(clmad_dtype_size(CLMAD_F16), 2);
    cr_assert_eq(clmad_dtype_size(CLMAD_BF16), 2);
    cr_assert_str_eq(clmad_dtype_name(CLMAD_F16), "f16");
    cr_assert_str_eq(clmad_dtype_name(CLMAD_BF16), "bf16");
    cr_assert_eq(clmad_dtype_size((clmad_dtype)7), 0);
}

/* Every pattern to f32 (and f64) and back: the widening is the format's
 * value exactly, and narrowing gives the pattern again (a NaN a NaN). */
Test(half, every_pattern_round_trips)
{
    clmad_context *ctx = test_context();
    static uint16_t bits[65536], back[65536];
    static float wide[65536];
    static double wide64[65536];
    size_t n = 65536;
    for (size_t i = 0; i < n; i++)
        bits[i] = (uint16_t)i;
    for (int k = 0; k < 2; k++) {
        clmad_dtype dt = HALVES[k];
        for (int to64 = 0; to64 <= test_device_fp64(); to64++) {
            clmad_tensor *h, *w, *h2;
            CHECK_OK(ctx, clmad_tensor_create(ctx, dt, 1, &n, bits, &h));
            CHECK_OK(ctx, clmad_cast(ctx, h, to64 ? CLMAD_F64 : CLMAD_F32, &w));
            CHECK_OK(ctx, clmad_tensor_read(w, to64 ? (void *)wide64 : (void *)wide, n * (to64 ? 8 : 4)));
            CHECK_OK(ctx, clmad_cast(ctx, w, dt, &h2));
            CHECK_OK(ctx, clmad_tensor_read(h2, back, sizeof back));
            for (size_t i = 0; i < n; i++) {
                double v = value_of(dt, bits[i]), got = to64 ? wide64[i] : wide[i];
                if (isnan(v)) {
                    cr_assert(isnan(got) && isnan(widen(dt, back[i])) && (back[i] & 0x8000) == (bits[i] & 0x8000),
                              "%s NaN %04zx", clmad_dtype_name(dt), i);
                    continue;
                }
                cr_assert(got == v && signbit(got) == signbit(v), "%s %04zx widened to %a, not %a",
                          clmad_dtype_name(dt), i, got, v);
                cr_assert_eq(widen(dt, bits[i]), (float)v);
                cr_assert_eq(back[i], bits[i], "%s %04zx came back as %04x", clmad_dtype_name(dt), i, back[i]);
                cr_assert_eq(narrow(dt, (float)v), bits[i]);
            }
            clmad_tensor_release(h);
            clmad_tensor_release(w);
            clmad_tensor_release(h2);
        }
    }
    clmad_context_release(ctx);
}

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

/* x: random bit patterns (every exponent, NaNs, subnormals), the specials,
 * and the ties and near-ties of both formats. */
static void inputs(float *x, size_t n)
{
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65519.99f, 65520.0f,
                             0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1p-14f, 0x1.ffcp-15f, 0x1p-149f,
                             0x1.fffffep127f, 0x1.ff8p127f, 1.0f + 0x1p-11f, 1.0f + 0x1p-8f};
    size_t k = sizeof special / sizeof special[0];
    memcpy(x, special, sizeof special);
    uint64_t s = 7;
    for (size_t i = k; i < n; i++) {
        uint32_t u = (uint32_t)next(&s);
        if (i % 4 == 1) /* a tie or its neighbours in f16 (13 dropped bits) and bf16 (16) */
            u = (u & ~0x1fffu) | 0x1000u | ((i / 4) % 3 == 0 ? 0u : (i / 4) % 3 == 1 ? 1u : 0xfffu);
        else if (i % 4 == 2)
            u = (u & ~0xffffu) | 0x8000u | ((i / 4) % 2 ? 1u : 0u);
        memcpy(&x[i], &u, 4);
    }
}

Test(half, narrowing_rounds_to_nearest_even)
{
    clmad_context *ctx = test_context();
    size_t n = test_small() ? 1 << 16 : 1000000;
    float *x = malloc(n * sizeof *x);
    uint16_t *got = malloc(n * sizeof *got);
    double *xd = malloc(n * sizeof *xd);
    inputs(x, n);
    for (int k = 0; k < 2; k++) {
        clmad_dtype dt = HALVES[k];
        clmad_tensor *t, *h;
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, x, &t));
        CHECK_OK(ctx, clmad_cast(ctx, t, dt, &h));
        CHECK_OK(ctx, clmad_tensor_read(h, got, n * 2));
        for (size_t i = 0; i < n; i++) {
            cr_assert(rounds_to(dt, x[i], narrow(dt, x[i])), "%s: host %a -> %04x", clmad_dtype_name(dt),
                      (double)x[i], narrow(dt, x[i]));
            cr_assert(got[i] == narrow(dt, x[i]) || (isnan(x[i]) && isnan(widen(dt, got[i]))),
                      "%s: device %a -> %04x, host %04x", clmad_dtype_name(dt), (double)x[i], got[i],
                      narrow(dt, x[i]));
        }
        clmad_tensor_release(t);
        clmad_tensor_release(h);
        if (!test_device_fp64())
            continue;
        /* f64: f16 in one rounding, bf16 through f32 */
        uint64_t s = 11;
        for (size_t i = 0; i < n; i++)
            xd[i] = i % 2 ? (double)x[i] * (1 + (double)(next(&s) % 1024) * 0x1p-40) : (double)x[i];
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, xd, &t));
        CHECK_OK(ctx, clmad_cast(ctx, t, dt, &h));
        CHECK_OK(ctx, clmad_tensor_read(h, got, n * 2));
        for (size_t i = 0; i < n; i++) {
            uint16_t want = narrow(dt, (float)xd[i]);
            if (dt == CLMAD_F16) {
                cr_assert(rounds_to(dt, xd[i], got[i]), "f16: device %a -> %04x", xd[i], got[i]);
                continue;
            }
            cr_assert(got[i] == want || (isnan(xd[i]) && isnan(widen(dt, got[i]))), "bf16: device %a -> %04x",
                      xd[i], got[i]);
        }
        clmad_tensor_release(t);
        clmad_tensor_release(h);
    }
    free(x);
    free(got);
    free(xd);
    clmad_context_release(ctx);
}

/* Storage operations move bit patterns: each result against the same
 * selection made on the host. */
Test(half, storage_operations)
{
    clmad_context *ctx = test_context();
    for (int k = 0; k < 2; k++) {
        clmad_dtype dt = HALVES[k];
        size_t shape[2] = {3, 4}, n = 12;
        uint16_t a[12], got[24];
        for (size_t i = 0; i < n; i++)
            a[i] = narrow(dt, (float)i - 5.5f);
        clmad_tensor *t, *y, *z, *c;
        CHECK_OK(ctx, clmad_tensor_create(ctx, dt, 2, shape, a, &t));
        cr_assert_eq(clmad_tensor_dtype(t), dt);
        CHECK_OK(ctx, clmad_transpose(ctx, t, NULL, &y));
        CHECK_OK(ctx, clmad_tensor_read(y, got, n * 2));
        for (size_t i = 0; i < 3; i++)
            for (size_t j = 0; j < 4; j++)
                cr_assert_eq(got[j * 3 + i], a[i * 4 + j], "%s transpose (%zu, %zu): %04x, not %04x", clmad_dtype_name(dt), i, j, got[j * 3 + i], a[i * 4 + j]);
        CHECK_OK(ctx, clmad_slice(ctx, t, 1, 1, 3, &z));
        CHECK_OK(ctx, clmad_tensor_read(z, got, 6 * 2));
        for (size_t i = 0; i < 3; i++)
            for (size_t j = 0; j < 2; j++)
                cr_assert_eq(got[i * 2 + j], a[i * 4 + 1 + j]);
        clmad_tensor *xs[2] = {t, t};
        CHECK_OK(ctx, clmad_concat(ctx, 2, xs, 0, &c));
        CHECK_OK(ctx, clmad_tensor_read(c, got, 24 * 2));
        cr_assert(!memcmp(got, a, 24) && !memcmp(got + 12, a, 24));
        clmad_tensor_release(y);
        clmad_tensor_release(z);
        clmad_tensor_release(c);
        /* fill and item round as documented */
        double item;
        CHECK_OK(ctx, clmad_tensor_fill(ctx, dt, 2, shape, 1.0 / 3, &y));
        CHECK_OK(ctx, clmad_tensor_read(y, got, n * 2));
        uint16_t third = dt == CLMAD_F16 ? 0x3555 : 0x3eab;
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(got[i], third, "%s fill: %04x", clmad_dtype_name(dt), got[i]);
        CHECK_OK(ctx, clmad_tensor_scalar(ctx, dt, -2.5, &z));
        CHECK_OK(ctx, clmad_tensor_item(z, &item));
        cr_assert_eq(item, -2.5);
        CHECK_OK(ctx, clmad_tensor_copy(y, t));
        CHECK_OK(ctx, clmad_tensor_read(y, got, n * 2));
        cr_assert(!memcmp(got, a, sizeof a));
        clmad_tensor_release(y);
        clmad_tensor_release(z);
        /* index_select of rows 2, 0 */
        int64_t rows[2] = {2, 0};
        size_t two = 2;
        clmad_tensor *idx;
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I64, 1, &two, rows, &idx));
        CHECK_OK(ctx, clmad_index_select(ctx, t, 0, idx, &y));
        CHECK_OK(ctx, clmad_tensor_read(y, got, 8 * 2));
        cr_assert(!memcmp(got, a + 8, 8) && !memcmp(got + 4, a, 8));
        clmad_tensor_release(y);
        CHECK_OK(ctx, clmad_embedding(ctx, t, idx, &y)); /* the same rows */
        CHECK_OK(ctx, clmad_tensor_read(y, got, 8 * 2));
        cr_assert(!memcmp(got, a + 8, 8) && !memcmp(got + 4, a, 8));
        clmad_tensor_release(y);
        clmad_tensor_release(idx);
        /* gather along the last axis: y[i][j] = a[i][(j + i) % 4] */
        int64_t at[12];
        for (size_t i = 0; i < 3; i++)
            for (size_t j = 0; j < 4; j++)
                at[i * 4 + j] = (int64_t)((j + i) % 4);
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I64, 2, shape, at, &idx));
        CHECK_OK(ctx, clmad_gather(ctx, t, 1, idx, &y));
        CHECK_OK(ctx, clmad_tensor_read(y, got, n * 2));
        for (size_t i = 0; i < 3; i++)
            for (size_t j = 0; j < 4; j++)
                cr_assert_eq(got[i * 4 + j], a[i * 4 + (j + i) % 4]);
        clmad_tensor_release(y);
        clmad_tensor_release(idx);
        /* to and from integers, through f32: -5.5 truncates to -5 */
        CHECK_OK(ctx, clmad_cast(ctx, t, CLMAD_I32, &y));
        int32_t ints[12];
        CHECK_OK(ctx, clmad_tensor_read(y, ints, sizeof ints));
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(ints[i], (int32_t)((float)i - 5.5f));
        CHECK_OK(ctx, clmad_cast(ctx, y, dt, &z));
        CHECK_OK(ctx, clmad_tensor_read(z, got, n * 2));
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(got[i], narrow(dt, (float)ints[i]));
        /* and to the other 16-bit type */
        CHECK_OK(ctx, clmad_cast(ctx, t, HALVES[1 - k], &c));
        CHECK_OK(ctx, clmad_tensor_read(c, got, n * 2));
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(got[i], narrow(HALVES[1 - k], widen(dt, a[i])));
        clmad_tensor_release(y);
        clmad_tensor_release(z);
        clmad_tensor_release(c);
        clmad_tensor_release(t);
    }
    clmad_context_release(ctx);
}

/* The operations that do not compute on 16-bit tensors yet refuse them,
 * saying what to do, and record nothing (test_half_compute.c: those that
 * do); a builtin over mixed float dtypes promotes (f16 with bf16 to f32),
 * other calls refuse them. */
Test(half, computing_operations_refuse)
{
    clmad_context *ctx = test_context();
    size_t shape[2] = {2, 3}, one = 1;
    clmad_tensor *h, *x, *y = NULL, *i64, *f16;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 2, shape, 1.5, &x));
    CHECK_OK(ctx, clmad_cast(ctx, x, CLMAD_BF16, &h));
    CHECK_OK(ctx, clmad_cast(ctx, x, CLMAD_F16, &f16));
    const clmad_dtype pairs[3][3] = {{CLMAD_F32, CLMAD_BF16, CLMAD_F32}, {CLMAD_F16, CLMAD_BF16, CLMAD_F32},
                                     {CLMAD_F16, CLMAD_F16, CLMAD_F16}};
    for (int p = 0; p < 3; p++) {
        clmad_tensor *of[7] = {[CLMAD_F32] = x, [CLMAD_BF16] = h, [CLMAD_F16] = f16};
        CHECK_OK(ctx, clmad_mul(ctx, of[pairs[p][0]], of[pairs[p][1]], &y));
        cr_assert_eq(clmad_tensor_dtype(y), pairs[p][2], "%s times %s", clmad_dtype_name(pairs[p][0]),
                     clmad_dtype_name(pairs[p][1]));
        double v;
        clmad_tensor *s;
        CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &s));
        CHECK_OK(ctx, clmad_tensor_item(s, &v));
        cr_assert_eq(v, 6 * 2.25);
        clmad_tensor_release(s);
        clmad_tensor_release(y);
    }
    y = NULL;
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T f(T a, T b) { return a * b; }", "f", 2, 1, &k));
    clmad_tensor *in[2] = {x, h};
    REFUSED(ctx, clmad_broadcast(ctx, k, in, &y), CLMAD_ERR_DTYPE, "share one dtype");
    clmad_kernel_release(k);
    clmad_tensor_release(f16);
    REFUSED(ctx, clmad_matmul(ctx, x, h, 0, 1, &y), CLMAD_ERR_DTYPE, "different dtypes");
    REFUSED(ctx, clmad_tensor_axpby(h, 2.0, NULL, 1.0), CLMAD_ERR_DTYPE, "clmad_cast it to f32 first");
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_I64, 1, &one, &i64));
    REFUSED(ctx, clmad_one_hot(ctx, i64, 3, CLMAD_F16, &y), CLMAD_ERR_DTYPE, "f16");
    cr_assert_null(y);
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    /* still usable */
    clmad_tensor *wide, *loss;
    CHECK_OK(ctx, clmad_cast(ctx, h, CLMAD_F32, &wide));
    CHECK_OK(ctx, clmad_sum(ctx, x, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    float g[6], w[6];
    clmad_tensor *gx;
    CHECK_OK(ctx, clmad_tensor_grad(x, &gx));
    CHECK_OK(ctx, clmad_tensor_read(gx, g, sizeof g));
    clmad_tensor_release(gx);
    CHECK_OK(ctx, clmad_tensor_read(wide, w, sizeof w));
    for (int i = 0; i < 6; i++)
        cr_assert(g[i] == 1 && w[i] == 1.5f);
    char text[256];
    size_t length;
    CHECK_OK(ctx, clmad_tensor_format(h, text, sizeof text, &length));
    cr_assert(test_contains(text, "1.5000") && test_contains(text, "dtype=bf16"), "%s", text);
    clmad_tensor_release(loss);
    clmad_tensor_release(wide);
    clmad_tensor_release(i64);
    clmad_tensor_release(h);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}
