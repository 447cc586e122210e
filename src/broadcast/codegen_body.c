/* SPDX-License-Identifier: Apache-2.0 */
/* The body of the wrapper kernel: indexing, the call of the user's function,
 * and what each mode writes (values, partials, tangents, gradients). */
#include "broadcast/codegen.h"

#include <stdio.h>

/* The term of a strided input's index along the last collapsed dimension,
 * at coordinate `coord`: none when its step is 0 (a uniform value, so the
 * vectoriser broadcasts one load), the coordinate itself when it is 1
 * (contiguous loads), else times the stride argument (a gather). */
static void emit_last_term(clmad_strbuf *sb, const clmad_variant *v, int j, const char *coord, const char *sep)
{
    if (v->last_step[j] == CLMAD_STEP_ONE)
        clmad__sb_printf(sb, "%s%s", sep, coord);
    else if (v->last_step[j] != CLMAD_STEP_ZERO)
        clmad__sb_printf(sb, "%s%s * %sclmad__s%d_%d", sep, coord, v->div_by_mul ? "(uint)" : "", j, v->nd - 1);
}

void clmad__emit_index(clmad_strbuf *sb, const clmad_variant *v, int j)
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
            clmad__sb_printf(sb, "clmad__row0_%d", j);
            emit_last_term(sb, v, j, "clmad__cl", " + ");
            break;
        }
        if (v->row_runs) {
            clmad__sb_printf(sb, "(clmad__next_row ? clmad__row1_%d : clmad__row0_%d)", j, j);
            emit_last_term(sb, v, j, "clmad__cl", " + ");
            break;
        }
        for (int d = 0; d < v->nd - 1; d++)
            clmad__sb_printf(sb, "%sclmad__c%d * %sclmad__s%d_%d", d ? " + " : "", d,
                             v->div_by_mul ? "(uint)" : "", j, d);
        char coord[32];
        snprintf(coord, sizeof coord, "clmad__c%d", v->nd - 1);
        if (v->nd == 1 && v->last_step[j] == CLMAD_STEP_ZERO)
            clmad__sb_append(sb, "0");
        emit_last_term(sb, v, j, coord, v->nd > 1 ? " + " : "");
    }
}

/* g_s (+)= sum over the outputs o present of adj_o * (d out_o / d slot s),
 * the derivative being the stored partial (STORED) or partial s of the dual
 * output (VJP, through its helper: emit_helpers). One expression for
 * VJP and STORED, so that RECOMPUTE and STORE agree bitwise. A scaled
 * adjoint is (adj * scale) before the product, as the expanded adjoint it
 * stands for would have been. Each product is clmad__adjoint_times: a zero
 * partial gives 0 under an infinite adjoint (cl/clmad_ad.clh). */
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
                clmad__sb_printf(sb, "%sclmad__adjoint_times(CLMAD__LD(clmad__adj%d, %s) * CLMAD__LD(clmad__adjs%d, 0), ",
                                 sep, o, at, o);
            else
                clmad__sb_printf(sb, "%sclmad__adjoint_times(CLMAD__LD(clmad__adj%d, %s), ", sep, o, at);
            if (v->mode == CLMAD_MODE_STORED)
                clmad__sb_printf(sb, "clmad__p%d_%d[clmad__e])", o, s);
            else
                clmad__sb_printf(sb, "clmad__d%d(clmad__b%d))", s, o);
            sep = " + ";
        }
        if (v->accumulate[s])
            clmad__sb_printf(sb, ";\n        CLMAD__ST(clmad__g%d, clmad__e, CLMAD__LD(clmad__g%d, clmad__e) + clmad__v);\n"
                                 "    }\n", s, s);
        else
            clmad__sb_printf(sb, ";\n        CLMAD__ST(clmad__g%d, clmad__e, clmad__v);\n    }\n", s);
    }
}

/* Before a run's loop (row_runs): the column of `first` in the last
 * dimension, and per strided input the offsets of the row of `first` and
 * (unless runs are aligned with rows) of the next row (coordinates over the
 * other dimensions, last fastest). */
void clmad__emit_row_offsets(clmad_strbuf *sb, const clmad_variant *v)
{
    const int L = v->nd - 1;
    clmad__sb_printf(sb, "    const ulong clmad__col0 = clmad__first %% clmad__dim%d;\n", L);
    for (int which = 0; which < (v->row_runs == CLMAD_ROWS_ALIGNED ? 1 : 2); which++) {
        clmad__sb_printf(sb, "    ulong clmad__row%d_r = clmad__first / clmad__dim%d + %d;\n", which, L,
                         which);
        for (int j = 0; j < clmad__variant_reads(v); j++)
            if (v->access[j] == CLMAD_ACCESS_STRIDED)
                clmad__sb_printf(sb, "    ulong clmad__row%d_%d = 0;\n", which, j);
        for (int d = L - 1; d >= 0; d--) {
            clmad__sb_printf(sb, "    {\n        const ulong clmad__c = clmad__row%d_r %% clmad__dim%d;\n", which, d);
            for (int j = 0; j < clmad__variant_reads(v); j++)
                if (v->access[j] == CLMAD_ACCESS_STRIDED)
                    clmad__sb_printf(sb, "        clmad__row%d_%d += clmad__c * clmad__s%d_%d;\n", which, j, j, d);
            clmad__sb_printf(sb, "        clmad__row%d_r /= clmad__dim%d;\n    }\n", which, d);
        }
    }
}

void clmad__emit_call_arguments(clmad_strbuf *sb, const clmad_variant *v, const char *input, const char *output)
{
    for (int j = 0; j < v->n_inputs; j++) {
        /* a typed list ("T "): an integer parameter as its own type */
        const char *type = input[0] && v->integer[j] ? clmad__input_type(v, j) : NULL;
        if (type)
            clmad__sb_printf(sb, "%s%s clmad__a%d", j ? ", " : "", type, j);
        else
            clmad__sb_printf(sb, "%s%sclmad__a%d", j ? ", " : "", input, j);
    }
    if (v->n_outputs > 1)
        for (int o = 0; o < v->n_outputs; o++)
            clmad__sb_printf(sb, ", %sclmad__b%d", output, o);
}

void clmad__unmacro(clmad_strbuf *sb, const char *const *words)
{
    for (; *words; words++)
        clmad__sb_printf(sb, "#pragma push_macro(\"%s\")\n#undef %s\n", *words, *words);
}

void clmad__remacro(clmad_strbuf *sb, const char *const *words)
{
    for (; *words; words++)
        clmad__sb_printf(sb, "#pragma pop_macro(\"%s\")\n", *words);
}

/* One element at clmad__e (and the run's first, with row_runs): its
 * coordinates, the inputs read through the helpers, and the call of the
 * user's function into clmad__b<o>. */
void clmad__emit_element(clmad_strbuf *sb, const clmad_variant *v)
{
    int strided = 0;
    for (int j = 0; j < clmad__variant_reads(v); j++)
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
    } else if (strided && v->div_by_mul) {
        /* The same coordinates, each quotient a multiply-high by the
         * dimension's DIVISOR (clmad__divisor_magic), in 32 bits: every
         * index of the output and of the inputs (no larger) is below 2^31. */
        clmad__sb_append(sb, "    uint clmad__r = (uint)clmad__e;\n");
        for (int d = v->nd - 1; d > 0; d--)
            clmad__sb_printf(sb, "    const uint clmad__q%d = (uint)(((ulong)clmad__r * (uint)clmad__div%d) >> "
                                 "(uint)(clmad__div%d >> 32));\n"
                                 "    const uint clmad__c%d = clmad__r - clmad__q%d * (uint)clmad__dim%d;\n"
                                 "    clmad__r = clmad__q%d;\n",
                             d, d, d, d, d, d, d);
        clmad__sb_append(sb, "    const uint clmad__c0 = clmad__r;\n");
    } else if (strided) {
        /* Coordinates of e over the collapsed dimensions, last fastest. */
        clmad__sb_append(sb, "    ulong clmad__r = clmad__e;\n");
        for (int d = v->nd - 1; d > 0; d--)
            clmad__sb_printf(sb, "    const ulong clmad__c%d = clmad__r %% clmad__dim%d;\n"
                                 "    clmad__r /= clmad__dim%d;\n", d, d, d);
        clmad__sb_append(sb, "    const ulong clmad__c0 = clmad__r;\n");
    }
    /* Inputs through the helpers of emit_helpers: the wrapper names no
     * field of T. Values load through CLMAD__LD (a 16-bit element widens:
     * cl/real.clh), integers as they are. */
    for (int j = 0; j < v->n_inputs; j++) {
        /* An integer parameter is read as it is: no seed, no tangent. */
        const int seeded = !v->integer[j] &&
                           (v->mode == CLMAD_MODE_PARTIALS || v->mode == CLMAD_MODE_VJP ||
                            v->mode == CLMAD_MODE_SECOND || v->mode == CLMAD_MODE_LOSS) && v->slot[j] >= 0;
        const int tangent = !v->integer[j] &&
                            ((v->mode == CLMAD_MODE_JVP && v->slot[j]) ||
                             (v->mode == CLMAD_MODE_SECOND && v->slot[j] != -1));
        if (v->integer[j])
            clmad__sb_printf(sb, "    const %s clmad__a%d = clmad__x%d[", clmad__input_type(v, j), j, j);
        else if (seeded)
            clmad__sb_printf(sb, "    T clmad__a%d = clmad__seed%d(CLMAD__LD(clmad__x%d, ", j, v->slot[j], j);
        else if (tangent)
            clmad__sb_printf(sb, "    T clmad__a%d = clmad__tangent(CLMAD__LD(clmad__x%d, ", j, j);
        else
            clmad__sb_printf(sb, "    T clmad__a%d = clmad__const(CLMAD__LD(clmad__x%d, ", j, j);
        clmad__emit_index(sb, v, j);
        if (tangent) {
            clmad__sb_printf(sb, "), CLMAD__LD(clmad__tx%d, ", j);
            clmad__emit_index(sb, v, j);
        }
        clmad__sb_append(sb, v->integer[j] ? "];\n" : "));\n");
    }
    for (int o = 0; o < v->n_outputs; o++)
        clmad__sb_printf(sb, "    T clmad__b%d;\n", o);
    clmad__sb_append(sb, v->n_outputs == 1 ? "    clmad__b0 = clmad__call(" : "    clmad__call(");
    clmad__emit_call_arguments(sb, v, "", "&");
    clmad__sb_append(sb, ");\n");
}

void clmad__emit_element_loop(clmad_strbuf *sb, const clmad_variant *v)
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
            clmad__emit_row_offsets(sb, v);
        /* Two 256-bit registers per value (16 floats, 8 doubles): on the
         * HM-LSTM cell 1.3x faster than the vectoriser's own choice of one
         * (the transcendental functions are latency-bound chains). */
        clmad__sb_printf(sb, "    #pragma clang loop vectorize(assume_safety) vectorize_width(%d) "
                             "interleave(disable)\n"
                             "    for (ulong clmad__e = clmad__first; clmad__e < clmad__last; clmad__e++) {\n",
                         v->dtype == CLMAD_F64 ? 8 : 16);
    } else {
        clmad__sb_append(sb, "{\n    const ulong clmad__e = get_global_id(0);\n"
                             "    if (clmad__e >= clmad__n)\n        return;\n    {\n");
    }
}

void clmad__emit_body(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad__emit_element_loop(sb, v);
    if (v->mode == CLMAD_MODE_STORED) {
        emit_gradients(sb, v);
        clmad__sb_append(sb, "    }\n}\n");
        return;
    }
    clmad__emit_element(sb, v);
    if (v->mode == CLMAD_MODE_VJP) {
        emit_gradients(sb, v);
        clmad__sb_append(sb, "    }\n}\n");
        return;
    }
    for (int o = 0; o < v->n_outputs; o++) {
        if (v->write_values)
            clmad__sb_printf(sb, "    CLMAD__ST(clmad__y%d, clmad__e, clmad__val(clmad__b%d));\n", o, o);
        if (v->mode == CLMAD_MODE_PARTIALS) /* partials in `real` (arguments.c) */
            for (int s = 0; s < v->K; s++)
                clmad__sb_printf(sb, "    clmad__p%d_%d[clmad__e] = clmad__d%d(clmad__b%d);\n", o, s, s, o);
        if (v->mode == CLMAD_MODE_JVP)
            clmad__sb_printf(sb, "    CLMAD__ST(clmad__ty%d, clmad__e, clmad__d0(clmad__b%d));\n", o, o);
        if (v->mode == CLMAD_MODE_SECOND) {
            if (v->write_values)
                clmad__sb_printf(sb, "    CLMAD__ST(clmad__ty%d, clmad__e, clmad__t(clmad__b%d));\n", o, o);
            for (int s = 0; s < v->K; s++)
                clmad__sb_printf(sb, "    clmad__p%d_%d[clmad__e] = clmad__d%d(clmad__b%d);\n"
                                     "    clmad__pt%d_%d[clmad__e] = clmad__dt%d(clmad__b%d);\n",
                                 o, s, s, o, o, s, s, o);
        }
    }
    clmad__sb_append(sb, "    }\n}\n");
}

