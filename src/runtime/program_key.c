/* SPDX-License-Identifier: Apache-2.0 */
/* The key of a program in the caches: everything that changes its binary. */
#include "runtime/program_key.h"
#include "base/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fields of a program's key: everything that changes its binary. The
 * generated source carries clmad's code generation; the version covers the
 * rest of clmad (the file format, how binaries are built); the compiler
 * environment, the settings that implementations read from it. */
enum { KEY_FIELDS = 8 };

static void key_fields(const clmad_context *ctx, const char *source, const char *options,
                       const char *version, const char *fields[KEY_FIELDS])
{
    fields[0] = version;
    fields[1] = ctx->info.platform_name;
    fields[2] = ctx->info.name;
    fields[3] = ctx->info.version;
    fields[4] = ctx->info.driver_version;
    fields[5] = options;
    fields[6] = source;
    fields[7] = ctx->compiler_env ? ctx->compiler_env : "";
}

/* Environment variables that change the binaries an OpenCL implementation
 * builds (a binary built under one value must not be loaded under another):
 * Intel's CPU runtime's CL_CONFIG_* (CL_CONFIG_USE_VECTORIZER, ...),
 * POCL's kernel library, target and build flags, llvmpipe's vector width. */
static int changes_binaries(const char *entry)
{
    static const char *const prefixes[] = {"CL_CONFIG_",      "POCL_KERNELLIB_NAME=", "POCL_LLVM_CPU_NAME=",
                                           "POCL_EXTRA_BUILD_FLAGS=", "POCL_WORK_GROUP_METHOD=",
                                           "LP_NATIVE_VECTOR_WIDTH=", "RUSTICL_FEATURES="};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(entry, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ctx->compiler_env: those variables as "NAME=value\n", sorted; read once. */
void clmad__read_compiler_env(clmad_context *ctx)
{
    extern char **environ;
    if (ctx->compiler_env)
        return;
    size_t n = 0, bytes = 1;
    for (char **e = environ; e && *e; e++)
        if (changes_binaries(*e)) {
            n++;
            bytes += strlen(*e) + 1;
        }
    const char **list = n ? malloc(n * sizeof *list) : NULL;
    char *text = malloc(bytes);
    if ((n && !list) || !text) {
        free(list);
        free(text);
        return; /* keyed without: a later program tries again */
    }
    size_t k = 0, at = 0;
    for (char **e = environ; e && *e; e++)
        if (changes_binaries(*e))
            list[k++] = *e;
    if (n)
        qsort(list, n, sizeof *list, compare_strings);
    for (size_t i = 0; i < n; i++)
        at += (size_t)sprintf(text + at, "%s\n", list[i]);
    text[at] = '\0';
    free(list);
    ctx->compiler_env = text;
}

static void version_text(char *buf, size_t cap)
{
    snprintf(buf, cap, "clmad %d.%d.%d", CLMAD_VERSION_MAJOR, CLMAD_VERSION_MINOR,
             CLMAD_VERSION_PATCH);
}

/* The hash of the key: of its fields, each with its NUL. */
uint64_t clmad__program_key(const clmad_context *ctx, const char *source, const char *options)
{
    char version[64];
    version_text(version, sizeof version);
    const char *fields[KEY_FIELDS];
    key_fields(ctx, source, options, version, fields);
    uint64_t h = CLMAD_HASH_INIT;
    for (int i = 0; i < KEY_FIELDS; i++)
        h = clmad__hash_string(h, fields[i]);
    return h;
}

/* The key's text, as the disk cache stores it: the fields, each with its
 * NUL (so its hash is program_key). NULL when out of memory. */
char *clmad__program_key_text(const clmad_context *ctx, const char *source, const char *options,
                              size_t *size)
{
    char version[64];
    version_text(version, sizeof version);
    const char *fields[KEY_FIELDS];
    key_fields(ctx, source, options, version, fields);
    size_t n = 0;
    for (int i = 0; i < KEY_FIELDS; i++)
        n += strlen(fields[i]) + 1;
    char *text = malloc(n);
    if (!text)
        return NULL;
    char *at = text;
    for (int i = 0; i < KEY_FIELDS; i++) {
        size_t len = strlen(fields[i]) + 1;
        memcpy(at, fields[i], len);
        at += len;
    }
    *size = n;
    return text;
}

