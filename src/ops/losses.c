/* SPDX-License-Identifier: Apache-2.0 */
/* Losses built from recorded operations, so that their gradients are those
 * of operations tested on their own:
 *   clmad_mse_loss(p, t)      = dot(p - t, p - t) * (1 / numel)
 *   clmad_cross_entropy(x, t) = dot(t, log_softmax(x, -1)) * (-1 / rows),
 * t one-hot rows made from class indices (cl/axis.cl) or given as
 * probabilities. dot forms no full-size product; the temporaries are
 * released here and kept by the tape as long as backward needs them. */
#include "ops/ops.h"
#include "ops/region.h"
#include "runtime/scope.h"
#include "tape/tape.h"
#include "runtime/context_guard.h"

#include <math.h>
#include <stdio.h>

/* Releases a temporary made here. It leaves the caller's scope first, so
 * that it lives exactly as long as the tape holds it. */
static void drop(clmad_tensor *t)
{
    if (t) {
        clmad__scope_keep(t);
        clmad_tensor_release(t);
    }
}

/* *out = s * factor, factor a 0-d constant of s's dtype. Losses scale
 * their weights, never their sum: the adjoint of s in s * c is formed with
 * s's value as well (0 times it), so a NaN or inf sum from one bad element
 * would spoil every element's gradient. */
static clmad_status scaled(clmad_context *ctx, clmad_tensor *s, double factor, clmad_tensor **out)
{
    clmad_tensor *c;
    clmad_status st = clmad_tensor_fill(ctx, s->dtype, 0, NULL, factor, &c);
    if (st == CLMAD_OK)
        st = clmad_mul(ctx, s, c, out);
    drop(c);
    return st;
}

/* *out = sum(a * w), recorded; over no elements the mean a loss stands for
 * is 0/0, NaN, as clmad_mean's (0 * NaN, still recorded). */
static clmad_status weighted_sum(clmad_context *ctx, clmad_tensor *a, clmad_tensor *w, clmad_tensor **out)
{
    if (a->numel > 0)
        return clmad_dot(ctx, a, w, out);
    clmad_tensor *s;
    clmad_status st = clmad_dot(ctx, a, w, &s);
    if (st == CLMAD_OK)
        st = scaled(ctx, s, NAN, out);
    drop(s);
    return st;
}

/* The checks common to both losses. */
static clmad_status check_pair(clmad_context *ctx, const char *name, clmad_tensor *a, const char *an,
                               clmad_tensor *b, const char *bn, clmad_tensor **out)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", name);
    if (!a || !b || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", name,
                           !a ? an : !b ? bn : "out");
    clmad_status st = clmad__check_same_context(ctx, a, name, "%s", an);
    if (st == CLMAD_OK)
        st = clmad__check_same_context(ctx, b, name, "%s", bn);
    if (st == CLMAD_OK)
        st = clmad__require_any_float(ctx, a, name, an); /* 16-bit: the callers widen (through_f32.c) */
    if (st == CLMAD_OK && a->dtype != b->dtype)
        st = clmad__fail(ctx, CLMAD_ERR_DTYPE, "%s: %s is %s and %s is %s", name, an,
                         clmad_dtype_name(a->dtype), bn, clmad_dtype_name(b->dtype));
    return st;
}

static void shape_text(char *buf, size_t cap, const clmad_tensor *t)
{
    size_t at = 0;
    at += (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < t->ndim && at < cap; d++)
        at += (size_t)snprintf(buf + at, cap - at, d ? ", %zu" : "%zu", t->shape[d]);
    if (at < cap)
        snprintf(buf + at, cap - at, ")");
}

static clmad_status mse_f32(clmad_context *ctx, clmad_tensor *const *in, const void *args, clmad_tensor **out)
{
    (void)args;
    return clmad_mse_loss(ctx, in[0], in[1], out);
}

clmad_status clmad_mse_loss(clmad_context *ctx, clmad_tensor *pred, clmad_tensor *target, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_mse_loss");
    READS_ONLY(ctx, pred, target);
    const char *name = "clmad_mse_loss";
    clmad_status st = check_pair(ctx, name, pred, "pred", target, "target", out);
    if (st != CLMAD_OK)
        return st;
    if (clmad__widens(pred, target) && clmad__same_shape(pred, target)) {
        clmad_tensor *in[2] = {pred, target};
        return clmad__through_f32(ctx, 2, in, mse_f32, NULL, 1, out);
    }
    if (!clmad__same_shape(pred, target)) {
        char ps[200], ts[200];
        shape_text(ps, sizeof ps, pred);
        shape_text(ts, sizeof ts, target);
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s: pred %s and target %s differ in shape", name, ps, ts);
    }
    /* sum(d * (d / numel)): the gradient of each element is its own (a
     * NaN or inf element spoils only its own, as in PyTorch). Over no
     * elements the mean is 0/0, NaN, as clmad_mean's. */
    clmad_tensor *d = NULL, *w = NULL;
    st = clmad_sub(ctx, pred, target, &d);
    if (st == CLMAD_OK)
        st = scaled(ctx, d, 1.0 / (double)pred->numel, &w);
    if (st == CLMAD_OK)
        st = weighted_sum(ctx, d, w, out);
    drop(d);
    drop(w);
    return st;
}

/* One-hot rows (rows x classes, the shape of logits) of the class indices. */
static clmad_status one_hot(clmad_context *ctx, clmad_tensor *logits, clmad_tensor *idx, clmad_tensor **out)
{
    clmad_tensor *t;
    clmad_status st = clmad_tensor_create(ctx, logits->dtype, logits->ndim, logits->shape, NULL, &t);
    if (st != CLMAD_OK || t->numel == 0) {
        if (st == CLMAD_OK)
            *out = t;
        return st;
    }
    cl_kernel k;
    st = clmad__cached_kernel(ctx, t->dtype, CLMAD_OPS_ONE_HOT, &k);
    cl_ulong numel = t->numel, classes = logits->shape[logits->ndim - 1];
    const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof numel, sizeof classes};
    const void *values[] = {&t->mem, &idx->mem, &numel, &classes};
    if (st == CLMAD_OK)
        st = clmad__set_kernel_args(ctx, k, 4, sizes, values);
    if (st == CLMAD_OK)
        st = clmad__enqueue_1d(ctx, k, t->numel,
                               (uint64_t)(t->numel + idx->numel) * clmad_dtype_size(t->dtype));
    if (st != CLMAD_OK) {
        clmad_tensor_release(t);
        return st;
    }
    *out = t;
    return CLMAD_OK;
}

static clmad_status cross_entropy_f32(clmad_context *ctx, clmad_tensor *const *in, const void *args,
                                      clmad_tensor **out)
{
    (void)args;
    return clmad_cross_entropy(ctx, in[0], in[1], out);
}

clmad_status clmad_cross_entropy(clmad_context *ctx, clmad_tensor *logits, clmad_tensor *target,
                                 clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_cross_entropy");
    READS_ONLY(ctx, logits, target);
    const char *name = "clmad_cross_entropy";
    if (ctx && target && out && !clmad__dtype_is_float(target->dtype) && !clmad__dtype_is_16bit(target->dtype))
        return clmad_cross_entropy_index(ctx, logits, target, out); /* integer class labels */
    clmad_status st = check_pair(ctx, name, logits, "logits", target, "target", out);
    if (st == CLMAD_OK && clmad__widens(logits, target)) {
        clmad_tensor *in[2] = {logits, target};
        return clmad__through_f32(ctx, 2, in, cross_entropy_f32, NULL, 1, out);
    }
    if (st != CLMAD_OK)
        return st;
    if (logits->ndim == 0 || logits->shape[logits->ndim - 1] == 0)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s: logits need a last axis of classes (rank %d%s)", name,
                           logits->ndim, logits->ndim ? ", 0 classes" : "");
    int probabilities = clmad__same_shape(logits, target);
    int indices = target->ndim == logits->ndim - 1;
    for (int d = 0; indices && d < target->ndim; d++)
        indices = target->shape[d] == logits->shape[d];
    if (!probabilities && !indices) {
        char ls[200], ts[200];
        shape_text(ls, sizeof ls, logits);
        shape_text(ts, sizeof ts, target);
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "%s: logits %s take a target of their shape (probabilities) or of their "
                           "shape without the last axis (class indices), not %s",
                           name, ls, ts);
    }
    size_t rows = logits->numel / logits->shape[logits->ndim - 1];
    /* sum(w * lsm), w = -t / rows: every row's gradient is its own, so one
     * bad row (an inf or NaN logit) spoils only itself. With class indices
     * the loss takes lsm at the target only, as PyTorch's does: a -inf
     * logit of another class leaves it finite (0 * -inf would be NaN). */
    clmad_tensor *t = NULL, *lsm = NULL, *w = NULL, *zero = NULL, *picked = NULL;
    st = probabilities ? (t = clmad_tensor_retain(target), CLMAD_OK) : one_hot(ctx, logits, target, &t);
    if (st == CLMAD_OK)
        st = clmad_log_softmax(ctx, logits, -1, &lsm);
    if (st == CLMAD_OK)
        st = scaled(ctx, t, -1.0 / (double)rows, &w);
    if (st == CLMAD_OK && !probabilities)
        st = clmad_tensor_zeros(ctx, logits->dtype, 0, NULL, &zero);
    if (st == CLMAD_OK && !probabilities)
        st = clmad_where(ctx, t, lsm, zero, &picked);
    if (st == CLMAD_OK)
        st = weighted_sum(ctx, w, probabilities ? lsm : picked, out);
    if (probabilities)
        clmad__tensor_unref(t); /* the caller's target, retained above */
    else
        drop(t);
    drop(lsm);
    drop(w);
    drop(zero);
    drop(picked);
    return st;
}
