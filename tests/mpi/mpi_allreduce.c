/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_mpi_allreduce_grads with CLMAD_MPI_AVERAGE and CLMAD_MPI_SUM: each
 * rank sets known gradients (the loss clmad_dot(p, c_rank) has the gradient
 * c_rank, exactly), different on every rank; afterwards every rank holds
 * the mean (the sum) over the ranks, as computed here on the host. The
 * parameters mix f32 and f64 and take a 0-d one. The values are multiples
 * of 1/8 and small: their sums and means are exact in either dtype, in any
 * order of addition, so the comparison is exact. */
#include "mpi_support.h"

#include <stdio.h>

#define NP 5
#define MAXN 24

typedef struct {
    clmad_dtype dtype;
    int ndim;
    size_t shape[3];
} spec;

static const spec specs[NP] = {
    {CLMAD_F32, 2, {3, 4}}, {CLMAD_F64, 1, {5}}, {CLMAD_F32, 0, {0}}, {CLMAD_F64, 2, {2, 3}}, {CLMAD_F32, 1, {7}},
};

static size_t numel(const spec *s)
{
    size_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        n *= s->shape[i];
    return n;
}

/* Rank r's gradient of element i of parameter k. */
static double grad_of(int r, int k, size_t i)
{
    return (r + 1) * 0.125 * (double)((int)(i % 7) - 3) + k + (r == 1 ? 0.5 : 0.0);
}

static void check(clmad_tensor **ps, clmad_mpi_op op, const char *what)
{
    for (int k = 0; k < NP; k++) {
        double got[MAXN];
        size_t n = numel(&specs[k]);
        if (mt_read(ps[k], 1, got, n) != 0)
            continue;
        for (size_t i = 0; i < n; i++) {
            double sum = 0;
            for (int r = 0; r < mt_size; r++)
                sum += grad_of(r, k, i);
            double want = op == CLMAD_MPI_SUM ? sum : sum / mt_size;
            if (got[i] != want) {
                mt_fail(__FILE__, __LINE__, "%s: param %d (%s) element %zu: %.17g, expected %.17g", what, k,
                        specs[k].dtype == CLMAD_F32 ? "f32" : "f64", i, got[i], want);
                break;
            }
        }
    }
}

int main(int argc, char **argv)
{
    mt_begin(&argc, &argv, "mpi_allreduce", 2);
    if (mt_size != 2 && mt_size != 4)
        mt_fail(__FILE__, __LINE__, "exact means need 2 or 4 ranks (got %d)", mt_size);
    clmad_context *ctx = mt_context();

    clmad_tensor *ps[NP] = {0}, *cs[NP] = {0};
    for (int k = 0; k < NP; k++) {
        double vals[MAXN];
        size_t n = numel(&specs[k]);
        for (size_t i = 0; i < n; i++)
            vals[i] = 1.0 + (double)i; /* the parameters' values do not matter */
        ps[k] = mt_tensor(ctx, specs[k].dtype, specs[k].ndim, specs[k].shape, vals);
        for (size_t i = 0; i < n; i++)
            vals[i] = grad_of(mt_rank, k, i);
        cs[k] = mt_tensor(ctx, specs[k].dtype, specs[k].ndim, specs[k].shape, vals);
        if (ps[k])
            MT_OK(ctx, clmad_tensor_set_requires_grad(ps[k], 1));
    }
    for (int k = 0; k < NP; k++)
        if (!ps[k] || !cs[k])
            return mt_end();

    /* The gradients before: this rank's own. */
    mt_set_grads(ctx, ps, cs, NP);
    double g[MAXN];
    if (mt_read(ps[0], 1, g, 12) == 0)
        MT_CHECK(g[5] == grad_of(mt_rank, 0, 5), "set-up: gradient %.17g, expected %.17g", g[5],
                 grad_of(mt_rank, 0, 5));

    MT_OK(ctx, clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, ps, NP, CLMAD_MPI_AVERAGE, 0));
    check(ps, CLMAD_MPI_AVERAGE, "average");

    mt_set_grads(ctx, ps, cs, NP);
    MT_OK(ctx, clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, ps, NP, CLMAD_MPI_SUM, 0));
    check(ps, CLMAD_MPI_SUM, "sum");

    /* The parameters' values are untouched. */
    if (mt_read(ps[1], 0, g, 5) == 0)
        MT_CHECK(g[4] == 5.0, "allreduce changed a parameter's value: %.17g", g[4]);

    /* A second round on the same tensors (the staging memory is reused or
     * remade: either way the result is the same), f32 only, one parameter. */
    mt_set_grads(ctx, ps, cs, NP);
    MT_OK(ctx, clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, &ps[4], 1, CLMAD_MPI_SUM, 0));
    if (mt_read(ps[4], 1, g, 7) == 0) {
        double sum = 0;
        for (int r = 0; r < mt_size; r++)
            sum += grad_of(r, 4, 6);
        MT_CHECK(g[6] == sum, "one parameter: %.17g, expected %.17g", g[6], sum);
    }
    /* The others were not in the list: still this rank's own gradient. */
    if (mt_read(ps[0], 1, g, 12) == 0)
        MT_CHECK(g[5] == grad_of(mt_rank, 0, 5), "a parameter outside the list changed: %.17g, expected %.17g",
                 g[5], grad_of(mt_rank, 0, 5));

    for (int k = 0; k < NP; k++) {
        clmad_tensor_release(ps[k]);
        clmad_tensor_release(cs[k]);
    }
    clmad_context_release(ctx);
    return mt_end();
}
