/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_broadcast and its forward-mode forms: checks, chunking, launch. */
#include "runtime/primitives.h"
#include "broadcast/kernel.h"
#include "tape/tape.h"

#include <stdio.h>
#include <string.h>

/* The default chunk cap of a device, from bench_arity (bench/results):
 * every chunk re-evaluates the primal, so on POCL (CPU), rusticl
 * (llvmpipe) and an H100 one chunk of up to 16 partials was the fastest
 * at every N <= 16 (H100, N = 16: 0.053 ns/element with cap 16, 0.079 with
 * 8, 0.135 with 4), with no spilling reported. Devices of other kinds
 * (accelerators) keep the paper's cautious 8. */
static int device_chunk_cap(const clmad_context *ctx)
{
    return ctx->info.type == CLMAD_DEVICE_CPU || ctx->info.type == CLMAD_DEVICE_GPU ? 16 : 8;
}

int clmad_chunk_cap(const clmad_context *ctx)
{
    if (!ctx)
        return 0;
    return ctx->chunk_cap > 0 ? ctx->chunk_cap : device_chunk_cap(ctx);
}

clmad_status clmad_set_chunk_cap(clmad_context *ctx, int cap)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_set_chunk_cap: ctx is NULL");
    if (cap < 0 || cap > CLMAD_MAX_INPUTS)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_set_chunk_cap: cap %d is outside 0..%d", cap, CLMAD_MAX_INPUTS);
    ctx->chunk_cap = cap;
    return CLMAD_OK;
}

int clmad__items_per_work_item(const clmad_context *ctx)
{
    return ctx->items;
}

/* Checks the arguments common to every broadcast call and plans the shapes. */
clmad_status clmad__bcast_check_and_plan(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                   const char *call, clmad_bcast_plan *plan)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!k || !inputs)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: kernel and inputs must not be NULL",
                           call);
    if (k->ctx != ctx)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "%s(%s): the kernel belongs to another context", call, k->fn_name);
    char what[160];
    snprintf(what, sizeof what, "%s(%s)", call, k->fn_name);
    for (int j = 0; j < k->n_inputs; j++) {
        if (!inputs[j])
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s(%s): input %d is NULL", call,
                               k->fn_name, j);
        clmad_status st = clmad__check_same_context(ctx, inputs[j], what, "input %d", j);
        if (st != CLMAD_OK)
            return st;
        if (inputs[j]->dtype != inputs[0]->dtype)
            return clmad__fail(ctx, CLMAD_ERR_DTYPE,
                               "%s(%s): input %d is %s but input 0 is %s; inputs must share one dtype",
                               call, k->fn_name, j, inputs[j]->dtype == CLMAD_F64 ? "f64" : "f32",
                               inputs[0]->dtype == CLMAD_F64 ? "f64" : "f32");
    }
    clmad_status st = clmad__check_dtype(ctx, inputs[0]->dtype);
    if (st != CLMAD_OK)
        return st;
    return clmad__plan_broadcast(ctx, what, inputs, k->n_inputs, plan);
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
    v->items = clmad__items_per_work_item(k->ctx);
    if (mode != CLMAD_MODE_STORED && v->items > 1 && plan->any_strided) {
        size_t last = plan->dims[plan->nd - 1], items = (size_t)v->items;
        v->row_runs = last % items == 0 ? CLMAD_ROWS_ALIGNED : last > items ? CLMAD_ROWS_CROSSING : 0;
    }
    for (int j = 0; j < k->n_inputs; j++) {
        v->access[j] = (char)plan->access[j];
        v->slot[j] = mode == CLMAD_MODE_PARTIALS || mode == CLMAD_MODE_VJP ? -1 : 0;
    }
}

/* Creates n uninitialised tensors of the plan's output shape. */
clmad_status clmad__bcast_new_outputs(clmad_context *ctx, const clmad_bcast_plan *plan, clmad_dtype dtype,
                                int n, clmad_tensor **out)
{
    for (int i = 0; i < n; i++) {
        clmad_status st = clmad_tensor_create(ctx, dtype, plan->out_ndim, plan->out_shape, NULL, &out[i]);
        if (st != CLMAD_OK) {
            for (int k = 0; k < i; k++) {
                clmad_tensor_release(out[k]);
                out[k] = NULL;
            }
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

static clmad_status set_arg(clmad_context *ctx, cl_kernel kern, cl_uint *i, size_t size,
                            const void *value)
{
    cl_int err = clSetKernelArg(kern, (*i)++, size, value);
    return err == CL_SUCCESS ? CLMAD_OK : clmad__fail_cl(ctx, err, "clSetKernelArg");
}

/* Device bytes a launch of v reads and writes: each array once per element
 * it touches (a broadcast input by its own size), for the stats. */
static uint64_t launch_bytes(const clmad_variant *v, const clmad_bcast_plan *plan,
                             const clmad_launch_args *a)
{
    uint64_t n = plan->numel, arrays = 0, small = 0;
    if (v->mode == CLMAD_MODE_VJP || v->mode == CLMAD_MODE_STORED) {
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
    }
    if (v->mode != CLMAD_MODE_STORED)
        for (int j = 0; j < v->n_inputs; j++) {
            uint64_t size = v->access[j] == CLMAD_ACCESS_FULL ? n : a->inputs[j]->numel;
            small += size * (v->mode == CLMAD_MODE_JVP && v->slot[j] ? 2 : 1);
        }
    return (arrays * n + small) * clmad_dtype_size(v->dtype);
}

clmad_status clmad__bcast_launch(clmad_kernel *k, const clmad_variant *v, const clmad_bcast_plan *plan,
                                 const clmad_launch_args *a)
{
    clmad_context *ctx = k->ctx;
    cl_kernel kern;
    clmad_status st = clmad__kernel_variant(k, v, &kern);
    if (st != CLMAD_OK)
        return st;
    cl_uint i = 0;
    cl_ulong n = plan->numel;
    int backward = v->mode == CLMAD_MODE_VJP || v->mode == CLMAD_MODE_STORED;
    st = set_arg(ctx, kern, &i, sizeof n, &n);
    if (backward) {
        for (int o = 0; o < v->n_outputs && st == CLMAD_OK; o++)
            if (v->adj_mask & (1u << o)) {
                st = set_arg(ctx, kern, &i, sizeof(cl_mem), &a->values[o]->mem);
                if (st == CLMAD_OK && (v->adj_scaled & (1u << o)))
                    st = set_arg(ctx, kern, &i, sizeof(cl_mem), &a->adj_scales[o]->mem);
            }
        for (int s = 0; s < v->K && st == CLMAD_OK; s++)
            st = set_arg(ctx, kern, &i, sizeof(cl_mem), &a->derivs[s]->mem);
    }
    for (int o = 0; o < v->n_outputs && st == CLMAD_OK && !backward; o++)
        st = set_arg(ctx, kern, &i, sizeof(cl_mem), &a->values[o]->mem);
    int n_derivs = v->mode == CLMAD_MODE_PARTIALS ? v->n_outputs * v->K
                   : v->mode == CLMAD_MODE_JVP    ? v->n_outputs
                                                  : 0;
    for (int d = 0; d < n_derivs && st == CLMAD_OK; d++)
        st = set_arg(ctx, kern, &i, sizeof(cl_mem), &a->derivs[d]->mem);
    if (v->mode == CLMAD_MODE_STORED) {
        for (int o = 0; o < v->n_outputs && st == CLMAD_OK; o++)
            if (v->adj_mask & (1u << o))
                for (int s = 0; s < v->K && st == CLMAD_OK; s++)
                    st = set_arg(ctx, kern, &i, sizeof(cl_mem), &a->stored[o * v->K + s]->mem);
    } else {
        for (int j = 0; j < v->n_inputs && st == CLMAD_OK; j++)
            st = set_arg(ctx, kern, &i, sizeof(cl_mem), &a->inputs[j]->mem);
        if (v->mode == CLMAD_MODE_JVP)
            for (int j = 0; j < v->n_inputs && st == CLMAD_OK; j++)
                if (v->slot[j])
                    st = set_arg(ctx, kern, &i, sizeof(cl_mem), &a->tangents[j]->mem);
        if (plan->any_strided) {
            for (int d = 0; d < plan->nd && st == CLMAD_OK; d++) {
                cl_ulong dim = plan->dims[d];
                st = set_arg(ctx, kern, &i, sizeof dim, &dim);
            }
            for (int j = 0; j < v->n_inputs; j++)
                if (plan->access[j] == CLMAD_ACCESS_STRIDED)
                    for (int d = 0; d < plan->nd && st == CLMAD_OK; d++) {
                        cl_ulong s = plan->strides[j][d];
                        st = set_arg(ctx, kern, &i, sizeof s, &s);
                    }
        }
    }
    if (st != CLMAD_OK)
        return st;
    size_t items = (size_t)v->items;
    return clmad__enqueue_1d(ctx, kern, (plan->numel + items - 1) / items, launch_bytes(v, plan, a));
}

clmad_status clmad_broadcast(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                             clmad_tensor **outputs)
{
    clmad_bcast_plan plan;
    clmad_status st = clmad__bcast_check_and_plan(ctx, k, inputs, "clmad_broadcast", &plan);
    if (st != CLMAD_OK)
        return st;
    if (!outputs)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_broadcast(%s): outputs is NULL",
                           k->fn_name);
    if (clmad__should_record(ctx, inputs, k->n_inputs))
        return clmad__bcast_record(ctx, k, inputs, &plan, outputs);
    clmad_dtype dtype = inputs[0]->dtype;
    clmad_tensor *values[CLMAD_MAX_OUTPUTS] = {0};
    st = clmad__bcast_new_outputs(ctx, &plan, dtype, k->n_outputs, values);
    if (st != CLMAD_OK)
        return st;
    if (plan.numel > 0) {
        clmad_variant v;
        clmad__bcast_variant(k, &plan, dtype, CLMAD_MODE_PRIMAL, &v);
        clmad_launch_args a = {.values = values, .inputs = inputs};
        st = clmad__bcast_launch(k, &v, &plan, &a);
        if (st != CLMAD_OK) {
            clmad__release_all(values, k->n_outputs);
            return st;
        }
    }
    memcpy(outputs, values, (size_t)k->n_outputs * sizeof *outputs);
    return CLMAD_OK;
}

/* Splits n active inputs into chunks of at most cap: the fewest chunks, then
 * the most even sizes (ForwardDiff's rule). Returns the chunk size. */
int clmad__chunk_size(int n, int cap)
{
    if (n <= cap)
        return n;
    int chunks = (n + cap - 1) / cap;
    return (n + chunks - 1) / chunks;
}

clmad_status clmad__bcast_run_partials(clmad_kernel *k, const clmad_bcast_plan *plan,
                                       clmad_tensor *const *inputs, const int *active,
                                       clmad_tensor **outputs, clmad_tensor **partials)
{
    clmad_context *ctx = k->ctx;
    int n_in = k->n_inputs, n_out = k->n_outputs;
    int act[CLMAD_MAX_INPUTS], n_active = 0;
    for (int j = 0; j < n_in; j++)
        if (!active || active[j])
            act[n_active++] = j;

    clmad_dtype dtype = inputs[0]->dtype;
    clmad_tensor *values[CLMAD_MAX_OUTPUTS] = {0};
    clmad_tensor *parts[CLMAD_MAX_OUTPUTS * CLMAD_MAX_INPUTS] = {0};
    clmad_status st = clmad__bcast_new_outputs(ctx, plan, dtype, n_out, values);
    for (int o = 0; o < n_out && st == CLMAD_OK; o++)
        for (int a = 0; a < n_active && st == CLMAD_OK; a++)
            st = clmad__bcast_new_outputs(ctx, plan, dtype, 1, &parts[o * n_in + act[a]]);

    if (st == CLMAD_OK && plan->numel > 0 && n_active == 0) {
        clmad_variant v;
        clmad__bcast_variant(k, plan, dtype, CLMAD_MODE_PRIMAL, &v);
        clmad_launch_args a = {.values = values, .inputs = inputs};
        st = clmad__bcast_launch(k, &v, plan, &a);
    }
    int size = n_active ? clmad__chunk_size(n_active, clmad_chunk_cap(ctx)) : 0;
    for (int first = 0; st == CLMAD_OK && plan->numel > 0 && first < n_active; first += size) {
        int K = n_active - first < size ? n_active - first : size;
        clmad_variant v;
        clmad__bcast_variant(k, plan, dtype, CLMAD_MODE_PARTIALS, &v);
        v.K = K;
        v.write_values = first == 0;
        clmad_tensor *chunk_parts[CLMAD_MAX_OUTPUTS * CLMAD_MAX_INPUTS];
        for (int s = 0; s < K; s++) {
            int j = act[first + s];
            v.slot[j] = (signed char)s;
            for (int o = 0; o < n_out; o++)
                chunk_parts[o * K + s] = parts[o * n_in + j];
        }
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

clmad_status clmad_broadcast_partials(clmad_context *ctx, clmad_kernel *k,
                                      clmad_tensor *const *inputs, const int *active,
                                      clmad_tensor **outputs, clmad_tensor **partials)
{
    clmad_bcast_plan plan;
    clmad_status st = clmad__bcast_check_and_plan(ctx, k, inputs, "clmad_broadcast_partials", &plan);
    if (st != CLMAD_OK)
        return st;
    if (!outputs || !partials)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_broadcast_partials(%s): outputs and partials must not be NULL",
                           k->fn_name);
    return clmad__bcast_run_partials(k, &plan, inputs, active, outputs, partials);
}

clmad_status clmad_broadcast_jvp(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                 clmad_tensor *const *tangents, clmad_tensor **outputs,
                                 clmad_tensor **out_tangents)
{
    clmad_bcast_plan plan;
    clmad_status st = clmad__bcast_check_and_plan(ctx, k, inputs, "clmad_broadcast_jvp", &plan);
    if (st != CLMAD_OK)
        return st;
    if (!tangents || !outputs || !out_tangents)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_broadcast_jvp(%s): tangents, outputs and out_tangents must not be NULL",
                           k->fn_name);
    for (int j = 0; j < k->n_inputs; j++) {
        const clmad_tensor *t = tangents[j], *x = inputs[j];
        if (!t)
            continue;
        char what[160];
        snprintf(what, sizeof what, "clmad_broadcast_jvp(%s)", k->fn_name);
        st = clmad__check_same_context(ctx, t, what, "tangent %d", j);
        if (st != CLMAD_OK)
            return st;
        if (t->dtype != x->dtype)
            return clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_broadcast_jvp(%s): tangent %d has another dtype than its input",
                               k->fn_name, j);
        int same = t->ndim == x->ndim;
        for (int d = 0; same && d < t->ndim; d++)
            same = t->shape[d] == x->shape[d];
        if (!same)
            return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                               "clmad_broadcast_jvp(%s): tangent %d must have the shape of input %d",
                               k->fn_name, j, j);
    }
    clmad_dtype dtype = inputs[0]->dtype;
    clmad_tensor *values[CLMAD_MAX_OUTPUTS] = {0}, *dvalues[CLMAD_MAX_OUTPUTS] = {0};
    st = clmad__bcast_new_outputs(ctx, &plan, dtype, k->n_outputs, values);
    if (st == CLMAD_OK)
        st = clmad__bcast_new_outputs(ctx, &plan, dtype, k->n_outputs, dvalues);
    if (st == CLMAD_OK && plan.numel > 0) {
        clmad_variant v;
        clmad__bcast_variant(k, &plan, dtype, CLMAD_MODE_JVP, &v);
        v.K = 1;
        for (int j = 0; j < k->n_inputs; j++)
            v.slot[j] = tangents[j] != NULL;
        clmad_launch_args a = {.values = values, .derivs = dvalues, .inputs = inputs, .tangents = tangents};
        st = clmad__bcast_launch(k, &v, &plan, &a);
    }
    if (st != CLMAD_OK) {
        clmad__release_all(values, k->n_outputs);
        clmad__release_all(dvalues, k->n_outputs);
        return st;
    }
    memcpy(outputs, values, (size_t)k->n_outputs * sizeof *outputs);
    memcpy(out_tangents, dvalues, (size_t)k->n_outputs * sizeof *out_tangents);
    return CLMAD_OK;
}
