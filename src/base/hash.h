/* SPDX-License-Identifier: Apache-2.0 */
/* Non-cryptographic 64-bit hashing (FNV-1a) for cache keys and checksums. */
#ifndef CLMAD_HASH_H
#define CLMAD_HASH_H

#include <stddef.h>
#include <stdint.h>

#define CLMAD_HASH_INIT UINT64_C(0xcbf29ce484222325)

/* Continues hash h over n bytes. */
uint64_t clmad__hash_bytes(uint64_t h, const void *data, size_t n);

/* Continues hash h over a NUL-terminated string, including its NUL, so that
 * ("ab","c") and ("a","bc") hash differently. */
uint64_t clmad__hash_string(uint64_t h, const char *s);

#endif
