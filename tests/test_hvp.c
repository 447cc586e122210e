/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clmad_hvp (forward over reverse), f64:
 *   - against central differences of gradients, (g(p + h v) - g(p - h v)) / 2h
 *     with g from clmad_backward, on an MLP (matmul, broadcast add, tanh,
 *     sub, mul, mean; with clmad_mse_loss; with clmad_cross_entropy of
 *     probabilities), an HM-LSTM cell update (a user broadcast with
 *     branches on inactive masks, after matmuls), a user kernel with a
 *     data-dependent loop (Newton's square root, a different number of
 *     steps per element), each axis operation (max, logsumexp, softmax,
 *     log_softmax) over a middle and the last axis of a 3-d tensor, matmul
 *     by NumPy's rules (broadcast batches, 1-d operands, transposed
 *     operands), the index operations (embedding, index_select, gather,
 *     scatter_add, where with an integer mask) and cast through f32;
 *   - closed forms of H v for softmax and logsumexp on a vector;
 *   - symmetry, u . H v = v . H u, over random programs;
 *   - a closed form through gather, a consumed tape, and bad arguments.
 * The cases are functions run by one Criterion test (end of file): a test
 * is a process, and a process per case cost seconds each under valgrind
 * (CLBlast's kernels loaded again in each, among others).
 */
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 6

typedef clmad_status (*model_fn)(clmad_context *ctx, clmad_tensor **p, void *env, clmad_tensor **loss);

typedef struct problem {
    model_fn model;
    void *env;
    int n;                     /* parameters */
    int ndim[MAXP];
    size_t shape[MAXP][3];
} problem;

static size_t numel(const problem *pb, int k)
{
    size_t n = 1;
    for (int d = 0; d < pb->ndim[k]; d++)
        n *= pb->shape[k][d];
    return n;
}

/* Reset before each case (RUN_HVP_CASE): each draws what it drew in a process
 * of its own. */
#define RNG_SEED 12345
static uint64_t rng_state = RNG_SEED;
static double uniform(void) /* in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / (double)(1ULL << 53) * 2 - 1;
}

static clmad_tensor *leaf(clmad_context *ctx, const problem *pb, int k, const double *x)
{
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, pb->ndim[k], pb->shape[k], x, &t));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(t, 1));
    return t;
}

/* Gradients of the loss at x (host arrays per parameter) into g. */
static void gradient(clmad_context *ctx, const problem *pb, double *const *x, double **g)
{
    clmad_tensor *p[MAXP], *loss;
    for (int k = 0; k < pb->n; k++)
        p[k] = leaf(ctx, pb, k, x[k]);
    CHECK_OK(ctx, pb->model(ctx, p, pb->env, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    for (int k = 0; k < pb->n; k++) {
        clmad_tensor *gr;
        CHECK_OK(ctx, clmad_tensor_grad(p[k], &gr));
        cr_assert_not_null(gr, "%sparameter %d has a gradient", test_case(), k);
        CHECK_OK(ctx, clmad_tensor_read(gr, g[k], numel(pb, k) * sizeof(double)));
        clmad_tensor_release(gr);
        clmad_tensor_release(p[k]);
    }
    clmad_tensor_release(loss);
}

/* H v at x into hv through clmad_hvp. */
static void hvp(clmad_context *ctx, const problem *pb, double *const *x, double *const *v, double **hv)
{
    clmad_tensor *p[MAXP], *tv[MAXP], *out[MAXP], *loss;
    for (int k = 0; k < pb->n; k++) {
        p[k] = leaf(ctx, pb, k, x[k]);
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, pb->ndim[k], pb->shape[k], v[k], &tv[k]));
    }
    CHECK_OK(ctx, pb->model(ctx, p, pb->env, &loss));
    CHECK_OK(ctx, clmad_hvp(ctx, loss, p, pb->n, tv, out));
    clmad_tape_clear(ctx);
    for (int k = 0; k < pb->n; k++) {
        CHECK_OK(ctx, clmad_tensor_read(out[k], hv[k], numel(pb, k) * sizeof(double)));
        clmad_tensor_release(out[k]);
        clmad_tensor_release(tv[k]);
        clmad_tensor_release(p[k]);
    }
    clmad_tensor_release(loss);
}

static double **alloc_set(const problem *pb, int random)
{
    double **s = calloc(MAXP, sizeof *s);
    for (int k = 0; k < pb->n; k++) {
        s[k] = malloc(numel(pb, k) * sizeof(double));
        for (size_t i = 0; i < numel(pb, k); i++)
            s[k][i] = random ? uniform() : 0;
    }
    return s;
}

static void free_set(const problem *pb, double **s)
{
    for (int k = 0; k < pb->n; k++)
        free(s[k]);
    free(s);
}

/* clmad_hvp against central differences of clmad_backward's gradients,
 * step h, tolerance tol relative to max(1, |difference|). */
static void check_against_differences_at(clmad_context *ctx, const problem *pb, const char *what, double h,
                                         double tol)
{
    if (!test_device_fp64())
        cr_skip_test("%sthe device has no fp64", test_case());
    double **x = alloc_set(pb, 1), **v = alloc_set(pb, 1), **hv = alloc_set(pb, 0);
    double **xp = alloc_set(pb, 0), **xm = alloc_set(pb, 0), **gp = alloc_set(pb, 0), **gm = alloc_set(pb, 0);
    for (int k = 0; k < pb->n; k++)
        for (size_t i = 0; i < numel(pb, k); i++) {
            xp[k][i] = x[k][i] + h * v[k][i];
            xm[k][i] = x[k][i] - h * v[k][i];
        }
    hvp(ctx, pb, x, v, hv);
    gradient(ctx, pb, xp, gp);
    gradient(ctx, pb, xm, gm);
    double worst = 0, scale = 0;
    for (int k = 0; k < pb->n; k++)
        for (size_t i = 0; i < numel(pb, k); i++) {
            const double fd = (gp[k][i] - gm[k][i]) / (2 * h);
            worst = fmax(worst, fabs(hv[k][i] - fd));
            scale = fmax(scale, fabs(fd));
            cr_expect(fabs(hv[k][i] - fd) <= tol * fmax(1.0, fabs(fd)),
                      "%s: H v of parameter %d [%zu] = %.12g, differences of gradients %.12g", what, k, i,
                      hv[k][i], fd);
        }
    cr_expect(scale > 1e-3, "%s: a Hessian that is not ~0 (largest |H v| %g)", what, scale);
    free_set(pb, x);
    free_set(pb, v);
    free_set(pb, hv);
    free_set(pb, xp);
    free_set(pb, xm);
    free_set(pb, gp);
    free_set(pb, gm);
}

/* The same for a model in f64 throughout. */
static void check_against_differences(clmad_context *ctx, const problem *pb, const char *what)
{
    check_against_differences_at(ctx, pb, what, 1e-5, 1e-6);
}

/* ---- the MLP: mean((tanh(X W1 + b1) W2 + b2 - Y)^2) --------------------- */

enum { MB = 4, MI = 3, MH = 5, MO = 3 };

/* The MLP's loss: env NULL, or one of these. */
static const int MSE_LOSS = 1;      /* clmad_mse_loss, made of sub, dot and mul */
static const int CROSS_ENTROPY = 2; /* clmad_cross_entropy of probabilities: log_softmax, dot */
static const int CROSS_ENTROPY_CLASSES = 3; /* of class indices as f64 values: log_softmax, where, dot */
static const int CROSS_ENTROPY_INDEX = 4;   /* clmad_cross_entropy_index: log_softmax, gather, mean */

static clmad_status mlp(clmad_context *ctx, clmad_tensor **p, void *env, clmad_tensor **loss)
{
    const int library_loss = env ? *(const int *)env : 0;
    double xs[MB * MI], ys[MB * MO];
    for (int i = 0; i < MB * MI; i++)
        xs[i] = sin(1.0 + i);
    for (int i = 0; i < MB * MO; i++)
        ys[i] = cos(2.0 * i);
    for (int r = 0; r < MB && library_loss == CROSS_ENTROPY; r++) { /* soft labels: rows summing to 1 */
        double total = 0;
        for (int c = 0; c < MO; c++)
            total += ys[r * MO + c] += 1.5;
        for (int c = 0; c < MO; c++)
            ys[r * MO + c] /= total;
    }
    for (int r = 0; r < MB && library_loss == CROSS_ENTROPY_CLASSES; r++)
        ys[r] = (r * 2 + 1) % MO;
    size_t xsh[2] = {MB, MI}, ysh[2] = {MB, MO};
    clmad_tensor *x, *y, *a, *b, *h, *o, *q, *d, *s;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, xsh, xs, &x));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, library_loss == CROSS_ENTROPY_CLASSES ? 1 : 2, ysh, ys, &y));
    CHECK_OK(ctx, clmad_matmul(ctx, x, p[0], 0, 0, &a));
    CHECK_OK(ctx, clmad_add(ctx, a, p[1], &b));
    CHECK_OK(ctx, clmad_tanh(ctx, b, &h));
    CHECK_OK(ctx, clmad_matmul(ctx, h, p[2], 0, 0, &o));
    CHECK_OK(ctx, clmad_add(ctx, o, p[3], &q));
    if (library_loss == CROSS_ENTROPY_INDEX) {
        const int64_t labels[MB] = {1, 0, 2, 1};
        const size_t nb = MB;
        clmad_tensor *l;
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I64, 1, &nb, labels, &l));
        clmad_status st = clmad_cross_entropy_index(ctx, q, l, loss);
        clmad_tensor *all[] = {x, y, a, b, h, o, q, l};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            clmad_tensor_release(all[i]);
        return st;
    }
    if (library_loss) {
        clmad_status st = library_loss == MSE_LOSS ? clmad_mse_loss(ctx, q, y, loss)
                                                   : clmad_cross_entropy(ctx, q, y, loss);
        clmad_tensor *all[] = {x, y, a, b, h, o, q};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            clmad_tensor_release(all[i]);
        return st;
    }
    CHECK_OK(ctx, clmad_sub(ctx, q, y, &d));
    CHECK_OK(ctx, clmad_mul(ctx, d, d, &s));
    clmad_status st = clmad_mean(ctx, s, 0, NULL, 0, loss);
    clmad_tensor *all[] = {x, y, a, b, h, o, q, d, s};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    return st;
}

static const problem MLP = {mlp, NULL, 4, {2, 1, 2, 1}, {{MI, MH}, {MH}, {MH, MO}, {MO}}};

static void mlp_against_differences_of_gradients(void)
{
    clmad_context *ctx = test_context();
    check_against_differences(ctx, &MLP, "MLP");
    clmad_context_release(ctx);
}

static void mlp_with_mse_loss_against_differences_of_gradients(void)
{
    clmad_context *ctx = test_context();
    problem pb = MLP;
    pb.env = (void *)&MSE_LOSS;
    check_against_differences(ctx, &pb, "MLP with clmad_mse_loss");
    clmad_context_release(ctx);
}

static void mlp_with_softmax_cross_entropy_against_differences_of_gradients(void)
{
    clmad_context *ctx = test_context();
    problem pb = MLP; /* MO = 3 classes */
    pb.env = (void *)&CROSS_ENTROPY;
    check_against_differences(ctx, &pb, "MLP with clmad_cross_entropy (probabilities)");
    pb.env = (void *)&CROSS_ENTROPY_CLASSES;
    check_against_differences(ctx, &pb, "MLP with clmad_cross_entropy (class indices as values)");
    pb.env = (void *)&CROSS_ENTROPY_INDEX;
    check_against_differences(ctx, &pb, "MLP with clmad_cross_entropy_index (i64 labels)");
    clmad_context_release(ctx);
}

/* ---- the HM-LSTM cell update, after matmuls ------------------------------ */

static const char *CELL =
    "T cell(T z, T zb, T c, T f, T i, T g)\n"
    "{\n"
    "    if (ad_val(z) == 1) return ad_mul(ad_sigmoid(i), ad_tanh(g));\n"
    "    if (ad_val(zb) == 0) return c;\n"
    "    return ad_add(ad_mul(ad_sigmoid(f), c), ad_mul(ad_sigmoid(i), ad_tanh(g)));\n"
    "}\n";

enum { CB = 6, CI = 3, CH = 4 };

static clmad_status cell_model(clmad_context *ctx, clmad_tensor **p, void *env, clmad_tensor **loss)
{
    clmad_kernel *k = env;
    double xs[CB * CI], zs[CB], zbs[CB];
    for (int i = 0; i < CB * CI; i++)
        xs[i] = cos(0.5 + i);
    for (int r = 0; r < CB; r++) { /* every branch: FLUSH, COPY, UPDATE */
        zs[r] = r % 3 == 0;
        zbs[r] = r % 3 == 1 ? 0 : 1;
    }
    size_t xsh[2] = {CB, CI}, msh[2] = {CB, 1};
    clmad_tensor *x, *z, *zb, *f, *i, *g, *c, *sq;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, xsh, xs, &x));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, msh, zs, &z));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, msh, zbs, &zb));
    CHECK_OK(ctx, clmad_matmul(ctx, x, p[0], 0, 0, &f));
    CHECK_OK(ctx, clmad_matmul(ctx, x, p[1], 0, 0, &i));
    CHECK_OK(ctx, clmad_matmul(ctx, x, p[2], 0, 1, &g)); /* a transposed operand too */
    clmad_tensor *in[6] = {z, zb, p[3], f, i, g};
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &c));
    CHECK_OK(ctx, clmad_mul(ctx, c, c, &sq));
    clmad_status st = clmad_sum(ctx, sq, 0, NULL, 0, loss);
    clmad_tensor *all[] = {x, z, zb, f, i, g, c, sq};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++)
        clmad_tensor_release(all[j]);
    return st;
}

static void hmlstm_cell_against_differences_of_gradients(void)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, CELL, "cell", 6, 1, &k));
    /* c is a (1, CH) row broadcast over the batch: its adjoint is reduced. */
    problem pb = {cell_model, k, 4, {2, 2, 2, 2}, {{CI, CH}, {CI, CH}, {CH, CI}, {1, CH}}};
    check_against_differences(ctx, &pb, "HM-LSTM cell");
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* ---- a kernel with a data-dependent loop --------------------------------- */

static const char *LOOP =
    "T newton(T a, T b)\n"
    "{\n"
    "    T s = ad_add(ad_square(a), ad_const(1));\n"
    "    T r = ad_const(1);\n"
    "    for (int i = 0; i < 60 && fabs(ad_val(r) * ad_val(r) - ad_val(s)) > 1e-15 * ad_val(s); i++)\n"
    "        r = ad_mulr(ad_add(r, ad_div(s, r)), (real)0.5);\n"
    "    return ad_mul(ad_sin(ad_mul(r, b)), r);\n"
    "}\n";

static clmad_status loop_model(clmad_context *ctx, clmad_tensor **p, void *env, clmad_tensor **loss)
{
    clmad_tensor *in[2] = {p[0], p[1]}, *y;
    CHECK_OK(ctx, clmad_broadcast(ctx, env, in, &y));
    clmad_status st = clmad_sum(ctx, y, 0, NULL, 0, loss);
    clmad_tensor_release(y);
    return st;
}

static void data_dependent_loop_against_differences_of_gradients(void)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, LOOP, "newton", 2, 1, &k));
    problem pb = {loop_model, k, 2, {1, 1}, {{7}, {7}}};
    check_against_differences(ctx, &pb, "loop");
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* ---- shape operations ---------------------------------------------------- */

/* sum(c^3) + dot(X, tanh(X)) with c = concat(s, tanh(s)),
 * s = slice(reshape(transpose(X)), columns 1..5), X (3, 4). */
static clmad_status shape_model(clmad_context *ctx, clmad_tensor **p, void *env, clmad_tensor **loss)
{
    (void)env;
    const size_t rs[2] = {2, 6};
    clmad_tensor *t, *r, *s, *th, *c, *c2, *c3, *in[2];
    CHECK_OK(ctx, clmad_transpose(ctx, p[0], NULL, &t));
    CHECK_OK(ctx, clmad_reshape(ctx, t, 2, rs, &r));
    CHECK_OK(ctx, clmad_slice(ctx, r, 1, 1, 5, &s));
    CHECK_OK(ctx, clmad_tanh(ctx, s, &th));
    in[0] = s;
    in[1] = th;
    CHECK_OK(ctx, clmad_concat(ctx, 2, in, 0, &c));
    CHECK_OK(ctx, clmad_mul(ctx, c, c, &c2));
    CHECK_OK(ctx, clmad_mul(ctx, c2, c, &c3));
    clmad_tensor *d1, *d2;
    CHECK_OK(ctx, clmad_sum(ctx, c3, 0, NULL, 0, &d1));
    clmad_tensor *tx;
    CHECK_OK(ctx, clmad_tanh(ctx, p[0], &tx));
    CHECK_OK(ctx, clmad_dot(ctx, p[0], tx, &d2)); /* dot: bilinear, both sides depend on X */
    clmad_tensor_release(tx);
    clmad_status st = clmad_add(ctx, d1, d2, loss);
    clmad_tensor_release(d1);
    clmad_tensor_release(d2);
    clmad_tensor *all[] = {t, r, s, th, c, c2, c3};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    return st;
}

static void shape_operations_and_dot_against_differences_of_gradients(void)
{
    clmad_context *ctx = test_context();
    problem pb = {shape_model, NULL, 1, {2}, {{3, 4}}};
    check_against_differences(ctx, &pb, "shape operations");
    clmad_context_release(ctx);
}

/* ---- the axis operations ------------------------------------------------- */

/* sum(tanh(1.5 op(X))) over a (3, 4, 5) parameter X: tanh makes the
 * adjoint reaching op vary with its output (a nonzero adjoint tangent). */
typedef struct axis_case {
    const char *name;
    int op; /* 0 max, 1 logsumexp, 2 softmax, 3 log_softmax */
    int axis, keepdims;
} axis_case;

static clmad_status axis_model(clmad_context *ctx, clmad_tensor **p, void *env, clmad_tensor **loss)
{
    const axis_case *c = env;
    clmad_tensor *f = NULL, *s, *t;
    switch (c->op) {
    case 0: CHECK_OK(ctx, clmad_max(ctx, p[0], c->axis, c->keepdims, &f)); break;
    case 1: CHECK_OK(ctx, clmad_logsumexp(ctx, p[0], c->axis, c->keepdims, &f)); break;
    case 2: CHECK_OK(ctx, clmad_softmax(ctx, p[0], c->axis, &f)); break;
    default: CHECK_OK(ctx, clmad_log_softmax(ctx, p[0], c->axis, &f));
    }
    CHECK_OK(ctx, clmad_mul_scalar(ctx, f, 1.5, &s));
    CHECK_OK(ctx, clmad_tanh(ctx, s, &t));
    clmad_status st = clmad_sum(ctx, t, 0, NULL, 0, loss);
    clmad_tensor_release(f);
    clmad_tensor_release(s);
    clmad_tensor_release(t);
    return st;
}

static void check_axis_cases(int op, const char *name)
{
    clmad_context *ctx = test_context();
    /* axis 1: a middle axis (outer 3, inner 5); -1: the last. */
    const axis_case cases[] = {{name, op, 1, 0}, {name, op, -1, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        problem pb = {axis_model, (void *)&cases[i], 1, {3}, {{3, 4, 5}}};
        char what[80];
        snprintf(what, sizeof what, "%s, axis %d", name, cases[i].axis);
        check_against_differences(ctx, &pb, what);
    }
    clmad_context_release(ctx);
}

static void max_against_differences_of_gradients(void)
{
    check_axis_cases(0, "clmad_max");
}

static void logsumexp_against_differences_of_gradients(void)
{
    check_axis_cases(1, "clmad_logsumexp");
}

static void softmax_against_differences_of_gradients(void)
{
    check_axis_cases(2, "clmad_softmax");
}

static void log_softmax_against_differences_of_gradients(void)
{
    check_axis_cases(3, "clmad_log_softmax");
}

/* Closed forms on a vector x, s = softmax(x), v a direction:
 *   c . softmax(x):  H v = s (c - cbar) (v - s.v) - s (s . ((c - cbar) v)),
 *                    cbar = s . c (the derivative of s (c - cbar));
 *   logsumexp(x):    H v = s v - s (s . v). */
static void softmax_and_logsumexp_closed_forms(void)
{
    clmad_context *ctx = test_context();
    if (!test_device_fp64())
        cr_skip_test("%sthe device has no fp64", test_case());
    enum { N = 5 };
    const size_t n = N;
    double hx[N], hc[N], hv[N], s[N], got[N];
    double total = 0, sv = 0, cbar = 0;
    for (int i = 0; i < N; i++) {
        hx[i] = 0.4 * i - 0.7 + 0.3 * sin(i);
        hc[i] = cos(1.0 + 2 * i);
        hv[i] = 1.0 - 0.35 * i;
        total += exp(hx[i]);
    }
    for (int i = 0; i < N; i++) {
        s[i] = exp(hx[i]) / total;
        sv += s[i] * hv[i];
        cbar += s[i] * hc[i];
    }
    clmad_tensor *x, *c, *v, *y, *loss, *out;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, hx, &x));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, hc, &c));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, hv, &v));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));

    CHECK_OK(ctx, clmad_softmax(ctx, x, 0, &y));
    CHECK_OK(ctx, clmad_dot(ctx, c, y, &loss));
    CHECK_OK(ctx, clmad_hvp(ctx, loss, &x, 1, &v, &out));
    test_read_f64(ctx, out, got, N);
    double cross = 0; /* s . ((c - cbar) v) */
    for (int i = 0; i < N; i++)
        cross += s[i] * (hc[i] - cbar) * hv[i];
    for (int i = 0; i < N; i++) {
        const double want = s[i] * (hc[i] - cbar) * (hv[i] - sv) - s[i] * cross;
        cr_expect(fabs(got[i] - want) <= 1e-12, "softmax: H v [%d] = %.17g, closed form %.17g", i, got[i], want);
    }
    clmad_tensor_release(out);
    clmad_tensor_release(loss);
    clmad_tensor_release(y);
    clmad_tape_clear(ctx);

    CHECK_OK(ctx, clmad_logsumexp(ctx, x, 0, 0, &loss));
    CHECK_OK(ctx, clmad_hvp(ctx, loss, &x, 1, &v, &out));
    test_read_f64(ctx, out, got, N);
    for (int i = 0; i < N; i++) {
        const double want = s[i] * hv[i] - s[i] * sv;
        cr_expect(fabs(got[i] - want) <= 1e-12, "logsumexp: H v [%d] = %.17g, closed form %.17g", i, got[i],
                  want);
    }
    clmad_tensor_release(out);
    clmad_tensor_release(loss);
    clmad_tape_clear(ctx);
    clmad_tensor *all[] = {x, c, v};
    for (size_t i = 0; i < 3; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}

/* ---- matmul by NumPy's rules: broadcast batch axes, 1-d operands --------- */

/* sum(w^2) with w = p3 @ (tanh(A @ B) @ p2): A (2, 1, 3, 4) from p0, B
 * (3, 4, 5) from p1 (batch axes broadcast both ways: a GEMM per result
 * matrix, adjoints summed over the broadcast axes), p2 a 1-d b (the
 * stacked GEMM), p3 a 1-d a against a batch (summed). env non-NULL: A and
 * B stored transposed, and p2 a (1, 5) row used transposed. */
static clmad_status matmul_nd_model(clmad_context *ctx, clmad_tensor **p, void *env, clmad_tensor **loss)
{
    const int t = env != NULL;
    const size_t as[4] = {2, 1, t ? 4 : 3, t ? 3 : 4}, bs[3] = {3, t ? 5 : 4, t ? 4 : 5};
    clmad_tensor *a, *b, *c, *th, *z, *w, *sq;
    CHECK_OK(ctx, clmad_reshape(ctx, p[0], 4, as, &a));
    CHECK_OK(ctx, clmad_reshape(ctx, p[1], 3, bs, &b));
    CHECK_OK(ctx, clmad_matmul(ctx, a, b, t, t, &c)); /* (2, 3, 3, 5) */
    CHECK_OK(ctx, clmad_tanh(ctx, c, &th));
    CHECK_OK(ctx, clmad_matmul(ctx, th, p[2], 0, t, &z)); /* (2, 3, 3) or (2, 3, 3, 1) */
    CHECK_OK(ctx, clmad_matmul(ctx, p[3], z, 0, 0, &w));  /* (2, 3) or (2, 3, 1) */
    CHECK_OK(ctx, clmad_mul(ctx, w, w, &sq));
    clmad_status st = clmad_sum(ctx, sq, 0, NULL, 0, loss);
    clmad_tensor *all[] = {a, b, c, th, z, w, sq};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    return st;
}

static void matmul_with_broadcast_batches_and_vectors_against_differences_of_gradients(void)
{
    clmad_context *ctx = test_context();
    problem pb = {matmul_nd_model, NULL, 4, {2, 2, 1, 1}, {{6, 4}, {12, 5}, {5}, {3}}};
    check_against_differences(ctx, &pb, "matmul by NumPy's rules");
    problem tr = {matmul_nd_model, &tr, 4, {2, 2, 2, 1}, {{8, 3}, {15, 4}, {1, 5}, {3}}};
    check_against_differences(ctx, &tr, "matmul by NumPy's rules, transposed operands");
    clmad_context_release(ctx);
}

/* ---- index operations ---------------------------------------------------- */

/* sum(m^3) with m = where(mask, y, tanh(y)) (an integer mask),
 * y = scatter_add(X, 2, si, gather(tanh(index_select(embedding(W, ei), 1,
 * ii)), 2, gi)); W (5, 3) and X (2, 4, 5) from p0 and p1. Every index
 * repeats rows or elements, so the adjoints add several contributions. */
static clmad_status index_model(clmad_context *ctx, clmad_tensor **p, void *env, clmad_tensor **loss)
{
    (void)env;
    const int64_t ei[6] = {4, 0, 4, 1, 2, 0}, ii[4] = {2, 0, 2, 1};
    int64_t gi[16], si[16];
    for (int i = 0; i < 16; i++) {
        gi[i] = (i * 7 + 1) % 3;
        si[i] = (i * 3) % 5 == 4 ? 0 : (i * 3) % 5; /* no 4: a column that takes nothing */
    }
    const unsigned char mk[5] = {1, 0, 1, 1, 0};
    const size_t es[2] = {2, 3}, is[1] = {4}, gs[3] = {2, 4, 2}, xs[3] = {2, 4, 5}, ms[3] = {1, 1, 5};
    clmad_tensor *eidx, *iidx, *gidx, *sidx, *mask, *e, *s, *t, *g, *x, *y, *ty, *m, *m2, *m3;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I64, 2, es, ei, &eidx));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I64, 1, is, ii, &iidx));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I64, 3, gs, gi, &gidx));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I64, 3, gs, si, &sidx));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_U8, 3, ms, mk, &mask));
    CHECK_OK(ctx, clmad_embedding(ctx, p[0], eidx, &e));      /* (2, 3, 3) */
    CHECK_OK(ctx, clmad_index_select(ctx, e, 1, iidx, &s));   /* (2, 4, 3) */
    CHECK_OK(ctx, clmad_tanh(ctx, s, &t));
    CHECK_OK(ctx, clmad_gather(ctx, t, 2, gidx, &g));         /* (2, 4, 2) */
    CHECK_OK(ctx, clmad_reshape(ctx, p[1], 3, xs, &x));
    CHECK_OK(ctx, clmad_scatter_add(ctx, x, 2, sidx, g, &y)); /* (2, 4, 5) */
    CHECK_OK(ctx, clmad_tanh(ctx, y, &ty));
    CHECK_OK(ctx, clmad_where(ctx, mask, y, ty, &m));
    CHECK_OK(ctx, clmad_mul(ctx, m, m, &m2));
    CHECK_OK(ctx, clmad_mul(ctx, m2, m, &m3));
    clmad_status st = clmad_sum(ctx, m3, 0, NULL, 0, loss);
    clmad_tensor *all[] = {eidx, iidx, gidx, sidx, mask, e, s, t, g, x, y, ty, m, m2, m3};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    return st;
}

static void index_operations_against_differences_of_gradients(void)
{
    clmad_context *ctx = test_context();
    problem pb = {index_model, NULL, 2, {2, 2}, {{5, 3}, {8, 5}}};
    check_against_differences(ctx, &pb, "embedding, index_select, gather, scatter_add, where");
    clmad_context_release(ctx);
}

/* sum(cast(sigmoid(cast(tanh(X) * r, f32))^2, f64) * X): the middle in f32,
 * so the differences take a larger step and a looser tolerance. */
static clmad_status cast_model(clmad_context *ctx, clmad_tensor **p, void *env, clmad_tensor **loss)
{
    (void)env;
    clmad_tensor *a, *b, *c, *d, *c2, *e, *f;
    CHECK_OK(ctx, clmad_tanh(ctx, p[0], &a));
    CHECK_OK(ctx, clmad_mul(ctx, a, p[1], &b));
    CHECK_OK(ctx, clmad_cast(ctx, b, CLMAD_F32, &c));
    CHECK_OK(ctx, clmad_sigmoid(ctx, c, &d));
    CHECK_OK(ctx, clmad_mul(ctx, d, d, &c2));
    CHECK_OK(ctx, clmad_cast(ctx, c2, CLMAD_F64, &e));
    CHECK_OK(ctx, clmad_mul(ctx, e, p[0], &f));
    clmad_status st = clmad_sum(ctx, f, 0, NULL, 0, loss);
    clmad_tensor *all[] = {a, b, c, d, c2, e, f};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    return st;
}

static void cast_through_f32_against_differences_of_gradients(void)
{
    clmad_context *ctx = test_context();
    problem pb = {cast_model, NULL, 2, {2, 1}, {{3, 4}, {4}}};
    check_against_differences_at(ctx, &pb, "cast f64 -> f32 -> f64", 1e-3, 1e-3);
    clmad_context_release(ctx);
}

/* ---- symmetry over random programs --------------------------------------- */

/* A random chain on a (3, 4) value: each step one of matmul by a (4, 4)
 * parameter, + a (4) parameter row, * a (3, 4) parameter, tanh, sigmoid,
 * exp of a scaled value, a user kernel mixing two tensors, halves swapped
 * by slice and concat, reshape and transpose; then the mean, or a dot. */
typedef struct program {
    int steps, op[8], dot_loss;
    clmad_kernel *k;
} program;

static clmad_status random_program(clmad_context *ctx, clmad_tensor **p, void *env, clmad_tensor **loss)
{
    const program *pr = env;
    clmad_tensor *cur;
    CHECK_OK(ctx, clmad_mul(ctx, p[0], p[0], &cur));
    for (int s = 0; s < pr->steps; s++) {
        clmad_tensor *next = NULL, *tmp = NULL;
        switch (pr->op[s]) {
        case 0: CHECK_OK(ctx, clmad_matmul(ctx, cur, p[1], 0, 0, &next)); break;
        case 1: CHECK_OK(ctx, clmad_add(ctx, cur, p[2], &next)); break;
        case 2: CHECK_OK(ctx, clmad_mul(ctx, cur, p[3], &next)); break;
        case 3: CHECK_OK(ctx, clmad_tanh(ctx, cur, &next)); break;
        case 4: CHECK_OK(ctx, clmad_sigmoid(ctx, cur, &next)); break;
        case 5:
            CHECK_OK(ctx, clmad_mul_scalar(ctx, cur, 0.3, &tmp));
            CHECK_OK(ctx, clmad_exp(ctx, tmp, &next));
            break;
        case 6: {
            clmad_tensor *in[2] = {cur, p[3]};
            CHECK_OK(ctx, clmad_broadcast(ctx, pr->k, in, &next));
            break;
        }
        case 7: { /* the two column halves swapped: slice and concat */
            clmad_tensor *half[2];
            CHECK_OK(ctx, clmad_slice(ctx, cur, 1, 2, 4, &half[0]));
            CHECK_OK(ctx, clmad_slice(ctx, cur, 1, 0, 2, &half[1]));
            CHECK_OK(ctx, clmad_concat(ctx, 2, half, 1, &next));
            clmad_tensor_release(half[0]);
            clmad_tensor_release(half[1]);
            break;
        }
        default: { /* reshape to (4, 3), then transpose back to (3, 4) */
            const size_t rs[2] = {4, 3};
            CHECK_OK(ctx, clmad_reshape(ctx, cur, 2, rs, &tmp));
            CHECK_OK(ctx, clmad_transpose(ctx, tmp, NULL, &next));
        }
        }
        clmad_tensor_release(tmp);
        clmad_tensor_release(cur);
        cur = next;
    }
    /* The loss: a mean, or a dot with a parameter. */
    clmad_status st = pr->dot_loss ? clmad_dot(ctx, cur, p[3], loss) : clmad_mean(ctx, cur, 0, NULL, 0, loss);
    clmad_tensor_release(cur);
    return st;
}

static void symmetric_over_random_programs(void)
{
    clmad_context *ctx = test_context();
    if (!test_device_fp64())
        cr_skip_test("%sthe device has no fp64", test_case());
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx,
                                      "T mix(T a, T b) { return ad_gt(a, b) ? ad_mul(ad_sin(a), b) : "
                                      "ad_div(a, ad_addr(ad_square(b), (real)1)); }",
                                      "mix", 2, 1, &k));
    program pr = {.k = k};
    problem pb = {random_program, &pr, 4, {2, 2, 1, 2}, {{3, 4}, {4, 4}, {4}, {3, 4}}};
    for (int trial = 0; trial < 16; trial++) {
        pr.steps = 2 + trial % 5;
        pr.dot_loss = trial % 2;
        for (int s = 0; s < pr.steps; s++)
            pr.op[s] = (int)((uniform() + 1) * 4.5) % 9;
        double **x = alloc_set(&pb, 1), **u = alloc_set(&pb, 1), **v = alloc_set(&pb, 1);
        double **hu = alloc_set(&pb, 0), **hv = alloc_set(&pb, 0);
        hvp(ctx, &pb, x, u, hu);
        hvp(ctx, &pb, x, v, hv);
        double uhv = 0, vhu = 0, size = 0;
        for (int q = 0; q < pb.n; q++)
            for (size_t i = 0; i < numel(&pb, q); i++) {
                uhv += u[q][i] * hv[q][i];
                vhu += v[q][i] * hu[q][i];
                size += fabs(u[q][i] * hv[q][i]);
            }
        cr_expect(fabs(uhv - vhu) <= 1e-10 * fmax(1.0, size),
                  "program %d (%d steps, first op %d): u.Hv = %.17g but v.Hu = %.17g", trial, pr.steps, pr.op[0],
                  uhv, vhu);
        free_set(&pb, x);
        free_set(&pb, u);
        free_set(&pb, v);
        free_set(&pb, hu);
        free_set(&pb, hv);
    }
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* ---- refusals ------------------------------------------------------------- */

/* Every operation that records on the tape has its rules, so no tape can
 * be built that clmad_hvp refuses by name; here the closed form through
 * gather, which had none before, and a tape consumed by backward. */
static void gather_closed_form_then_a_consumed_tape(void)
{
    clmad_context *ctx = test_context();
    const size_t n = 4;
    const size_t m = 3;
    const int64_t picks[3] = {2, 0, 2};
    clmad_tensor *x, *index, *t, *s, *loss, *v, *hv = NULL;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 0.5, &x));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 1.0, &v));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_I64, 1, &m, picks, &index));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_tanh(ctx, x, &t));
    CHECK_OK(ctx, clmad_gather(ctx, t, 0, index, &s));
    CHECK_OK(ctx, clmad_sum(ctx, s, 0, NULL, 0, &loss));
    /* H v = (times picked) tanh''(x) v, tanh'' = -2 tanh (1 - tanh^2). */
    CHECK_OK(ctx, clmad_hvp(ctx, loss, &x, 1, &v, &hv));
    float got[4];
    CHECK_OK(ctx, clmad_tensor_read(hv, got, sizeof got));
    const double th = tanh(0.5), second = -2 * th * (1 - th * th), times[4] = {1, 0, 2, 0};
    for (int i = 0; i < 4; i++)
        cr_expect(fabs(got[i] - times[i] * second) <= 1e-6, "H v[%d] = %g, expected %g", i, got[i],
                  times[i] * second);
    clmad_tensor_release(hv);
    hv = NULL;
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    /* The tape is consumed: nothing to differentiate twice. */
    cr_expect_eq(clmad_hvp(ctx, loss, &x, 1, &v, &hv), CLMAD_ERR_STATE);
    cr_expect(test_contains(clmad_last_error(ctx), "clmad_set_retain_tape"), "says how to keep it: %s",
              clmad_last_error(ctx));
    cr_expect_null(hv, "nothing written");
    clmad_tensor *all[] = {x, index, t, s, loss, v};
    for (size_t i = 0; i < 6; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}

static void bad_arguments(void)
{
    clmad_context *ctx = test_context();
    const size_t n = 4, m = 3;
    clmad_tensor *x, *y, *loss, *v, *w, *hv[2] = {0};
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 0.5, &x));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 1.0, &v));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &m, 1.0, &w));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_tanh(ctx, x, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    clmad_tensor *two[2] = {x, x}, *vv[2] = {v, v};
    cr_expect_eq(clmad_hvp(ctx, loss, &x, 1, &w, hv), CLMAD_ERR_SHAPE);
    cr_expect_eq(clmad_hvp(ctx, y, &x, 1, &v, hv), CLMAD_ERR_SHAPE);
    cr_expect_eq(clmad_hvp(ctx, loss, two, 2, vv, hv), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_hvp(ctx, loss, &y, 1, &v, hv), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_hvp(ctx, loss, &x, 0, &v, hv), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_hvp(ctx, loss, &x, 1, NULL, hv), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_null(hv[0], "nothing written");
    /* tanh'' on a closed form: H v = tanh''(x) v = -2 tanh(x) (1 - tanh(x)^2). */
    CHECK_OK(ctx, clmad_hvp(ctx, loss, &x, 1, &v, hv));
    float got[4];
    CHECK_OK(ctx, clmad_tensor_read(hv[0], got, sizeof got));
    const double t = tanh(0.5), want = -2 * t * (1 - t * t);
    for (int i = 0; i < 4; i++)
        cr_expect(fabs(got[i] - want) <= 1e-5, "H v [%d] = %g, closed form %g", i, got[i], want);
    clmad_tensor_release(hv[0]);
    clmad_tape_clear(ctx);
    clmad_tensor *all[] = {x, y, loss, v, w};
    for (size_t i = 0; i < 5; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}

/* An empty axis: logsumexp is -inf over it, and H v is empty. */
static void axis_operations_over_an_empty_axis(void)
{
    clmad_context *ctx = test_context();
    const size_t shape[2] = {2, 0};
    clmad_tensor *x, *v, *y, *loss, *hv = NULL;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, shape, &x));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, shape, &v));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    for (int op = 0; op < 3; op++) {
        if (op == 0)
            CHECK_OK(ctx, clmad_logsumexp(ctx, x, 1, 0, &y));
        else if (op == 1)
            CHECK_OK(ctx, clmad_softmax(ctx, x, 1, &y));
        else
            CHECK_OK(ctx, clmad_log_softmax(ctx, x, 0, &y));
        CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
        CHECK_OK(ctx, clmad_hvp(ctx, loss, &x, 1, &v, &hv));
        cr_expect_eq(clmad_tensor_numel(hv), 0, "op %d: H v has x's (empty) shape", op);
        clmad_tensor_release(hv);
        clmad_tensor_release(loss);
        clmad_tensor_release(y);
        clmad_tape_clear(ctx);
    }
    clmad_tensor_release(x);
    clmad_tensor_release(v);
    clmad_context_release(ctx);
}

/* ---- the test ------------------------------------------------------------- */

/* Runs one case (support.h) from the first random draw. */
#define RUN_HVP_CASE(c) (rng_state = RNG_SEED, RUN_CASE(c))

/* The f32 cases first: a device without fp64 skips the rest at the first
 * f64 call. */
Test(hvp, all_cases)
{
    RUN_HVP_CASE(gather_closed_form_then_a_consumed_tape);
    RUN_HVP_CASE(bad_arguments);
    RUN_HVP_CASE(axis_operations_over_an_empty_axis);
    RUN_HVP_CASE(mlp_against_differences_of_gradients);
    RUN_HVP_CASE(mlp_with_mse_loss_against_differences_of_gradients);
    RUN_HVP_CASE(mlp_with_softmax_cross_entropy_against_differences_of_gradients);
    RUN_HVP_CASE(hmlstm_cell_against_differences_of_gradients);
    RUN_HVP_CASE(data_dependent_loop_against_differences_of_gradients);
    RUN_HVP_CASE(shape_operations_and_dot_against_differences_of_gradients);
    RUN_HVP_CASE(max_against_differences_of_gradients);
    RUN_HVP_CASE(logsumexp_against_differences_of_gradients);
    RUN_HVP_CASE(softmax_against_differences_of_gradients);
    RUN_HVP_CASE(log_softmax_against_differences_of_gradients);
    RUN_HVP_CASE(softmax_and_logsumexp_closed_forms);
    RUN_HVP_CASE(matmul_with_broadcast_batches_and_vectors_against_differences_of_gradients);
    RUN_HVP_CASE(index_operations_against_differences_of_gradients);
    RUN_HVP_CASE(cast_through_f32_against_differences_of_gradients);
    RUN_HVP_CASE(symmetric_over_random_programs);
}
