/* SPDX-License-Identifier: Apache-2.0 */
#include "runtime/context.h"
#include "runtime/program_key.h"
#include "runtime/notice.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/strings.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* s past any line splices: a backslash (or the trigraph ??/), blanks, a
 * newline. The preprocessor joins such lines before it reads directives. */
static const char *skip_splices(const char *s)
{
    for (;;) {
        const char *p = s;
        if (p[0] == '\\')
            p++;
        else if (p[0] == '?' && p[1] == '?' && p[2] == '/')
            p += 3;
        else
            return s;
        while (*p == ' ' || *p == '\t' || *p == '\f' || *p == '\v')
            p++;
        if (*p == '\r')
            p++;
        if (*p != '\n')
            return s;
        s = p + 1;
    }
}

/*
 * 1 when the text may make the compiler read other files (#include,
 * #import, #embed, __has_include...): the key cannot cover what they hold,
 * so such programs stay out of the disk cache. Looks for the words
 * themselves, in any place, after joining split lines: no spelling of a
 * directive (`# include`, `%:include`, a comment between) escapes, and a
 * false alarm only costs a compile.
 */
static int reads_other_files(const char *text)
{
    static const char *const words[] = {"include", "include_next", "import", "embed",
                                        "__has_include", "__has_include_next", "__has_embed"};
    char word[24];
    size_t n = 0;
    for (const char *p = skip_splices(text);; p = skip_splices(p + 1)) {
        if (isalnum((unsigned char)*p) || *p == '_') {
            if (n < sizeof word)
                word[n] = *p;
            n++;
            continue;
        }
        if (n > 0 && n < sizeof word) {
            word[n] = '\0';
            for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
                if (strcmp(word, words[i]) == 0)
                    return 1;
        }
        n = 0;
        if (!*p)
            return 0;
    }
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

/* The name of the first kernel of a program's source, for the log. */
static void first_kernel_name(const char *source, char *name, size_t cap)
{
    const char *k = strstr(source, "__kernel void ");
    size_t n = 0;
    if (k) {
        k += strlen("__kernel void ");
        while (n + 1 < cap && (isalnum((unsigned char)k[n]) || k[n] == '_'))
            n++;
        memcpy(name, k, n);
    }
    name[n] = '\0';
    if (n == 0)
        snprintf(name, cap, "(no kernel)");
}

/* options and -D CLMAD__BUILD_ONCE=<a value no other build takes>
 * (process, time, count); malloc'ed, NULL when out of memory. */
static char *unique_options(const char *options)
{
    static atomic_ulong count;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char tag[96];
    snprintf(tag, sizeof tag, " -D CLMAD__BUILD_ONCE=%ldx%lldx%ldx%lu", (long)getpid(), (long long)now.tv_sec,
             (long)now.tv_nsec, (unsigned long)atomic_fetch_add(&count, 1ul));
    char *text = malloc(strlen(options) + strlen(tag) + 1);
    if (text)
        sprintf(text, "%s%s", options, tag);
    return text;
}

static clmad_status compile_from_source(clmad_context *ctx, const char *source, const char *options,
                                        cl_program *out, char **build_log)
{
    cl_int err;
    cl_program program = clCreateProgramWithSource(ctx->cl, 1, &source, NULL, &err);
    if (err != CL_SUCCESS)
        return clmad__fail_cl(ctx, err, "clCreateProgramWithSource");
    ctx->stats.programs_compiled++;
    clmad__notice_compile(ctx);
    char name[128];
    double start = 0;
    int logging = clmad__log_info();
    if (logging) {
        first_kernel_name(source, name, sizeof name);
        clmad__log("compiling OpenCL program %s on \"%s\" (not in the caches)", name, ctx->info.name);
        start = clmad__seconds();
    }
    err = clBuildProgram(program, 1, &ctx->device, options, NULL, NULL);
    if (logging)
        clmad__log("compiled %s in %.2f s%s", name, clmad__seconds() - start,
                   err == CL_SUCCESS ? "" : " (it failed)");
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
    clmad__read_compiler_env(ctx);
    uint64_t key = clmad__program_key(ctx, source, options);
    for (clmad_program_entry *e = ctx->programs.head; e; e = e->next) {
        if (e->key == key && strcmp(e->options, options) == 0 && strcmp(e->source, source) == 0) {
            ctx->stats.program_memory_hits++;
            e->users++;
            *program = e->program;
            return CLMAD_OK;
        }
    }

    clmad_program_entry *entry = calloc(1, sizeof *entry);
    if (entry) {
        entry->source = clmad__strdup(source);
        entry->options = clmad__strdup(options);
    }
    if (!entry || !entry->source || !entry->options) {
        if (entry) {
            free(entry->source);
            free(entry->options);
        }
        free(entry);
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory caching a program");
    }

    /* The disk cache holds programs whose key says all they are made of.
     * Others are compiled, on a driver whose own cache is keyed by source
     * and options alone (rusticl), with a define of their own: it would
     * otherwise serve the binary of an included file's old text. (POCL
     * keys its cache by the preprocessed source, and keeps its hits.) */
    const int reads_files = reads_other_files(source) || reads_other_files(options);
    size_t key_size = 0;
    char *key_text = ctx->cache_dir && !reads_files ? clmad__program_key_text(ctx, source, options, &key_size) : NULL;
    const int once = reads_files && ctx->driver_caches_by_source;
    char *unique = once ? unique_options(options) : NULL;
    if (once && !unique) {
        free(entry->source);
        free(entry->options);
        free(entry);
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory building a program");
    }
    const clmad_program_key disk = {key, key_text, key_size};
    cl_program built = NULL;
    if (key_text && clmad__disk_cache_load(ctx, &disk, &built)) {
        ctx->stats.programs_from_disk++;
    } else {
        clmad_status st = compile_from_source(ctx, source, unique ? unique : options, &built, build_log);
        free(unique);
        if (st != CLMAD_OK) {
            free(key_text);
            free(entry->source);
            free(entry->options);
            free(entry);
            return st;
        }
        if (key_text)
            clmad__disk_cache_store(ctx, &disk, built);
    }
    free(key_text);
    entry->key = key;
    entry->program = built;
    entry->users = 1;
    entry->next = ctx->programs.head;
    ctx->programs.head = entry;
    ctx->stats.programs_live++;
    *program = built;
    return CLMAD_OK;
}

static void entry_free(clmad_program_entry *e)
{
    clReleaseProgram(e->program);
    free(e->source);
    free(e->options);
    free(e);
}

void clmad__program_release(clmad_context *ctx, cl_program program)
{
    for (clmad_program_entry **link = &ctx->programs.head; *link; link = &(*link)->next) {
        clmad_program_entry *e = *link;
        if (e->program != program)
            continue;
        if (--e->users == 0) {
            *link = e->next;
            entry_free(e);
            ctx->stats.programs_live--;
        }
        return;
    }
}

void clmad__program_cache_clear(clmad_program_cache *cache)
{
    clmad_program_entry *e = cache->head;
    while (e) {
        clmad_program_entry *next = e->next;
        entry_free(e);
        e = next;
    }
    cache->head = NULL;
}
