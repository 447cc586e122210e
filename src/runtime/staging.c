/* SPDX-License-Identifier: Apache-2.0 */
/* Staging areas: a host-visible buffer (CL_MEM_ALLOC_HOST_PTR, pinned on
 * GPUs) that is mapped between calls, so that many tensors move between
 * the device and the host with device-side copies and one wait. OpenCL
 * leaves commands on a mapped region undefined, so every gather or scatter
 * unmaps first and maps again after its copies. */
#include "runtime/tensor.h"
#include "runtime/context_guard.h"

#include <stdio.h>
#include <stdlib.h>

struct clmad_staging {
    clmad_context *ctx;
    cl_mem mem;   /* NULL when bytes == 0 */
    size_t bytes;
    void *host;   /* the mapped area, or NULL while unmapped */
    int owned;    /* the context's own (clmad_context_staging): holds no reference */
};

static clmad_status map(clmad_staging *s)
{
    if (s->host || !s->mem)
        return CLMAD_OK;
    cl_int err;
    s->host = clEnqueueMapBuffer(s->ctx->queue, s->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, s->bytes, 0,
                                 NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        s->host = NULL;
        return clmad__fail_cl(s->ctx, err, "clEnqueueMapBuffer (staging)");
    }
    return CLMAD_OK;
}

static clmad_status unmap(clmad_staging *s)
{
    if (!s->host)
        return CLMAD_OK;
    cl_int err = clEnqueueUnmapMemObject(s->ctx->queue, s->mem, s->host, 0, NULL, NULL);
    s->host = NULL;
    return err == CL_SUCCESS ? CLMAD_OK : clmad__fail_cl(s->ctx, err, "clEnqueueUnmapMemObject (staging)");
}

static clmad_status staging_make(clmad_context *ctx, size_t bytes, int owned, clmad_staging **out)
{
    clmad_staging *s = calloc(1, sizeof *s);
    if (!s)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory creating a staging area");
    s->ctx = ctx;
    s->bytes = bytes;
    if (bytes > 0) {
        cl_int err;
        s->mem = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
        if (err != CL_SUCCESS) {
            free(s);
            if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE)
                return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY,
                                   "clmad_staging_create: %zu bytes of host-visible memory not available (%d)",
                                   bytes, (int)err);
            return clmad__fail_cl(ctx, err, "clCreateBuffer (staging)");
        }
    }
    s->owned = owned;
    if (!owned)
        clmad__context_retain(ctx);
    *out = s;
    return CLMAD_OK;
}

clmad_status clmad_staging_create(clmad_context *ctx, size_t bytes, clmad_staging **out)
{
    CLMAD_GUARD(ctx, "clmad_staging_create");
    if (!ctx || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_staging_create: ctx and s must not be NULL");
    clmad_status st = clmad__check_open(ctx, "clmad_staging_create");
    return st == CLMAD_OK ? staging_make(ctx, bytes, 0, out) : st;
}

static void staging_free(clmad_staging *s)
{
    unmap(s);
    if (s->mem)
        clReleaseMemObject(s->mem);
    free(s);
}

clmad_status clmad_context_staging(clmad_context *ctx, size_t bytes, clmad_staging **out)
{
    CLMAD_GUARD(ctx, "clmad_context_staging");
    if (!ctx || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_context_staging: ctx and s must not be NULL");
    clmad_status st = clmad__check_open(ctx, "clmad_context_staging");
    if (st != CLMAD_OK)
        return st;
    clmad_staging *had = ctx->staging;
    if (!had || had->bytes < bytes) {
        /* Grown geometrically, so that slowly growing requests do not
         * reallocate every time. */
        size_t grown = had && had->bytes * 2 > bytes ? had->bytes * 2 : bytes;
        clmad_staging *s;
        st = staging_make(ctx, grown, 1, &s);
        if (st != CLMAD_OK)
            return st;
        if (had)
            staging_free(had);
        ctx->staging = s;
    }
    *out = ctx->staging;
    return CLMAD_OK;
}

void clmad__staging_drop_owned(clmad_context *ctx)
{
    if (ctx->staging)
        staging_free(ctx->staging);
    ctx->staging = NULL;
}

/* Checks the tensors and that they fit, back to back. */
static clmad_status check(clmad_staging *s, clmad_tensor *const *ts, int n, int to_area, const char *call)
{
    if (n < 0 || (n > 0 && !ts))
        return clmad__fail(s->ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %d tensors at %p", call, n, (const void *)ts);
    size_t total = 0;
    for (int k = 0; k < n; k++) {
        if (!ts[k])
            return clmad__fail(s->ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: ts[%d] is NULL", call, k);
        clmad_status st = clmad__check_same_context(s->ctx, ts[k], call, "ts[%d]", k);
        if (st == CLMAD_OK && !to_area) {
            char what[32];
            snprintf(what, sizeof what, "ts[%d]", k);
            st = clmad__check_writable(ts[k], call, what);
        }
        if (st != CLMAD_OK)
            return st;
        total += clmad__tensor_bytes(ts[k]);
    }
    if (total > s->bytes)
        return clmad__fail(s->ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: the tensors hold %zu bytes, the area %zu",
                           call, total, s->bytes);
    return CLMAD_OK;
}

/* Enqueues the copies between the area and the tensors, and waits. */
static clmad_status copy(clmad_staging *s, clmad_tensor *const *ts, int n, int to_area)
{
    size_t at = 0;
    cl_int err = CL_SUCCESS;
    for (int k = 0; k < n && err == CL_SUCCESS; k++) {
        size_t bytes = clmad__tensor_bytes(ts[k]);
        if (bytes > 0)
            err = to_area ? clEnqueueCopyBuffer(s->ctx->queue, ts[k]->mem, s->mem, 0, at, bytes, 0, NULL, NULL)
                          : clEnqueueCopyBuffer(s->ctx->queue, s->mem, ts[k]->mem, at, 0, bytes, 0, NULL, NULL);
        at += bytes;
    }
    if (err == CL_SUCCESS)
        err = clFinish(s->ctx->queue);
    return err == CL_SUCCESS ? CLMAD_OK : clmad__fail_cl(s->ctx, err, "clEnqueueCopyBuffer (staging)");
}

clmad_status clmad_staging_gather(clmad_staging *s, clmad_tensor *const *ts, int n, void **host)
{
    CLMAD_GUARD(s ? s->ctx : NULL, "clmad_staging_gather");
    if (!s || !host)
        return clmad__fail(s ? s->ctx : NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_staging_gather: NULL argument");
    clmad_status st = check(s, ts, n, 1, "clmad_staging_gather");
    if (st == CLMAD_OK)
        st = unmap(s);
    if (st == CLMAD_OK)
        st = copy(s, ts, n, 1);
    if (st == CLMAD_OK)
        st = map(s);
    *host = st == CLMAD_OK ? s->host : NULL;
    return st;
}

clmad_status clmad_staging_map(clmad_staging *s, void **host)
{
    CLMAD_GUARD(s ? s->ctx : NULL, "clmad_staging_map");
    if (!s || !host)
        return clmad__fail(s ? s->ctx : NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_staging_map: NULL argument");
    clmad_status st = map(s);
    *host = st == CLMAD_OK ? s->host : NULL;
    return st;
}

clmad_status clmad_staging_scatter(clmad_staging *s, clmad_tensor *const *ts, int n)
{
    CLMAD_GUARD(s ? s->ctx : NULL, "clmad_staging_scatter");
    if (!s)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_staging_scatter: s is NULL");
    clmad_status st = check(s, ts, n, 0, "clmad_staging_scatter");
    if (st == CLMAD_OK)
        st = unmap(s);
    if (st == CLMAD_OK)
        st = copy(s, ts, n, 0);
    return st;
}

void clmad_staging_release(clmad_staging *s)
{
    CLMAD_GUARD_WAIT(s ? s->ctx : NULL);
    if (!s || s->owned)
        return;
    clmad_context *ctx = s->ctx;
    staging_free(s);
    clmad__context_unref(ctx);
}
