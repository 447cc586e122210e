/* SPDX-License-Identifier: Apache-2.0 */
/* The name and argument list of a generated kernel, and the signature
 * written from them. */
#include "broadcast/codegen.h"

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

static clmad_kernel_arg arg(clmad_arg_kind kind, int o, int s, int j, int d)
{
    return (clmad_kernel_arg){(unsigned char)kind, (unsigned char)o, (unsigned char)s, (unsigned char)j,
                              (unsigned char)d};
}

int clmad__kernel_arguments(const clmad_variant *v, clmad_kernel_arg *args)
{
    int n = 0;
    args[n++] = arg(CLMAD_ARG_COUNT, 0, 0, 0, 0);
    if (v->mode == CLMAD_MODE_VJP || v->mode == CLMAD_MODE_STORED) {
        for (int o = 0; o < v->n_outputs; o++)
            if (v->adj_mask & (1u << o)) {
                args[n++] = arg(CLMAD_ARG_ADJ, o, 0, 0, 0);
                if (v->adj_scaled & (1u << o))
                    args[n++] = arg(CLMAD_ARG_ADJ_SCALE, o, 0, 0, 0);
            }
        for (int s = 0; s < v->K; s++)
            args[n++] = arg(CLMAD_ARG_GRAD, 0, s, 0, 0);
    } else {
        for (int o = 0; o < v->n_outputs; o++)
            args[n++] = arg(CLMAD_ARG_VALUE, o, 0, 0, 0);
    }
    if (v->mode == CLMAD_MODE_PARTIALS)
        for (int o = 0; o < v->n_outputs; o++)
            for (int s = 0; s < v->K; s++)
                args[n++] = arg(CLMAD_ARG_PARTIAL, o, s, 0, 0);
    if (v->mode == CLMAD_MODE_JVP)
        for (int o = 0; o < v->n_outputs; o++)
            args[n++] = arg(CLMAD_ARG_TANGENT_OUT, o, 0, 0, 0);
    if (v->mode == CLMAD_MODE_STORED) {
        for (int o = 0; o < v->n_outputs; o++)
            if (v->adj_mask & (1u << o))
                for (int s = 0; s < v->K; s++)
                    args[n++] = arg(CLMAD_ARG_STORED, o, s, 0, 0);
        return n;
    }
    for (int j = 0; j < v->n_inputs; j++)
        args[n++] = arg(CLMAD_ARG_INPUT, 0, 0, j, 0);
    if (v->mode == CLMAD_MODE_JVP)
        for (int j = 0; j < v->n_inputs; j++)
            if (v->slot[j])
                args[n++] = arg(CLMAD_ARG_TANGENT_IN, 0, 0, j, 0);
    int strided = 0;
    for (int j = 0; j < v->n_inputs; j++)
        strided |= v->access[j] == CLMAD_ACCESS_STRIDED;
    if (strided) {
        for (int d = 0; d < v->nd; d++)
            args[n++] = arg(CLMAD_ARG_DIM, 0, 0, 0, d);
        for (int j = 0; j < v->n_inputs; j++)
            if (v->access[j] == CLMAD_ACCESS_STRIDED)
                for (int d = 0; d < v->nd; d++)
                    args[n++] = arg(CLMAD_ARG_STRIDE, 0, 0, j, d);
    }
    return n;
}

void clmad__emit_signature(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad_kernel_arg args[CLMAD_MAX_KERNEL_ARGS];
    const int n = clmad__kernel_arguments(v, args);
    for (int i = 0; i < n; i++) {
        const clmad_kernel_arg *a = &args[i];
        switch ((clmad_arg_kind)a->kind) {
        case CLMAD_ARG_COUNT:
            clmad__sb_printf(sb, "__kernel void %s(ulong clmad__n", clmad__kernel_name(v->mode));
            break;
        case CLMAD_ARG_VALUE:
            clmad__sb_printf(sb, ",\n    __global real *restrict clmad__y%d", a->o);
            break;
        case CLMAD_ARG_PARTIAL:
            clmad__sb_printf(sb, ",\n    __global real *restrict clmad__p%d_%d", a->o, a->s);
            break;
        case CLMAD_ARG_TANGENT_OUT:
            clmad__sb_printf(sb, ",\n    __global real *restrict clmad__ty%d", a->o);
            break;
        case CLMAD_ARG_ADJ:
            clmad__sb_printf(sb, ",\n    __global const real *restrict clmad__adj%d", a->o);
            break;
        case CLMAD_ARG_ADJ_SCALE:
            clmad__sb_printf(sb, ", __global const real *restrict clmad__adjs%d", a->o);
            break;
        case CLMAD_ARG_GRAD:
            clmad__sb_printf(sb, ",\n    __global real *restrict clmad__g%d", a->s);
            break;
        case CLMAD_ARG_STORED:
            clmad__sb_printf(sb, ",\n    __global const real *restrict clmad__p%d_%d", a->o, a->s);
            break;
        case CLMAD_ARG_INPUT:
            clmad__sb_printf(sb, ",\n    __global const real *restrict clmad__x%d", a->j);
            break;
        case CLMAD_ARG_TANGENT_IN:
            clmad__sb_printf(sb, ",\n    __global const real *restrict clmad__tx%d", a->j);
            break;
        case CLMAD_ARG_DIM:
            clmad__sb_printf(sb, ", ulong clmad__dim%d", a->d);
            break;
        case CLMAD_ARG_STRIDE:
            clmad__sb_printf(sb, ", ulong clmad__s%d_%d", a->j, a->d);
            break;
        }
    }
    clmad__sb_append(sb, ")\n");
}
