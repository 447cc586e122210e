/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An outside program of the MPI component (built by tests/install_test.sh
 * against an installed clmad, through pkg-config clmad-mpi and through
 * find_package(clmad COMPONENTS mpi), and run with 2 ranks): every rank
 * starts from rank 0's parameter, takes the gradient of a loss of its own
 * (sum(w * c) with c = rank + 1: the gradient is c), and averages it over
 * the ranks. Exit status 1 on any rank when a number is off.
 */
#include <clmad_mpi.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    clmad_context *ctx = NULL;
    clmad_tensor *w = NULL, *c = NULL, *loss = NULL, *g = NULL;
    size_t shape[1] = {4};
    float wv[4], cv[4], out[4];
    for (int i = 0; i < 4; i++) {
        wv[i] = (float)(rank * 10 + i);
        cv[i] = (float)(rank + 1);
    }
    clmad_status st = clmad_mpi_context_create(MPI_COMM_WORLD, NULL, &ctx);
    if (st == CLMAD_OK)
        st = clmad_tensor_create(ctx, CLMAD_F32, 1, shape, wv, &w);
    if (st == CLMAD_OK)
        st = clmad_tensor_create(ctx, CLMAD_F32, 1, shape, cv, &c);
    if (st == CLMAD_OK)
        st = clmad_tensor_set_requires_grad(w, 1);
    if (st == CLMAD_OK)
        st = clmad_mpi_broadcast(ctx, MPI_COMM_WORLD, &w, 1, 0);
    if (st == CLMAD_OK)
        st = clmad_tensor_read(w, out, sizeof out);
    for (int i = 0; st == CLMAD_OK && i < 4; i++)
        bad |= out[i] != (float)i; /* rank 0's values */
    if (st == CLMAD_OK)
        st = clmad_dot(ctx, w, c, &loss);
    if (st == CLMAD_OK)
        st = clmad_backward(ctx, loss, NULL);
    if (st == CLMAD_OK)
        st = clmad_mpi_allreduce_grads(ctx, MPI_COMM_WORLD, &w, 1, CLMAD_MPI_AVERAGE, 0);
    if (st == CLMAD_OK)
        st = clmad_tensor_grad(w, &g);
    if (st == CLMAD_OK)
        st = clmad_tensor_read(g, out, sizeof out);
    for (int i = 0; st == CLMAD_OK && i < 4; i++)
        bad |= out[i] != (float)(size + 1) / 2; /* the mean of 1..size */
    if (st != CLMAD_OK)
        fprintf(stderr, "rank %d: %s: %s\n", rank, clmad_status_string(st), clmad_last_error(ctx));
    else if (bad)
        fprintf(stderr, "rank %d: wrong values\n", rank);
    else
        printf("rank %d of %d: broadcast and averaged gradient ok\n", rank, size);
    clmad_tensor_release(g);
    clmad_tensor_release(loss);
    clmad_tensor_release(c);
    clmad_tensor_release(w);
    clmad_context_release(ctx);

    int failed = st != CLMAD_OK || bad, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
