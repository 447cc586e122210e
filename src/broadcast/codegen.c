/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Generated kernel arguments, in order:
 *   ulong n;  out values [n_outputs];  PARTIALS: partials [n_outputs][K]
 *   (output-major) | JVP: out tangents [n_outputs];  inputs [n_inputs];
 *   JVP: tangents of the inputs that have one;
 *   VJP and STORED: (instead of values and partials) adjoints of the outputs
 *   present [popcount(adj_mask)], each followed by its scale when adj_scaled
 *   has its bit, then gradient targets [K];  STORED: then the stored partials
 *   of the outputs present [popcount(adj_mask)][K] and no inputs;  when any
 *   input is strided: dims [nd] then, per strided input, strides [nd].
 * Seeds are static: each chunk is its own variant, so the compiler sees the
 * constant 0/1 seeds and folds the partials that cannot be non-zero.
 */
#include "broadcast/codegen.h"
#include "base/embedded.h"

#include <string.h>

int clmad__variant_equal(const clmad_variant *a, const clmad_variant *b)
{
    if (a->mode != b->mode || a->dtype != b->dtype || a->n_inputs != b->n_inputs ||
        a->n_outputs != b->n_outputs || a->K != b->K || a->nd != b->nd ||
        a->write_values != b->write_values || a->adj_mask != b->adj_mask ||
        a->adj_scalar != b->adj_scalar || a->adj_scaled != b->adj_scaled || a->items != b->items ||
        a->row_runs != b->row_runs)
        return 0;
    size_t n = (size_t)a->n_inputs, K = (size_t)a->K;
    return memcmp(a->access, b->access, n) == 0 && memcmp(a->slot, b->slot, n) == 0 &&
           memcmp(a->accumulate, b->accumulate, K) == 0;
}

static void emit_prelude(clmad_strbuf *sb, const clmad_variant *v)
{
    int dbl = v->dtype == CLMAD_F64;
    clmad__sb_printf(sb, "#define CLMAD_REAL_DOUBLE %d\n", dbl);
    /* No a*b+c contracted into fma: each variant of a kernel (primal, dual
     * with any K, chunked or not) must round the same operations the same
     * way, or STORE, RECOMPUTE and chunking would differ in the last bit.
     * NVIDIA's compiler contracts differently from one variant to another. */
    clmad__sb_append(sb, "#pragma OPENCL FP_CONTRACT OFF\n");
    if (dbl)
        clmad__sb_append(sb, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    clmad__sb_printf(sb, "#define CLMAD_K %d\n#define CLMAD_FOR_EACH_PARTIAL(X)", v->K);
    for (int i = 0; i < v->K; i++)
        clmad__sb_printf(sb, " X(%d)", i);
    clmad__sb_append(sb, "\n#line 1 \"clmad_ad.clh\"\n");
    clmad__sb_append(sb, clmad__embedded_source("clmad_ad.clh"));
}

const char *clmad__kernel_name(clmad_mode mode)
{
    switch (mode) {
    case CLMAD_MODE_PRIMAL: return "clmad_bcast_primal";
    case CLMAD_MODE_PARTIALS: return "clmad_bcast_partials";
    case CLMAD_MODE_JVP: return "clmad_bcast_jvp";
    case CLMAD_MODE_VJP: return "clmad_bcast_vjp";
    default: return "clmad_bcast_stored";
    }
}

static void emit_signature(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad__sb_printf(sb, "__kernel void %s(ulong clmad__n", clmad__kernel_name(v->mode));
    if (v->mode == CLMAD_MODE_VJP || v->mode == CLMAD_MODE_STORED) {
        for (int o = 0; o < v->n_outputs; o++)
            if (v->adj_mask & (1u << o)) {
                clmad__sb_printf(sb, ",\n    __global const real *restrict clmad__adj%d", o);
                if (v->adj_scaled & (1u << o))
                    clmad__sb_printf(sb, ", __global const real *restrict clmad__adjs%d", o);
            }
        for (int s = 0; s < v->K; s++)
            clmad__sb_printf(sb, ",\n    __global real *restrict clmad__g%d", s);
    } else {
        for (int o = 0; o < v->n_outputs; o++)
            clmad__sb_printf(sb, ",\n    __global real *restrict clmad__y%d", o);
    }
    if (v->mode == CLMAD_MODE_PARTIALS)
        for (int o = 0; o < v->n_outputs; o++)
            for (int s = 0; s < v->K; s++)
                clmad__sb_printf(sb, ",\n    __global real *restrict clmad__p%d_%d", o, s);
    if (v->mode == CLMAD_MODE_JVP)
        for (int o = 0; o < v->n_outputs; o++)
            clmad__sb_printf(sb, ",\n    __global real *restrict clmad__ty%d", o);
    if (v->mode == CLMAD_MODE_STORED) {
        for (int o = 0; o < v->n_outputs; o++)
            if (v->adj_mask & (1u << o))
                for (int s = 0; s < v->K; s++)
                    clmad__sb_printf(sb, ",\n    __global const real *restrict clmad__p%d_%d", o, s);
        clmad__sb_append(sb, ")\n");
        return;
    }
    for (int j = 0; j < v->n_inputs; j++)
        clmad__sb_printf(sb, ",\n    __global const real *restrict clmad__x%d", j);
    if (v->mode == CLMAD_MODE_JVP)
        for (int j = 0; j < v->n_inputs; j++)
            if (v->slot[j])
                clmad__sb_printf(sb, ",\n    __global const real *restrict clmad__tx%d", j);
    int strided = 0;
    for (int j = 0; j < v->n_inputs; j++)
        strided |= v->access[j] == CLMAD_ACCESS_STRIDED;
    if (strided) {
        for (int d = 0; d < v->nd; d++)
            clmad__sb_printf(sb, ", ulong clmad__dim%d", d);
        for (int j = 0; j < v->n_inputs; j++)
            if (v->access[j] == CLMAD_ACCESS_STRIDED)
                for (int d = 0; d < v->nd; d++)
                    clmad__sb_printf(sb, ", ulong clmad__s%d_%d", j, d);
    }
    clmad__sb_append(sb, ")\n");
}

/* The index expression at which input j is read. */
static void emit_index(clmad_strbuf *sb, const clmad_variant *v, int j)
{
    switch (v->access[j]) {
    case CLMAD_ACCESS_SCALAR:
        clmad__sb_append(sb, "0");
        break;
    case CLMAD_ACCESS_FULL:
        clmad__sb_append(sb, "clmad__e");
        break;
    default:
        if (v->row_runs == CLMAD_ROWS_ALIGNED) {
            clmad__sb_printf(sb, "clmad__row0_%d + clmad__cl * clmad__s%d_%d", j, j, v->nd - 1);
            break;
        }
        if (v->row_runs) {
            clmad__sb_printf(sb, "(clmad__next_row ? clmad__row1_%d : clmad__row0_%d) + clmad__cl * clmad__s%d_%d",
                             j, j, j, v->nd - 1);
            break;
        }
        for (int d = 0; d < v->nd; d++)
            clmad__sb_printf(sb, "%sclmad__c%d * clmad__s%d_%d", d ? " + " : "", d, j, d);
    }
}

/* g_s (+)= sum over the outputs o present of adj_o * (d out_o / d slot s),
 * the derivative being the stored partial (STORED) or partial s of the dual
 * output (VJP, through its helper: emit_helpers). One expression for
 * VJP and STORED, so that RECOMPUTE and STORE agree bitwise. A scaled
 * adjoint is (adj * scale) before the product, as the expanded adjoint it
 * stands for would have been. */
static void emit_gradients(clmad_strbuf *sb, const clmad_variant *v)
{
    for (int s = 0; s < v->K; s++) {
        clmad__sb_printf(sb, "    {\n        const real clmad__v =");
        const char *sep = " ";
        for (int o = 0; o < v->n_outputs; o++) {
            if (!(v->adj_mask & (1u << o)))
                continue;
            const char *at = v->adj_scalar & (1u << o) ? "0" : "clmad__e";
            if (v->adj_scaled & (1u << o))
                clmad__sb_printf(sb, "%s(clmad__adj%d[%s] * clmad__adjs%d[0]) * ", sep, o, at, o);
            else
                clmad__sb_printf(sb, "%sclmad__adj%d[%s] * ", sep, o, at);
            if (v->mode == CLMAD_MODE_STORED)
                clmad__sb_printf(sb, "clmad__p%d_%d[clmad__e]", o, s);
            else
                clmad__sb_printf(sb, "clmad__d%d(clmad__b%d)", s, o);
            sep = " + ";
        }
        if (v->accumulate[s])
            clmad__sb_printf(sb, ";\n        clmad__g%d[clmad__e] = clmad__g%d[clmad__e] + clmad__v;\n    }\n",
                             s, s);
        else
            clmad__sb_printf(sb, ";\n        clmad__g%d[clmad__e] = clmad__v;\n    }\n", s);
    }
}

/* Before a run's loop (row_runs): the column of `first` in the last
 * dimension, and per strided input the offsets of the row of `first` and
 * (unless runs are aligned with rows) of the next row (coordinates over the
 * other dimensions, last fastest). */
static void emit_row_offsets(clmad_strbuf *sb, const clmad_variant *v)
{
    const int L = v->nd - 1;
    clmad__sb_printf(sb, "    const ulong clmad__col0 = clmad__first %% clmad__dim%d;\n", L);
    for (int which = 0; which < (v->row_runs == CLMAD_ROWS_ALIGNED ? 1 : 2); which++) {
        clmad__sb_printf(sb, "    ulong clmad__row%d_r = clmad__first / clmad__dim%d + %d;\n", which, L,
                         which);
        for (int j = 0; j < v->n_inputs; j++)
            if (v->access[j] == CLMAD_ACCESS_STRIDED)
                clmad__sb_printf(sb, "    ulong clmad__row%d_%d = 0;\n", which, j);
        for (int d = L - 1; d >= 0; d--) {
            clmad__sb_printf(sb, "    {\n        const ulong clmad__c = clmad__row%d_r %% clmad__dim%d;\n", which, d);
            for (int j = 0; j < v->n_inputs; j++)
                if (v->access[j] == CLMAD_ACCESS_STRIDED)
                    clmad__sb_printf(sb, "        clmad__row%d_%d += clmad__c * clmad__s%d_%d;\n", which, j, j, d);
            clmad__sb_printf(sb, "        clmad__row%d_r /= clmad__dim%d;\n    }\n", which, d);
        }
    }
}

/* Around a pragma after the user's source: clang expands macros in a
 * pragma's arguments, so the user's macros named like them (`#define pop`)
 * are set aside for the pragma's line (`words`, NULL-terminated). */
static void unmacro(clmad_strbuf *sb, const char *const *words)
{
    for (; *words; words++)
        clmad__sb_printf(sb, "#pragma push_macro(\"%s\")\n#undef %s\n", *words, *words);
}

static void remacro(clmad_strbuf *sb, const char *const *words)
{
    for (; *words; words++)
        clmad__sb_printf(sb, "#pragma pop_macro(\"%s\")\n", *words);
}

static void emit_body(clmad_strbuf *sb, const clmad_variant *v, const char *fn)
{
    if (v->items > 1) {
        /* A loop over this work-item's elements that clang's loop vectoriser
         * vectorises before POCL's work-item loops are formed (see
         * CLMAD_ITEMS_PER_WORK_ITEM). Elements are independent: each reads
         * and writes its own index only. No min(): the user may define it
         * as a macro. */
        clmad__sb_printf(sb, "{\n    const ulong clmad__first = get_global_id(0) * %dUL;\n"
                             "    const ulong clmad__last = clmad__first + %dUL < clmad__n ? "
                             "clmad__first + %dUL : clmad__n;\n",
                         v->items, v->items, v->items);
        if (v->row_runs)
            emit_row_offsets(sb, v);
        /* Two 256-bit registers per value (16 floats, 8 doubles): on the
         * HM-LSTM cell 1.3x faster than the vectoriser's own choice of one
         * (the transcendental functions are latency-bound chains). */
        static const char *const words[] = {"vectorize", "assume_safety", "vectorize_width", "interleave",
                                            "disable", NULL};
        unmacro(sb, words);
        clmad__sb_printf(sb, "    #pragma clang loop vectorize(assume_safety) vectorize_width(%d) "
                             "interleave(disable)\n"
                             "    for (ulong clmad__e = clmad__first; clmad__e < clmad__last; clmad__e++) {\n",
                         v->dtype == CLMAD_F64 ? 8 : 16);
        remacro(sb, words);
    } else {
        clmad__sb_append(sb, "{\n    const ulong clmad__e = get_global_id(0);\n"
                             "    if (clmad__e >= clmad__n)\n        return;\n    {\n");
    }
    if (v->mode == CLMAD_MODE_STORED) {
        emit_gradients(sb, v);
        clmad__sb_append(sb, "    }\n}\n");
        return;
    }
    int strided = 0;
    for (int j = 0; j < v->n_inputs; j++)
        strided |= v->access[j] == CLMAD_ACCESS_STRIDED;
    if (strided && v->row_runs == CLMAD_ROWS_ALIGNED) {
        clmad__sb_append(sb, "    const ulong clmad__cl = clmad__col0 + (clmad__e - clmad__first);\n");
    } else if (strided && v->row_runs) {
        /* Runs aligned with rows (the last dimension is a multiple of
         * `items`) stay in the row of `first`: the index is affine in e,
         * which the vectoriser turns into wide loads when the stride is 1.
         * Otherwise the run first..last crosses at most one boundary of the
         * last dimension (its size is at least `items`): the offsets of the rows
         * of `first` and of the next were formed before the loop, and an
         * element picks one by a compare, with no division. */
        const int L = v->nd - 1;
        clmad__sb_printf(sb, "    const ulong clmad__k = clmad__e - clmad__first;\n"
                             "    const int clmad__next_row = clmad__col0 + clmad__k >= clmad__dim%d;\n"
                             "    const ulong clmad__cl = clmad__col0 + clmad__k - "
                             "(clmad__next_row ? clmad__dim%d : 0);\n",
                         L, L);
    } else if (strided) {
        /* Coordinates of e over the collapsed dimensions, last fastest. */
        clmad__sb_append(sb, "    ulong clmad__r = clmad__e;\n");
        for (int d = v->nd - 1; d > 0; d--)
            clmad__sb_printf(sb, "    const ulong clmad__c%d = clmad__r %% clmad__dim%d;\n"
                                 "    clmad__r /= clmad__dim%d;\n", d, d, d);
        clmad__sb_append(sb, "    const ulong clmad__c0 = clmad__r;\n");
    }
    /* Inputs through the helpers of emit_helpers: no field of T is named
     * after the user's source. */
    for (int j = 0; j < v->n_inputs; j++) {
        const int seeded = (v->mode == CLMAD_MODE_PARTIALS || v->mode == CLMAD_MODE_VJP) && v->slot[j] >= 0;
        const int tangent = v->mode == CLMAD_MODE_JVP && v->slot[j];
        if (seeded)
            clmad__sb_printf(sb, "    T clmad__a%d = clmad__seed%d(clmad__x%d[", j, v->slot[j], j);
        else if (tangent)
            clmad__sb_printf(sb, "    T clmad__a%d = clmad__tangent(clmad__x%d[", j, j);
        else
            clmad__sb_printf(sb, "    T clmad__a%d = clmad__const(clmad__x%d[", j, j);
        emit_index(sb, v, j);
        if (tangent) {
            clmad__sb_printf(sb, "], clmad__tx%d[", j);
            emit_index(sb, v, j);
        }
        clmad__sb_append(sb, "]);\n");
    }
    for (int o = 0; o < v->n_outputs; o++)
        clmad__sb_printf(sb, "    T clmad__b%d;\n", o);
    if (v->n_outputs == 1)
        clmad__sb_printf(sb, "    clmad__b0 = %s(", fn);
    else
        clmad__sb_printf(sb, "    %s(", fn);
    for (int j = 0; j < v->n_inputs; j++)
        clmad__sb_printf(sb, "%sclmad__a%d", j ? ", " : "", j);
    if (v->n_outputs > 1)
        for (int o = 0; o < v->n_outputs; o++)
            clmad__sb_printf(sb, ", &clmad__b%d", o);
    clmad__sb_append(sb, ");\n");
    if (v->mode == CLMAD_MODE_VJP) {
        emit_gradients(sb, v);
        clmad__sb_append(sb, "    }\n}\n");
        return;
    }
    for (int o = 0; o < v->n_outputs; o++) {
        if (v->write_values)
            clmad__sb_printf(sb, "    clmad__y%d[clmad__e] = clmad__val(clmad__b%d);\n", o, o);
        if (v->mode == CLMAD_MODE_PARTIALS)
            for (int s = 0; s < v->K; s++)
                clmad__sb_printf(sb, "    clmad__p%d_%d[clmad__e] = clmad__d%d(clmad__b%d);\n", o, s, s, o);
        if (v->mode == CLMAD_MODE_JVP)
            clmad__sb_printf(sb, "    clmad__ty%d[clmad__e] = clmad__d0(clmad__b%d);\n", o, o);
    }
    clmad__sb_append(sb, "    }\n}\n");
}

/* Before the user's source, where its macros cannot reach them: the
 * wrapper's access to T (a constant, a seeded input, an input with its
 * tangent, the value, partial s), so that it names no field of T after
 * the user's source. AD_INLINE: they vanish, and the seeds stay constants
 * the compiler folds. */
static void emit_helpers(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad__sb_append(sb, "AD_INLINE T clmad__const(real x) { return ad_const(x); }\n"
                         "AD_INLINE real clmad__val(T a) { return ad_val(a); }\n");
    for (int s = 0; s < v->K; s++) {
        clmad__sb_printf(sb, "AD_INLINE real clmad__d%d(T a) { return a.d%d; }\n", s, s);
        if (v->mode == CLMAD_MODE_PARTIALS || v->mode == CLMAD_MODE_VJP)
            clmad__sb_printf(sb, "AD_INLINE T clmad__seed%d(real x) { T r = ad_const(x); r.d%d = (real)1; "
                                 "return r; }\n", s, s);
    }
    if (v->mode == CLMAD_MODE_JVP)
        clmad__sb_append(sb, "AD_INLINE T clmad__tangent(real x, real t) { T r = ad_const(x); r.d0 = t; "
                             "return r; }\n");
}

int clmad__generate_program(clmad_strbuf *sb, const clmad_variant *v, const char *user_source,
                            const char *fn_name, int force_inline)
{
    emit_prelude(sb, v);
    if (v->mode == CLMAD_MODE_STORED) {
        /* Stored partials only: the user's function is not called, and the
         * program is the same for every kernel (one entry in the caches). */
        clmad__sb_append(sb, "#pragma clang diagnostic ignored \"-Wpass-failed\"\n"
                             "#line 1 \"clmad-generated\"\n");
        emit_signature(sb, v);
        emit_body(sb, v, fn_name);
        return 0;
    }
    /* clang's first pass over the program cannot vectorise (POCL does, when
     * it compiles the kernel) and would warn that the wrapper loop's
     * vectorize request failed. Here, where the user's macros cannot
     * reach it. */
    clmad__sb_append(sb, "#pragma clang diagnostic ignored \"-Wpass-failed\"\n"
                         "#line 1 \"clmad-helpers\"\n");
    emit_helpers(sb, v);
    /* Force-inline the user's functions: on POCL a dual-typed user function
     * left as a call keeps the work-item loop from vectorising (measured
     * 1.5-1.7x on the HM-LSTM cell, f32, K = 4). Only where the compiler is
     * known to accept the pragma (force_inline): NVIDIA's OpenCL compiler
     * reports clang 16 but rejects always_inline in `#pragma clang
     * attribute`, and GPU compilers inline such functions anyway. */
    if (force_inline)
        clmad__sb_append(sb, "\n#pragma clang attribute push "
                             "(__attribute__((always_inline)), apply_to = function)\n");
    clmad__sb_append(sb, "#line 1 \"source\"\n");
    int first_line = 1;
    for (size_t i = 0; sb->data && i < sb->len; i++)
        first_line += sb->data[i] == '\n';
    clmad__sb_append(sb, user_source);
    clmad__sb_append(sb, "\n");
    if (force_inline) {
        static const char *const words[] = {"pop", NULL};
        unmacro(sb, words);
        clmad__sb_append(sb, "#pragma clang attribute pop\n");
        remacro(sb, words);
    }
    clmad__sb_append(sb, "#line 1 \"clmad-generated\"\n");
    emit_signature(sb, v);
    emit_body(sb, v, fn_name);
    return first_line;
}
