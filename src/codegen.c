/*
 * Generated kernel arguments, in order:
 *   ulong n;  out values [n_outputs];  PARTIALS: partials [n_outputs][K]
 *   (output-major) | JVP: out tangents [n_outputs];  inputs [n_inputs];
 *   JVP: tangents of the inputs that have one;
 *   VJP: (instead of values and partials) adjoints of the outputs present
 *   [popcount(adj_mask)], then gradient targets [K];  when any input is strided:
 *   dims [nd] then, per strided input, strides [nd].
 * Seeds are static: each chunk is its own variant, so the compiler sees the
 * constant 0/1 seeds and folds the partials that cannot be non-zero.
 */
#include "codegen.h"
#include "embedded.h"

#include <stdio.h>
#include <string.h>

void clmad__variant_key(const clmad_variant *v, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "%c%d K%d nd%d w%d a%x ", (char)v->mode, (int)v->dtype,
                                   v->K, v->nd, v->write_values, v->adj_mask);
    for (int j = 0; j < v->n_inputs && used + 4 < cap; j++)
        used += (size_t)snprintf(buf + used, cap - used, "%c%d", v->access[j], (int)v->slot[j]);
    if (v->mode == CLMAD_MODE_VJP)
        for (int s = 0; s < v->K && used + 2 < cap; s++)
            used += (size_t)snprintf(buf + used, cap - used, "%c", v->accumulate[s] ? 'A' : 'W');
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

static void emit_signature(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad__sb_append(sb, "__kernel void " CLMAD_BCAST_KERNEL_NAME "(ulong n");
    if (v->mode == CLMAD_MODE_VJP) {
        for (int o = 0; o < v->n_outputs; o++)
            if (v->adj_mask & (1u << o))
                clmad__sb_printf(sb, ",\n    __global const real *restrict adj%d", o);
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
        for (int d = 0; d < v->nd; d++)
            clmad__sb_printf(sb, "%sc%d * s%d_%d", d ? " + " : "", d, j, d);
    }
}

static void emit_body(clmad_strbuf *sb, const clmad_variant *v, const char *fn)
{
    clmad__sb_append(sb, "{\n    const ulong e = get_global_id(0);\n    if (e >= n)\n        return;\n");
    int strided = 0;
    for (int j = 0; j < v->n_inputs; j++)
        strided |= v->access[j] == CLMAD_ACCESS_STRIDED;
    if (strided) {
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
        for (int s = 0; s < v->K; s++) {
            clmad__sb_printf(sb, "    {\n        const real v =");
            const char *sep = " ";
            for (int o = 0; o < v->n_outputs; o++)
                if (v->adj_mask & (1u << o)) {
                    clmad__sb_printf(sb, "%sadj%d[e] * b%d.d%d", sep, o, o, s);
                    sep = " + ";
                }
            if (v->accumulate[s])
                clmad__sb_printf(sb, ";\n        g%d[e] = g%d[e] + v;\n    }\n", s, s);
            else
                clmad__sb_printf(sb, ";\n        g%d[e] = v;\n    }\n", s);
        }
        clmad__sb_append(sb, "}\n");
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
    clmad__sb_append(sb, "}\n");
}

int clmad__generate_program(clmad_strbuf *sb, const clmad_variant *v, const char *user_source,
                            const char *fn_name, int force_inline)
{
    emit_prelude(sb, v);
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
    clmad__sb_append(sb, "#line 1 \"clmad-generated\"\n");
    emit_signature(sb, v);
    emit_body(sb, v, fn_name);
    return first_line;
}

void clmad__generate_vjp_store(clmad_strbuf *sb, clmad_dtype dtype, int n_terms, int accumulate)
{
    if (dtype == CLMAD_F64)
        clmad__sb_append(sb, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\ntypedef double real;\n");
    else
        clmad__sb_append(sb, "typedef float real;\n");
    /* As in the broadcast kernels: STORE must round like RECOMPUTE. */
    clmad__sb_append(sb, "#pragma OPENCL FP_CONTRACT OFF\n");
    clmad__sb_append(sb, "__kernel void clmad_vjp_store(ulong n, __global real *restrict g");
    for (int t = 0; t < n_terms; t++)
        clmad__sb_printf(sb, ",\n    __global const real *restrict adj%d, __global const real *restrict p%d",
                         t, t);
    clmad__sb_append(sb, ")\n{\n    const ulong e = get_global_id(0);\n    if (e >= n)\n        return;\n"
                         "    {\n        const real v =");
    for (int t = 0; t < n_terms; t++)
        clmad__sb_printf(sb, "%sadj%d[e] * p%d[e]", t ? " + " : " ", t, t);
    clmad__sb_append(sb, accumulate ? ";\n        g[e] = g[e] + v;\n    }\n}\n"
                                    : ";\n        g[e] = v;\n    }\n}\n");
}
