/* SPDX-License-Identifier: Apache-2.0 */
/* OpenCL programs: build from source, in-memory cache, on-disk binary cache. */
#ifndef CLMAD_PROGRAM_H
#define CLMAD_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/error.h"

typedef struct clmad_program_entry {
    uint64_t key;
    char *source;
    char *options;
    cl_program program;
    uint64_t users;                 /* clmad__program_get calls not yet released */
    struct clmad_program_entry *next;
} clmad_program_entry;

typedef struct clmad_program_cache {
    clmad_program_entry *head;
} clmad_program_cache;

/*
 * Returns a built program for (device of ctx, source, options): from the
 * in-memory cache, else from the on-disk cache, else compiled from source
 * (and then stored on disk). The cache owns *program. Each call is a use
 * of it, which clmad__program_release ends; a program whose uses all ended
 * leaves the cache (a user kernel's programs go with the kernel), one never
 * released (the library's own kernels) lives as long as ctx. On a compile failure returns CLMAD_ERR_BUILD with the compiler's log
 * in the message and, when build_log is not NULL, a malloc'ed copy of the
 * log in *build_log (the caller frees it).
 */
clmad_status clmad__program_get(clmad_context *ctx, const char *source, const char *options,
                                cl_program *program, char **build_log);

/* Ends a use of program (from clmad__program_get on ctx): the last one
 * releases it and drops it from the cache. */
void clmad__program_release(clmad_context *ctx, cl_program program);

/* Releases every cached program. */
void clmad__program_cache_clear(clmad_program_cache *cache);

/* On-disk cache (program_disk_cache.c). */

/* The bound on the size of a cache file: a larger one is not read. */
#define CLMAD_DISK_CACHE_MAX_BYTES (UINT64_C(256) << 20)

/* Opens ctx->cache_dir (made with mode 0700 when missing) and checks that
 * the user owns it and that group and others cannot write it. When it cannot
 * be used, frees and clears ctx->cache_dir (the disk cache is off) and notes
 * why in ctx->stats.disk_cache_problem. */
void clmad__disk_cache_open(clmad_context *ctx);

/* Closes what clmad__disk_cache_open opened. */
void clmad__disk_cache_close(clmad_context *ctx);

/* The key of a program: everything that changes its binary, as the bytes
 * of `size` in `text`; `hash` names its file. */
typedef struct clmad_program_key {
    uint64_t hash;
    const char *text;
    size_t size;
} clmad_program_key;

/* Both return 1 on success, 0 when the file is missing, unusable, corrupt
 * or for another key (the caller rebuilds and the file is removed), or when
 * the file cannot be written (counted and noted in ctx->stats). */
int clmad__disk_cache_load(clmad_context *ctx, const clmad_program_key *key, cl_program *program);
int clmad__disk_cache_store(clmad_context *ctx, const clmad_program_key *key, cl_program program);

#endif
