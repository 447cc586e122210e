/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The generated program: prelude, helpers, the wrapper kernel (its
 * arguments are the list of clmad__kernel_arguments, codegen.h; its body
 * is codegen_body.c's), then the user's source and the one function that
 * calls into it.
 * Seeds are static: each chunk is its own variant, so the compiler sees the
 * constant 0/1 seeds and folds the partials that cannot be non-zero.
 */
#include "broadcast/codegen.h"
#include "base/embedded.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int clmad__variant_equal(const clmad_variant *a, const clmad_variant *b)
{
    if (a->mode != b->mode || a->dtype != b->dtype || a->n_inputs != b->n_inputs ||
        a->n_outputs != b->n_outputs || a->K != b->K || a->nd != b->nd ||
        a->write_values != b->write_values || a->adj_mask != b->adj_mask ||
        a->adj_scalar != b->adj_scalar || a->adj_scaled != b->adj_scaled || a->items != b->items ||
        a->row_runs != b->row_runs || a->div_by_mul != b->div_by_mul ||
        a->loss_weighted != b->loss_weighted || a->loss_ranges != b->loss_ranges || a->loss_raw != b->loss_raw ||
        a->loss_stages != b->loss_stages || a->loss_stage_raw != b->loss_stage_raw ||
        a->loss_adj != b->loss_adj || a->loss_lanes != b->loss_lanes || a->loss_terms != b->loss_terms ||
        a->loss_write_y != b->loss_write_y || a->loss_extras != b->loss_extras || a->loss_region != b->loss_region)
        return 0;
    size_t n = (size_t)a->n_inputs, K = (size_t)a->K, S = (size_t)a->loss_stages, E = (size_t)a->loss_extras;
    if (memcmp(a->loss_extra_stage, b->loss_extra_stage, E) || memcmp(a->loss_extra_input, b->loss_extra_input, E))
        return 0;
    if (memcmp(a->loss_stage_kernel, b->loss_stage_kernel, S * sizeof a->loss_stage_kernel[0]) ||
        memcmp(a->loss_stage_inputs, b->loss_stage_inputs, S) ||
        memcmp(a->loss_stage_scalars, b->loss_stage_scalars, S * sizeof a->loss_stage_scalars[0]))
        return 0;
    size_t U = (size_t)a->loss_user_grads;
    if (a->loss_user_grads != b->loss_user_grads || memcmp(a->loss_user_grad_stage, b->loss_user_grad_stage, U) ||
        memcmp(a->loss_user_grad_input, b->loss_user_grad_input, U) ||
        memcmp(a->loss_user_grad_raw, b->loss_user_grad_raw, U))
        return 0;
    if (memcmp(a->loss_stage, b->loss_stage, S) || memcmp(a->loss_stage_y, b->loss_stage_y, S) ||
        memcmp(a->loss_weight_scalar, b->loss_weight_scalar, S) || memcmp(a->loss_stage_wgrad, b->loss_stage_wgrad, S))
        return 0;
    return memcmp(a->access, b->access, n + E) == 0 && memcmp(a->integer, b->integer, n) == 0 &&
           memcmp(a->last_step, b->last_step, n + E) == 0 &&
           memcmp(a->slot, b->slot, n) == 0 && memcmp(a->accumulate, b->accumulate, K) == 0;
}

static void emit_prelude(clmad_strbuf *sb, const clmad_variant *v)
{
    int dbl = v->dtype == CLMAD_F64;
    clmad__sb_printf(sb, "#define CLMAD_REAL_DOUBLE %d\n", dbl);
    /* 16-bit tensors: T computes in float, each load widens and each
     * store rounds once (cl/real.clh's CLMAD__LD and CLMAD__ST). */
    if (v->dtype == CLMAD_F16 || v->dtype == CLMAD_BF16)
        clmad__sb_printf(sb, "#define CLMAD_STORE_16 %d\n", v->dtype == CLMAD_F16 ? 1 : 2);
    /* No a*b+c contracted into fma: each variant of a kernel (primal, dual
     * with any K, chunked or not) must round the same operations the same
     * way, or STORE, RECOMPUTE and chunking would differ in the last bit.
     * NVIDIA's compiler contracts differently from one variant to another. */
    clmad__sb_append(sb, "#pragma OPENCL FP_CONTRACT OFF\n");
    if (dbl)
        clmad__sb_append(sb, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    if (v->mode == CLMAD_MODE_SECOND)
        clmad__sb_append(sb, "#define CLMAD_ORDER 2\n");
    clmad__sb_printf(sb, "#define CLMAD_K %d\n#define CLMAD_FOR_EACH_PARTIAL(X)", v->K);
    for (int i = 0; i < v->K; i++)
        clmad__sb_printf(sb, " X(%d)", i);
    clmad__sb_append(sb, "\n#line 1 \"clmad_ad.clh\"\n");
    clmad__sb_append(sb, clmad__embedded_source("clmad_ad.clh"));
}

/* The wrapper's access to T (a constant, a seeded input, an input with its
 * tangent, the value, partial s). AD_INLINE: they vanish, and the seeds
 * stay constants the compiler folds. */
static void emit_helpers(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad__sb_append(sb, "AD_INLINE T clmad__const(real x) { return ad_const(x); }\n"
                         "AD_INLINE real clmad__val(T a) { return ad_val(a); }\n");
    for (int s = 0; s < v->K; s++) {
        clmad__sb_printf(sb, "AD_INLINE real clmad__d%d(T a) { return a.d%d; }\n", s, s);
        if (v->mode == CLMAD_MODE_PARTIALS || v->mode == CLMAD_MODE_VJP || v->mode == CLMAD_MODE_LOSS)
            clmad__sb_printf(sb, "AD_INLINE T clmad__seed%d(real x) { T r = ad_const(x); r.d%d = (real)1; "
                                 "return r; }\n", s, s);
        if (v->mode == CLMAD_MODE_SECOND)
            clmad__sb_printf(sb, "AD_INLINE real clmad__dt%d(T a) { return a.dt%d; }\n"
                                 "AD_INLINE T clmad__seed%d(real x, real t) { T r = ad_const(x); r.t = t; "
                                 "r.d%d = (real)1; return r; }\n", s, s, s, s);
    }
    if (v->mode == CLMAD_MODE_SECOND)
        clmad__sb_append(sb, "AD_INLINE real clmad__t(T a) { return a.t; }\n");
    if (v->mode == CLMAD_MODE_JVP)
        clmad__sb_append(sb, "AD_INLINE T clmad__tangent(real x, real t) { T r = ad_const(x); r.d0 = t; "
                             "return r; }\n");
    if (v->mode == CLMAD_MODE_SECOND)
        clmad__sb_append(sb, "AD_INLINE T clmad__tangent(real x, real t) { T r = ad_const(x); r.t = t; "
                             "return r; }\n");
}

/* The call of the user's function, through clmad__call: declared before
 * the wrapper kernel (AD_INLINE: it vanishes), defined after the user's
 * source as the one place that names the user's function. */
static void emit_call_head(clmad_strbuf *sb, const clmad_variant *v, const char *before)
{
    clmad__sb_printf(sb, "%s%s clmad__call(", before, v->n_outputs == 1 ? "T" : "void");
    clmad__emit_call_arguments(sb, v, "T ", "__private T *");
    clmad__sb_append(sb, ")");
}

/* "uchar" where v has a uchar parameter (an OpenCL typedef, which a user
 * macro may redefine; int and long are keywords), NULL-terminated. */
static void integer_words(const clmad_variant *v, const char **words)
{
    int n = 0;
    for (int j = 0; j < v->n_inputs && !n; j++)
        if (v->integer[j] == (char)CLMAD_U8)
            words[n++] = "uchar";
    words[n] = NULL;
}

/* After the user's source: the definition of clmad__call, whose few words
 * (T, void, return, __private) are set aside from the user's macros. */
static void emit_call_definition(clmad_strbuf *sb, const clmad_variant *v, const char *fn)
{
    static const char *const words[] = {"T", "void", "return", "__private", NULL};
    const char *integers[2];
    integer_words(v, integers);
    clmad__unmacro(sb, words);
    clmad__unmacro(sb, integers);
    clmad__sb_append(sb, "#line 1 \"clmad-call\"\n");
    emit_call_head(sb, v, "");
    clmad__sb_printf(sb, "\n{\n    %s%s(", v->n_outputs == 1 ? "return " : "", fn);
    clmad__emit_call_arguments(sb, v, "", "");
    clmad__sb_append(sb, ");\n}\n");
    clmad__remacro(sb, words);
    clmad__remacro(sb, integers);
}

/* A user's source under `#line 1 "name"`, its functions force-inlined
 * where the compiler takes the pragma (see clmad__generate_program);
 * returns the program line the source starts at. */
static int emit_source(clmad_strbuf *sb, const char *source, const char *name, int force_inline)
{
    if (force_inline)
        clmad__sb_append(sb, "\n#pragma clang attribute push "
                             "(__attribute__((always_inline)), apply_to = function)\n");
    clmad__sb_printf(sb, "#line 1 \"%s\"\n", name);
    int first_line = 1;
    for (size_t i = 0; sb->data && i < sb->len; i++)
        first_line += sb->data[i] == '\n';
    clmad__sb_append(sb, source);
    clmad__sb_append(sb, "\n");
    if (force_inline) {
        static const char *const words[] = {"pop", NULL};
        clmad__unmacro(sb, words);
        clmad__sb_append(sb, "#pragma clang attribute pop\n");
        clmad__remacro(sb, words);
    }
    return first_line;
}

/* #undef of each macro that source #defines, so that a later source sees
 * none of them. */
static void undefine_macros(clmad_strbuf *sb, const char *source)
{
    for (const char *c = source; *c;) {
        while (*c == ' ' || *c == '\t')
            c++;
        if (*c == '#') {
            c++;
            while (*c == ' ' || *c == '\t')
                c++;
            if (strncmp(c, "define", 6) == 0 && (c[6] == ' ' || c[6] == '\t')) {
                c += 6;
                while (*c == ' ' || *c == '\t')
                    c++;
                size_t len = 0;
                while (isalnum((unsigned char)c[len]) || c[len] == '_')
                    len++;
                if (len)
                    clmad__sb_printf(sb, "#undef %.*s\n", (int)len, c);
            }
        }
        while (*c && *c != '\n')
            c++;
        if (*c)
            c++;
    }
}

/* "T clmad__stage<s>(T clmad__a0, ...)": user stage s's call (LOSS). */
static void emit_stage_head(clmad_strbuf *sb, const clmad_variant *v, int s, const char *before)
{
    clmad__sb_printf(sb, "%sT clmad__stage%d(", before, s);
    for (int j = 0; j < v->loss_stage_inputs[s]; j++)
        clmad__sb_printf(sb, "%sT clmad__a%d", j ? ", " : "", j);
    clmad__sb_append(sb, ")");
}

/* User stage s of a loss kernel: its source after the broadcast's (and the
 * earlier stages'), none of their macros defined, its function renamed
 * clmad__user<s> so that it may share a name with theirs, then
 * clmad__stage<s>, which calls it. Names that clash otherwise fail the
 * build, and the loss then runs eagerly (ops/fused_loss.c). */
static void emit_user_stage(clmad_strbuf *sb, const clmad_variant *v, int s, const char *user_source,
                            int force_inline)
{
    undefine_macros(sb, user_source);
    for (int i = 0; i < s; i++)
        if (v->loss_stage[i] == CLMAD_STAGE_USER)
            undefine_macros(sb, v->loss_stage_source[i]);
    clmad__sb_printf(sb, "#define %s clmad__user%d\n", v->loss_stage_fn[s], s);
    char name[32];
    snprintf(name, sizeof name, "stage %d source", s);
    emit_source(sb, v->loss_stage_source[s], name, force_inline);
    clmad__sb_printf(sb, "#undef %s\n", v->loss_stage_fn[s]);
    static const char *const words[] = {"T", "return", NULL};
    clmad__unmacro(sb, words);
    clmad__sb_append(sb, "#line 1 \"clmad-call\"\n");
    emit_stage_head(sb, v, s, "");
    clmad__sb_printf(sb, "\n{\n    return clmad__user%d(", s);
    for (int j = 0; j < v->loss_stage_inputs[s]; j++)
        clmad__sb_printf(sb, "%sclmad__a%d", j ? ", " : "", j);
    clmad__sb_append(sb, ");\n}\n");
    clmad__remacro(sb, words);
    undefine_macros(sb, v->loss_stage_source[s]);
}

int clmad__generate_program(clmad_strbuf *sb, const clmad_variant *v, const char *user_source,
                            const char *fn_name, int force_inline)
{
    emit_prelude(sb, v);
    /* clang's first pass over the program cannot vectorise (POCL does, when
     * it compiles the kernel) and would warn that the wrapper loop's
     * vectorize request failed. */
    clmad__sb_append(sb, "#pragma clang diagnostic ignored \"-Wpass-failed\"\n");
    if (v->mode == CLMAD_MODE_STORED) {
        /* Stored partials only: the user's function is not called, and the
         * program is the same for every kernel (one entry in the caches). */
        clmad__sb_append(sb, "#line 1 \"clmad-generated\"\n");
        clmad__emit_signature(sb, v);
        clmad__emit_body(sb, v);
        return 0;
    }
    /* The whole wrapper kernel comes before the user's source, where no
     * user macro (get_global_id, ulong, __kernel, min, ...) or declaration
     * can change it; it reaches the user's function through clmad__call. */
    clmad__sb_append(sb, "#line 1 \"clmad-helpers\"\n");
    emit_helpers(sb, v);
    emit_call_head(sb, v, "AD_INLINE ");
    clmad__sb_append(sb, ";\n");
    for (int s = 0; v->mode == CLMAD_MODE_LOSS && s < v->loss_stages; s++)
        if (v->loss_stage[s] == CLMAD_STAGE_USER) {
            emit_stage_head(sb, v, s, "AD_INLINE ");
            clmad__sb_append(sb, ";\n");
        }
    clmad__sb_append(sb, "#line 1 \"clmad-generated\"\n");
    clmad__emit_signature(sb, v);
    if (v->mode == CLMAD_MODE_LOSS && v->loss_region)
        clmad__emit_region_body(sb, v);
    else if (v->mode == CLMAD_MODE_LOSS)
        clmad__emit_loss_body(sb, v);
    else
        clmad__emit_body(sb, v);
    /* Force-inline the user's functions: on POCL a dual-typed user function
     * left as a call keeps the work-item loop from vectorising (measured
     * 1.5-1.7x on the HM-LSTM cell, f32, K = 4). Only where the compiler is
     * known to accept the pragma (force_inline): NVIDIA's OpenCL compiler
     * reports clang 16 but rejects always_inline in `#pragma clang
     * attribute`, and GPU compilers inline such functions anyway. */
    const int first_line = emit_source(sb, user_source, "source", force_inline);
    emit_call_definition(sb, v, fn_name);
    for (int s = 0; v->mode == CLMAD_MODE_LOSS && s < v->loss_stages; s++)
        if (v->loss_stage[s] == CLMAD_STAGE_USER)
            emit_user_stage(sb, v, s, user_source, force_inline);
    return first_line;
}
