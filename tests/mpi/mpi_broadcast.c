/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_mpi_broadcast: every rank ends with the root's values, bitwise, for
 * f32 and f64 parameters of several shapes (a 0-d tensor and an empty one
 * among them), from rank 0 and from the last rank; the tensors keep their
 * identity (requires_grad, gradient). */
#include "mpi_support.h"

#include <stdio.h>
#include <string.h>

#define NP 8
#define MAXN 24

typedef struct {
    clmad_dtype dtype;
    int ndim;
    size_t shape[3];
} spec;

static const spec specs[NP] = {
    {CLMAD_F32, 0, {0}},      {CLMAD_F64, 0, {0}},       {CLMAD_F32, 1, {5}},    {CLMAD_F64, 2, {3, 4}},
    {CLMAD_F32, 3, {2, 3, 4}}, {CLMAD_F64, 1, {1}},      {CLMAD_F32, 2, {0, 3}}, {CLMAD_F32, 2, {4, 2}},
};

static size_t numel(const spec *s)
{
    size_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        n *= s->shape[i];
    return n;
}

/* Rank r's value of element i of parameter k: different on every rank, and
 * not exact in f32 (so that a conversion on the way would show). */
static double value(int r, int k, size_t i)
{
    return (r + 1) * 1000.0 + k * 10.0 + (double)i / 3.0;
}

/* Checks that every parameter holds rank root's values. */
static void check_values(clmad_tensor **ps, int root, const char *what)
{
    for (int k = 0; k < NP; k++) {
        double got[MAXN], want;
        size_t n = numel(&specs[k]);
        if (mt_read(ps[k], 0, got, n) != 0)
            continue;
        for (size_t i = 0; i < n; i++) {
            want = specs[k].dtype == CLMAD_F32 ? (double)(float)value(root, k, i) : value(root, k, i);
            if (memcmp(&got[i], &want, sizeof want) != 0) {
                mt_fail(__FILE__, __LINE__, "%s: param %d element %zu: %.17g, expected rank %d's %.17g", what,
                        k, i, got[i], root, want);
                break;
            }
        }
    }
}

int main(int argc, char **argv)
{
    mt_begin(&argc, &argv, "mpi_broadcast", 2);
    clmad_context *ctx = mt_context();

    clmad_tensor *ps[NP] = {0};
    for (int k = 0; k < NP; k++) {
        double vals[MAXN];
        for (size_t i = 0; i < numel(&specs[k]); i++)
            vals[i] = value(mt_rank, k, i);
        ps[k] = mt_tensor(ctx, specs[k].dtype, specs[k].ndim, specs[k].shape, vals);
    }
    for (int k = 0; k < NP; k++)
        if (!ps[k])
            return mt_end();

    /* Parameter 2 requires a gradient and has one: both must survive. */
    MT_OK(ctx, clmad_tensor_set_requires_grad(ps[2], 1));
    double cvals[5] = {0.5, -1, 2, 4, 8};
    clmad_tensor *c = mt_tensor(ctx, CLMAD_F32, 1, specs[2].shape, cvals);
    mt_set_grads(ctx, &ps[2], &c, 1);

    MT_OK(ctx, clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, ps, NP, 0));
    check_values(ps, 0, "broadcast from rank 0");
    MT_CHECK(clmad_tensor_requires_grad(ps[2]), "broadcast dropped requires_grad");
    double g[5];
    if (mt_read(ps[2], 1, g, 5) == 0)
        for (int i = 0; i < 5; i++)
            MT_CHECK(g[i] == cvals[i], "broadcast changed the gradient: element %d is %g, was %g", i, g[i],
                     cvals[i]);

    /* From the last rank, after every rank wrote its own values again. */
    for (int k = 0; k < NP; k++) {
        double vals[MAXN];
        size_t n = numel(&specs[k]);
        for (size_t i = 0; i < n; i++)
            vals[i] = value(mt_rank, k, i);
        clmad_tensor *t = mt_tensor(ctx, specs[k].dtype, specs[k].ndim, specs[k].shape, vals);
        if (t) {
            size_t bytes = n * clmad_dtype_size(specs[k].dtype);
            char host[MAXN * 8];
            MT_OK(ctx, clmad_tensor_read(t, host, sizeof host));
            MT_OK(ctx, clmad_tensor_write(ps[k], host, bytes));
        }
        clmad_tensor_release(t);
    }
    MT_OK(ctx, clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, ps, NP, mt_size - 1));
    check_values(ps, mt_size - 1, "broadcast from the last rank");

    /* Only the f64 parameters, in another order, from rank 0 (which holds
     * the last rank's values now), the other ranks' zeroed first; then an
     * empty list (a no-op that still matches up). */
    clmad_tensor *sub[3] = {ps[3], ps[1], ps[5]};
    if (mt_rank != 0)
        for (int k = 0; k < 3; k++) {
            double zero[MAXN] = {0};
            MT_OK(ctx, clmad_tensor_write(sub[k], zero, clmad_tensor_numel(sub[k]) * sizeof(double)));
        }
    MT_OK(ctx, clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, sub, 3, 0));
    for (int k = 0; k < 3; k++) {
        double got[MAXN];
        int pk = k == 0 ? 3 : k == 1 ? 1 : 5;
        size_t n = clmad_tensor_numel(sub[k]);
        if (mt_read(sub[k], 0, got, n) == 0)
            for (size_t i = 0; i < n; i++)
                MT_CHECK(got[i] == value(mt_size - 1, pk, i),
                         "f64 subset: param %d element %zu: %.17g, expected %.17g", pk, i, got[i],
                         value(mt_size - 1, pk, i));
    }
    MT_OK(ctx, clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, sub, 0, 0));

    clmad_tensor_release(c);
    for (int k = 0; k < NP; k++)
        clmad_tensor_release(ps[k]);
    clmad_context_release(ctx);
    return mt_end();
}
