/* Tensors: shape, dtype and a device buffer from the pool. */
#ifndef CLMAD_TENSOR_H
#define CLMAD_TENSOR_H

#include "context.h"

struct clmad_tensor {
    clmad_context *ctx;
    int refcount;
    clmad_dtype dtype;
    int ndim;
    size_t shape[CLMAD_MAX_DIMS];
    size_t numel;
    cl_mem mem;        /* NULL for an empty tensor (numel == 0) */
    size_t capacity;   /* bytes of mem, as the pool made it */
};

/* Size in bytes of the tensor's elements. */
size_t clmad__tensor_bytes(const clmad_tensor *t);

/* Validates rank and shape and computes numel (guarding against overflow). */
clmad_status clmad__shape_numel(const clmad_context *ctx, int ndim, const size_t *shape,
                                size_t elem_size, size_t *numel);

#endif
