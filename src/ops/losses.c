/* SPDX-License-Identifier: Apache-2.0 */
/* Losses built from recorded operations, so that their gradients are those
 * of operations tested on their own:
 *   clmad_mse_loss(p, t)      = dot(p - t, p - t) * (1 / numel)
 *   clmad_cross_entropy(x, t) = dot(t, log_softmax(x, -1)) * (-1 / rows),
 * t one-hot rows made from class indices (cl/axis.cl) or given as
 * probabilities. dot forms no full-size product; the temporaries are
 * released here and kept by the tape as long as backward needs them. */
#include "ops/ops.h"
#include "runtime/scope.h"
#include "tape/tape.h"

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

/* *out = s * factor, factor a 0-d constant of s's dtype. */
static clmad_status scaled(clmad_context *ctx, clmad_tensor *s, double factor, clmad_tensor **out)
{
    clmad_tensor *c;
    clmad_status st = clmad_tensor_fill(ctx, s->dtype, 0, NULL, factor, &c);
    if (st == CLMAD_OK)
        st = clmad_mul(ctx, s, c, out);
    drop(c);
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
    if (st == CLMAD_OK && a->dtype != b->dtype)
        st = clmad__fail(ctx, CLMAD_ERR_DTYPE, "%s: %s is %s and %s is %s", name, an,
                         a->dtype == CLMAD_F64 ? "f64" : "f32", bn, b->dtype == CLMAD_F64 ? "f64" : "f32");
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

clmad_status clmad_mse_loss(clmad_context *ctx, clmad_tensor *pred, clmad_tensor *target, clmad_tensor **out)
{
    const char *name = "clmad_mse_loss";
    clmad_status st = check_pair(ctx, name, pred, "pred", target, "target", out);
    if (st != CLMAD_OK)
        return st;
    if (!clmad__same_shape(pred, target)) {
        char ps[200], ts[200];
        shape_text(ps, sizeof ps, pred);
        shape_text(ts, sizeof ts, target);
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s: pred %s and target %s differ in shape", name, ps, ts);
    }
    clmad_tensor *d = NULL, *s = NULL;
    st = clmad_sub(ctx, pred, target, &d);
    if (st == CLMAD_OK)
        st = clmad_dot(ctx, d, d, &s);
    /* Over no elements the mean is 0/0, NaN, as clmad_mean's. */
    if (st == CLMAD_OK)
        st = scaled(ctx, s, 1.0 / (double)pred->numel, out);
    drop(d);
    drop(s);
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

clmad_status clmad_cross_entropy(clmad_context *ctx, clmad_tensor *logits, clmad_tensor *target,
                                 clmad_tensor **out)
{
    const char *name = "clmad_cross_entropy";
    clmad_status st = check_pair(ctx, name, logits, "logits", target, "target", out);
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
    clmad_tensor *t = NULL, *lsm = NULL, *s = NULL;
    st = probabilities ? (t = clmad_tensor_retain(target), CLMAD_OK) : one_hot(ctx, logits, target, &t);
    if (st == CLMAD_OK)
        st = clmad_log_softmax(ctx, logits, -1, &lsm);
    if (st == CLMAD_OK)
        st = clmad_dot(ctx, t, lsm, &s);
    if (st == CLMAD_OK)
        st = scaled(ctx, s, -1.0 / (double)rows, out);
    if (probabilities)
        clmad__tensor_unref(t); /* the caller's target, retained above */
    else
        drop(t);
    drop(lsm);
    drop(s);
    return st;
}
