/* SPDX-License-Identifier: Apache-2.0 */
/* An open safetensors file: listing its entries and metadata, reading a
 * tensor's bytes, closing. */
#include "io/safetensors.h"
#include "runtime/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

size_t clmad_safetensors_count(const clmad_safetensors *file)
{
    return file ? file->count : 0;
}

clmad_status clmad_safetensors_entry_at(const clmad_safetensors *file, size_t index, clmad_safetensors_entry *entry)
{
    if (!file || !entry || index >= file->count)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_safetensors_entry_at: %s",
                           !file ? "file is NULL" : !entry ? "entry is NULL" : "index out of range");
    const clmad_st_tensor *t = &file->tensors[index];
    memset(entry, 0, sizeof *entry);
    entry->name = t->name;
    entry->file_dtype = t->dtype->name;
    entry->supported = t->dtype->supported;
    entry->dtype = t->dtype->dtype;
    entry->ndim = t->ndim;
    memcpy(entry->shape, t->shape, (size_t)t->ndim * sizeof *t->shape);
    return CLMAD_OK;
}

const char *clmad_safetensors_metadata(const clmad_safetensors *file, const char *key)
{
    if (!file || !key)
        return NULL;
    for (size_t i = 0; i < file->meta_count; i++)
        if (strcmp(file->meta_keys[i], key) == 0)
            return file->meta_values[i];
    return NULL;
}

const clmad_st_tensor *clmad__st_find(const clmad_safetensors *f, const char *name)
{
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

clmad_status clmad__st_read_bytes(const clmad_context *ctx, const char *call, clmad_safetensors *f,
                                  const clmad_st_tensor *e, void *host)
{
    uint64_t bytes = e->end - e->begin, at = f->data_start + e->begin;
    if (bytes == 0)
        return CLMAD_OK;
    errno = 0;
    if (at > (uint64_t)INT64_MAX || fseeko(f->file, (off_t)at, SEEK_SET) != 0 ||
        fread(host, 1, (size_t)bytes, f->file) != bytes)
        return clmad__fail(ctx, CLMAD_ERR_IO, "%s: %s: could not read tensor \"%s\" (%llu bytes at %llu): %s", call,
                           f->path, e->name, (unsigned long long)bytes, (unsigned long long)at,
                           errno ? strerror(errno) : "the file is shorter than when it was opened");
    clmad__st_to_little_endian(host, bytes / e->dtype->size, e->dtype->size);
    return CLMAD_OK;
}

void clmad_safetensors_close(clmad_safetensors *file)
{
    if (!file)
        return;
    if (file->file)
        fclose(file->file);
    for (size_t i = 0; i < file->count; i++)
        free(file->tensors[i].name);
    for (size_t i = 0; i < file->meta_count; i++) {
        free(file->meta_keys[i]);
        free(file->meta_values[i]);
    }
    free(file->tensors);
    free(file->meta_keys);
    free(file->meta_values);
    free(file->path);
    free(file);
}
