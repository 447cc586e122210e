/* SPDX-License-Identifier: Apache-2.0 */
#include "runtime/primitives.h"
#include "runtime/tensor.h"
#include "runtime/held.h"
#include "runtime/scope.h"
#include "base/strbuf.h"
#include "runtime/context_guard.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t clmad__tensor_bytes(const clmad_tensor *t)
{
    return t->numel * clmad_dtype_size(t->dtype);
}

clmad_status clmad__shape_numel(const clmad_context *ctx, int ndim, const size_t *shape,
                                size_t elem_size, size_t *numel)
{
    if (ndim < 0 || ndim > CLMAD_MAX_DIMS)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "rank %d is outside 0..%d", ndim,
                           CLMAD_MAX_DIMS);
    if (ndim > 0 && !shape)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "shape is NULL for rank %d", ndim);
    /* NumPy's rule, the same in any order of the axes (so a transpose of an
     * accepted shape is accepted): the product of the nonzero sizes, in
     * bytes, fits in size_t. Every stride is then representable too. */
    size_t nonzero = 1;
    int empty = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            empty = 1;
            continue;
        }
        if (nonzero > SIZE_MAX / elem_size / shape[i]) {
            clmad_strbuf sb = {0};
            clmad__sb_shape(&sb, ndim, shape);
            clmad_status st = clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY,
                                          "a tensor of shape %s is too big: the product of its "
                                          "nonzero sizes times %zu bytes overflows size_t",
                                          sb.data && !sb.failed ? sb.data : "(?)", elem_size);
            clmad__sb_free(&sb);
            return st;
        }
        nonzero *= shape[i];
    }
    *numel = empty ? 0 : nonzero;
    return CLMAD_OK;
}

clmad_status clmad__check_same_context(clmad_context *ctx, const clmad_tensor *t, const char *call,
                                       const char *what, ...)
{
    clmad_status st = clmad__check_open(ctx, call);
    if (st != CLMAD_OK || !t || t->ctx == ctx)
        return st;
    char name[64];
    va_list ap;
    va_start(ap, what);
    vsnprintf(name, sizeof name, what, ap);
    va_end(ap);
    return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s belongs to another context", call, name);
}

clmad_status clmad__check_writable(const clmad_tensor *t, const char *call, const char *what)
{
    if (!t || !t->read_only)
        return CLMAD_OK;
    return clmad__fail(t->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                       "%s: %s is read-only (a wrapped CL_MEM_READ_ONLY buffer): clmad writes no "
                       "element of it; wrap a buffer that kernels may write, or copy into a tensor "
                       "of clmad's",
                       call, what);
}

/* Allocates a tensor; `out` is the caller's out-parameter, checked here. */
clmad_tensor *clmad__tensor_header(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                                   size_t numel)
{
    clmad_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ctx = ctx;
    t->refcount = 1;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    t->numel = numel;
    return t;
}

static clmad_status tensor_alloc(clmad_context *ctx, clmad_dtype dtype, int ndim,
                                 const size_t *shape, clmad_tensor **result, clmad_tensor **out)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "tensor creation: ctx is NULL");
    if (!out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "tensor creation: out is NULL");
    clmad_status st = clmad__check_open(ctx, "tensor creation");
    if (st == CLMAD_OK)
        st = clmad__check_dtype(ctx, dtype);
    if (st != CLMAD_OK)
        return st;
    size_t numel;
    st = clmad__shape_numel(ctx, ndim, shape, clmad_dtype_size(dtype), &numel);
    if (st != CLMAD_OK)
        return st;
    clmad_tensor *t = clmad__tensor_header(ctx, dtype, ndim, shape, numel);
    if (!t)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory creating a tensor");
    if (numel > 0) {
        st = clmad__buffer_acquire(ctx, clmad__tensor_bytes(t), &t->mem, &t->capacity);
        if (st != CLMAD_OK) {
            free(t);
            return st;
        }
        ctx->stats.live_tensor_bytes += t->capacity;
    }
    clmad__context_retain(ctx);
    st = clmad__scope_track(t);
    if (st != CLMAD_OK) {
        clmad_tensor_release(t);
        return st;
    }
    *result = t;
    return CLMAD_OK;
}

clmad_status clmad_tensor_create(clmad_context *ctx, clmad_dtype dtype, int ndim,
                                 const size_t *shape, const void *host, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_tensor_create"); /* writes only its new tensor */
    clmad_tensor *t = NULL;
    clmad_status st = tensor_alloc(ctx, dtype, ndim, shape, &t, out);
    if (st != CLMAD_OK)
        return st;
    if (host && t->numel > 0) {
        st = clmad_tensor_write(t, host, clmad__tensor_bytes(t));
        if (st != CLMAD_OK) {
            clmad_tensor_release(t);
            return st;
        }
    }
    *out = t;
    return CLMAD_OK;
}

/* An integer dtype takes integral values in its range (a cast of anything
 * else is undefined in C): refused with CLMAD_ERR_INVALID_ARGUMENT. */
static clmad_status check_integer_value(const clmad_context *ctx, const char *call, clmad_dtype dtype,
                                        double value)
{
    double lo, hi; /* hi excluded: 2^31, 2^63 and 256 are exact doubles */
    switch (dtype) {
    case CLMAD_I32: lo = -2147483648.0, hi = 2147483648.0; break;
    case CLMAD_I64: lo = -9223372036854775808.0, hi = 9223372036854775808.0; break;
    case CLMAD_U8: lo = 0, hi = 256; break;
    default: return CLMAD_OK;
    }
    if (value >= lo && value < hi && value == floor(value))
        return CLMAD_OK;
    return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %g is not a value of dtype %s (an integer in [%.0f, %.0f))",
                       call, value, clmad_dtype_name(dtype), lo, hi);
}

clmad_status clmad_tensor_fill(clmad_context *ctx, clmad_dtype dtype, int ndim,
                               const size_t *shape, double value, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_tensor_fill");
    clmad_tensor *t = NULL;
    clmad_status st = ctx ? check_integer_value(ctx, "clmad_tensor_fill", dtype, value) : CLMAD_OK;
    if (st == CLMAD_OK)
        st = tensor_alloc(ctx, dtype, ndim, shape, &t, out);
    if (st != CLMAD_OK)
        return st;
    st = clmad__fill(ctx, t->mem, dtype, t->numel, value);
    if (st != CLMAD_OK) {
        clmad_tensor_release(t);
        return st;
    }
    *out = t;
    return CLMAD_OK;
}

clmad_status clmad_tensor_zeros(clmad_context *ctx, clmad_dtype dtype, int ndim,
                                const size_t *shape, clmad_tensor **out)
{
    CLMAD_GUARD_HOLDING(ctx, "clmad_tensor_zeros");
    return clmad_tensor_fill(ctx, dtype, ndim, shape, 0.0, out);
}

clmad_status clmad__tensor_read(clmad_tensor *t, void *host, size_t capacity_bytes)
{
    if (!t)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_read: tensor is NULL");
    /* Reading the loss leaves the broadcast under it held (held.h). */
    clmad_status ready = clmad__tensor_ready(t);
    if (ready != CLMAD_OK)
        return ready;
    size_t bytes = clmad__tensor_bytes(t);
    if (!host && bytes > 0)
        return clmad__fail(t->ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_read: host is NULL");
    if (capacity_bytes < bytes)
        return clmad__fail(t->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_tensor_read: host buffer holds %zu bytes, the tensor %zu",
                           capacity_bytes, bytes);
    if (bytes == 0)
        return CLMAD_OK;
    cl_int err = clEnqueueReadBuffer(t->ctx->queue, t->mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    return err == CL_SUCCESS ? CLMAD_OK : clmad__fail_cl(t->ctx, err, "clEnqueueReadBuffer");
}

clmad_status clmad_tensor_write(clmad_tensor *t, const void *host, size_t size_bytes)
{
    CLMAD_GUARD(t ? t->ctx : NULL, "clmad_tensor_write");
    if (!t)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_write: tensor is NULL");
    size_t bytes = clmad__tensor_bytes(t);
    if (!host && bytes > 0)
        return clmad__fail(t->ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_write: host is NULL");
    if (size_bytes != bytes)
        return clmad__fail(t->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_tensor_write: %zu bytes given, the tensor holds %zu", size_bytes,
                           bytes);
    clmad_status st = clmad__check_writable(t, "clmad_tensor_write", "the tensor");
    if (st != CLMAD_OK)
        return st;
    if (bytes == 0)
        return CLMAD_OK;
    cl_int err = clEnqueueWriteBuffer(t->ctx->queue, t->mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    return err == CL_SUCCESS ? CLMAD_OK : clmad__fail_cl(t->ctx, err, "clEnqueueWriteBuffer");
}

clmad_tensor *clmad_tensor_retain(clmad_tensor *t)
{
    CLMAD_GUARD_WAIT(t ? t->ctx : NULL);
    if (t)
        t->refcount++;
    return t;
}

static void tensor_free(clmad_tensor *t)
{
    clmad_context *ctx = t->ctx;
    clmad__held_forget(t);
    clmad__scope_forget(t);
    clmad__tensor_unref(t->grad);
    if (t->wrapped) {
        /* Only clmad's own references: its sub-buffer and its retain. */
        if (t->mem && t->mem != t->wrapped)
            clReleaseMemObject(t->mem);
        clReleaseMemObject(t->wrapped);
    } else if (t->mem) {
        ctx->stats.live_tensor_bytes -= t->capacity;
        clmad__buffer_return(ctx, t->mem, t->capacity);
    }
    free(t);
    clmad__context_unref(ctx); /* the last object of a released context takes it along */
}

void clmad__tensor_unref(clmad_tensor *t)
{
    if (!t)
        return;
    if (--t->refcount == 0) {
        tensor_free(t);
    } else if (t->refcount == 1 && t->scope_slot && !t->scope_caller_ref) {
        /* Only the scope's own reference is left: nobody can read t any
         * more, so its memory returns now rather than at the scope's end. */
        clmad__scope_forget(t);
        tensor_free(t);
    }
}

void clmad_tensor_release(clmad_tensor *t)
{
    if (!t)
        return;
    CLMAD_GUARD_WAIT(t->ctx);
    t->scope_caller_ref = 0; /* the caller's own reference goes first */
    clmad__tensor_unref(t);
}

int clmad_tensor_ndim(const clmad_tensor *t)
{
    return t ? t->ndim : 0;
}

size_t clmad_tensor_dim(const clmad_tensor *t, int axis)
{
    return t && axis >= 0 && axis < t->ndim ? t->shape[axis] : 0;
}

size_t clmad_tensor_numel(const clmad_tensor *t)
{
    return t ? t->numel : 0;
}

clmad_dtype clmad_tensor_dtype(const clmad_tensor *t)
{
    return t ? t->dtype : CLMAD_F32;
}
