/* SPDX-License-Identifier: Apache-2.0 */
/* The key of a program in the in-memory and on-disk caches. */
#ifndef CLMAD_PROGRAM_KEY_H
#define CLMAD_PROGRAM_KEY_H

#include "runtime/context.h"

#include <stdint.h>

/* Reads, once per context, the environment variables that change the
 * binaries an implementation builds (ctx->compiler_env); part of the key. */
void clmad__read_compiler_env(clmad_context *ctx);

/* The hash of the key of (source, options) on ctx's device. */
uint64_t clmad__program_key(const clmad_context *ctx, const char *source, const char *options);

/* The key's text as the disk cache stores it: its fields, each with its NUL
 * (so that its hash is clmad__program_key); *size bytes, malloc'ed; NULL
 * when out of memory. */
char *clmad__program_key_text(const clmad_context *ctx, const char *source, const char *options, size_t *size);

#endif
