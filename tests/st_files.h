/* SPDX-License-Identifier: Apache-2.0 */
/* Files by hand for the safetensors tests. */
#ifndef CLMAD_TEST_ST_FILES_H
#define CLMAD_TEST_ST_FILES_H

#include "support.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline char *path_in(const char *dir, const char *name)
{
    static char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static inline void write_bytes(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, size, f), size);
    cr_assert_eq(fclose(f), 0);
}

static inline unsigned char *read_bytes(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(*size + 1);
    cr_assert_eq(fread(data, 1, *size, f), *size);
    fclose(f);
    return data;
}

/* A file of an 8-byte length `n_declared`, then header, then data. */
static inline void write_raw(const char *path, uint64_t n_declared, const char *header, const void *data, size_t data_size)
{
    size_t h = strlen(header);
    unsigned char *buf = malloc(8 + h + data_size + 1);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(n_declared >> (8 * i));
    memcpy(buf + 8, header, h);
    if (data_size)
        memcpy(buf + 8 + h, data, data_size);
    write_bytes(path, buf, 8 + h + data_size);
    free(buf);
}

static inline void write_file(const char *path, const char *header, const void *data, size_t data_size)
{
    write_raw(path, strlen(header), header, data, data_size);
}

#endif
