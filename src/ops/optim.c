/* SPDX-License-Identifier: Apache-2.0 */
/* Optimizers: SGD with momentum, Adam and AdamW as fused in-place kernels
 * (cl/train.cl), up to CLMAD_OPTIM_SLOTS parameters per launch
 * (optim_group.c), their state owned by the optimizer. */
#include "ops/optim.h"
#include "runtime/primitives.h"
#include "runtime/scope.h"
#include "tape/tape.h"
#include "runtime/context_guard.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void clmad_optimizer_options_init(clmad_optimizer_options *opt, clmad_optimizer_kind kind)
{
    if (!opt)
        return;
    *opt = (clmad_optimizer_options){.kind = kind, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                                     .weight_decay = kind == CLMAD_OPTIM_ADAMW ? 1e-2 : 0.0};
}

static clmad_status check_options(clmad_context *ctx, const clmad_optimizer_options *o)
{
    const char *bad = NULL;
    if ((int)o->kind < 0 || o->kind > CLMAD_OPTIM_ADAMW)
        bad = "kind is not a clmad_optimizer_kind";
    else if (!isfinite(o->lr) || o->lr < 0)
        bad = "lr must be finite and >= 0";
    else if (!isfinite(o->weight_decay) || o->weight_decay < 0)
        bad = "weight_decay must be finite and >= 0";
    else if (o->kind == CLMAD_OPTIM_SGD && (!isfinite(o->momentum) || o->momentum < 0))
        bad = "momentum must be finite and >= 0";
    else if (o->kind == CLMAD_OPTIM_SGD && o->nesterov && o->momentum <= 0)
        bad = "nesterov needs a momentum > 0";
    else if (o->kind != CLMAD_OPTIM_SGD && !(o->beta1 >= 0 && o->beta1 < 1 && o->beta2 >= 0 && o->beta2 < 1))
        bad = "beta1 and beta2 must be in [0, 1)";
    else if (o->kind != CLMAD_OPTIM_SGD && (!isfinite(o->eps) || o->eps < 0))
        bad = "eps must be finite and >= 0";
    return bad ? clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_optimizer_create: %s", bad) : CLMAD_OK;
}

void clmad_optimizer_release(clmad_optimizer *o)
{
    CLMAD_GUARD_WAIT(o ? o->ctx : NULL);
    if (!o)
        return;
    for (int i = 0; i < o->n; i++) {
        clmad__tensor_unref(o->params[i]);
        clmad_tensor_release(o->state[2 * i]);
        clmad_tensor_release(o->state[2 * i + 1]);
    }
    free(o->params);
    free(o->param_steps);
    free(o->state);
    free(o);
}

/* Zero-filled state of p's shape, the optimizer's own (in no scope). */
static clmad_status new_state(clmad_context *ctx, const clmad_tensor *p, clmad_tensor **out)
{
    clmad__scope_pause(ctx);
    clmad_status st = clmad_tensor_zeros(ctx, p->dtype, p->ndim, p->shape, out);
    clmad__scope_resume(ctx);
    return st;
}

clmad_status clmad_optimizer_create(clmad_context *ctx, const clmad_optimizer_options *opt,
                                    clmad_tensor *const *params, int n, clmad_optimizer **out)
{
    CLMAD_GUARD(ctx, "clmad_optimizer_create");
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_optimizer_create: ctx is NULL");
    if (!opt || !params || !out || n < 1)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_optimizer_create: %s", !opt ? "opt is NULL" : !params ? "params is NULL"
                                                         : !out ? "out is NULL" : "n must be at least 1");
    clmad_status st = check_options(ctx, opt);
    for (int i = 0; i < n && st == CLMAD_OK; i++) {
        if (!params[i])
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_optimizer_create: params[%d] is NULL", i);
        st = clmad__check_same_context(ctx, params[i], "clmad_optimizer_create", "params[%d]", i);
        if (st == CLMAD_OK && clmad__dtype_is_16bit(params[i]->dtype))
            st = clmad__fail(ctx, CLMAD_ERR_DTYPE,
                             "clmad_optimizer_create: params[%d] is a 16-bit tensor (%s): keep f32 master weights "
                             "for the optimizer and clmad_cast them to %s for the forward (the gradient flows "
                             "back through the cast)",
                             i, clmad_dtype_name(params[i]->dtype), clmad_dtype_name(params[i]->dtype));
        else if (st == CLMAD_OK && !clmad__dtype_is_float(params[i]->dtype))
            st = clmad__fail(ctx, CLMAD_ERR_DTYPE, "clmad_optimizer_create: params[%d] is an integer tensor (%s)",
                             i, clmad_dtype_name(params[i]->dtype));
        if (st == CLMAD_OK) {
            char what[32];
            snprintf(what, sizeof what, "params[%d]", i);
            st = clmad__check_writable(params[i], "clmad_optimizer_create", what);
        }
        for (int j = 0; j < i && st == CLMAD_OK; j++)
            if (params[j] == params[i])
                return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                                   "clmad_optimizer_create: params[%d] and params[%d] are the same tensor", j, i);
    }
    if (st != CLMAD_OK)
        return st;
    clmad_optimizer *o = calloc(1, sizeof *o);
    if (o) {
        o->params = calloc((size_t)n, sizeof *o->params);
        o->param_steps = calloc((size_t)n, sizeof *o->param_steps);
        o->state = calloc(2 * (size_t)n, sizeof *o->state);
    }
    if (!o || !o->params || !o->param_steps || !o->state) {
        if (o) {
            free(o->params);
            free(o->param_steps);
            free(o->state);
        }
        free(o);
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory creating an optimizer");
    }
    o->ctx = ctx;
    o->opt = *opt;
    o->n = n;
    for (int i = 0; i < n; i++)
        o->params[i] = clmad_tensor_retain(params[i]);
    int slots = opt->kind == CLMAD_OPTIM_SGD ? (opt->momentum > 0 ? 1 : 0) : 2;
    for (int i = 0; i < n && st == CLMAD_OK; i++)
        for (int s = 0; s < slots && st == CLMAD_OK; s++)
            st = new_state(ctx, params[i], &o->state[2 * i + s]);
    if (st != CLMAD_OK) {
        clmad_optimizer_release(o);
        return st;
    }
    *out = o;
    return CLMAD_OK;
}

clmad_status clmad_optimizer_sgd(clmad_context *ctx, clmad_tensor *const *params, int n, double lr,
                                 double momentum, clmad_optimizer **out)
{
    CLMAD_GUARD(ctx, "clmad_optimizer_sgd");
    clmad_optimizer_options opt;
    clmad_optimizer_options_init(&opt, CLMAD_OPTIM_SGD);
    opt.lr = lr;
    opt.momentum = momentum;
    return clmad_optimizer_create(ctx, &opt, params, n, out);
}

clmad_status clmad_optimizer_adam(clmad_context *ctx, clmad_tensor *const *params, int n, double lr,
                                  clmad_optimizer **out)
{
    CLMAD_GUARD(ctx, "clmad_optimizer_adam");
    clmad_optimizer_options opt;
    clmad_optimizer_options_init(&opt, CLMAD_OPTIM_ADAM);
    opt.lr = lr;
    return clmad_optimizer_create(ctx, &opt, params, n, out);
}

clmad_status clmad_optimizer_adamw(clmad_context *ctx, clmad_tensor *const *params, int n, double lr,
                                   double weight_decay, clmad_optimizer **out)
{
    CLMAD_GUARD(ctx, "clmad_optimizer_adamw");
    clmad_optimizer_options opt;
    clmad_optimizer_options_init(&opt, CLMAD_OPTIM_ADAMW);
    opt.lr = lr;
    opt.weight_decay = weight_decay;
    return clmad_optimizer_create(ctx, &opt, params, n, out);
}

static clmad_status step_one(clmad_optimizer *o, int i)
{
    clmad_context *ctx = o->ctx;
    clmad_tensor *p = o->params[i], *g = p->grad, *s0 = o->state[2 * i], *s1 = o->state[2 * i + 1];
    const clmad_optimizer_options *q = &o->opt;
    const clmad_dtype dt = p->dtype;
    const size_t rs = clmad_dtype_size(dt);
    cl_ulong n = p->numel;
    cl_kernel k;
    clmad_status st;
    if (q->kind == CLMAD_OPTIM_SGD) {
        st = clmad__cached_kernel(ctx, dt, CLMAD_TRAIN_SGD, &k);
        if (st != CLMAD_OK)
            return st;
        clmad_real_arg lr = clmad__real_of(dt, q->lr), mu = clmad__real_of(dt, q->momentum),
                       wd = clmad__real_of(dt, q->weight_decay);
        cl_int has_v = s0 != NULL, nesterov = q->nesterov != 0;
        const size_t sizes[9] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), sizeof n, rs, rs, rs,
                                 sizeof has_v, sizeof nesterov};
        const void *values[9] = {&p->mem, &g->mem, s0 ? &s0->mem : &p->mem, &n, &lr, &mu, &wd, &has_v,
                                 &nesterov};
        st = clmad__set_kernel_args(ctx, k, 9, sizes, values);
        return st != CLMAD_OK ? st
                              : clmad__enqueue_1d(ctx, k, p->numel, (uint64_t)(has_v ? 5 : 3) * clmad__tensor_bytes(p));
    }
    st = clmad__cached_kernel(ctx, dt, CLMAD_TRAIN_ADAM, &k);
    if (st != CLMAD_OK)
        return st;
    clmad_real_arg step_size, sb;
    clmad__adam_corrections(o, i, &step_size, &sb);
    clmad_real_arg b1 = clmad__real_of(dt, q->beta1), c1 = clmad__real_of(dt, 1 - q->beta1),
                   b2 = clmad__real_of(dt, q->beta2), c2 = clmad__real_of(dt, 1 - q->beta2),
                   eps = clmad__real_of(dt, q->eps), wd = clmad__real_of(dt, q->weight_decay),
                   decay = clmad__real_of(dt, 1 - q->lr * q->weight_decay);
    cl_int decoupled = q->kind == CLMAD_OPTIM_ADAMW;
    const size_t sizes[15] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), sizeof(cl_mem), sizeof n, rs, rs,
                              rs, rs, rs, rs, rs, rs, rs, sizeof decoupled};
    const void *values[15] = {&p->mem, &g->mem, &s0->mem, &s1->mem, &n, &step_size, &b1, &c1, &b2, &c2, &sb,
                              &eps, &wd, &decay, &decoupled};
    st = clmad__set_kernel_args(ctx, k, 15, sizes, values);
    return st != CLMAD_OK ? st : clmad__enqueue_1d(ctx, k, p->numel, 7 * (uint64_t)clmad__tensor_bytes(p));
}

clmad_status clmad_optimizer_step(clmad_optimizer *o)
{
    CLMAD_GUARD(o ? o->ctx : NULL, "clmad_optimizer_step");
    if (!o)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_optimizer_step: o is NULL");
    /* Every parameter is checked before any is written: all or nothing. */
    for (int i = 0; i < o->n; i++) {
        char what[32];
        snprintf(what, sizeof what, "params[%d]", i);
        clmad_status st = clmad__check_not_on_tape(o->ctx, o->params[i], "clmad_optimizer_step", what);
        if (st != CLMAD_OK)
            return st;
    }
    o->steps++;
    for (int i = 0; i < o->n; i++)
        if (o->params[i]->grad && o->params[i]->numel > 0)
            o->param_steps[i]++; /* no gradient: left as it is, its step count too, as in PyTorch */
    /* Large parameters alone, the others grouped (CLMAD_OPTIM_ALONE). */
    for (int i = 0; i < o->n; i++) {
        if (!o->params[i]->grad || o->params[i]->numel == 0 ||
            (!o->per_parameter && o->params[i]->numel < CLMAD_OPTIM_ALONE))
            continue;
        clmad_status st = step_one(o, i);
        if (st != CLMAD_OK)
            return st;
    }
    return o->per_parameter ? CLMAD_OK : clmad__optimizer_step_grouped(o);
}

void clmad__optimizer_launch_per_parameter(clmad_optimizer *o, int on)
{
    if (o)
        o->per_parameter = on != 0;
}

void clmad_optimizer_zero_grad(clmad_optimizer *o)
{
    CLMAD_GUARD_WAIT(o ? o->ctx : NULL);
    if (o)
        for (int i = 0; i < o->n; i++)
            clmad_tensor_zero_grad(o->params[i]);
}

clmad_status clmad_optimizer_set_lr(clmad_optimizer *o, double lr)
{
    CLMAD_GUARD(o ? o->ctx : NULL, "clmad_optimizer_set_lr");
    if (!o)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_optimizer_set_lr: o is NULL");
    if (!isfinite(lr) || lr < 0)
        return clmad__fail(o->ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_optimizer_set_lr: lr %g must be finite and >= 0",
                           lr);
    o->opt.lr = lr;
    return CLMAD_OK;
}

uint64_t clmad_optimizer_steps(const clmad_optimizer *o)
{
    return o ? o->steps : 0;
}
