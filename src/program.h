/* OpenCL programs: build from source, in-memory cache, on-disk binary cache. */
#ifndef CLMAD_PROGRAM_H
#define CLMAD_PROGRAM_H

#include <stdint.h>

#include "error.h"

typedef struct clmad_program_entry {
    uint64_t key;
    char *source;
    char *options;
    cl_program program;
    struct clmad_program_entry *next;
} clmad_program_entry;

typedef struct clmad_program_cache {
    clmad_program_entry *head;
} clmad_program_cache;

/*
 * Returns a built program for (device of ctx, source, options): from the
 * in-memory cache, else from the on-disk cache, else compiled from source
 * (and then stored on disk). The cache owns *program; it lives as long as
 * ctx. On a compile failure returns CLMAD_ERR_BUILD with the compiler's log
 * in the message and, when build_log is not NULL, a malloc'ed copy of the
 * log in *build_log (the caller frees it).
 */
clmad_status clmad__program_get(clmad_context *ctx, const char *source, const char *options,
                                cl_program *program, char **build_log);

/* Releases every cached program. */
void clmad__program_cache_clear(clmad_program_cache *cache);

/* On-disk cache (program_disk_cache.c). Both return 1 on success, 0 when the
 * file is missing, unreadable, corrupt or stale (the caller rebuilds). */
int clmad__disk_cache_load(clmad_context *ctx, uint64_t key, uint64_t check, cl_program *program);
int clmad__disk_cache_store(clmad_context *ctx, uint64_t key, uint64_t check, cl_program program);

#endif
