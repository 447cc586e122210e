/* SPDX-License-Identifier: Apache-2.0 */
/* Running a broadcast kernel over a plan: the variant for the plan, its
 * arguments set from the variant's argument list, the launch, new outputs,
 * the primal forward and the chunked partials forward. */
#include "broadcast/launch.h"
#include "broadcast/variants.h"
#include "runtime/primitives.h"

#include <string.h>

void clmad__bcast_variant_runs(clmad_variant *v, const clmad_bcast_plan *plan, int items)
{
    v->items = items;
    v->row_runs = 0;
    if (v->mode != CLMAD_MODE_STORED && items > 1 && plan->any_strided) {
        size_t last = plan->dims[plan->nd - 1], n = (size_t)items;
        v->row_runs = last % n == 0 ? CLMAD_ROWS_ALIGNED : last > n ? CLMAD_ROWS_CROSSING : 0;
    }
    /* Coordinates per element: by multiply-high where every index fits 31 bits. */
    v->div_by_mul = v->nd > 1 && !v->row_runs && plan->numel < ((size_t)1 << 31);
}

void clmad__variant_access(clmad_variant *v, const clmad_bcast_plan *plan, int j)
{
    v->access[j] = (char)plan->access[j];
    if (v->nd > 0 && plan->access[j] == CLMAD_ACCESS_STRIDED) {
        size_t step = plan->strides[j][plan->nd - 1];
        v->last_step[j] = (char)(step == 0 ? CLMAD_STEP_ZERO : step == 1 ? CLMAD_STEP_ONE : CLMAD_STEP_ARGUMENT);
    }
}

void clmad__bcast_variant(const clmad_kernel *k, const clmad_bcast_plan *plan, clmad_dtype dtype,
                          clmad_mode mode, clmad_variant *v)
{
    memset(v, 0, sizeof *v);
    v->mode = mode;
    v->dtype = dtype;
    v->n_inputs = k->n_inputs;
    v->n_outputs = k->n_outputs;
    v->nd = plan->any_strided && mode != CLMAD_MODE_STORED ? plan->nd : 0;
    v->write_values = 1;
    /* A loss kernel's work-item visits the elements of its partial sum
     * (in runs only when it sums a range: clmad__bcast_variant_runs). */
    clmad__bcast_variant_runs(v, plan, mode == CLMAD_MODE_LOSS ? 1 : clmad__items_per_work_item(k->ctx));
    for (int j = 0; j < k->n_inputs; j++) {
        clmad__variant_access(v, plan, j);
        v->integer[j] = clmad__kernel_integer(k, j) ? (char)k->params[j].dtype : 0;
        v->slot[j] = mode == CLMAD_MODE_PARTIALS || mode == CLMAD_MODE_VJP || mode == CLMAD_MODE_SECOND ||
                             mode == CLMAD_MODE_LOSS ? -1 : 0;
    }
}

clmad_status clmad__bcast_new_outputs(clmad_context *ctx, const clmad_bcast_plan *plan, clmad_dtype dtype,
                                      int n, clmad_tensor **out)
{
    for (int i = 0; i < n; i++) {
        clmad_status st = clmad_tensor_create(ctx, dtype, plan->out_ndim, plan->out_shape, NULL, &out[i]);
        if (st != CLMAD_OK) {
            clmad__release_all(out, i);
            return st;
        }
    }
    return CLMAD_OK;
}

void clmad__release_all(clmad_tensor **t, int n)
{
    for (int i = 0; i < n; i++) {
        clmad_tensor_release(t[i]);
        t[i] = NULL;
    }
}

/* Device bytes a launch of v reads and writes: each array once per element
 * it touches (a broadcast input by its own size), for the stats. */
static uint64_t launch_bytes(const clmad_variant *v, const clmad_bcast_plan *plan,
                             const clmad_launch_args *a)
{
    uint64_t n = plan->numel, arrays = 0, small = 0, integer_bytes = 0;
    if (v->mode == CLMAD_MODE_LOSS) {
        arrays += (uint64_t)v->K + (v->loss_weighted == CLMAD_LOSS_DOT_W ? 1 : 0) + (v->loss_write_y ? 1 : 0) +
                  (uint64_t)v->loss_user_grads + (v->loss_terms ? 1 : 0);
        small += v->loss_terms || v->loss_region ? 0 : a->parts;
        for (int s = 0; s < v->loss_stages; s++)
            if (v->loss_stage[s] < CLMAD_STAGE_NEG) { /* w_i by its own size: y's, a row, one value */
                arrays += v->loss_stage_wgrad[s] ? 1 : 0;
                small += a->weights[s]->numel;
            } else if (v->loss_stage[s] == CLMAD_STAGE_USER) {
                for (int j = 0; j < v->loss_stage_inputs[s]; j++)
                    if (j != v->loss_stage_y[s])
                        small += a->stage_inputs[s][j]->numel;
            }
    } else if (v->mode == CLMAD_MODE_VJP || v->mode == CLMAD_MODE_STORED) {
        for (int o = 0; o < v->n_outputs; o++)
            if (v->adj_mask & (1u << o)) {
                if (v->adj_scalar & (1u << o))
                    small++;
                else
                    arrays++;
                small += (v->adj_scaled >> o) & 1u;
                if (v->mode == CLMAD_MODE_STORED)
                    arrays += (uint64_t)v->K;
            }
        for (int s = 0; s < v->K; s++)
            arrays += v->accumulate[s] ? 2 : 1;
    } else {
        arrays += (uint64_t)v->n_outputs * (v->write_values ? 1 : 0);
        if (v->mode == CLMAD_MODE_PARTIALS)
            arrays += (uint64_t)v->n_outputs * (uint64_t)v->K;
        if (v->mode == CLMAD_MODE_JVP)
            arrays += (uint64_t)v->n_outputs;
        if (v->mode == CLMAD_MODE_SECOND)
            arrays += (uint64_t)v->n_outputs * (uint64_t)(2 * v->K + (v->write_values ? 1 : 0));
    }
    if (v->mode != CLMAD_MODE_STORED)
        for (int j = 0; j < v->n_inputs; j++) {
            uint64_t size = v->access[j] == CLMAD_ACCESS_FULL ? n : a->inputs[j]->numel;
            if (v->integer[j]) {
                integer_bytes += size * clmad_dtype_size((clmad_dtype)v->integer[j]);
                continue;
            }
            const int with_tangent = (v->mode == CLMAD_MODE_JVP && v->slot[j]) ||
                                     (v->mode == CLMAD_MODE_SECOND && v->slot[j] != -1);
            small += size * (with_tangent ? 2 : 1);
        }
    return (arrays * n + small) * clmad_dtype_size(v->dtype) + integer_bytes;
}

/* The buffer that argument x of v takes from a. */
static const cl_mem *buffer_of(const clmad_kernel_arg *x, const clmad_variant *v, const clmad_launch_args *a)
{
    switch ((clmad_arg_kind)x->kind) {
    case CLMAD_ARG_VALUE:
    case CLMAD_ARG_ADJ: return &a->values[x->o]->mem;
    case CLMAD_ARG_PARTIAL: return &a->derivs[x->o * v->K + x->s]->mem;
    case CLMAD_ARG_TANGENT_OUT:
        return v->mode == CLMAD_MODE_SECOND ? &a->out_tangents[x->o]->mem : &a->derivs[x->o]->mem;
    case CLMAD_ARG_PARTIAL_T: return &a->deriv_tangents[x->o * v->K + x->s]->mem;
    case CLMAD_ARG_ADJ_SCALE: return &a->adj_scales[x->o]->mem;
    case CLMAD_ARG_GRAD: return &a->derivs[x->s]->mem;
    case CLMAD_ARG_STORED: return &a->stored[x->o * v->K + x->s]->mem;
    case CLMAD_ARG_INPUT: return &a->inputs[x->j]->mem;
    case CLMAD_ARG_TANGENT_IN: return &a->tangents[x->j]->mem;
    case CLMAD_ARG_SUMS: return &a->sums->mem;
    case CLMAD_ARG_WEIGHT: return &a->weights[x->s]->mem;
    case CLMAD_ARG_STAGE_GRAD: return &a->stage_grads[x->s]->mem;
    case CLMAD_ARG_STAGE_INPUT: return &a->stage_inputs[x->s][x->j]->mem;
    case CLMAD_ARG_USER_GRAD: return &a->user_grads[x->s]->mem;
    default: return NULL; /* a number: COUNT, DIM, STRIDE */
    }
}

clmad_status clmad__bcast_launch(clmad_kernel *k, const clmad_variant *v, const clmad_bcast_plan *plan,
                                 const clmad_launch_args *a)
{
    clmad_context *ctx = k->ctx;
    cl_kernel kern;
    clmad_status st = clmad__kernel_variant(k, v, &kern);
    if (st != CLMAD_OK)
        return st;
    clmad_kernel_arg args[CLMAD_MAX_KERNEL_ARGS];
    size_t sizes[CLMAD_MAX_KERNEL_ARGS];
    const void *values[CLMAD_MAX_KERNEL_ARGS];
    cl_ulong numbers[2 + CLMAD_MAX_DIMS * (2 + CLMAD_MAX_INPUTS)]; /* COUNT, PARTS, DIM, STRIDE, DIVISOR */
    int n_numbers = 0;
    clmad_real_arg adj;
    const int n = clmad__kernel_arguments(v, args);
    for (int i = 0; i < n; i++) {
        const clmad_kernel_arg *x = &args[i];
        if (x->kind == CLMAD_ARG_LOSS_ADJ) {
            sizes[i] = clmad__real_arg(v->dtype, a->loss_adj, &adj);
            values[i] = &adj;
            continue;
        }
        const cl_mem *mem = buffer_of(x, v, a);
        if (mem) {
            sizes[i] = sizeof *mem;
            values[i] = mem;
            continue;
        }
        cl_ulong *number = &numbers[n_numbers++];
        *number = x->kind == CLMAD_ARG_COUNT     ? plan->numel
                  : x->kind == CLMAD_ARG_PARTS   ? a->parts
                  : x->kind == CLMAD_ARG_DIM     ? plan->dims[x->d]
                  : x->kind == CLMAD_ARG_DIVISOR ? clmad__divisor_magic(plan->dims[x->d])
                                                 : plan->strides[x->j][x->d];
        sizes[i] = sizeof *number;
        values[i] = number;
    }
    st = clmad__set_kernel_args(ctx, kern, n, sizes, values);
    if (st != CLMAD_OK)
        return st;
    if (v->mode == CLMAD_MODE_LOSS && v->loss_lanes > 1)
        return clmad__enqueue_groups(ctx, kern, (a->parts + CLMAD_LOSS_GROUP_PARTS - 1) / CLMAD_LOSS_GROUP_PARTS,
                                     (size_t)CLMAD_LOSS_GROUP_PARTS * (size_t)v->loss_lanes,
                                     launch_bytes(v, plan, a));
    size_t items = (size_t)v->items;
    size_t work_items = v->mode != CLMAD_MODE_LOSS || v->loss_region ? (plan->numel + items - 1) / items
                        : v->loss_terms              ? plan->numel
                                                     : a->parts;
    return clmad__enqueue_1d(ctx, kern, work_items, launch_bytes(v, plan, a));
}

clmad_status clmad__bcast_primal(clmad_kernel *k, const clmad_bcast_plan *plan,
                                 clmad_tensor *const *inputs, clmad_tensor **values)
{
    clmad_dtype dtype = clmad__bcast_dtype(k, inputs);
    clmad_status st = clmad__bcast_new_outputs(k->ctx, plan, dtype, k->n_outputs, values);
    if (st != CLMAD_OK || plan->numel == 0)
        return st;
    clmad_variant v;
    clmad__bcast_variant(k, plan, dtype, CLMAD_MODE_PRIMAL, &v);
    clmad_launch_args a = {.values = values, .inputs = inputs};
    st = clmad__bcast_launch(k, &v, plan, &a);
    if (st != CLMAD_OK)
        clmad__release_all(values, k->n_outputs);
    return st;
}

clmad_status clmad__bcast_run_partials(clmad_kernel *k, const clmad_bcast_plan *plan,
                                       clmad_tensor *const *inputs, const int *active,
                                       clmad_tensor **outputs, clmad_tensor **partials)
{
    clmad_context *ctx = k->ctx;
    int n_in = k->n_inputs, n_out = k->n_outputs;
    int act[CLMAD_MAX_INPUTS], n_active = 0;
    for (int j = 0; j < n_in; j++)
        if ((!active || active[j]) && !clmad__kernel_integer(k, j))
            act[n_active++] = j;

    clmad_dtype dtype = clmad__bcast_dtype(k, inputs), pdt = clmad__compute_dtype(dtype); /* partials: f32 for 16-bit */
    clmad_tensor *values[CLMAD_MAX_OUTPUTS] = {0};
    clmad_tensor *parts[CLMAD_MAX_OUTPUTS * CLMAD_MAX_INPUTS] = {0};
    clmad_status st;
    if (n_active == 0) {
        st = clmad__bcast_primal(k, plan, inputs, values);
    } else {
        st = clmad__bcast_new_outputs(ctx, plan, dtype, n_out, values);
        for (int o = 0; o < n_out && st == CLMAD_OK; o++)
            for (int a = 0; a < n_active && st == CLMAD_OK; a++)
                st = clmad__bcast_new_outputs(ctx, plan, pdt, 1, &parts[o * n_in + act[a]]);
    }
    clmad_chunks c = clmad__chunks(act, n_active, clmad_chunk_cap(ctx));
    while (st == CLMAD_OK && plan->numel > 0 && clmad__next_chunk(&c)) {
        clmad_variant v;
        clmad__bcast_variant(k, plan, dtype, CLMAD_MODE_PARTIALS, &v);
        clmad_tensor *chunk_parts[CLMAD_MAX_OUTPUTS * CLMAD_MAX_INPUTS];
        clmad__chunk_seed(&c, &v, parts, chunk_parts);
        v.write_values = c.first == 0;
        clmad_launch_args a = {.values = values, .derivs = chunk_parts, .inputs = inputs};
        st = clmad__bcast_launch(k, &v, plan, &a);
    }
    if (st != CLMAD_OK) {
        clmad__release_all(values, n_out);
        clmad__release_all(parts, n_out * n_in);
        return st;
    }
    memcpy(outputs, values, (size_t)n_out * sizeof *outputs);
    memcpy(partials, parts, (size_t)(n_out * n_in) * sizeof *partials);
    return CLMAD_OK;
}

clmad_status clmad__bcast_run_second(clmad_kernel *k, const clmad_bcast_plan *plan, clmad_tensor *const *inputs,
                                     clmad_tensor *const *tangents, const int *active, clmad_tensor **outputs,
                                     clmad_tensor **out_tangents, clmad_tensor **partials,
                                     clmad_tensor **partial_tangents)
{
    clmad_context *ctx = k->ctx;
    int n_in = k->n_inputs, n_out = k->n_outputs;
    int act[CLMAD_MAX_INPUTS], n_active = 0;
    for (int j = 0; j < n_in; j++)
        if ((!active || active[j]) && !clmad__kernel_integer(k, j))
            act[n_active++] = j;

    clmad_dtype dtype = clmad__bcast_dtype(k, inputs), pdt = clmad__compute_dtype(dtype);
    clmad_tensor *values[CLMAD_MAX_OUTPUTS] = {0}, *dvalues[CLMAD_MAX_OUTPUTS] = {0};
    clmad_tensor *parts[CLMAD_MAX_OUTPUTS * CLMAD_MAX_INPUTS] = {0};
    clmad_tensor *tparts[CLMAD_MAX_OUTPUTS * CLMAD_MAX_INPUTS] = {0};
    clmad_status st;
    if (n_active == 0) {
        /* Nothing varies: the values' tangents are 0. */
        st = clmad__bcast_primal(k, plan, inputs, values);
        for (int o = 0; o < n_out && st == CLMAD_OK; o++)
            st = clmad_tensor_zeros(ctx, dtype, plan->out_ndim, plan->out_shape, &dvalues[o]);
    } else {
        st = clmad__bcast_new_outputs(ctx, plan, dtype, n_out, values);
        if (st == CLMAD_OK)
            st = clmad__bcast_new_outputs(ctx, plan, dtype, n_out, dvalues);
        for (int o = 0; o < n_out && st == CLMAD_OK; o++)
            for (int a = 0; a < n_active && st == CLMAD_OK; a++) {
                st = clmad__bcast_new_outputs(ctx, plan, pdt, 1, &parts[o * n_in + act[a]]);
                if (st == CLMAD_OK)
                    st = clmad__bcast_new_outputs(ctx, plan, pdt, 1, &tparts[o * n_in + act[a]]);
            }
    }
    clmad_chunks c = clmad__chunks(act, n_active, clmad_chunk_cap(ctx));
    while (st == CLMAD_OK && plan->numel > 0 && clmad__next_chunk(&c)) {
        clmad_variant v;
        clmad__bcast_variant(k, plan, dtype, CLMAD_MODE_SECOND, &v);
        clmad_tensor *chunk_parts[CLMAD_MAX_OUTPUTS * CLMAD_MAX_INPUTS];
        clmad_tensor *chunk_tparts[CLMAD_MAX_OUTPUTS * CLMAD_MAX_INPUTS];
        clmad__chunk_seed(&c, &v, parts, chunk_parts);
        clmad__chunk_seed(&c, &v, tparts, chunk_tparts);
        /* Every chunk carries every active input's tangent: the second
         * derivative of a partial mixes all directions. */
        for (int j = 0; j < n_in; j++)
            if (v.slot[j] < 0 && (!active || active[j]) && !clmad__kernel_integer(k, j))
                v.slot[j] = CLMAD_SLOT_TANGENT_ONLY;
        v.write_values = c.first == 0;
        clmad_launch_args a = {.values = values, .derivs = chunk_parts, .inputs = inputs, .tangents = tangents,
                               .out_tangents = dvalues, .deriv_tangents = chunk_tparts};
        st = clmad__bcast_launch(k, &v, plan, &a);
    }
    if (st != CLMAD_OK) {
        clmad__release_all(values, n_out);
        clmad__release_all(dvalues, n_out);
        clmad__release_all(parts, n_out * n_in);
        clmad__release_all(tparts, n_out * n_in);
        return st;
    }
    memcpy(outputs, values, (size_t)n_out * sizeof *outputs);
    memcpy(out_tangents, dvalues, (size_t)n_out * sizeof *out_tangents);
    memcpy(partials, parts, (size_t)(n_out * n_in) * sizeof *partials);
    memcpy(partial_tangents, tparts, (size_t)(n_out * n_in) * sizeof *partial_tangents);
    return CLMAD_OK;
}
