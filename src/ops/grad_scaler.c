/* SPDX-License-Identifier: Apache-2.0 */
/* Dynamic loss scaling (torch.cuda.amp.GradScaler): the scale, the unscale
 * and inf/NaN check of an optimizer's gradients in one pass each
 * (cl/train.cl's clmad_unscale_check), the skipped steps, the scale's
 * backoff and growth. */
#include "ops/optim.h"
#include "runtime/context_guard.h"
#include "runtime/held.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

struct clmad_grad_scaler {
    clmad_context *ctx;
    clmad_grad_scaler_options opt;
    float scale;           /* f32, as PyTorch's _scale */
    int growth_tracker;    /* good steps in a row since the last change */
    clmad_tensor *found;   /* one i32 on the device: an inf or NaN was seen */
};

void clmad_grad_scaler_options_init(clmad_grad_scaler_options *opt)
{
    if (opt)
        *opt = (clmad_grad_scaler_options){
            .init_scale = 65536.0, .growth_factor = 2.0, .backoff_factor = 0.5, .growth_interval = 2000};
}

clmad_status clmad_grad_scaler_create(clmad_context *ctx, const clmad_grad_scaler_options *opt,
                                      clmad_grad_scaler **out)
{
    CLMAD_GUARD(ctx, "clmad_grad_scaler_create");
    if (!ctx || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_grad_scaler_create: %s is NULL",
                           !ctx ? "ctx" : "out");
    clmad_grad_scaler_options o;
    clmad_grad_scaler_options_init(&o);
    if (opt)
        o = *opt;
    /* (NaN fails every comparison) */
    const char *bad = !(o.init_scale > 0 && o.init_scale <= FLT_MAX)       ? "init_scale must be > 0 and finite as an f32"
                      : !(isfinite(o.growth_factor) && o.growth_factor > 1) ? "growth_factor must be finite and > 1"
                      : !(o.backoff_factor > 0 && o.backoff_factor < 1)    ? "backoff_factor must be in (0, 1)"
                      : o.growth_interval < 1                              ? "growth_interval must be >= 1"
                                                                           : NULL;
    if (bad)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_grad_scaler_create: %s", bad);
    clmad_grad_scaler *s = calloc(1, sizeof *s);
    if (!s)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in clmad_grad_scaler_create");
    s->ctx = ctx;
    s->opt = o;
    s->scale = (float)o.init_scale;
    size_t one = 1;
    clmad_status st = clmad_tensor_zeros(ctx, CLMAD_I32, 1, &one, &s->found);
    if (st != CLMAD_OK) {
        free(s);
        return st;
    }
    *out = s;
    return CLMAD_OK;
}

clmad_status clmad_grad_scaler_scale(clmad_grad_scaler *s, clmad_tensor *loss, clmad_tensor **out)
{
    if (!s)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_grad_scaler_scale: s is NULL");
    CLMAD_GUARD_HOLDING(s->ctx, "clmad_grad_scaler_scale");
    if (!loss || !clmad__dtype_is_16bit(loss->dtype))
        return clmad_mul_scalar(s->ctx, loss, s->scale, out);
    clmad_tensor *wide = NULL;
    clmad_status st = clmad_cast(s->ctx, loss, CLMAD_F32, &wide);
    if (st == CLMAD_OK)
        st = clmad_mul_scalar(s->ctx, wide, s->scale, out);
    clmad_tensor_release(wide);
    return st;
}

/* g = g * inv_scale, noting an inf or NaN of g in s->found. */
static clmad_status unscale_check(clmad_grad_scaler *s, clmad_tensor *g, double inv_scale)
{
    clmad_status st = clmad__tensors_ready(&g, 1);
    if (st != CLMAD_OK || g->numel == 0)
        return st;
    cl_ulong n = g->numel;
    clmad_real_arg inv = clmad__real_of(g->dtype, inv_scale);
    const size_t sizes[] = {sizeof(cl_mem), sizeof n, clmad_dtype_size(g->dtype), sizeof(cl_mem)};
    const void *values[] = {&g->mem, &n, &inv, &s->found->mem};
    return clmad__launch_cached(s->ctx, g->dtype, CLMAD_TRAIN_UNSCALE_CHECK, 4, sizes, values, g->numel,
                                2 * (uint64_t)clmad__tensor_bytes(g));
}

/* PyTorch's _amp_update_scale_: backoff after an inf, growth after
 * growth_interval good steps in a row (only to a finite scale), in f32. */
static void update_scale(clmad_grad_scaler *s, int found)
{
    if (found) {
        s->scale = (float)(s->scale * (float)s->opt.backoff_factor);
        s->growth_tracker = 0;
        return;
    }
    if (++s->growth_tracker == s->opt.growth_interval) {
        const float grown = (float)(s->scale * (float)s->opt.growth_factor);
        if (isfinite(grown))
            s->scale = grown;
        s->growth_tracker = 0;
    }
}

clmad_status clmad_grad_scaler_step(clmad_grad_scaler *s, clmad_optimizer *o, int *stepped)
{
    if (!s || !o)
        return clmad__fail(s ? s->ctx : NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_grad_scaler_step: %s is NULL",
                           !s ? "s" : "o");
    CLMAD_GUARD(s->ctx, "clmad_grad_scaler_step");
    if (stepped)
        *stepped = 0;
    if (o->ctx != s->ctx)
        return clmad__fail(s->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_grad_scaler_step: the optimizer belongs to another context");
    int with_grad = 0;
    for (int i = 0; i < o->n; i++)
        with_grad += o->params[i]->grad != NULL;
    if (!with_grad)
        return clmad__fail(s->ctx, CLMAD_ERR_STATE,
                           "clmad_grad_scaler_step: no parameter of the optimizer has a gradient (call "
                           "clmad_backward on the scaled loss first)");
    const double inv_scale = (float)(1.0 / (double)s->scale);
    clmad_status st = clmad__fill(s->ctx, s->found->mem, CLMAD_I32, 1, 0.0);
    for (int i = 0; i < o->n && st == CLMAD_OK; i++)
        if (o->params[i]->grad)
            st = unscale_check(s, o->params[i]->grad, inv_scale);
    int32_t found = 0;
    if (st == CLMAD_OK)
        st = clmad__tensor_read(s->found, &found, sizeof found);
    if (st == CLMAD_OK && !found)
        st = clmad_optimizer_step(o);
    if (st != CLMAD_OK)
        return st;
    update_scale(s, found != 0);
    if (stepped)
        *stepped = !found;
    return CLMAD_OK;
}

double clmad_grad_scaler_get_scale(const clmad_grad_scaler *s)
{
    return s ? (double)s->scale : 0.0;
}

void clmad_grad_scaler_release(clmad_grad_scaler *s)
{
    if (!s)
        return;
    CLMAD_GUARD_WAIT(s->ctx);
    clmad_tensor_release(s->found);
    free(s);
}
