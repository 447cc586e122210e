/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_mpi's device placement: a device per local rank, and a context on it. */
#include "agreement.h"

#include <stdio.h>
#include <stdlib.h>

clmad_status clmad_mpi_device_for_rank(const clmad_device_info *list, size_t count, int local_rank,
                                       const char *spec, size_t *index)
{
    if (!index || (!list && count > 0) || local_rank < 0)
        return clmad_set_error(NULL, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_mpi_device_for_rank: NULL list or index, or local rank %d < 0", local_rank);
    if (spec && spec[0])
        return clmad_device_choose(list, count, spec, index);
    if (count == 0)
        return clmad_set_error(NULL, CLMAD_ERR_NO_DEVICE, "clmad_mpi_device_for_rank: no OpenCL device");
    size_t gpus = 0;
    for (size_t i = 0; i < count; i++)
        gpus += list[i].type == CLMAD_DEVICE_GPU;
    size_t pick = (size_t)local_rank % (gpus ? gpus : count);
    for (size_t i = 0; i < count; i++)
        if (!gpus || list[i].type == CLMAD_DEVICE_GPU) {
            if (pick-- == 0) {
                *index = i;
                return CLMAD_OK;
            }
        }
    return clmad_set_error(NULL, CLMAD_ERR_NO_DEVICE, "clmad_mpi_device_for_rank: no device left"); /* unreachable */
}

clmad_status clmad_mpi_context_create(MPI_Comm comm, const clmad_options *opt, clmad_context **ctx)
{
    /* First the agreement on the call (agreement.h): a rank that is in
     * another collective call of clmad_mpi fails with this one instead of
     * both waiting in different MPI calls. */
    agreement a;
    clmad_status agreed = clmad_mpi__start(&a, "clmad_mpi_context_create", NULL, comm);
    a.header[H_NO_GRAD] = -1;
    if (agreed == CLMAD_OK)
        agreed = clmad_mpi__agree(&a, CLMAD_OK, NULL, 0);
    free(a.all);
    if (agreed != CLMAD_OK)
        return agreed;
    /* The split is collective: every rank makes it before any check of its own. */
    MPI_Comm node;
    int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS)
        return clmad_mpi__failed(NULL, rc, "clmad_mpi_context_create: MPI_Comm_split_type");
    int local = 0;
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    if (!ctx)
        return clmad_set_error(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_mpi_context_create: ctx is NULL");
    clmad_options o;
    if (opt)
        o = *opt;
    else
        clmad_options_init(&o);
    const char *env = getenv("CLMAD_DEVICE");
    char spec[32];
    if (!o.device && !(env && env[0])) {
        clmad_device_info *list = NULL;
        size_t count = 0, index = 0;
        clmad_status st = clmad_device_list(&list, &count);
        if (st == CLMAD_OK)
            st = clmad_mpi_device_for_rank(list, count, local, NULL, &index);
        if (st == CLMAD_OK)
            snprintf(spec, sizeof spec, "%d:%d", list[index].platform_index, list[index].device_index);
        clmad_device_list_free(list);
        if (st != CLMAD_OK)
            return st;
        o.device = spec;
    }
    return clmad_context_create(&o, ctx);
}
