/* SPDX-License-Identifier: Apache-2.0 */
/* Dtype names: clmad's own ("f32") and the safetensors format's ("F32"). */
#include "io/safetensors.h"

#include <string.h>

/* Every dtype of the format, with its element size. A clmad dtype added to
 * the enum (CLMAD_I32, ...) is one row changed: supported 1 and its value. */
static const clmad_st_dtype formats[] = {
    {"F64", 8, 1, CLMAD_F64},  {"F32", 4, 1, CLMAD_F32},  {"F16", 2, 1, CLMAD_F16},
    {"BF16", 2, 1, CLMAD_BF16}, {"I64", 8, 1, CLMAD_I64},  {"U64", 8, 0, CLMAD_F32},
    {"I32", 4, 1, CLMAD_I32},  {"U32", 4, 0, CLMAD_F32},  {"I16", 2, 0, CLMAD_F32},
    {"U16", 2, 0, CLMAD_F32},  {"I8", 1, 0, CLMAD_F32},   {"U8", 1, 1, CLMAD_U8},
    {"BOOL", 1, 0, CLMAD_F32}, {"F8_E5M2", 1, 0, CLMAD_F32}, {"F8_E4M3", 1, 0, CLMAD_F32},
};

const clmad_st_dtype *clmad__st_dtype_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (strcmp(formats[i].name, name) == 0)
            return &formats[i];
    return NULL;
}

const char *clmad__st_dtype_of(clmad_dtype dtype)
{
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (formats[i].supported && formats[i].dtype == dtype)
            return formats[i].name;
    return NULL;
}

void clmad__st_to_little_endian(void *data, size_t n, size_t size)
{
    const uint16_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    if (first == 1 || size < 2)
        return; /* little-endian host */
    unsigned char *p = data;
    for (size_t i = 0; i < n; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}
