/* SPDX-License-Identifier: Apache-2.0 */
/* Cross entropy over integer class labels, and accuracy. The loss is made
 * of recorded operations (log_softmax, gather, mean), so its backward is
 * theirs: (softmax - onehot) / rows for the logits. */
#include "ops/index.h"
#include "ops/region.h"
#include "runtime/context_guard.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* Checks logits (..., C) and labels (...): integer labels, shapes. */
static clmad_status check_labels(clmad_context *ctx, const char *call, clmad_tensor *logits, clmad_tensor *labels,
                                 const void *out)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!logits || !labels || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call,
                           !logits ? "logits" : !labels ? "labels" : "out");
    clmad_status st = clmad__check_same_context(ctx, logits, call, "logits");
    if (st == CLMAD_OK)
        st = clmad__check_same_context(ctx, labels, call, "labels");
    if (st == CLMAD_OK)
        st = clmad__require_any_float(ctx, logits, call, "logits");
    if (st != CLMAD_OK)
        return st;
    if (clmad__dtype_is_float(labels->dtype) || clmad__dtype_is_16bit(labels->dtype))
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "%s: labels are %s; class labels are integer tensors (i64, i32, u8)",
                           call, clmad_dtype_name(labels->dtype));
    if (logits->ndim == 0 || logits->shape[logits->ndim - 1] == 0)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s: logits need a last axis of classes (rank %d%s)", call,
                           logits->ndim, logits->ndim ? ", 0 classes" : "");
    int ok = labels->ndim == logits->ndim - 1;
    for (int d = 0; ok && d < labels->ndim; d++)
        ok = labels->shape[d] == logits->shape[d];
    if (!ok)
        return clmad__fail(ctx, CLMAD_ERR_SHAPE,
                           "%s: labels (rank %d) must have the shape of logits (rank %d) without its last axis",
                           call, labels->ndim, logits->ndim);
    return CLMAD_OK;
}

/* labels as i64 of shape (..., 1): a new tensor. */
static clmad_status labels_column(clmad_context *ctx, clmad_tensor *labels, clmad_tensor **column)
{
    clmad_tensor *wide = NULL;
    clmad_status st = labels->dtype == CLMAD_I64 ? (wide = clmad_tensor_retain(labels), CLMAD_OK)
                                                 : clmad_cast(ctx, labels, CLMAD_I64, &wide);
    if (st != CLMAD_OK)
        return st;
    size_t shape[CLMAD_MAX_DIMS];
    for (int d = 0; d < labels->ndim; d++)
        shape[d] = labels->shape[d];
    shape[labels->ndim] = 1;
    st = clmad_reshape(ctx, wide, labels->ndim + 1, shape, column);
    clmad_tensor_release(wide);
    return st;
}

static clmad_status cross_entropy_index_f32(clmad_context *ctx, clmad_tensor *const *in, const void *args,
                                            clmad_tensor **out)
{
    (void)args;
    return clmad_cross_entropy_index(ctx, in[0], in[1], out);
}

clmad_status clmad_cross_entropy_index(clmad_context *ctx, clmad_tensor *logits, clmad_tensor *labels,
                                       clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_cross_entropy_index");
    READS_ONLY(ctx, logits, labels);
    const char *call = "clmad_cross_entropy_index";
    clmad_status st = check_labels(ctx, call, logits, labels, out);
    if (st != CLMAD_OK)
        return st;
    if (clmad__widens(logits, NULL)) { /* log_softmax and the mean in f32, the loss rounded */
        clmad_tensor *in[2] = {logits, labels};
        return clmad__through_f32(ctx, 2, in, cross_entropy_index_f32, NULL, 1, out);
    }
    clmad_tensor *column = NULL, *lsm = NULL, *picked = NULL, *mean = NULL;
    st = labels_column(ctx, labels, &column);
    if (st == CLMAD_OK)
        st = clmad__check_indices(ctx, call, "labels", column, logits->shape[logits->ndim - 1]);
    if (st == CLMAD_OK)
        st = clmad_log_softmax(ctx, logits, -1, &lsm);
    if (st == CLMAD_OK)
        st = clmad_gather(ctx, lsm, -1, column, &picked);
    if (st == CLMAD_OK)
        st = clmad_mean(ctx, picked, 0, NULL, 0, &mean);
    if (st == CLMAD_OK)
        st = clmad_mul_scalar(ctx, mean, -1.0, out);
    clmad_tensor_release(column);
    clmad_tensor_release(lsm);
    clmad_tensor_release(picked);
    clmad_tensor_release(mean);
    return st;
}

clmad_status clmad_accuracy(clmad_context *ctx, clmad_tensor *logits, clmad_tensor *labels, double *value)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_accuracy");
    READS_ONLY(ctx, logits, labels);
    const char *call = "clmad_accuracy";
    clmad_status st = check_labels(ctx, call, logits, labels, value);
    if (st != CLMAD_OK)
        return st;
    size_t rows = labels->numel;
    if (rows == 0) {
        *value = NAN;
        return CLMAD_OK;
    }
    clmad_tensor *pred = NULL, *column = NULL;
    int64_t *h = malloc(2 * rows * sizeof *h);
    if (!h)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory in %s", call);
    st = clmad_argmax(ctx, logits, -1, 0, &pred);
    if (st == CLMAD_OK)
        st = labels_column(ctx, labels, &column);
    if (st == CLMAD_OK)
        st = clmad_tensor_read(pred, h, rows * sizeof *h);
    if (st == CLMAD_OK)
        st = clmad_tensor_read(column, h + rows, rows * sizeof *h);
    if (st == CLMAD_OK) {
        size_t hits = 0;
        for (size_t r = 0; r < rows; r++)
            hits += h[r] == h[rows + r];
        *value = (double)hits / (double)rows;
    }
    free(h);
    clmad_tensor_release(pred);
    clmad_tensor_release(column);
    return st;
}
