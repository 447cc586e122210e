/* SPDX-License-Identifier: Apache-2.0 */
/* CLMAD_MPI_DETERMINISTIC: the reduced gradient is the sum formed in rank
 * order 0, 1, ..., P-1 (in the parameter's dtype), bitwise: the same on
 * every rank, the same from one call to the next, and equal to that sum
 * formed here on the host. The gradients span many binades, so that the
 * order of the additions changes the rounding (checked below: with 3 ranks
 * or more, some elements differ between the rank order and another order,
 * otherwise the test would prove nothing). ctest runs it with 3 ranks: with
 * 2, a + b = b + a and every order gives the same bits. And with Open MPI's
 * ring allreduce (tests/mpi/CMakeLists.txt sets it, and
 * CLMAD_MPI_TEST_ORDER_DIFFERS=1): its default for these sizes happens to
 * add in rank order, so an implementation that ignored the flag would
 * pass; the ring adds in another order for some elements, checked here on
 * the plain (non-deterministic) allreduce. */
#include "mpi_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N32 64
#define N64 48

/* Rank r's gradient i of the f32 (which 0) or f64 (which 1) parameter:
 * a fixed pseudo-random value of varied sign and magnitude. */
static double grad_of(int r, int which, int i)
{
    unsigned x = 2654435761u * (unsigned)(r * 1000 + which * 100000 + i + 1);
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    double u = (double)(x & 0xffffff) / 16777216.0; /* [0, 1) */
    int e = (int)((x >> 24) % 41) - 20;             /* 2^-20 .. 2^20 */
    return ((x >> 7) & 1 ? -1 : 1) * (0.5 + u) * ldexp(1.0, e) / 3.0;
}

/* The host's sum in rank order, in dtype, and (for the self-check) in
 * reverse order. */
static float sum32(int i, int reverse)
{
    float s = 0;
    for (int k = 0; k < mt_size; k++)
        s += (float)grad_of(reverse ? mt_size - 1 - k : k, 0, i);
    return s;
}

static double sum64(int i, int reverse)
{
    double s = 0;
    for (int k = 0; k < mt_size; k++)
        s += grad_of(reverse ? mt_size - 1 - k : k, 1, i);
    return s;
}

/* Reads the gradients of ps[0] (f32) and ps[1] (f64) as bytes. */
static void read_grads(clmad_context *ctx, clmad_tensor **ps, float *g32, double *g64)
{
    for (int k = 0; k < 2; k++) {
        clmad_tensor *g = NULL;
        MT_OK(ctx, clmad_tensor_grad(ps[k], &g));
        if (!g) {
            mt_fail(__FILE__, __LINE__, "no gradient");
            continue;
        }
        if (k == 0)
            MT_OK(ctx, clmad_tensor_read(g, g32, N32 * sizeof(float)));
        else
            MT_OK(ctx, clmad_tensor_read(g, g64, N64 * sizeof(double)));
        clmad_tensor_release(g);
    }
}

/* One deterministic allreduce of this rank's gradients; checks it against
 * the host's rank-order sum (over P for the average), and that every rank
 * holds rank 0's bits. */
static void round_trip(clmad_context *ctx, clmad_tensor **ps, clmad_tensor **cs, clmad_mpi_op op,
                       float *g32, double *g64, const char *what)
{
    mt_set_grads(ctx, ps, cs, 2);
    MT_OK(ctx, clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, ps, 2, op, CLMAD_MPI_DETERMINISTIC));
    read_grads(ctx, ps, g32, g64);
    /* The average: the rank-order sum divided by P, or multiplied by 1/P
     * (in the dtype or in double): the header leaves that open. */
    for (int i = 0; i < N32; i++) {
        float s = sum32(i, 0);
        float want = op == CLMAD_MPI_SUM ? s : s / (float)mt_size;
        float alt1 = op == CLMAD_MPI_SUM ? s : s * (1.0f / (float)mt_size);
        float alt2 = op == CLMAD_MPI_SUM ? s : (float)(s * (1.0 / mt_size));
        if (memcmp(&g32[i], &want, sizeof want) && memcmp(&g32[i], &alt1, sizeof alt1) &&
            memcmp(&g32[i], &alt2, sizeof alt2)) {
            mt_fail(__FILE__, __LINE__, "%s: f32 element %d: %.9g, expected the rank-order result %.9g", what, i,
                    g32[i], want);
            break;
        }
    }
    for (int i = 0; i < N64; i++) {
        double s = sum64(i, 0);
        double want = op == CLMAD_MPI_SUM ? s : s / mt_size;
        double alt = op == CLMAD_MPI_SUM ? s : s * (1.0 / mt_size);
        if (memcmp(&g64[i], &want, sizeof want) && memcmp(&g64[i], &alt, sizeof alt)) {
            mt_fail(__FILE__, __LINE__, "%s: f64 element %d: %.17g, expected the rank-order result %.17g", what,
                    i, g64[i], want);
            break;
        }
    }
    float r32[N32];
    double r64[N64];
    memcpy(r32, g32, sizeof r32);
    memcpy(r64, g64, sizeof r64);
    MPI_Bcast(r32, (int)sizeof r32, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Bcast(r64, (int)sizeof r64, MPI_BYTE, 0, MPI_COMM_WORLD);
    MT_CHECK(!memcmp(r32, g32, sizeof r32) && !memcmp(r64, g64, sizeof r64),
             "%s: the result differs from rank 0's", what);
}

int main(int argc, char **argv)
{
    mt_begin(&argc, &argv, "mpi_deterministic", 2);
    clmad_context *ctx = mt_context();

    int order_matters = 0;
    for (int i = 0; i < N32; i++)
        order_matters += sum32(i, 0) != sum32(i, 1);
    for (int i = 0; i < N64; i++)
        order_matters += sum64(i, 0) != sum64(i, 1);
    if (mt_size >= 3)
        MT_CHECK(order_matters > 0, "self-check: no element's sum depends on the order: the test proves nothing");
    if (mt_rank == 0)
        printf("%d of %d elements round differently in reverse rank order\n", order_matters, N32 + N64);

    size_t s32 = N32, s64[2] = {6, N64 / 6};
    double v[N32];
    clmad_tensor *ps[2], *cs[2];
    for (int i = 0; i < N32; i++)
        v[i] = 0.25 * i;
    ps[0] = mt_tensor(ctx, CLMAD_F32, 1, &s32, v);
    ps[1] = mt_tensor(ctx, CLMAD_F64, 2, s64, v);
    for (int i = 0; i < N32; i++)
        v[i] = grad_of(mt_rank, 0, i);
    cs[0] = mt_tensor(ctx, CLMAD_F32, 1, &s32, v);
    for (int i = 0; i < N64; i++)
        v[i] = grad_of(mt_rank, 1, i);
    cs[1] = mt_tensor(ctx, CLMAD_F64, 2, s64, v);
    if (!ps[0] || !ps[1] || !cs[0] || !cs[1])
        return mt_end();
    MT_OK(ctx, clmad_tensor_set_requires_grad(ps[0], 1));
    MT_OK(ctx, clmad_tensor_set_requires_grad(ps[1], 1));

    float a32[N32], b32[N32];
    double a64[N64], b64[N64];

    /* The plain allreduce: how many elements differ from the rank order. */
    mt_set_grads(ctx, ps, cs, 2);
    MT_OK(ctx, clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, ps, 2, CLMAD_MPI_SUM, 0));
    read_grads(ctx, ps, a32, a64);
    int plain_differs = 0;
    for (int i = 0; i < N32; i++) {
        float want = sum32(i, 0);
        plain_differs += memcmp(&a32[i], &want, sizeof want) != 0;
    }
    for (int i = 0; i < N64; i++) {
        double want = sum64(i, 0);
        plain_differs += memcmp(&a64[i], &want, sizeof want) != 0;
    }
    printf("rank %d: the plain allreduce differs from the rank-order sum in %d of %d elements\n", mt_rank,
           plain_differs, N32 + N64);
    const char *expect = getenv("CLMAD_MPI_TEST_ORDER_DIFFERS");
    if (expect && !strcmp(expect, "1") && mt_size >= 3)
        MT_CHECK(plain_differs > 0, "self-check: the plain allreduce adds in rank order here, so the test cannot "
                                    "tell the deterministic mode from it (is the ring algorithm set?)");

    round_trip(ctx, ps, cs, CLMAD_MPI_SUM, a32, a64, "sum, first call");
    round_trip(ctx, ps, cs, CLMAD_MPI_SUM, b32, b64, "sum, second call");
    MT_CHECK(!memcmp(a32, b32, sizeof a32) && !memcmp(a64, b64, sizeof a64),
             "sum: two calls on the same gradients differ");
    round_trip(ctx, ps, cs, CLMAD_MPI_AVERAGE, a32, a64, "average, first call");
    round_trip(ctx, ps, cs, CLMAD_MPI_AVERAGE, b32, b64, "average, second call");
    MT_CHECK(!memcmp(a32, b32, sizeof a32) && !memcmp(a64, b64, sizeof a64),
             "average: two calls on the same gradients differ");

    for (int k = 0; k < 2; k++) {
        clmad_tensor_release(ps[k]);
        clmad_tensor_release(cs[k]);
    }
    clmad_context_release(ctx);
    return mt_end();
}
