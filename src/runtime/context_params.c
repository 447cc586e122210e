/* SPDX-License-Identifier: Apache-2.0 */
/* The context parameters (CLMAD_CONTEXT_PARAMS): bounds, get and set. */
#include "runtime/context.h"
#include "runtime/context_guard.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name; /* the clmad_options field */
    int64_t lowest, highest;
} PARAMS[] = {
#define CLMAD__PARAM_ROW(id, value, field, lowest, highest) [id] = {#field, lowest, highest},
    CLMAD_CONTEXT_PARAMS(CLMAD__PARAM_ROW)
#undef CLMAD__PARAM_ROW
};
#define N_PARAMS (sizeof PARAMS / sizeof PARAMS[0])

static clmad_status check_known(const clmad_context *ctx, const char *call, clmad_context_param param)
{
    if ((size_t)param >= N_PARAMS || !PARAMS[param].name)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: unknown parameter %d", call, (int)param);
    return CLMAD_OK;
}

static clmad_status check(const clmad_context *ctx, const char *call, clmad_context_param param,
                          int64_t value)
{
    clmad_status st = check_known(ctx, call, param);
    if (st != CLMAD_OK)
        return st;
    if (value < PARAMS[param].lowest || value > PARAMS[param].highest)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s %" PRId64 " is outside %" PRId64 "..%" PRId64,
                           call, PARAMS[param].name, value, PARAMS[param].lowest, PARAMS[param].highest);
    return CLMAD_OK;
}

/* Byte counts beyond INT64_MAX (no device has that much) read as INT64_MAX. */
static int64_t saturate(uint64_t bytes)
{
    return bytes > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)bytes;
}

/* The options' values by parameter. */
static void option_values(const clmad_options *opt, int64_t values[N_PARAMS])
{
    values[CLMAD_PARAM_CHUNK_CAP] = opt->chunk_cap;
    values[CLMAD_PARAM_POOL_LIMIT_BYTES] = saturate(opt->pool_limit_bytes);
    values[CLMAD_PARAM_RETAIN_TAPE] = opt->retain_tape;
    values[CLMAD_PARAM_DISABLE_GRAD] = opt->disable_grad;
    values[CLMAD_PARAM_PARTIALS_POLICY] = opt->partials_policy;
    values[CLMAD_PARAM_DISABLE_FUSION] = opt->disable_fusion;
}
_Static_assert(N_PARAMS == CLMAD_PARAM_DISABLE_FUSION + 1, "option_values: a parameter is missing");

/* CLMAD_FUSE=0 turns fusion off whatever the parameter says. */
static int fusion_off_by_environment(void)
{
    const char *v = getenv("CLMAD_FUSE");
    return v && strcmp(v, "0") == 0;
}

clmad_status clmad__check_options(const clmad_options *opt, const char *call)
{
    int64_t values[N_PARAMS];
    option_values(opt, values);
    for (size_t p = 0; p < N_PARAMS; p++) {
        clmad_status st = check(NULL, call, (clmad_context_param)p, values[p]);
        if (st != CLMAD_OK)
            return st;
    }
    return CLMAD_OK;
}

/* The default pool limit: a quarter of the device, at most 8 GiB. One
 * forward + backward of 64 MiB tensors (HM-LSTM at 4096 x 4096) cycles more
 * than 1 GiB, and reallocating each iteration cost an H100 2x. */
static uint64_t default_pool_limit(const clmad_context *ctx)
{
    uint64_t limit = ctx->info.global_mem_bytes / 4;
    return limit > (UINT64_C(8) << 30) ? UINT64_C(8) << 30 : limit;
}

static void set(clmad_context *ctx, clmad_context_param param, int64_t value)
{
    switch (param) {
    case CLMAD_PARAM_CHUNK_CAP: ctx->chunk_cap = (int)value; break;
    case CLMAD_PARAM_POOL_LIMIT_BYTES:
        ctx->pool.limit_bytes = value ? (uint64_t)value : default_pool_limit(ctx);
        if (ctx->pool.kept_bytes > ctx->pool.limit_bytes)
            clmad__buffer_pool_clear(ctx);
        break;
    case CLMAD_PARAM_RETAIN_TAPE: ctx->tape.retain = (int)value; break;
    case CLMAD_PARAM_DISABLE_GRAD: ctx->tape.grad_enabled = !value; break;
    case CLMAD_PARAM_PARTIALS_POLICY: ctx->tape.policy = (clmad_partials_policy)value; break;
    case CLMAD_PARAM_DISABLE_FUSION: ctx->fusion_disabled = value || fusion_off_by_environment(); break;
    }
}

void clmad__apply_options(clmad_context *ctx, const clmad_options *opt)
{
    int64_t values[N_PARAMS];
    option_values(opt, values);
    for (size_t p = 0; p < N_PARAMS; p++)
        set(ctx, (clmad_context_param)p, values[p]);
}

clmad_status clmad__set_param(clmad_context *ctx, const char *call, clmad_context_param param, int64_t value)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    clmad_status st = check(ctx, call, param, value);
    if (st == CLMAD_OK)
        set(ctx, param, value);
    return st;
}

clmad_status clmad_context_set_param(clmad_context *ctx, clmad_context_param param, int64_t value)
{
    CLMAD_GUARD(ctx, "clmad_context_set_param");
    return clmad__set_param(ctx, "clmad_context_set_param", param, value);
}

clmad_status clmad_context_get_param(const clmad_context *ctx, clmad_context_param param, int64_t *value)
{
    CLMAD_GUARD(ctx, "clmad_context_get_param");
    if (!ctx || !value)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_context_get_param: %s is NULL",
                           !ctx ? "ctx" : "value");
    clmad_status st = check_known(ctx, "clmad_context_get_param", param);
    if (st != CLMAD_OK)
        return st;
    switch (param) {
    case CLMAD_PARAM_CHUNK_CAP: *value = ctx->chunk_cap; break;
    case CLMAD_PARAM_POOL_LIMIT_BYTES: *value = saturate(ctx->pool.limit_bytes); break;
    case CLMAD_PARAM_RETAIN_TAPE: *value = ctx->tape.retain; break;
    case CLMAD_PARAM_DISABLE_GRAD: *value = !ctx->tape.grad_enabled; break;
    case CLMAD_PARAM_PARTIALS_POLICY: *value = ctx->tape.policy; break;
    case CLMAD_PARAM_DISABLE_FUSION: *value = ctx->fusion_disabled; break;
    }
    return CLMAD_OK;
}
