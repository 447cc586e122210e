/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The body of a fused loss kernel (CLMAD_MODE_LOSS): work-item p makes
 * partial sum p of the loss, visiting its elements in the order of the
 * first pass of runtime/reduce.c (interleaved, or ranges in eight lanes on
 * CPUs; cl/ops.cl's clmad_reduce_sum, clmad_dot_parts and the RANGE_SUM
 * kernels), so the loss is bitwise that of clmad_sum(y) or clmad_dot(y, w).
 * At each element it evaluates the duals once and writes every seeded
 * input's gradient for an adjoint of exactly 1, formed as the STORED and
 * VJP kernels form it (codegen_body.c's emit_gradients with adj = w, or 1).
 */
#include "broadcast/codegen.h"

/* One element: the duals, the term added to the sum, the gradients. */
static void emit_loss_element(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad__sb_append(sb, "    {\n");
    clmad__emit_element(sb, v);
    clmad__sb_append(sb, "    const real clmad__y = clmad__val(clmad__b0);\n");
    const char *adj = "(real)1";
    if (v->loss_weighted) {
        /* As clmad_dot_parts: the product rounded, then added. */
        clmad__sb_append(sb, "    const real clmad__wv = clmad__w[clmad__e];\n"
                             "    clmad__term = clmad__y * clmad__wv;\n");
        adj = "clmad__wv";
    } else {
        clmad__sb_append(sb, "    clmad__term = clmad__y;\n");
    }
    for (int s = 0; s < v->K; s++) {
        if (v->loss_raw)
            clmad__sb_printf(sb, "    clmad__g%d[clmad__e] = clmad__d%d(clmad__b0);\n", s, s);
        else
            clmad__sb_printf(sb, "    clmad__g%d[clmad__e] = clmad__adjoint_times(%s, clmad__d%d(clmad__b0));\n",
                             s, adj, s);
    }
    clmad__sb_append(sb, "    }\n");
}

void clmad__emit_loss_body(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad__sb_append(sb, "{\n    const ulong clmad__part = get_global_id(0);\n"
                         "    if (clmad__part >= clmad__parts)\n        return;\n"
                         "    real clmad__term;\n");
    if (!v->loss_ranges) {
        clmad__sb_append(sb, "    real clmad__acc = 0;\n"
                             "    for (ulong clmad__e = clmad__part; clmad__e < clmad__n; clmad__e += clmad__parts) {\n");
        emit_loss_element(sb, v);
        clmad__sb_append(sb, "    clmad__acc += clmad__term;\n    }\n"
                             "    clmad__sums[clmad__part] = clmad__acc;\n}\n");
        return;
    }
    /* Lane l adds the elements q + l of the range's whole groups of eight,
     * then the tail, then the lanes in a fixed tree: CLMAD_RANGE_SUM. */
    clmad__sb_append(sb, "    const ulong clmad__lo = clmad__part * clmad__n / clmad__parts;\n"
                         "    const ulong clmad__hi = (clmad__part + 1) * clmad__n / clmad__parts;\n"
                         "    real clmad__lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};\n"
                         "    ulong clmad__q = clmad__lo;\n"
                         "    for (; clmad__q + 8 <= clmad__hi; clmad__q += 8) {\n"
                         "    #pragma clang loop vectorize(assume_safety) vectorize_width(8) interleave(disable)\n"
                         "    for (uint clmad__l = 0; clmad__l < 8; clmad__l++) {\n"
                         "    const ulong clmad__e = clmad__q + clmad__l;\n");
    emit_loss_element(sb, v);
    clmad__sb_append(sb, "    clmad__lane[clmad__l] += clmad__term;\n    }\n    }\n"
                         "    real clmad__tail = 0;\n"
                         "    for (; clmad__q < clmad__hi; clmad__q++) {\n"
                         "    const ulong clmad__e = clmad__q;\n");
    emit_loss_element(sb, v);
    clmad__sb_append(sb, "    clmad__tail += clmad__term;\n    }\n"
                         "    clmad__sums[clmad__part] = ((clmad__lane[0] + clmad__lane[1]) + (clmad__lane[2] + "
                         "clmad__lane[3])) + ((clmad__lane[4] + clmad__lane[5]) + (clmad__lane[6] + clmad__lane[7]))\n"
                         "        + clmad__tail;\n}\n");
}
