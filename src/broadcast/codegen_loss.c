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
 * A stage (a builtin between y and the sum: clmad_sum(clmad_mul(y, w)))
 * and clmad_mean's adjoint 1/n are formed as their eager nodes form them.
 */
#include "broadcast/codegen.h"

/* The stages' functions, as the builtins' sources call them (ops/builtins.h). */
static const char *const STAGE_FN[CLMAD_STAGE_SQUARE + 1] = {
    [CLMAD_STAGE_ADD] = "ad_add",   [CLMAD_STAGE_SUB] = "ad_sub",         [CLMAD_STAGE_MUL] = "ad_mul",
    [CLMAD_STAGE_DIV] = "ad_div",   [CLMAD_STAGE_POW] = "ad_pow",         [CLMAD_STAGE_NEG] = "ad_neg",
    [CLMAD_STAGE_EXP] = "ad_exp",   [CLMAD_STAGE_LOG] = "ad_log",         [CLMAD_STAGE_TANH] = "ad_tanh",
    [CLMAD_STAGE_SIGMOID] = "ad_sigmoid", [CLMAD_STAGE_RELU] = "ad_relu", [CLMAD_STAGE_SQRT] = "ad_sqrt",
    [CLMAD_STAGE_SQUARE] = "ad_mul"};

const char *clmad__stage_fn(int stage)
{
    return STAGE_FN[stage];
}

/* clmad_dot's term over `value` (the last stage's, or y) as clmad_dot_parts
 * forms it (the product rounded, then added), and the name of value's
 * adjoint: w, as dot.c's backward hands it on (times the seed, 1), with y
 * kept for w's gradient (y times the seed) when it needs one; for
 * clmad_dot(y, y) the two halves added, as y's adjoint slot adds them. */
static const char *emit_dot_term(clmad_strbuf *sb, const clmad_variant *v, const char *value)
{
    if (v->loss_weighted == CLMAD_LOSS_DOT_SELF) {
        clmad__sb_printf(sb, "    clmad__term = %s * %s;\n    const real clmad__wv = %s + %s;\n", value, value, value,
                         value);
        return "clmad__wv";
    }
    clmad__sb_printf(sb, "    const real clmad__wv = clmad__w%d[clmad__e];\n    clmad__term = %s * clmad__wv;\n",
                     CLMAD_LOSS_DOT_WEIGHT, value);
    if (v->loss_write_y)
        clmad__sb_printf(sb, "    clmad__y0[clmad__e] = %s;\n", value);
    return "clmad__wv";
}

/* The index at which stage i's operand j is read: an extra's broadcast
 * offset (loss_extras), 0 for one value (`scalar`), else the element's. */
void clmad__emit_operand_index(clmad_strbuf *sb, const clmad_variant *v, int i, int j, int scalar)
{
    for (int e = 0; e < v->loss_extras; e++)
        if (v->loss_extra_stage[e] == i && v->loss_extra_input[e] == j) {
            clmad__emit_index(sb, v, v->n_inputs + e);
            return;
        }
    clmad__sb_append(sb, scalar ? "0" : "clmad__e");
}

/* User stage i's dual clmad__<name><id> seeded on its input `seed` (slot
 * 0), the others constants: z_i-1's value and the STAGE_INPUTs. */
static void emit_user_stage_dual(clmad_strbuf *sb, const clmad_variant *v, int i, int seed, const char *name,
                                 int id)
{
    clmad__sb_printf(sb, "    const T clmad__%s%d = clmad__stage%d(", name, id, i);
    for (int j = 0; j < v->loss_stage_inputs[i]; j++) {
        const char *sep = j ? ", " : "", *how = j == seed ? "seed0" : "const";
        if (j == v->loss_stage_y[i])
            clmad__sb_printf(sb, "%sclmad__%s(clmad__v)", sep, how);
        else {
            clmad__sb_printf(sb, "%sclmad__%s(clmad__su%d_%d[", sep, how, i, j);
            clmad__emit_operand_index(sb, v, i, j, (v->loss_stage_scalars[i] >> j) & 1u);
            clmad__sb_append(sb, "])");
        }
    }
    clmad__sb_append(sb, ");\n");
}

/* Stage i's dual seeded on its value below (`wrt_w` 0) or on w_i (1), the
 * other operand a constant, as the builtin's own kernel seeds its active
 * inputs: each slot of a dual is computed alone, so this slot 0 is that
 * kernel's slot of the input. */
static void emit_stage_dual(clmad_strbuf *sb, const clmad_variant *v, int i, int wrt_w)
{
    const char *fn = STAGE_FN[(int)v->loss_stage[i]];
    if (v->loss_stage[i] == CLMAD_STAGE_SQUARE) { /* mul's two inputs, each seeded alone */
        clmad__sb_printf(sb, "    const T clmad__z%d = %s(clmad__seed0(clmad__v), clmad__const(clmad__v));\n", i, fn);
        clmad__sb_printf(sb, "    const T clmad__zs%d = %s(clmad__const(clmad__v), clmad__seed0(clmad__v));\n", i, fn);
        return;
    }
    if (v->loss_stage[i] >= CLMAD_STAGE_NEG) {
        clmad__sb_printf(sb, "    const T clmad__z%d = %s(clmad__seed0(clmad__v));\n", i, fn);
        return;
    }
    clmad__sb_printf(sb, "    const T clmad__z%s%d = %s(", wrt_w ? "w" : "", i, fn);
    for (int side = 0; side < 2; side++) {
        const char *sep = side ? ", " : "";
        if (side == v->loss_stage_y[i]) {
            clmad__sb_printf(sb, "%sclmad__%s(clmad__v)", sep, wrt_w ? "const" : "seed0");
            continue;
        }
        clmad__sb_printf(sb, "%sclmad__%s(clmad__w%d[", sep, wrt_w ? "seed0" : "const", i);
        clmad__emit_operand_index(sb, v, i, side, v->loss_weight_scalar[i]);
        clmad__sb_append(sb, "])");
    }
    clmad__sb_append(sb, ");\n");
}

/* The stages z_i = op_i(z_i-1, w_i) (or op_i(w_i, z_i-1), op_i(z_i-1)) from
 * z_0 = y: each a dual whose value goes on and whose partial is kept; the
 * last value is the term (times clmad_dot's w, which is then its adjoint,
 * as dot's backward hands it on). Then the adjoints come down as backward
 * forms them from the sum's: at the last stage its partials times A as its VJP
 * and STORED kernels form them (or taken whole, as its STORE node takes
 * them under an adjoint of 1), at each earlier one its partials times the
 * adjoint that came down. A w_i that needs a gradient gets its own. */
static void emit_stages(clmad_strbuf *sb, const clmad_variant *v, const char *A)
{
    const int S = v->loss_stages;
    clmad__sb_append(sb, "    real clmad__v = clmad__y;\n");
    for (int i = 0; i < S; i++) {
        if (v->loss_stage[i] == CLMAD_STAGE_USER) {
            /* its value's dual, and one per other input that needs a gradient */
            emit_user_stage_dual(sb, v, i, v->loss_stage_y[i], "z", i);
            for (int u = 0; u < v->loss_user_grads; u++)
                if (v->loss_user_grad_stage[u] == i)
                    emit_user_stage_dual(sb, v, i, v->loss_user_grad_input[u], "zu", u);
        } else {
            emit_stage_dual(sb, v, i, 0);
            if (v->loss_stage_wgrad[i])
                emit_stage_dual(sb, v, i, 1);
        }
        clmad__sb_printf(sb, "    clmad__v = clmad__val(clmad__z%d);\n", i);
    }
    if (v->loss_weighted) /* clmad_dot over the chain: its w is the last value's adjoint */
        A = emit_dot_term(sb, v, "clmad__v");
    else
        clmad__sb_append(sb, "    clmad__term = clmad__v;\n");
    clmad__sb_printf(sb, "    real clmad__ay = %s;\n", A);
    for (int i = S - 1; i >= 0; i--) {
        const int raw = i == S - 1 && v->loss_stage_raw;
        for (int u = 0; u < v->loss_user_grads; u++)
            if (v->loss_user_grad_stage[u] == i && v->loss_user_grad_raw[u])
                clmad__sb_printf(sb, "    clmad__gu%d[clmad__e] = clmad__d0(clmad__zu%d);\n", u, u);
            else if (v->loss_user_grad_stage[u] == i)
                clmad__sb_printf(sb, "    clmad__gu%d[clmad__e] = clmad__adjoint_times(clmad__ay, clmad__d0(clmad__zu%d));\n",
                                 u, u);
        if (v->loss_stage_wgrad[i] == 2)
            clmad__sb_printf(sb, "    clmad__gw%d[clmad__e] = clmad__d0(clmad__zw%d);\n", i, i);
        else if (v->loss_stage_wgrad[i])
            clmad__sb_printf(sb, "    clmad__gw%d[clmad__e] = clmad__adjoint_times(clmad__ay, clmad__d0(clmad__zw%d));\n",
                             i, i);
        if (v->loss_stage[i] == CLMAD_STAGE_SQUARE)
            /* As the mul node forms them: one tensor in both inputs, each
             * half goes through a temporary that clmad__sum_to_shape sums
             * (from 0: -0 becomes +0), then the slot adds the two. */
            clmad__sb_printf(sb,
                             "    clmad__ay = clmad__zero_plus(clmad__adjoint_times(clmad__ay, clmad__d0(clmad__z%d))) + "
                             "clmad__zero_plus(clmad__adjoint_times(clmad__ay, clmad__d0(clmad__zs%d)));\n",
                             i, i);
        else if (raw)
            clmad__sb_printf(sb, "    clmad__ay = clmad__d0(clmad__z%d);\n", i);
        else
            clmad__sb_printf(sb, "    clmad__ay = clmad__adjoint_times(clmad__ay, clmad__d0(clmad__z%d));\n", i);
    }
}

/* One element: the duals, the term added to the sum, the gradients. */
void clmad__emit_loss_element(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad__sb_append(sb, "    {\n");
    clmad__emit_element(sb, v);
    clmad__sb_append(sb, "    const real clmad__y = clmad__val(clmad__b0);\n");
    /* The adjoint of each summed value: clmad_sum's seed, or clmad_mean's 1/n. */
    const char *A = v->loss_adj ? "clmad__A" : "(real)1", *adj = A;
    if (v->loss_stages) {
        emit_stages(sb, v, A);
        adj = "clmad__ay";
    } else if (v->loss_weighted) {
        adj = emit_dot_term(sb, v, "clmad__y");
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

/* Interleaved parts with lanes: work-item (i, j) of a group serves part
 * p0 + i, taking its elements k = j, j + L, ... in rounds of L; after each
 * round the part's first work-item adds the round's terms in k order, so
 * that the sum is the one work-item's of the plain form, with L times the
 * work-items (a 1024 x 1024 loss has 32768 parts: too few for a GPU). */
static void emit_lanes_body(clmad_strbuf *sb, const clmad_variant *v)
{
    const int L = v->loss_lanes, P = CLMAD_LOSS_GROUP_PARTS;
    clmad__sb_printf(sb, "{\n    __local real clmad__t[%d];\n"
                         "    const uint clmad__i = get_local_id(0) %% %du, clmad__j = get_local_id(0) / %du;\n"
                         "    const ulong clmad__p0 = get_group_id(0) * %dUL, clmad__part = clmad__p0 + clmad__i;\n"
                         "    const ulong clmad__rounds = clmad__p0 < clmad__n ?\n"
                         "        ((clmad__n - clmad__p0 + clmad__parts - 1) / clmad__parts + %d) / %d : 0;\n"
                         "    real clmad__acc = 0;\n    real clmad__term;\n"
                         "    for (ulong clmad__r = 0; clmad__r < clmad__rounds; clmad__r++) {\n"
                         "    const ulong clmad__e = clmad__part + (clmad__r * %d + clmad__j) * clmad__parts;\n"
                         "    clmad__term = 0;\n"
                         "    if (clmad__part < clmad__parts && clmad__e < clmad__n)\n",
                     P * L, P, P, P, L - 1, L, L);
    clmad__emit_loss_element(sb, v);
    clmad__sb_printf(sb, "    clmad__t[get_local_id(0)] = clmad__term;\n"
                         "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                         "    if (clmad__j == 0 && clmad__part < clmad__parts)\n"
                         "        for (uint clmad__l = 0; clmad__l < %du &&\n"
                         "             clmad__part + (clmad__r * %d + clmad__l) * clmad__parts < clmad__n; clmad__l++)\n"
                         "            clmad__acc += clmad__t[clmad__l * %du + clmad__i];\n"
                         "    barrier(CLK_LOCAL_MEM_FENCE);\n    }\n"
                         "    if (clmad__j == 0 && clmad__part < clmad__parts)\n"
                         "        clmad__sums[clmad__part] = clmad__acc;\n}\n",
                     L, L, P);
}

/* A whole run of v->items elements from clmad__q (CLMAD_LOSS_RUN or a
 * divisor of the rows; runs start at multiples of it, so that where rows
 * are a multiple of the run no run crosses a row's end): the terms come
 * from one loop, vectorised like the other kernels' element loops, strided
 * inputs read at the run's row offsets; then they join their lanes. */
static void emit_run(clmad_strbuf *sb, const clmad_variant *v)
{
    const int R = v->items;
    clmad__sb_printf(sb, "    const ulong clmad__first = clmad__q;\n    real clmad__terms[%d];\n", R);
    if (v->row_runs)
        clmad__emit_row_offsets(sb, v);
    clmad__sb_printf(sb, "    #pragma clang loop vectorize(assume_safety) vectorize_width(%d) interleave(disable)\n"
                         "    for (ulong clmad__e = clmad__first; clmad__e < clmad__first + %dUL; clmad__e++) {\n"
                         "    real clmad__term;\n",
                     v->dtype == CLMAD_F64 ? 8 : 16, R);
    clmad__emit_loss_element(sb, v);
    clmad__sb_printf(sb, "    clmad__terms[clmad__e - clmad__first] = clmad__term;\n    }\n"
                         "    for (uint clmad__g = 0; clmad__g < %du; clmad__g += 8u)\n"
                         "        for (uint clmad__l = 0; clmad__l < 8u; clmad__l++)\n"
                         "            clmad__acc[clmad__l] += clmad__terms[clmad__g + clmad__l];\n"
                         "    clmad__q += %dUL;\n",
                     R, R);
}

/* Work-item p sums the range [lo, hi) of part p as CLMAD_RANGE_SUM does:
 * lane l adds the elements lo + 8k + l of the whole groups of eight, in
 * order; the rest go to a tail; then the lanes in a fixed tree, and the
 * tail. The lanes are kept by the element's index modulo 8 (lane l is
 * clmad__acc[(lo + l) & 7]), so that whole runs add to fixed lanes; the
 * elements outside them go one by one, with coordinates per element. */
static void emit_ranges_body(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad__sb_append(sb, "    const ulong clmad__lo = clmad__part * clmad__n / clmad__parts;\n"
                         "    const ulong clmad__hi = (clmad__part + 1) * clmad__n / clmad__parts;\n"
                         "    const ulong clmad__groups_end = clmad__lo + (clmad__hi - clmad__lo) / 8 * 8;\n"
                         "    real clmad__acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};\n"
                         "    real clmad__tail = 0;\n"
                         "    for (ulong clmad__q = clmad__lo; clmad__q < clmad__hi;) {\n");
    if (v->items > 1) {
        clmad__sb_printf(sb, "    if (clmad__q %% %dUL == 0 && clmad__q + %dUL <= clmad__groups_end) {\n",
                         v->items, v->items);
        emit_run(sb, v);
        clmad__sb_append(sb, "    continue;\n    }\n");
    }
    clmad_variant single = *v;
    single.row_runs = 0;
    clmad__sb_append(sb, "    const ulong clmad__e = clmad__q;\n");
    clmad__emit_loss_element(sb, &single);
    clmad__sb_append(sb, "    if (clmad__q < clmad__groups_end)\n"
                         "        clmad__acc[clmad__q & 7] += clmad__term;\n"
                         "    else\n        clmad__tail += clmad__term;\n"
                         "    clmad__q++;\n    }\n"
                         "    real clmad__lane[8];\n"
                         "    for (uint clmad__l = 0; clmad__l < 8u; clmad__l++)\n"
                         "        clmad__lane[clmad__l] = clmad__acc[(clmad__lo + clmad__l) & 7];\n"
                         "    clmad__sums[clmad__part] = ((clmad__lane[0] + clmad__lane[1]) + (clmad__lane[2] + "
                         "clmad__lane[3])) + ((clmad__lane[4] + clmad__lane[5]) + (clmad__lane[6] + clmad__lane[7]))\n"
                         "        + clmad__tail;\n}\n");
}

/* Terms (a CPU runtime that vectorises across work-items: runtime/tuning.c):
 * work-item e writes element e's term where the range pass will read it,
 * the gradients as every form writes them. Neighbouring work-items take
 * neighbouring elements, as in the element kernels it vectorises well;
 * a range walked by one work-item would be a gather per lane. */
static void emit_terms_body(clmad_strbuf *sb, const clmad_variant *v)
{
    clmad__sb_append(sb, "{\n    const ulong clmad__e = get_global_id(0);\n"
                         "    if (clmad__e >= clmad__n)\n        return;\n    real clmad__term;\n");
    clmad_variant single = *v;
    single.row_runs = 0;
    clmad__emit_loss_element(sb, &single);
    clmad__sb_append(sb, "    clmad__sums[clmad__e] = clmad__term;\n}\n");
}

void clmad__emit_loss_body(clmad_strbuf *sb, const clmad_variant *v)
{
    if (v->loss_terms) {
        emit_terms_body(sb, v);
        return;
    }
    if (!v->loss_ranges && v->loss_lanes > 1) {
        emit_lanes_body(sb, v);
        return;
    }
    clmad__sb_append(sb, "{\n    const ulong clmad__part = get_global_id(0);\n"
                         "    if (clmad__part >= clmad__parts)\n        return;\n"
                         "    real clmad__term;\n");
    if (!v->loss_ranges) {
        clmad__sb_append(sb, "    real clmad__acc = 0;\n"
                             "    for (ulong clmad__e = clmad__part; clmad__e < clmad__n; clmad__e += clmad__parts) {\n");
        clmad__emit_loss_element(sb, v);
        clmad__sb_append(sb, "    clmad__acc += clmad__term;\n    }\n"
                             "    clmad__sums[clmad__part] = clmad__acc;\n}\n");
        return;
    }
    emit_ranges_body(sb, v);
}
