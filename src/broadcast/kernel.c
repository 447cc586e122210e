/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_kernel_create and clmad_kernel_release: a kernel object, its source
 * lowered, and the variants compiled at creation. */
#include "broadcast/launch.h"
#include "broadcast/variants.h"
#include "base/strings.h"
#include "runtime/context.h"
#include "lower/kernel_check.h"
#include "lower/lower.h"
#include "runtime/context_guard.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_identifier(const char *s)
{
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return 0;
    return 1;
}

/* A variant of k over full-shape f32 inputs, none seeded. */
static void create_variant(const clmad_kernel *k, clmad_mode mode, clmad_variant *v)
{
    clmad_bcast_plan full = {.n_inputs = k->n_inputs};
    for (int j = 0; j < k->n_inputs; j++)
        full.access[j] = CLMAD_ACCESS_FULL;
    clmad__bcast_variant(k, &full, CLMAD_F32, mode, v);
}

/* The dual variant compiled at creation: the one that the first derivative
 * over full-shape f32 inputs that all require a gradient will run (the first
 * chunk of STORE's forward kernel; of RECOMPUTE's backward kernel, for fresh
 * gradients of every output; the policy as AUTO picks it for a small
 * tensor), so that compiling it here usually saves compiling it there.
 * Where that variant has more than 128 buffer arguments (the 1024 bytes of
 * arguments OpenCL guarantees), the smallest dual variant instead: JVP
 * without tangents (at most 2 * 16 + 64). */
static void dual_variant(const clmad_kernel *k, clmad_variant *v)
{
    const clmad_context *ctx = k->ctx;
    const int n_in = k->n_inputs, n_out = k->n_outputs;
    int n_T = 0;
    for (int j = 0; j < n_in; j++)
        n_T += !clmad__kernel_integer(k, j);
    const int K = clmad__chunk_size(n_T, clmad_chunk_cap(ctx));
    int store = ctx->tape.policy == CLMAD_PARTIALS_STORE ||
                (ctx->tape.policy == CLMAD_PARTIALS_AUTO && ctx->info.type != CLMAD_DEVICE_GPU);
    int args = store ? n_out * (K + 1) + n_in : n_out + K + n_in;
    if (args > 128) {
        create_variant(k, CLMAD_MODE_JVP, v);
        v->K = 1;
        return;
    }
    create_variant(k, store ? CLMAD_MODE_PARTIALS : CLMAD_MODE_VJP, v);
    v->K = K;
    for (int j = 0, s = 0; j < n_in && s < K; j++)
        if (!clmad__kernel_integer(k, j))
            v->slot[j] = (signed char)s++;
    if (!store) {
        v->write_values = 0;
        v->adj_mask = (1u << n_out) - 1;
    }
}

clmad_status clmad_kernel_create(clmad_context *ctx, const char *source, const char *fn_name,
                                 int n_inputs, int n_outputs, clmad_kernel **out)
{
    /* It reads no tensor: held work stays held (a kernel made between a
     * broadcast and its loss does not end the fusion). */
    CLMAD_GUARD_HOLDING(ctx, "clmad_kernel_create");
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_kernel_create: ctx is NULL");
    if (!source || !fn_name || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_kernel_create: source, fn_name and k must not be NULL");
    clmad_status usable = clmad__check_open(ctx, "clmad_kernel_create");
    if (usable != CLMAD_OK)
        return usable;
    if (!is_identifier(fn_name))
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_kernel_create: \"%s\" is not a C identifier", fn_name);
    if (n_inputs < 1 || n_inputs > CLMAD_MAX_INPUTS || n_outputs < 1 || n_outputs > CLMAD_MAX_OUTPUTS)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_kernel_create(%s): %d inputs and %d outputs; allowed 1..%d and 1..%d",
                           fn_name, n_inputs, n_outputs, CLMAD_MAX_INPUTS, CLMAD_MAX_OUTPUTS);
    char msg[1024], *note = NULL, *lowered = NULL;
    lower_param params[CLMAD_MAX_INPUTS];
    clmad_status lowering = clmad__lower(source, &lowered, msg, sizeof msg, &note);
    if (lowering == CLMAD_OK) {
        lowering = clmad__lower_check_kernel(source, fn_name, n_inputs, n_outputs, params, msg, sizeof msg);
        if (lowering != CLMAD_OK) {
            free(lowered);
            free(note);
        }
    }
    if (lowering != CLMAD_OK)
        return clmad__fail(ctx, lowering, "kernel \"%s\": %s", fn_name, msg);
    clmad_kernel *k = calloc(1, sizeof *k);
    if (k) {
        k->source = lowered;
        k->lower_note = note;
        k->fn_name = clmad__strdup(fn_name);
    }
    if (!k || !k->fn_name) {
        free(lowered);
        free(note);
        free(k);
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory creating a kernel");
    }
    k->ctx = ctx;
    clmad__context_retain(ctx);
    k->refcount = 1;
    static _Atomic uint64_t next_id;
    k->id = ++next_id;
    k->n_inputs = n_inputs;
    k->n_outputs = n_outputs;
    memcpy(k->params, params, (size_t)n_inputs * sizeof *params);
    k->first_T = 0;
    while (clmad__kernel_integer(k, k->first_T)) /* the check saw a T input */
        k->first_T++;

    /* Compile now the f32 values variant over full-shape inputs, the one
     * used most, and a dual variant: mistakes in the source, such as an
     * operator on T that only dual numbers reject, surface here. */
    clmad_variant v;
    create_variant(k, CLMAD_MODE_PRIMAL, &v);
    cl_kernel unused;
    clmad_status st = clmad__kernel_variant(k, &v, &unused);
    if (st == CLMAD_OK) {
        dual_variant(k, &v);
        st = clmad__kernel_variant(k, &v, &unused);
    }
    if (st != CLMAD_OK) {
        clmad_kernel_release(k);
        return st;
    }
    *out = k;
    return CLMAD_OK;
}

void clmad_kernel_release(clmad_kernel *k)
{
    CLMAD_GUARD_WAIT(k ? k->ctx : NULL);
    if (!k || --k->refcount > 0)
        return;
    clmad__kernel_variants_release(k);
    clmad_context *ctx = k->ctx;
    free(k->source);
    free(k->lower_note);
    free(k->fn_name);
    free(k);
    clmad__context_unref(ctx); /* the last object of a released context takes it along */
}
