/* SPDX-License-Identifier: Apache-2.0 */
/* max, logsumexp, softmax and log_softmax along an axis: values against a
 * host computation, gradients against central finite differences in f64,
 * and the errors. */
#include "gradcheck.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum { K_MAX, K_LSE, K_SOFTMAX, K_LOG_SOFTMAX } kind;

static clmad_status apply(clmad_context *ctx, kind k, clmad_tensor *x, int axis, int keepdims,
                          clmad_tensor **y)
{
    switch (k) {
    case K_MAX: return clmad_max(ctx, x, axis, keepdims, y);
    case K_LSE: return clmad_logsumexp(ctx, x, axis, keepdims, y);
    case K_SOFTMAX: return clmad_softmax(ctx, x, axis, y);
    default: return clmad_log_softmax(ctx, x, axis, y);
    }
}

typedef struct axis_env {
    kind k;
    int axis, keepdims;
    clmad_tensor *w; /* weights of the loss sum(w * op(tanh(x))) */
} axis_env;

/* loss = sum(w * op(tanh(x))): tanh in front so that the op's adjoint is
 * passed on through a node (not straight into a leaf), weights so that the
 * softmax's gradient is not zero (its outputs sum to one). */
static clmad_status axis_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    axis_env *e = user;
    clmad_tensor *t = NULL, *y = NULL;
    clmad_status st = clmad_tanh(ctx, p[0], &t);
    if (st == CLMAD_OK)
        st = apply(ctx, e->k, t, e->axis, e->keepdims, &y);
    if (st == CLMAD_OK)
        st = clmad_dot(ctx, y, e->w, loss);
    clmad_tensor_release(t);
    clmad_tensor_release(y);
    return st;
}

static void check_gradients(kind k, int axis, int keepdims)
{
    clmad_context *ctx = test_context();
    unsigned seed = 11 + (unsigned)k;
    size_t xs[3] = {3, 4, 5};
    clmad_tensor *x = gc_random(ctx, 3, xs, -2, 2, &seed);
    int a = axis < 0 ? axis + 3 : axis;
    size_t ws[3];
    int wn = 0;
    for (int d = 0; d < 3; d++)
        if (d != a || k >= K_SOFTMAX)
            ws[wn++] = xs[d];
        else if (keepdims)
            ws[wn++] = 1;
    axis_env e = {k, axis, keepdims, gc_random(ctx, wn, ws, -1, 1, &seed)};
    gc_check(ctx, axis_loss, &e, 1, &x, 1e-6);
    clmad_tensor_release(e.w);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}

Test(axis, max_gradients_middle_axis) { check_gradients(K_MAX, 1, 0); }
Test(axis, max_gradients_first_axis_keepdims) { check_gradients(K_MAX, 0, 1); }
Test(axis, logsumexp_gradients_last_axis) { check_gradients(K_LSE, -1, 0); }
Test(axis, logsumexp_gradients_middle_axis_keepdims) { check_gradients(K_LSE, 1, 1); }
Test(axis, softmax_gradients_middle_axis) { check_gradients(K_SOFTMAX, 1, 0); }
Test(axis, softmax_gradients_last_axis) { check_gradients(K_SOFTMAX, -1, 0); }
Test(axis, log_softmax_gradients_first_axis) { check_gradients(K_LOG_SOFTMAX, 0, 0); }
Test(axis, log_softmax_gradients_last_axis) { check_gradients(K_LOG_SOFTMAX, 2, 0); }

/* Rows of a 2 x 3 x 2 tensor along axis 1, with large values (a naive
 * exp overflows), -inf and NaN. */
Test(axis, values_against_host)
{
    clmad_context *ctx = test_context();
    const double ninf = -INFINITY;
    /* x[o][k][i] */
    const double x[12] = {1000, 1, 1001, 2, 999, 3,  ninf, NAN, ninf, -4, ninf, 5};
    size_t shape[3] = {2, 3, 2};
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 3, shape, x, &t));
    double out[12];
    clmad_tensor *y;

    CHECK_OK(ctx, clmad_max(ctx, t, 1, 0, &y));
    cr_assert_eq(clmad_tensor_ndim(y), 2);
    CHECK_OK(ctx, clmad_tensor_read(y, out, sizeof out));
    cr_expect_eq(out[0], 1001);
    cr_expect_eq(out[1], 3);
    cr_expect_eq(out[2], ninf);
    cr_expect(isnan(out[3]), "a NaN in the row makes the max NaN, got %g", out[3]);
    clmad_tensor_release(y);

    CHECK_OK(ctx, clmad_logsumexp(ctx, t, 1, 1, &y));
    cr_assert_eq(clmad_tensor_ndim(y), 3);
    cr_assert_eq(clmad_tensor_dim(y, 1), 1);
    CHECK_OK(ctx, clmad_tensor_read(y, out, sizeof out));
    double lse0 = 1001 + log(exp(-1.0) + 1 + exp(-2.0));
    double lse1 = 3 + log(exp(-2.0) + exp(-1.0) + 1);
    cr_expect(fabs(out[0] - lse0) < 1e-12, "logsumexp %.17g, host %.17g", out[0], lse0);
    cr_expect(fabs(out[1] - lse1) < 1e-12, "logsumexp %.17g, host %.17g", out[1], lse1);
    cr_expect_eq(out[2], ninf, "a row of -inf has logsumexp -inf, got %g", out[2]);
    cr_expect(isnan(out[3]));
    clmad_tensor_release(y);

    CHECK_OK(ctx, clmad_softmax(ctx, t, 1, &y));
    CHECK_OK(ctx, clmad_tensor_read(y, out, sizeof out));
    for (int k = 0; k < 3; k++) {
        double want = exp(x[2 * k] - 1001) / (exp(-1.0) + 1 + exp(-2.0));
        cr_expect(fabs(out[2 * k] - want) < 1e-14, "softmax[%d] %.17g, host %.17g", k, out[2 * k], want);
    }
    clmad_tensor_release(y);

    CHECK_OK(ctx, clmad_log_softmax(ctx, t, -2, &y));
    CHECK_OK(ctx, clmad_tensor_read(y, out, sizeof out));
    for (int k = 0; k < 3; k++)
        cr_expect(fabs(out[2 * k + 1] - (x[2 * k + 1] - lse1)) < 1e-12);
    clmad_tensor_release(y);
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

/* In f32 at logits near 1000, where logsumexp rounds to 6e-5: the softmax
 * and logsumexp's gradient (the softmax) are still good to a few ulps. */
Test(axis, f32_softmax_accurate_at_large_logits)
{
    clmad_context *ctx = test_context();
    const float x[3] = {1000, 1001, 999};
    size_t n = 3;
    clmad_tensor *t, *y, *l, *g;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, x, &t));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(t, 1));
    CHECK_OK(ctx, clmad_softmax(ctx, t, 0, &y));
    CHECK_OK(ctx, clmad_logsumexp(ctx, t, 0, 0, &l));
    CHECK_OK(ctx, clmad_backward(ctx, l, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(t, &g));
    float yv[3], gv[3];
    CHECK_OK(ctx, clmad_tensor_read(y, yv, sizeof yv));
    CHECK_OK(ctx, clmad_tensor_read(g, gv, sizeof gv));
    double z = exp(-1.0) + 1 + exp(-2.0);
    for (int k = 0; k < 3; k++) {
        double want = exp(x[k] - 1001.0) / z;
        cr_expect(fabs(yv[k] - want) < 1e-6, "softmax[%d] %.9g, host %.9g", k, yv[k], want);
        cr_expect(fabs(gv[k] - want) < 1e-6, "logsumexp grad[%d] %.9g, host %.9g", k, gv[k], want);
    }
    clmad_tensor_release(g);
    clmad_tensor_release(l);
    clmad_tensor_release(y);
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

/* Ties: the max's gradient goes to the first maximal element only. */
Test(axis, max_gradient_goes_to_first_of_ties)
{
    clmad_context *ctx = test_context();
    const double x[4] = {2, 5, 5, 1};
    size_t shape[1] = {4};
    clmad_tensor *t, *y, *g;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, shape, x, &t));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(t, 1));
    CHECK_OK(ctx, clmad_max(ctx, t, 0, 0, &y));
    CHECK_OK(ctx, clmad_backward(ctx, y, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(t, &g));
    double got[4];
    CHECK_OK(ctx, clmad_tensor_read(g, got, sizeof got));
    cr_expect(got[0] == 0 && got[1] == 1 && got[2] == 0 && got[3] == 0, "grad %g %g %g %g", got[0], got[1],
              got[2], got[3]);
    clmad_tensor_release(g);
    clmad_tensor_release(y);
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

Test(axis, errors)
{
    clmad_context *ctx = test_context();
    size_t shape[2] = {2, 0};
    clmad_tensor *t, *y = NULL, *s;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, shape, &t));
    cr_expect_eq(clmad_max(ctx, t, 2, 0, &y), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect(test_contains(clmad_last_error(ctx), "clmad_max: axis 2 is out of range"), "%s",
              clmad_last_error(ctx));
    cr_expect_eq(clmad_softmax(ctx, t, -3, &y), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_max(ctx, t, 1, 0, &y), CLMAD_ERR_SHAPE);
    cr_expect(test_contains(clmad_last_error(ctx), "empty"), "%s", clmad_last_error(ctx));
    cr_expect_eq(clmad_logsumexp(ctx, NULL, 0, 0, &y), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_log_softmax(ctx, t, 0, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_null(y);
    /* Over an empty axis: logsumexp is -inf, the softmax is empty. */
    float v[2];
    CHECK_OK(ctx, clmad_logsumexp(ctx, t, 1, 0, &s));
    CHECK_OK(ctx, clmad_tensor_read(s, v, sizeof v));
    cr_expect(v[0] == -INFINITY && v[1] == -INFINITY);
    clmad_tensor_release(s);
    CHECK_OK(ctx, clmad_softmax(ctx, t, 1, &s));
    cr_expect_eq(clmad_tensor_numel(s), 0);
    clmad_tensor_release(s);
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

/* Long rows along the last axis, in the form GPUs take (one work-group per
 * row, ops/axis.c; reached on any device through clmad__sum_as_gpus) and
 * in one work-item per row: values and gradients against a host
 * computation in long double, at lengths around the group's 64, and rows
 * holding NaN, +inf and only -inf. */
static long double host_lse(const float *x, size_t n)
{
    long double m = x[0], s = 0;
    for (size_t k = 1; k < n; k++)
        m = x[k] > m ? x[k] : m;
    for (size_t k = 0; k < n; k++)
        s += expl((long double)x[k] - m);
    return m + logl(s);
}

static void check_long_rows(clmad_context *ctx, size_t n)
{
    const size_t rows = 4, shape[2] = {rows, n}, numel = rows * n;
    float *x = malloc(numel * sizeof *x), *w = malloc(numel * sizeof *w), *out = malloc(numel * sizeof *out);
    cr_assert(x && w && out);
    unsigned seed = 7 + (unsigned)n;
    for (size_t e = 0; e < numel; e++) {
        seed = seed * 1103515245u + 12345u;
        x[e] = (float)((seed >> 8) % 40000) / 1000.0f - 20.0f;
        seed = seed * 1103515245u + 12345u;
        w[e] = (float)((seed >> 8) % 2000) / 1000.0f - 1.0f;
    }
    x[n + n - 1] = NAN;          /* row 1 */
    x[2 * n + n / 2] = INFINITY; /* row 2 */
    for (size_t k = 0; k < n; k++)
        x[3 * n + k] = -INFINITY; /* row 3 */
    const long double lse = host_lse(x, n);
    long double max = x[0], sw = 0; /* row 0's max and sum_k w_k softmax_k */
    for (size_t k = 0; k < n; k++) {
        max = x[k] > max ? x[k] : max;
        sw += w[k] * expl(x[k] - lse);
    }
    for (kind op = K_MAX; op <= K_LOG_SOFTMAX; op++) {
        clmad_tensor *t, *wt, *y, *loss, *g;
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, shape, x, &t));
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(t, 1));
        CHECK_OK(ctx, apply(ctx, op, t, 1, 0, &y));
        const size_t m = op >= K_SOFTMAX ? numel : rows;
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, op >= K_SOFTMAX ? 2 : 1, op >= K_SOFTMAX ? shape : &rows,
                                          w, &wt));
        CHECK_OK(ctx, clmad_tensor_read(y, out, m * sizeof *out));
        const size_t per = op >= K_SOFTMAX ? n : 1;
        for (size_t k = 0; k < per; k++) { /* row 0 */
            const long double want = op == K_MAX ? max : op == K_LSE ? lse
                                                   : op == K_SOFTMAX ? expl(x[k] - lse) : x[k] - lse;
            cr_expect(fabsl(out[k] - want) <= 2e-6L * (1 + fabsl(want)), "n %zu, op %d, [%zu]: %.9g, host %.12Lg", n,
                      op, k, out[k], want);
        }
        for (size_t k = 0; k < per; k++) { /* rows 1 to 3 */
            const float nan_row = out[per + k], inf_row = out[2 * per + k], ninf_row = out[3 * per + k];
            cr_expect(isnan(nan_row), "n %zu, op %d: a NaN in the row gave %g", n, op, nan_row);
            cr_expect(op >= K_SOFTMAX ? isnan(inf_row) : inf_row == INFINITY, "n %zu, op %d: +inf gave %g", n, op,
                      inf_row);
            cr_expect(op >= K_SOFTMAX ? isnan(ninf_row) : ninf_row == -INFINITY, "n %zu, op %d: -inf gave %g", n, op,
                      ninf_row);
        }
        CHECK_OK(ctx, clmad_dot(ctx, y, wt, &loss));
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        CHECK_OK(ctx, clmad_tensor_grad(t, &g));
        CHECK_OK(ctx, clmad_tensor_read(g, out, numel * sizeof *out));
        long double sum_w = 0;
        for (size_t j = 0; j < n; j++)
            sum_w += w[j];
        for (size_t k = 0; k < n && op != K_MAX; k++) { /* row 0: w times the Jacobian */
            const long double s = expl(x[k] - lse);
            const long double want = op == K_LSE ? w[0] * s : op == K_SOFTMAX ? s * (w[k] - sw) : w[k] - s * sum_w;
            cr_expect(fabsl(out[k] - want) <= 1e-5L * (1 + fabsl(want)), "n %zu, op %d, gradient [%zu]: %.9g, host %.12Lg",
                      n, op, k, out[k], want);
        }
        clmad_tensor_release(g);
        clmad_tensor_release(loss);
        clmad_tensor_release(wt);
        clmad_tensor_release(y);
        clmad_tensor_release(t);
    }
    free(x);
    free(w);
    free(out);
}

Test(axis, long_rows_in_groups_and_one_by_one)
{
    static const size_t lengths[] = {63, 64, 65, 1000, 4099};
    for (int form = 0; form < 2; form++) {
        clmad_context *ctx = test_context();
        if (form)
            clmad__sum_as_gpus(ctx, 0);
        for (int i = 0; i < 5; i++)
            check_long_rows(ctx, lengths[i]);
        clmad_context_release(ctx);
    }
}
