/* SPDX-License-Identifier: Apache-2.0 */
/* A kernel's cache of compiled variants: found by whole-variant equality,
 * else generated, built, and explained when the build fails. */
#include "broadcast/variants.h"
#include "base/log.h"
#include "runtime/context.h"
#include "runtime/program.h"

#include <stdio.h>
#include <stdlib.h>

static void variant_free(clmad_kernel *k, clmad_kernel_variant *kv)
{
    clReleaseKernel(kv->kernel);
    /* The program goes with the last kernel that used it (a second kernel
     * of the same source shares it); the library's own stay cached. */
    clmad__program_release(k->ctx, kv->program);
    free(kv);
}

/* The list in order of use, the latest first; past the cap the least
 * recently used goes (a program that makes ever new chains over one
 * kernel, lazy regions and loss forms, keeps what it uses). */
static void keep_latest(clmad_kernel *k)
{
    const int cap = k->ctx->variant_cap > 0 ? k->ctx->variant_cap : CLMAD_MAX_VARIANTS;
    clmad_kernel_variant **p = &k->variants;
    for (int n = 0; *p && n < cap; n++)
        p = &(*p)->next;
    while (*p) {
        clmad_kernel_variant *old = *p;
        *p = old->next;
        variant_free(k, old);
    }
}

clmad_status clmad__kernel_variant(clmad_kernel *k, const clmad_variant *v, cl_kernel *out)
{
    for (clmad_kernel_variant **p = &k->variants; *p; p = &(*p)->next)
        if (clmad__variant_equal(&(*p)->variant, v)) {
            clmad_kernel_variant *kv = *p;
            *p = kv->next; /* to the front */
            kv->next = k->variants;
            k->variants = kv;
            *out = kv->kernel;
            return CLMAD_OK;
        }

    clmad_context *ctx = k->ctx;
    if (ctx->inject_build_failure && ctx->inject_build_failure == (int)v->mode)
        return clmad__fail(ctx, CLMAD_ERR_BUILD, "clmad_broadcast(%s): a build failure injected for the '%c' variant",
                           k->fn_name, (char)v->mode);
    clmad_strbuf sb = {0};
    const int first_line = clmad__generate_program(&sb, v, k->source, k->fn_name, ctx->tuning.inline_pragma);
    if (sb.failed) {
        clmad__sb_free(&sb);
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory generating a kernel");
    }
    cl_program program;
    char *log = NULL;
    clmad_status st = clmad__program_get(ctx, sb.data, "", &program, &log);
    clmad__sb_free(&sb);
    if (st == CLMAD_ERR_BUILD) {
        char expected[160], integers[64] = "";
        int n_integers = 0;
        for (int j = 0; j < k->n_inputs; j++)
            n_integers += clmad__kernel_integer(k, j);
        if (n_integers)
            snprintf(integers, sizeof integers, " and %d integer parameters", n_integers);
        if (k->n_outputs == 1)
            snprintf(expected, sizeof expected, "T %s(%d T inputs%s)", k->fn_name, k->n_inputs - n_integers,
                     integers);
        else
            snprintf(expected, sizeof expected, "void %s(%d T inputs%s, then %d T * outputs)",
                     k->fn_name, k->n_inputs - n_integers, integers, k->n_outputs);
        int n_lines = 1;
        for (const char *c = k->source; *c; c++)
            n_lines += *c == '\n';
        char *mapped = log ? clmad__map_build_log(log, first_line, n_lines) : NULL;
        if (mapped) {
            free(log);
            log = mapped;
        }
        /* In a derivative variant, an error about T is an operator or a
         * builtin applied to a dual number where the front end did not
         * rewrite it: inside a function-like macro, or in a source it did
         * not parse. */
        const char *hint = v->K > 0 && log && clmad__log_blames_T(log)
                               ? "\nhint: T is a dual number in derivative variants: write ad_mul(x, y), "
                                 "ad_add(x, y), ... where the front end does not rewrite operators on T "
                                 "(inside a function-like macro: make it a helper function over T; in a "
                                 "source it did not parse), ad_sin(x) for builtins, and compare ad_val(x) "
                                 "(see the template language in README)"
                               : "";
        st = clmad__fail(ctx, CLMAD_ERR_BUILD,
                         "kernel \"%s\" does not compile on device \"%s\" (expected signature: %s; "
                         "\"source:LINE:COL\" is a position in your source):\n%s%s%s%s",
                         k->fn_name, ctx->info.name, expected, log ? log : "(no log)", hint,
                         k->lower_note ? "\nthe plain-syntax front end compiled this source as written, "
                                         "since it did not parse it:\n"
                                       : "",
                         k->lower_note ? k->lower_note : "");
        free(log);
        return st;
    }
    if (st != CLMAD_OK)
        return st;

    clmad_kernel_variant *kv = calloc(1, sizeof *kv);
    if (!kv) {
        clmad__program_release(ctx, program);
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory caching a kernel");
    }
    cl_int err;
    /* Some implementations compile at kernel creation, not at build
     * (rusticl: minutes for a kernel of 64 inputs): said when slow. */
    const double start = clmad__log_info() ? clmad__seconds() : 0;
    kv->kernel = clCreateKernel(program, clmad__kernel_name(v->mode), &err);
    if (start > 0 && clmad__seconds() - start > 0.5)
        clmad__log("creating kernel %s on \"%s\" took %.2f s (the implementation compiles there)",
                   clmad__kernel_name(v->mode), ctx->info.name, clmad__seconds() - start);
    if (err != CL_SUCCESS) {
        free(kv);
        clmad__program_release(ctx, program);
        return clmad__fail_cl(ctx, err, "clCreateKernel");
    }
    kv->program = program;
    kv->variant = *v;
    kv->next = k->variants;
    k->variants = kv;
    keep_latest(k);
    *out = kv->kernel;
    return CLMAD_OK;
}

void clmad__inject_build_failure(clmad_context *ctx, int mode)
{
    ctx->inject_build_failure = mode;
}

void clmad__variant_cap(clmad_context *ctx, int cap)
{
    ctx->variant_cap = cap;
}

int clmad__kernel_variants(const clmad_kernel *k)
{
    int n = 0;
    for (const clmad_kernel_variant *kv = k->variants; kv; kv = kv->next)
        n++;
    return n;
}

void clmad__kernel_variants_release(clmad_kernel *k)
{
    clmad_kernel_variant *kv = k->variants;
    while (kv) {
        clmad_kernel_variant *next = kv->next;
        variant_free(k, kv);
        kv = next;
    }
    k->variants = NULL;
}
