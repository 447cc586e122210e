/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernels of a lazy region (ops/region.c): a chain of held elementwise
 * calls, a broadcast y and stages over it, whose intermediates nobody but
 * the tape holds. Its forward writes the last value alone; its backward is
 * the loss kernel's element with the last value's adjoint as clmad_dot's w
 * (codegen_loss.c), so the gradients are formed as the eager nodes form
 * them, and nothing is summed.
 */
#include "broadcast/codegen.h"

/* A lazy region's forward (CLMAD_REGION_VALUES): the broadcast and its
 * stages in values-only code (T = real, K = 0), each stage called as its
 * own primal kernel calls it, and the last value written. */
static void emit_values_element(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad__sb_append(sb, "    {\n");
    clmad__emit_element(sb, v);
    clmad__sb_append(sb, "    real clmad__v = clmad__val(clmad__b0);\n");
    for (int i = 0; i < v->loss_stages; i++) {
        const int stage = v->loss_stage[i];
        if (stage == CLMAD_STAGE_USER) {
            clmad__sb_printf(sb, "    clmad__v = clmad__val(clmad__stage%d(", i);
            for (int j = 0; j < v->loss_stage_inputs[i]; j++) {
                clmad__sb_append(sb, j ? ", " : "");
                if (j == v->loss_stage_y[i]) {
                    clmad__sb_append(sb, "clmad__const(clmad__v)");
                    continue;
                }
                clmad__sb_printf(sb, "clmad__const(clmad__su%d_%d[", i, j);
                clmad__emit_operand_index(sb, v, i, j, (v->loss_stage_scalars[i] >> j) & 1u);
                clmad__sb_append(sb, "])");
            }
        } else if (stage == CLMAD_STAGE_SQUARE) {
            clmad__sb_printf(sb, "    clmad__v = clmad__val(%s(clmad__const(clmad__v), clmad__const(clmad__v)",
                             clmad__stage_fn(stage));
        } else if (stage >= CLMAD_STAGE_NEG) {
            clmad__sb_printf(sb, "    clmad__v = clmad__val(%s(clmad__const(clmad__v)", clmad__stage_fn(stage));
        } else {
            clmad__sb_printf(sb, "    clmad__v = clmad__val(%s(", clmad__stage_fn(stage));
            for (int side = 0; side < 2; side++) {
                clmad__sb_append(sb, side ? ", " : "");
                if (side == v->loss_stage_y[i]) {
                    clmad__sb_append(sb, "clmad__const(clmad__v)");
                    continue;
                }
                clmad__sb_printf(sb, "clmad__const(clmad__w%d[", i);
                clmad__emit_operand_index(sb, v, i, side, v->loss_weight_scalar[i]);
                clmad__sb_append(sb, "])");
            }
        }
        clmad__sb_append(sb, "));\n");
    }
    clmad__sb_append(sb, "    clmad__y0[clmad__e] = clmad__v;\n    }\n");
}

/* A lazy region's kernels: its forward, or its backward as the loss
 * kernel's element over an adjoint w (the term is not summed), over the
 * elements of a plain element loop. */
void clmad__emit_region_body(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad__emit_element_loop(sb, v);
    if (v->loss_region == CLMAD_REGION_VALUES) {
        emit_values_element(sb, v);
    } else {
        clmad__sb_append(sb, "    real clmad__term;\n");
        clmad__emit_loss_element(sb, v);
    }
    clmad__sb_append(sb, "    }\n}\n");
}
