/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_gradcheck: a kernel's forward-mode partials against central finite
 * differences of its primal, at the caller's points. Built on the public
 * API only (1-d inputs of n_points elements, no broadcasting). */
#include "runtime/context.h"
#include "broadcast/kernel.h"
#include "runtime/context_guard.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct gc_state {
    clmad_context *ctx;
    clmad_dtype dtype;
    size_t n;          /* points */
    int n_in, n_out;
    clmad_tensor **in; /* n_in inputs at the points */
    double *host;      /* n values, scratch */
    void *raw;         /* n values in dtype, scratch */
} gc_state;

static clmad_status upload(gc_state *s, const double *values, clmad_tensor **t)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->dtype == CLMAD_F32)
            ((float *)s->raw)[i] = (float)values[i];
        else
            ((double *)s->raw)[i] = values[i];
    }
    size_t shape[1] = {s->n};
    return clmad_tensor_create(s->ctx, s->dtype, 1, shape, s->raw, t);
}

static clmad_status download(gc_state *s, clmad_tensor *t, double *values)
{
    size_t bytes = s->n * clmad_dtype_size(s->dtype);
    clmad_status st = clmad__tensor_read(t, s->raw, bytes);
    for (size_t i = 0; st == CLMAD_OK && i < s->n; i++)
        values[i] = s->dtype == CLMAD_F32 ? ((float *)s->raw)[i] : ((double *)s->raw)[i];
    return st;
}

static void release_all(clmad_tensor **t, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        clmad_tensor_release(t[i]);
        t[i] = NULL;
    }
}

/* The primal outputs with input j replaced by x_j + step (host values),
 * read back into y (n_out * n values). */
static clmad_status shifted_outputs(gc_state *s, clmad_kernel *k, int j, const double *xj, double *y)
{
    clmad_tensor *moved = NULL, **args = calloc((size_t)s->n_in, sizeof *args),
                 **outs = calloc((size_t)s->n_out, sizeof *outs);
    clmad_status st = args && outs ? upload(s, xj, &moved)
                                   : clmad__fail(s->ctx, CLMAD_ERR_OUT_OF_MEMORY, "clmad_gradcheck: host allocation");
    if (st == CLMAD_OK) {
        memcpy(args, s->in, (size_t)s->n_in * sizeof *args);
        args[j] = moved;
        st = clmad_broadcast(s->ctx, k, args, outs);
    }
    for (int o = 0; st == CLMAD_OK && o < s->n_out; o++)
        st = download(s, outs[o], y + (size_t)o * s->n);
    if (outs)
        release_all(outs, (size_t)s->n_out);
    clmad_tensor_release(moved);
    free(outs);
    free(args);
    return st;
}

/* worst[j] for one input: steps each point by h = cbrt(eps) * max(1, |x|)
 * (the step that balances truncation and rounding for central differences)
 * and divides by the step actually taken in dtype. */
static clmad_status check_input(gc_state *s, clmad_kernel *k, int j, const double *points,
                                clmad_tensor **partials, double *worst)
{
    size_t n = s->n;
    double eps = s->dtype == CLMAD_F32 ? FLT_EPSILON : DBL_EPSILON;
    double *xp = malloc(n * sizeof *xp), *xm = malloc(n * sizeof *xm);
    double *yp = malloc((size_t)s->n_out * n * sizeof *yp), *ym = malloc((size_t)s->n_out * n * sizeof *ym);
    clmad_status st = xp && xm && yp && ym
                          ? CLMAD_OK
                          : clmad__fail(s->ctx, CLMAD_ERR_OUT_OF_MEMORY, "clmad_gradcheck: host allocation");
    for (size_t i = 0; st == CLMAD_OK && i < n; i++) {
        double x = points[i * (size_t)s->n_in + (size_t)j], h = cbrt(eps) * fmax(1.0, fabs(x));
        xp[i] = s->dtype == CLMAD_F32 ? (double)(float)(x + h) : x + h;
        xm[i] = s->dtype == CLMAD_F32 ? (double)(float)(x - h) : x - h;
    }
    if (st == CLMAD_OK)
        st = shifted_outputs(s, k, j, xp, yp);
    if (st == CLMAD_OK)
        st = shifted_outputs(s, k, j, xm, ym);
    *worst = 0.0;
    for (int o = 0; st == CLMAD_OK && o < s->n_out; o++) {
        st = download(s, partials[(size_t)o * (size_t)s->n_in + (size_t)j], s->host);
        for (size_t i = 0; st == CLMAD_OK && i < n; i++) {
            double fd = (yp[(size_t)o * n + i] - ym[(size_t)o * n + i]) / (xp[i] - xm[i]);
            double err = fabs(s->host[i] - fd) / fmax(1.0, fabs(fd));
            if (!(err <= *worst)) /* NaN counts as the worst */
                *worst = isnan(err) ? INFINITY : err;
        }
    }
    free(xp);
    free(xm);
    free(yp);
    free(ym);
    return st;
}

clmad_status clmad_gradcheck(clmad_context *ctx, clmad_kernel *k, clmad_dtype dtype, size_t n_points,
                             const double *points, double *worst)
{
    CLMAD_GUARD(ctx, "clmad_gradcheck");
    if (!ctx || !k || !points || !worst || n_points == 0)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_gradcheck: ctx, k, points and worst must be non-NULL and n_points > 0");
    if (k->ctx != ctx)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_gradcheck: the kernel belongs to another context");
    if (dtype != CLMAD_F32 && dtype != CLMAD_F64)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_gradcheck: unknown dtype %d", (int)dtype);
    for (int j = 0; j < k->n_inputs; j++)
        if (clmad__kernel_integer(k, j))
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                               "clmad_gradcheck(%s): parameter %d (\"%s\") is an integer parameter; gradcheck "
                               "takes kernels whose inputs are all T (check one with integer parameters "
                               "through the tape, or wrap it in an all-T kernel)",
                               k->fn_name, j + 1, k->params[j].name);
    clmad_status st = clmad__check_open(ctx, "clmad_gradcheck");
    if (st == CLMAD_OK)
        st = clmad__check_dtype(ctx, dtype);
    if (st != CLMAD_OK)
        return st;
    /* The host buffers hold n_points * max(n_inputs, n_outputs) doubles,
     * the device ones n_points values: check before asking for either. */
    size_t widest = (size_t)(k->n_inputs > k->n_outputs ? k->n_inputs : k->n_outputs);
    if (n_points > SIZE_MAX / sizeof(double) / widest)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_gradcheck: n_points %zu is too large: %zu values of %zu bytes per "
                           "point overflow size_t",
                           n_points, widest, sizeof(double));
    if (n_points * clmad_dtype_size(dtype) > ctx->info.max_alloc_bytes)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY,
                           "clmad_gradcheck: n_points %zu: a tensor of %zu bytes exceeds the maximum "
                           "allocation of device \"%s\" (%llu bytes)",
                           n_points, n_points * clmad_dtype_size(dtype), ctx->info.name,
                           (unsigned long long)ctx->info.max_alloc_bytes);

    gc_state s = {ctx, dtype, n_points, k->n_inputs, k->n_outputs, NULL, NULL, NULL};
    size_t n_part = (size_t)s.n_out * (size_t)s.n_in;
    clmad_tensor **outs = calloc((size_t)s.n_out, sizeof *outs), **partials = calloc(n_part, sizeof *partials);
    double *column = malloc(n_points * sizeof *column), *result = calloc((size_t)s.n_in, sizeof *result);
    s.in = calloc((size_t)s.n_in, sizeof *s.in);
    s.host = malloc(n_points * sizeof *s.host);
    s.raw = malloc(n_points * sizeof(double));
    if (!outs || !partials || !column || !result || !s.in || !s.host || !s.raw)
        st = clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "clmad_gradcheck: host allocation");
    for (int j = 0; st == CLMAD_OK && j < s.n_in; j++) {
        for (size_t i = 0; i < n_points; i++)
            column[i] = points[i * (size_t)s.n_in + (size_t)j];
        st = upload(&s, column, &s.in[j]);
    }
    if (st == CLMAD_OK) {
        /* The check itself records nothing, even if an input of an outer
         * computation requires a gradient: these inputs are new leaves. */
        st = clmad_broadcast_partials(ctx, k, s.in, NULL, outs, partials);
    }
    for (int j = 0; st == CLMAD_OK && j < s.n_in; j++)
        st = check_input(&s, k, j, points, partials, &result[j]);
    if (st == CLMAD_OK)
        memcpy(worst, result, (size_t)s.n_in * sizeof *worst);

    if (partials)
        release_all(partials, n_part);
    if (outs)
        release_all(outs, (size_t)s.n_out);
    if (s.in)
        release_all(s.in, (size_t)s.n_in);
    free(partials);
    free(outs);
    free(column);
    free(result);
    free(s.in);
    free(s.host);
    free(s.raw);
    return st;
}
