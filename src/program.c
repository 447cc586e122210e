#include "context.h"
#include "hash.h"

#include <stdlib.h>
#include <string.h>

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* The key covers everything that changes the binary: device, driver,
 * options and source. */
static uint64_t program_key(const clmad_context *ctx, uint64_t seed, const char *source,
                            const char *options)
{
    uint64_t h = clmad__hash_string(seed, ctx->info.platform_name);
    h = clmad__hash_string(h, ctx->info.name);
    h = clmad__hash_string(h, ctx->info.driver_version);
    h = clmad__hash_string(h, options);
    return clmad__hash_string(h, source);
}

static char *read_build_log(const clmad_context *ctx, cl_program program)
{
    size_t n = 0;
    clGetProgramBuildInfo(program, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = malloc(n + 1);
    if (!log)
        return NULL;
    if (clGetProgramBuildInfo(program, ctx->device, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS)
        n = 0;
    log[n] = '\0';
    return log;
}

static clmad_status compile_from_source(clmad_context *ctx, const char *source, const char *options,
                                        cl_program *out, char **build_log)
{
    cl_int err;
    cl_program program = clCreateProgramWithSource(ctx->cl, 1, &source, NULL, &err);
    if (err != CL_SUCCESS)
        return clmad__fail_cl(ctx, err, "clCreateProgramWithSource");
    ctx->stats.programs_compiled++;
    err = clBuildProgram(program, 1, &ctx->device, options, NULL, NULL);
    if (err == CL_SUCCESS) {
        *out = program;
        return CLMAD_OK;
    }
    char *log = read_build_log(ctx, program);
    clReleaseProgram(program);
    clmad_status st;
    if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS)
        st = clmad__fail(ctx, CLMAD_ERR_BUILD, "OpenCL C build failed on device \"%s\" (%s):\n%s",
                         ctx->info.name, clmad__cl_error_name(err), log ? log : "(no log)");
    else
        st = clmad__fail_cl(ctx, err, "clBuildProgram");
    if (build_log)
        *build_log = log;
    else
        free(log);
    return st;
}

clmad_status clmad__program_get(clmad_context *ctx, const char *source, const char *options,
                                cl_program *program, char **build_log)
{
    if (!options)
        options = "";
    if (build_log)
        *build_log = NULL;
    uint64_t key = program_key(ctx, CLMAD_HASH_INIT, source, options);
    for (clmad_program_entry *e = ctx->programs.head; e; e = e->next) {
        if (e->key == key && strcmp(e->options, options) == 0 && strcmp(e->source, source) == 0) {
            ctx->stats.program_memory_hits++;
            *program = e->program;
            return CLMAD_OK;
        }
    }

    clmad_program_entry *entry = calloc(1, sizeof *entry);
    if (entry) {
        entry->source = dup_string(source);
        entry->options = dup_string(options);
    }
    if (!entry || !entry->source || !entry->options) {
        if (entry) {
            free(entry->source);
            free(entry->options);
        }
        free(entry);
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory caching a program");
    }

    uint64_t check = program_key(ctx, CLMAD_HASH_INIT_ALT, source, options);
    cl_program built = NULL;
    if (clmad__disk_cache_load(ctx, key, check, &built)) {
        ctx->stats.programs_from_disk++;
    } else {
        clmad_status st = compile_from_source(ctx, source, options, &built, build_log);
        if (st != CLMAD_OK) {
            free(entry->source);
            free(entry->options);
            free(entry);
            return st;
        }
        clmad__disk_cache_store(ctx, key, check, built);
    }
    entry->key = key;
    entry->program = built;
    entry->next = ctx->programs.head;
    ctx->programs.head = entry;
    *program = built;
    return CLMAD_OK;
}

void clmad__program_cache_clear(clmad_program_cache *cache)
{
    clmad_program_entry *e = cache->head;
    while (e) {
        clmad_program_entry *next = e->next;
        clReleaseProgram(e->program);
        free(e->source);
        free(e->options);
        free(e);
        e = next;
    }
    cache->head = NULL;
}
