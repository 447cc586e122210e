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
#include "codegen.h"
#include "embedded.h"

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
    clmad__sb_printf(sb, "__kernel void %s(ulong n", clmad__kernel_name(v->mode));
    if (v->mode == CLMAD_MODE_VJP || v->mode == CLMAD_MODE_STORED) {
        for (int o = 0; o < v->n_outputs; o++)
            if (v->adj_mask & (1u << o)) {
                clmad__sb_printf(sb, ",\n    __global const real *restrict adj%d", o);
                if (v->adj_scaled & (1u << o))
                    clmad__sb_printf(sb, ", __global const real *restrict adjs%d", o);
            }
        for (int s = 0; s < v->K; s++)
            clmad__sb_printf(sb, ",\n    __global real *restrict g%d", s);
    } else {
        for (int o = 0; o < v->n_outputs; o++)
            clmad__sb_printf(sb, ",\n    __global real *restrict y%d", o);
    }
    if (v->mode == CLMAD_MODE_PARTIALS)
        for (int o = 0; o < v->n_outputs; o++)
            for (int s = 0; s < v->K; s++)
                clmad__sb_printf(sb, ",\n    __global real *restrict p%d_%d", o, s);
    if (v->mode == CLMAD_MODE_JVP)
        for (int o = 0; o < v->n_outputs; o++)
            clmad__sb_printf(sb, ",\n    __global real *restrict ty%d", o);
    if (v->mode == CLMAD_MODE_STORED) {
        for (int o = 0; o < v->n_outputs; o++)
            if (v->adj_mask & (1u << o))
                for (int s = 0; s < v->K; s++)
                    clmad__sb_printf(sb, ",\n    __global const real *restrict p%d_%d", o, s);
        clmad__sb_append(sb, ")\n");
        return;
    }
    for (int j = 0; j < v->n_inputs; j++)
        clmad__sb_printf(sb, ",\n    __global const real *restrict x%d", j);
    if (v->mode == CLMAD_MODE_JVP)
        for (int j = 0; j < v->n_inputs; j++)
            if (v->slot[j])
                clmad__sb_printf(sb, ",\n    __global const real *restrict tx%d", j);
    int strided = 0;
    for (int j = 0; j < v->n_inputs; j++)
        strided |= v->access[j] == CLMAD_ACCESS_STRIDED;
    if (strided) {
        for (int d = 0; d < v->nd; d++)
            clmad__sb_printf(sb, ", ulong dim%d", d);
        for (int j = 0; j < v->n_inputs; j++)
            if (v->access[j] == CLMAD_ACCESS_STRIDED)
                for (int d = 0; d < v->nd; d++)
                    clmad__sb_printf(sb, ", ulong s%d_%d", j, d);
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
        clmad__sb_append(sb, "e");
        break;
    default:
        if (v->row_runs == CLMAD_ROWS_ALIGNED) {
            clmad__sb_printf(sb, "row0_%d + cl * s%d_%d", j, j, v->nd - 1);
            break;
        }
        if (v->row_runs) {
            clmad__sb_printf(sb, "(next_row ? row1_%d : row0_%d) + cl * s%d_%d", j, j, j, v->nd - 1);
            break;
        }
        for (int d = 0; d < v->nd; d++)
            clmad__sb_printf(sb, "%sc%d * s%d_%d", d ? " + " : "", d, j, d);
    }
}

/* g_s (+)= sum over the outputs o present of adj_o * (d out_o / d slot s),
 * the derivative being `deriv_fmt` (printf'd with o, s). One expression for
 * VJP and STORED, so that RECOMPUTE and STORE agree bitwise. A scaled
 * adjoint is (adj * scale) before the product, as the expanded adjoint it
 * stands for would have been. */
static void emit_gradients(clmad_strbuf *sb, const clmad_variant *v, const char *deriv_fmt)
{
    for (int s = 0; s < v->K; s++) {
        clmad__sb_printf(sb, "    {\n        const real v =");
        const char *sep = " ";
        for (int o = 0; o < v->n_outputs; o++) {
            if (!(v->adj_mask & (1u << o)))
                continue;
            const char *at = v->adj_scalar & (1u << o) ? "0" : "e";
            if (v->adj_scaled & (1u << o))
                clmad__sb_printf(sb, "%s(adj%d[%s] * adjs%d[0]) * ", sep, o, at, o);
            else
                clmad__sb_printf(sb, "%sadj%d[%s] * ", sep, o, at);
            clmad__sb_printf(sb, deriv_fmt, o, s);
            sep = " + ";
        }
        if (v->accumulate[s])
            clmad__sb_printf(sb, ";\n        g%d[e] = g%d[e] + v;\n    }\n", s, s);
        else
            clmad__sb_printf(sb, ";\n        g%d[e] = v;\n    }\n", s);
    }
}

/* Before a run's loop (row_runs): the column of `first` in the last
 * dimension, and per strided input the offsets of the row of `first` and
 * (unless runs are aligned with rows) of the next row (coordinates over the
 * other dimensions, last fastest). */
static void emit_row_offsets(clmad_strbuf *sb, const clmad_variant *v)
{
    const int L = v->nd - 1;
    clmad__sb_printf(sb, "    const ulong col0 = first %% dim%d;\n", L);
    for (int which = 0; which < (v->row_runs == CLMAD_ROWS_ALIGNED ? 1 : 2); which++) {
        clmad__sb_printf(sb, "    ulong row%d_r = first / dim%d + %d;\n", which, L, which);
        for (int j = 0; j < v->n_inputs; j++)
            if (v->access[j] == CLMAD_ACCESS_STRIDED)
                clmad__sb_printf(sb, "    ulong row%d_%d = 0;\n", which, j);
        for (int d = L - 1; d >= 0; d--) {
            clmad__sb_printf(sb, "    {\n        const ulong c = row%d_r %% dim%d;\n", which, d);
            for (int j = 0; j < v->n_inputs; j++)
                if (v->access[j] == CLMAD_ACCESS_STRIDED)
                    clmad__sb_printf(sb, "        row%d_%d += c * s%d_%d;\n", which, j, j, d);
            clmad__sb_printf(sb, "        row%d_r /= dim%d;\n    }\n", which, d);
        }
    }
}

static void emit_body(clmad_strbuf *sb, const clmad_variant *v, const char *fn)
{
    if (v->items > 1) {
        /* A loop over this work-item's elements that clang's loop vectoriser
         * vectorises before POCL's work-item loops are formed (see
         * CLMAD_ITEMS_PER_WORK_ITEM). Elements are independent: each reads
         * and writes its own index only. */
        clmad__sb_printf(sb, "{\n    const ulong first = get_global_id(0) * %dUL;\n"
                             "    const ulong last = min(first + %dUL, n);\n", v->items, v->items);
        if (v->row_runs)
            emit_row_offsets(sb, v);
        /* Two 256-bit registers per value (16 floats, 8 doubles): on the
         * HM-LSTM cell 1.3x faster than the vectoriser's own choice of one
         * (the transcendental functions are latency-bound chains). */
        clmad__sb_printf(sb, "    #pragma clang loop vectorize(assume_safety) vectorize_width(%d) "
                             "interleave(disable)\n"
                             "    for (ulong e = first; e < last; e++) {\n",
                         v->dtype == CLMAD_F64 ? 8 : 16);
    } else {
        clmad__sb_append(sb, "{\n    const ulong e = get_global_id(0);\n"
                             "    if (e >= n)\n        return;\n    {\n");
    }
    if (v->mode == CLMAD_MODE_STORED) {
        emit_gradients(sb, v, "p%d_%d[e]");
        clmad__sb_append(sb, "    }\n}\n");
        return;
    }
    int strided = 0;
    for (int j = 0; j < v->n_inputs; j++)
        strided |= v->access[j] == CLMAD_ACCESS_STRIDED;
    if (strided && v->row_runs == CLMAD_ROWS_ALIGNED) {
        clmad__sb_append(sb, "    const ulong cl = col0 + (e - first);\n");
    } else if (strided && v->row_runs) {
        /* Runs aligned with rows (the last dimension is a multiple of
         * `items`) stay in the row of `first`: the index is affine in e,
         * which the vectoriser turns into wide loads when the stride is 1.
         * Otherwise the run first..last crosses at most one boundary of the
         * last dimension (its size is at least `items`): the offsets of the rows
         * of `first` and of the next were formed before the loop, and an
         * element picks one by a compare, with no division. */
        const int L = v->nd - 1;
        clmad__sb_printf(sb, "    const ulong k = e - first;\n"
                             "    const int next_row = col0 + k >= dim%d;\n"
                             "    const ulong cl = col0 + k - (next_row ? dim%d : 0);\n", L, L);
    } else if (strided) {
        /* Coordinates of e over the collapsed dimensions, last fastest. */
        clmad__sb_append(sb, "    ulong r = e;\n");
        for (int d = v->nd - 1; d > 0; d--)
            clmad__sb_printf(sb, "    const ulong c%d = r %% dim%d;\n    r /= dim%d;\n", d, d, d);
        clmad__sb_append(sb, "    const ulong c0 = r;\n");
    }
    for (int j = 0; j < v->n_inputs; j++) {
        clmad__sb_printf(sb, "    T a%d = ad_const(x%d[", j, j);
        emit_index(sb, v, j);
        clmad__sb_append(sb, "]);\n");
        if ((v->mode == CLMAD_MODE_PARTIALS || v->mode == CLMAD_MODE_VJP) && v->slot[j] >= 0)
            clmad__sb_printf(sb, "    a%d.d%d = (real)1;\n", j, v->slot[j]);
        if (v->mode == CLMAD_MODE_JVP && v->slot[j]) {
            clmad__sb_printf(sb, "    a%d.d0 = tx%d[", j, j);
            emit_index(sb, v, j);
            clmad__sb_append(sb, "];\n");
        }
    }
    for (int o = 0; o < v->n_outputs; o++)
        clmad__sb_printf(sb, "    T b%d;\n", o);
    if (v->n_outputs == 1)
        clmad__sb_printf(sb, "    b0 = %s(", fn);
    else
        clmad__sb_printf(sb, "    %s(", fn);
    for (int j = 0; j < v->n_inputs; j++)
        clmad__sb_printf(sb, "%sa%d", j ? ", " : "", j);
    if (v->n_outputs > 1)
        for (int o = 0; o < v->n_outputs; o++)
            clmad__sb_printf(sb, ", &b%d", o);
    clmad__sb_append(sb, ");\n");
    if (v->mode == CLMAD_MODE_VJP) {
        emit_gradients(sb, v, "b%d.d%d");
        clmad__sb_append(sb, "    }\n}\n");
        return;
    }
    for (int o = 0; o < v->n_outputs; o++) {
        if (v->write_values)
            clmad__sb_printf(sb, "    y%d[e] = ad_val(b%d);\n", o, o);
        if (v->mode == CLMAD_MODE_PARTIALS)
            for (int s = 0; s < v->K; s++)
                clmad__sb_printf(sb, "    p%d_%d[e] = b%d.d%d;\n", o, s, o, s);
        if (v->mode == CLMAD_MODE_JVP)
            clmad__sb_printf(sb, "    ty%d[e] = b%d.d0;\n", o, o);
    }
    clmad__sb_append(sb, "    }\n}\n");
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
    if (force_inline)
        clmad__sb_append(sb, "\n#pragma clang attribute pop\n");
    else
        clmad__sb_append(sb, "\n");
    /* clang's first pass over the program cannot vectorise (POCL does, when
     * it compiles the kernel) and would warn that the loop's vectorize
     * request failed. */
    clmad__sb_append(sb, "#pragma clang diagnostic ignored \"-Wpass-failed\"\n");
    clmad__sb_append(sb, "#line 1 \"clmad-generated\"\n");
    emit_signature(sb, v);
    emit_body(sb, v, fn_name);
    return first_line;
}
