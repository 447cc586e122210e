/* SPDX-License-Identifier: Apache-2.0 */
/* Safetensors files: the dtype table, the parsed header of an open file,
 * and the writer that clmad_save and clmad_optimizer_save share. */
#ifndef CLMAD_IO_SAFETENSORS_H
#define CLMAD_IO_SAFETENSORS_H

#include <stdio.h>

#include "clmad.h"

/* The header length is capped as in the reference implementation. */
#define CLMAD_SAFETENSORS_MAX_HEADER 100000000u

/* One dtype of the safetensors format: its name, its element size, and the
 * clmad dtype it maps to (supported 0: none yet). */
typedef struct clmad_st_dtype {
    const char *name;
    size_t size;
    int supported;
    clmad_dtype dtype;
} clmad_st_dtype;

/* The format's dtype called `name`, or NULL when the format has none. */
const clmad_st_dtype *clmad__st_dtype_by_name(const char *name);
/* The format's name of a clmad dtype, or NULL. */
const char *clmad__st_dtype_of(clmad_dtype dtype);

typedef struct clmad_st_tensor {
    char *name;
    const clmad_st_dtype *dtype;
    int ndim;
    size_t shape[CLMAD_MAX_DIMS];
    uint64_t begin, end; /* bytes, from the start of the data */
} clmad_st_tensor;

struct clmad_safetensors {
    FILE *file;
    char *path;
    uint64_t data_start;       /* 8 + header length */
    size_t count;
    clmad_st_tensor *tensors;  /* sorted by begin */
    size_t meta_count;
    char **meta_keys, **meta_values;
};

/* clmad_safetensors_open with its failure recorded on ctx (may be NULL)
 * and named by `call`. */
clmad_status clmad__st_open(const clmad_context *ctx, const char *call, const char *path,
                            clmad_safetensors **out);

/* The tensor called name in f, or NULL. */
const clmad_st_tensor *clmad__st_find(const clmad_safetensors *f, const char *name);

/* Reads the bytes of tensor e into host (e->end - e->begin bytes), in the
 * host's byte order. Failures recorded on ctx, named by call. */
clmad_status clmad__st_read_bytes(const clmad_context *ctx, const char *call, clmad_safetensors *f,
                                  const clmad_st_tensor *e, void *host);

/* Swaps the bytes of n elements of `size` bytes when the host is big-endian
 * (the format is little-endian); a no-op elsewhere. */
void clmad__st_to_little_endian(void *data, size_t n, size_t size);

/* clmad_load's work on an open file: the failure named by call. */
clmad_status clmad__st_load_into(clmad_context *ctx, const char *call, clmad_safetensors *f,
                                 const char *const *names, clmad_tensor *const *tensors, size_t n);

/* clmad_save without its guard: the failure recorded on ctx, named by call. */
clmad_status clmad__st_save(clmad_context *ctx, const char *call, const char *path, const char *const *names,
                            clmad_tensor *const *tensors, size_t n, const char *const *metadata);

#endif
