/* SPDX-License-Identifier: Apache-2.0 */
#include "base/hash.h"

#include <string.h>

uint64_t clmad__hash_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

uint64_t clmad__hash_string(uint64_t h, const char *s)
{
    return clmad__hash_bytes(h, s, strlen(s) + 1);
}
