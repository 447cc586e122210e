/* SPDX-License-Identifier: Apache-2.0 */
/* Gradient checking against central finite differences in double precision,
 * for tests of the tape. Header-only (static functions). */
#ifndef CLMAD_TEST_GRADCHECK_H
#define CLMAD_TEST_GRADCHECK_H

#include "support.h"

#include <math.h>
#include <stdlib.h>

/* Builds a scalar loss from params; returns its status. */
typedef clmad_status (*loss_builder)(clmad_context *ctx, clmad_tensor **params, void *user,
                                     clmad_tensor **loss);

static inline double gc_read_scalar(clmad_context *ctx, clmad_tensor *t)
{
    double v = 0;
    CHECK_OK(ctx, clmad_tensor_read(t, &v, sizeof v));
    return v;
}

/* Random f64 tensor in [lo, hi). */
static inline clmad_tensor *gc_random(clmad_context *ctx, int ndim, const size_t *shape, double lo,
                                      double hi, unsigned *seed)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    double *h = malloc((n ? n : 1) * sizeof *h);
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        h[i] = lo + (hi - lo) * ((*seed >> 8) & 0xFFFFFF) / 16777216.0;
    }
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, ndim, shape, h, &t));
    free(h);
    return t;
}

/* Runs forward + backward and returns the gradients of params as host
 * arrays (malloc'ed, one per param). */
static inline double **gc_backward(clmad_context *ctx, loss_builder build, void *user, int n,
                                   clmad_tensor **params)
{
    for (int p = 0; p < n; p++) {
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(params[p], 1));
        clmad_tensor_zero_grad(params[p]);
    }
    clmad_tensor *loss;
    CHECK_OK(ctx, build(ctx, params, user, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    clmad_tensor_release(loss);
    double **grads = malloc((size_t)n * sizeof *grads);
    for (int p = 0; p < n; p++) {
        size_t m = clmad_tensor_numel(params[p]);
        grads[p] = calloc(m ? m : 1, sizeof(double));
        clmad_tensor *g;
        CHECK_OK(ctx, clmad_tensor_grad(params[p], &g));
        cr_assert_not_null(g, "%sparam %d received no gradient", test_case(), p);
        cr_assert_eq(clmad_tensor_numel(g), m);
        CHECK_OK(ctx, clmad_tensor_read(g, grads[p], m * sizeof(double)));
        clmad_tensor_release(g);
    }
    return grads;
}

static inline void gc_free(double **grads, int n)
{
    for (int p = 0; p < n; p++)
        free(grads[p]);
    free(grads);
}

/* Checks d loss / d params against central differences (step h relative). */
static inline void gc_check(clmad_context *ctx, loss_builder build, void *user, int n,
                            clmad_tensor **params, double tol)
{
    double **grads = gc_backward(ctx, build, user, n, params);
    CHECK_OK(ctx, clmad_set_grad_enabled(ctx, 0));
    for (int p = 0; p < n; p++) {
        size_t m = clmad_tensor_numel(params[p]);
        double *x = malloc(m * sizeof *x);
        CHECK_OK(ctx, clmad_tensor_read(params[p], x, m * sizeof *x));
        for (size_t i = 0; i < m; i++) {
            double x0 = x[i], h = 1e-6 * fmax(1.0, fabs(x0)), lp, lm;
            clmad_tensor *loss;
            x[i] = x0 + h;
            CHECK_OK(ctx, clmad_tensor_write(params[p], x, m * sizeof *x));
            CHECK_OK(ctx, build(ctx, params, user, &loss));
            lp = gc_read_scalar(ctx, loss);
            clmad_tensor_release(loss);
            x[i] = x0 - h;
            CHECK_OK(ctx, clmad_tensor_write(params[p], x, m * sizeof *x));
            CHECK_OK(ctx, build(ctx, params, user, &loss));
            lm = gc_read_scalar(ctx, loss);
            clmad_tensor_release(loss);
            x[i] = x0;
            double fd = (lp - lm) / (2 * h);
            cr_expect(fabs(grads[p][i] - fd) <= tol * fmax(1.0, fabs(fd)),
                      "%sparam %d element %zu: backward %.12g, finite differences %.12g", test_case(), p, i,
                      grads[p][i], fd);
        }
        CHECK_OK(ctx, clmad_tensor_write(params[p], x, m * sizeof *x));
        free(x);
    }
    CHECK_OK(ctx, clmad_set_grad_enabled(ctx, 1));
    gc_free(grads, n);
}

#endif
