/* SPDX-License-Identifier: Apache-2.0 */
/* The name and argument list of a generated kernel, the types of its
 * inputs, and the signature written from them. */
#include "broadcast/codegen.h"

const char *clmad__kernel_name(clmad_mode mode)
{
    switch (mode) {
    case CLMAD_MODE_PRIMAL: return "clmad__bcast_primal";
    case CLMAD_MODE_PARTIALS: return "clmad__bcast_partials";
    case CLMAD_MODE_JVP: return "clmad__bcast_jvp";
    case CLMAD_MODE_VJP: return "clmad__bcast_vjp";
    case CLMAD_MODE_SECOND: return "clmad__bcast_second";
    case CLMAD_MODE_LOSS: return "clmad__bcast_loss";
    default: return "clmad__bcast_stored";
    }
}

const char *clmad__integer_type(clmad_dtype dtype)
{
    return dtype == CLMAD_I32 ? "int" : dtype == CLMAD_I64 ? "long" : "uchar";
}

const char *clmad__input_type(const clmad_variant *v, int j)
{
    return v->integer[j] ? clmad__integer_type((clmad_dtype)v->integer[j]) : "T";
}

uint64_t clmad__divisor_magic(uint64_t d)
{
    uint64_t l = 0;
    while (((uint64_t)1 << l) < d)
        l++;
    const uint64_t shift = 31 + l;
    return (((uint64_t)1 << shift) + d - 1) / d | shift << 32;
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
    } else if (v->mode == CLMAD_MODE_LOSS) {
        if (!v->loss_region) {
            args[n++] = arg(CLMAD_ARG_PARTS, 0, 0, 0, 0);
            args[n++] = arg(CLMAD_ARG_SUMS, 0, 0, 0, 0);
        }
        if (v->loss_weighted == CLMAD_LOSS_DOT_W)
            args[n++] = arg(CLMAD_ARG_WEIGHT, 0, CLMAD_LOSS_DOT_WEIGHT, 0, 0);
        for (int s = 0; s < v->loss_stages; s++)
            if (v->loss_stage[s] < CLMAD_STAGE_NEG)
                args[n++] = arg(CLMAD_ARG_WEIGHT, 0, s, 0, 0);
        if (v->loss_adj)
            args[n++] = arg(CLMAD_ARG_LOSS_ADJ, 0, 0, 0, 0);
        if (v->loss_write_y)
            args[n++] = arg(CLMAD_ARG_VALUE, 0, 0, 0, 0);
        for (int s = 0; s < v->loss_stages; s++)
            if (v->loss_stage_wgrad[s])
                args[n++] = arg(CLMAD_ARG_STAGE_GRAD, 0, s, 0, 0);
        for (int s = 0; s < v->loss_stages; s++)
            for (int j = 0; v->loss_stage[s] == CLMAD_STAGE_USER && j < v->loss_stage_inputs[s]; j++)
                if (j != v->loss_stage_y[s])
                    args[n++] = arg(CLMAD_ARG_STAGE_INPUT, 0, s, j, 0);
        for (int u = 0; u < v->loss_user_grads; u++)
            args[n++] = arg(CLMAD_ARG_USER_GRAD, 0, u, 0, 0);
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
    if (v->mode == CLMAD_MODE_JVP || v->mode == CLMAD_MODE_SECOND)
        for (int o = 0; o < v->n_outputs; o++)
            args[n++] = arg(CLMAD_ARG_TANGENT_OUT, o, 0, 0, 0);
    if (v->mode == CLMAD_MODE_SECOND)
        for (int o = 0; o < v->n_outputs; o++)
            for (int s = 0; s < v->K; s++) {
                args[n++] = arg(CLMAD_ARG_PARTIAL, o, s, 0, 0);
                args[n++] = arg(CLMAD_ARG_PARTIAL_T, o, s, 0, 0);
            }
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
    if (v->mode == CLMAD_MODE_SECOND)
        for (int j = 0; j < v->n_inputs; j++)
            if (v->slot[j] != -1)
                args[n++] = arg(CLMAD_ARG_TANGENT_IN, 0, 0, j, 0);
    int strided = 0;
    for (int j = 0; j < clmad__variant_reads(v); j++)
        strided |= v->access[j] == CLMAD_ACCESS_STRIDED;
    if (strided) {
        for (int d = 0; d < v->nd; d++)
            args[n++] = arg(CLMAD_ARG_DIM, 0, 0, 0, d);
        for (int j = 0; j < clmad__variant_reads(v); j++)
            if (v->access[j] == CLMAD_ACCESS_STRIDED)
                for (int d = 0; d < v->nd; d++)
                    args[n++] = arg(CLMAD_ARG_STRIDE, 0, 0, j, d);
        for (int d = 1; v->div_by_mul && d < v->nd; d++)
            args[n++] = arg(CLMAD_ARG_DIVISOR, 0, 0, 0, d);
    }
    return n;
}

/* Each argument's parameter in the signature, named by up to two of its
 * indices: the first and second of `by`, from o, s, j and d. */
static const struct {
    const char *format;
    const char *by;
} PARAMETER[] = {
    [CLMAD_ARG_COUNT] = {"__kernel void %s(ulong clmad__n", ""},
    [CLMAD_ARG_VALUE] = {",\n    __global clmad__stored *restrict clmad__y%d", "o"},
    /* partials in `real`: a 16-bit broadcast keeps them in f32, so that a
     * gradient rounds once (a partial below f16's range times a scaled
     * adjoint is not) */
    [CLMAD_ARG_PARTIAL] = {",\n    __global real *restrict clmad__p%d_%d", "os"},
    [CLMAD_ARG_TANGENT_OUT] = {",\n    __global clmad__stored *restrict clmad__ty%d", "o"},
    [CLMAD_ARG_ADJ] = {",\n    __global const clmad__stored *restrict clmad__adj%d", "o"},
    [CLMAD_ARG_ADJ_SCALE] = {", __global const clmad__stored *restrict clmad__adjs%d", "o"},
    [CLMAD_ARG_GRAD] = {",\n    __global clmad__stored *restrict clmad__g%d", "s"},
    [CLMAD_ARG_STORED] = {",\n    __global const real *restrict clmad__p%d_%d", "os"},
    [CLMAD_ARG_INPUT] = {",\n    __global const clmad__stored *restrict clmad__x%d", "j"},
    [CLMAD_ARG_TANGENT_IN] = {",\n    __global const clmad__stored *restrict clmad__tx%d", "j"},
    [CLMAD_ARG_DIM] = {", ulong clmad__dim%d", "d"},
    [CLMAD_ARG_STRIDE] = {", ulong clmad__s%d_%d", "jd"},
    [CLMAD_ARG_PARTIAL_T] = {",\n    __global real *restrict clmad__pt%d_%d", "os"},
    [CLMAD_ARG_DIVISOR] = {", ulong clmad__div%d", "d"},
    [CLMAD_ARG_PARTS] = {", ulong clmad__parts", ""},
    [CLMAD_ARG_SUMS] = {",\n    __global real *restrict clmad__sums", ""},
    [CLMAD_ARG_WEIGHT] = {",\n    __global const clmad__stored *restrict clmad__w%d", "s"},
    [CLMAD_ARG_LOSS_ADJ] = {", const real clmad__A", ""},
    [CLMAD_ARG_STAGE_GRAD] = {",\n    __global clmad__stored *restrict clmad__gw%d", "s"},
    [CLMAD_ARG_STAGE_INPUT] = {",\n    __global const clmad__stored *restrict clmad__su%d_%d", "sj"},
    [CLMAD_ARG_USER_GRAD] = {",\n    __global clmad__stored *restrict clmad__gu%d", "s"},
};

static int index_of(const clmad_kernel_arg *a, char which)
{
    return which == 'o' ? a->o : which == 's' ? a->s : which == 'j' ? a->j : a->d;
}

void clmad__emit_signature(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad_kernel_arg args[CLMAD_MAX_KERNEL_ARGS];
    const int n = clmad__kernel_arguments(v, args);
    for (int i = 0; i < n; i++) {
        const clmad_kernel_arg *a = &args[i];
        const char *format = PARAMETER[a->kind].format, *by = PARAMETER[a->kind].by;
        if (a->kind == CLMAD_ARG_COUNT)
            clmad__sb_printf(sb, format, clmad__kernel_name(v->mode));
        else if (a->kind == CLMAD_ARG_INPUT && v->integer[a->j])
            clmad__sb_printf(sb, ",\n    __global const %s *restrict clmad__x%d", clmad__input_type(v, a->j), a->j);
        else if (!by[0])
            clmad__sb_append(sb, format);
        else if (by[1])
            clmad__sb_printf(sb, format, index_of(a, by[0]), index_of(a, by[1]));
        else
            clmad__sb_printf(sb, format, index_of(a, by[0]));
    }
    clmad__sb_append(sb, ")\n");
}
