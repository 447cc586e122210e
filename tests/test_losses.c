/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_mse_loss and clmad_cross_entropy: values against host formulas,
 * gradients against central finite differences in f64, and the errors. */
#include "gradcheck.h"

#include <math.h>
#include <string.h>

typedef struct loss_env {
    int cross_entropy;
    clmad_tensor *target; /* used when the target is not a parameter (params[1]) */
} loss_env;

/* mse(tanh(p0), target or p1), or cross_entropy(p0, target or p1). */
static clmad_status loss_of(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    loss_env *e = user;
    clmad_tensor *target = e->target ? e->target : p[1];
    if (e->cross_entropy)
        return clmad_cross_entropy(ctx, p[0], target, loss);
    clmad_tensor *t;
    clmad_status st = clmad_tanh(ctx, p[0], &t);
    if (st == CLMAD_OK)
        st = clmad_mse_loss(ctx, t, target, loss);
    clmad_tensor_release(t);
    return st;
}

Test(losses, mse_gradients_both_operands)
{
    clmad_context *ctx = test_context();
    unsigned seed = 5;
    size_t shape[2] = {4, 3};
    clmad_tensor *p[2] = {gc_random(ctx, 2, shape, -1, 1, &seed), gc_random(ctx, 2, shape, -1, 1, &seed)};
    loss_env e = {0, NULL};
    gc_check(ctx, loss_of, &e, 2, p, 1e-6);
    clmad_tensor_release(p[0]);
    clmad_tensor_release(p[1]);
    clmad_context_release(ctx);
}

Test(losses, mse_value)
{
    clmad_context *ctx = test_context();
    const double a[3] = {1, 2, 3}, b[3] = {0, 4, 3};
    size_t n = 3;
    clmad_tensor *ta, *tb, *l;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, a, &ta));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, b, &tb));
    CHECK_OK(ctx, clmad_mse_loss(ctx, ta, tb, &l));
    cr_assert_eq(clmad_tensor_ndim(l), 0);
    double v = gc_read_scalar(ctx, l);
    cr_expect(fabs(v - 5.0 / 3.0) < 1e-15, "mse %.17g, want 5/3", v);
    clmad_tensor_release(l);
    clmad_tensor_release(ta);
    clmad_tensor_release(tb);
    clmad_context_release(ctx);
}

/* Class indices over a (2, 3, 4) batch of logits: rows on two axes. */
Test(losses, cross_entropy_gradients_class_indices)
{
    clmad_context *ctx = test_context();
    unsigned seed = 8;
    size_t shape[3] = {2, 3, 4}, ts[2] = {2, 3};
    const double idx[6] = {0, 3, 1, 2, 2, 0};
    clmad_tensor *x = gc_random(ctx, 3, shape, -3, 3, &seed), *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, ts, idx, &t));
    loss_env e = {1, t};
    clmad_tensor *ps[2] = {x, NULL}; /* loss_of may read p[1]: GCC 12 -O3 warns on &x */
    gc_check(ctx, loss_of, &e, 1, ps, 1e-6);
    clmad_tensor_release(x);
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

/* Soft labels: gradients to the logits and to the target. */
Test(losses, cross_entropy_gradients_probabilities)
{
    clmad_context *ctx = test_context();
    unsigned seed = 21;
    size_t shape[2] = {5, 3};
    clmad_tensor *p[2] = {gc_random(ctx, 2, shape, -2, 2, &seed), gc_random(ctx, 2, shape, 0, 1, &seed)};
    loss_env e = {1, NULL};
    gc_check(ctx, loss_of, &e, 2, p, 1e-6);
    clmad_tensor_release(p[0]);
    clmad_tensor_release(p[1]);
    clmad_context_release(ctx);
}

/* Against the host formula, indices and their one-hot rows alike; an index
 * out of range gives NaN; the gradient of the logits is (softmax - onehot) / rows. */
Test(losses, cross_entropy_values)
{
    clmad_context *ctx = test_context();
    const double x[6] = {1, 2, 3, 1000, -1000, 0}, idx[2] = {2, 0};
    const double onehot[6] = {0, 0, 1, 1, 0, 0}, bad[2] = {2, 3}, half[2] = {0.5, 1};
    size_t shape[2] = {2, 3}, rows = 2;
    double want = ((log(exp(1.0) + exp(2.0) + exp(3.0)) - 3) + 0) / 2; /* row 2: lse = 1000 */
    clmad_tensor *tx, *ti, *toh, *tbad, *thalf, *l;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, shape, x, &tx));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &rows, idx, &ti));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, shape, onehot, &toh));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &rows, bad, &tbad));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &rows, half, &thalf));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(tx, 1));

    CHECK_OK(ctx, clmad_cross_entropy(ctx, tx, ti, &l));
    double v = gc_read_scalar(ctx, l);
    cr_expect(fabs(v - want) < 1e-12, "indices: %.17g, host %.17g", v, want);
    CHECK_OK(ctx, clmad_backward(ctx, l, NULL));
    clmad_tensor_release(l);
    clmad_tensor *g;
    double gv[6];
    CHECK_OK(ctx, clmad_tensor_grad(tx, &g));
    CHECK_OK(ctx, clmad_tensor_read(g, gv, sizeof gv));
    double z = exp(1.0) + exp(2.0) + exp(3.0);
    for (int c = 0; c < 3; c++) {
        double w = (exp(x[c]) / z - onehot[c]) / 2;
        cr_expect(fabs(gv[c] - w) < 1e-14, "grad[%d] %.17g, host %.17g", c, gv[c], w);
    }
    cr_expect(fabs(gv[3] - 0) < 1e-14 && fabs(gv[4]) < 1e-14 && fabs(gv[5]) < 1e-14);
    clmad_tensor_release(g);

    CHECK_OK(ctx, clmad_cross_entropy(ctx, tx, toh, &l));
    double v2 = gc_read_scalar(ctx, l);
    cr_expect_eq(v2, v, "one-hot probabilities %.17g, indices %.17g", v2, v);
    clmad_tensor_release(l);
    CHECK_OK(ctx, clmad_cross_entropy(ctx, tx, tbad, &l));
    cr_expect(isnan(gc_read_scalar(ctx, l)), "an index out of range gives NaN");
    clmad_tensor_release(l);
    CHECK_OK(ctx, clmad_cross_entropy(ctx, tx, thalf, &l));
    cr_expect(isnan(gc_read_scalar(ctx, l)), "an index that is not an integer gives NaN");
    clmad_tensor_release(l);
    clmad_tape_clear(ctx);

    clmad_tensor *all[] = {tx, ti, toh, tbad, thalf};
    for (int i = 0; i < 5; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}

Test(losses, errors)
{
    clmad_context *ctx = test_context();
    size_t s23[2] = {2, 3}, s32[2] = {3, 2}, s3[1] = {3};
    clmad_tensor *a, *b, *c, *d, *s, *l = NULL;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, s23, &a));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, s32, &b));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F64, 2, s23, &c));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, s3, &d));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 0, NULL, &s));
    cr_expect_eq(clmad_mse_loss(ctx, a, b, &l), CLMAD_ERR_SHAPE);
    cr_expect(test_contains(clmad_last_error(ctx), "pred (2, 3) and target (3, 2) differ"), "%s",
              clmad_last_error(ctx));
    cr_expect_eq(clmad_mse_loss(ctx, a, c, &l), CLMAD_ERR_DTYPE);
    cr_expect_eq(clmad_mse_loss(ctx, a, NULL, &l), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_cross_entropy(ctx, a, d, &l), CLMAD_ERR_SHAPE);
    cr_expect(test_contains(clmad_last_error(ctx), "class indices"), "%s", clmad_last_error(ctx));
    cr_expect_eq(clmad_cross_entropy(ctx, s, s, &l), CLMAD_ERR_SHAPE);
    cr_expect_eq(clmad_cross_entropy(ctx, a, c, &l), CLMAD_ERR_DTYPE);
    cr_expect_eq(clmad_cross_entropy(NULL, a, a, &l), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_null(l);
    clmad_tensor *all[] = {a, b, c, d, s};
    for (int i = 0; i < 5; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}

/* Inside a scope (clmad_scope_begin/end), a loss's temporaries, which the
 * tape holds, are not the caller's: closing the scope before backward
 * must leave them to the tape, and backward then gives the gradients of
 * the same loss outside a scope; every byte comes back after. */
Test(losses, losses_in_a_scope_leave_the_tape_its_temporaries)
{
    clmad_context *ctx = test_context();
    unsigned seed = 3;
    size_t shape[2] = {4, 3}, rows = 4;
    const double idx[4] = {0, 2, 1, 1};
    clmad_tensor *x = gc_random(ctx, 2, shape, -1, 1, &seed), *p = gc_random(ctx, 2, shape, 0, 1, &seed), *y;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &rows, idx, &y));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    uint64_t before = test_stats(ctx).live_tensor_bytes;
    double want[12], got[12];
    for (int run = 0; run < 2; run++) {
        if (run == 1)
            CHECK_OK(ctx, clmad_scope_begin(ctx));
        clmad_tensor *ce, *mse, *sum, *g;
        CHECK_OK(ctx, clmad_cross_entropy(ctx, x, y, &ce));
        CHECK_OK(ctx, clmad_mse_loss(ctx, x, p, &mse));
        CHECK_OK(ctx, clmad_add(ctx, ce, mse, &sum));
        if (run == 1) {
            CHECK_OK(ctx, clmad_scope_keep(sum));
            CHECK_OK(ctx, clmad_scope_end(ctx)); /* releases ce and mse, not what the tape holds */
        } else {
            clmad_tensor_release(ce);
            clmad_tensor_release(mse);
        }
        CHECK_OK(ctx, clmad_backward(ctx, sum, NULL));
        clmad_tensor_release(sum);
        CHECK_OK(ctx, clmad_tensor_grad(x, &g));
        CHECK_OK(ctx, clmad_tensor_read(g, run ? got : want, sizeof got));
        clmad_tensor_release(g);
        clmad_tensor_zero_grad(x);
    }
    for (int i = 0; i < 12; i++)
        cr_expect_eq(got[i], want[i], "grad[%d]: in a scope %.17g, outside %.17g", i, got[i], want[i]);
    cr_expect_eq(test_stats(ctx).live_tensor_bytes, before, "tensors left alive or freed twice");
    clmad_tensor_release(x);
    clmad_tensor_release(p);
    clmad_tensor_release(y);
    clmad_context_release(ctx);
}

/* Issue 24 item 6b: one bad row (an inf or NaN logit) spoils only its own
 * row's gradient, and the loss as PyTorch's does (before: every row's
 * gradient was NaN). The figures are PyTorch 2.15's, f64:
 *
 *   import torch, math; torch.set_default_dtype(torch.float64)
 *   base = [[0.5, -1.0, 2.0], [1.0, 0.25, -0.5], [0.0, 3.0, -2.0]]
 *   for (r, c, v) in [(1, 0, math.inf), (1, 2, math.nan), (1, 0, -math.inf), (1, 2, -math.inf)]:
 *       for target in [torch.tensor([0, 2, 1]),
 *                      torch.nn.functional.one_hot(torch.tensor([0, 2, 1]), 3).double()]:
 *           x = torch.tensor(base); x[r, c] = v; x.requires_grad_(True)
 *           loss = torch.nn.functional.cross_entropy(x, target); loss.backward()
 *           print(repr(loss.item()), x.grad.tolist())
 *
 * Rows 0 and 2 of the gradient are the same in every case. */
static const double CE_BASE[3][3] = {{0.5, -1.0, 2.0}, {1.0, 0.25, -0.5}, {0.0, 3.0, -2.0}};
static const double CE_IDX[3] = {0, 2, 1};
static const double CE_ROW0[3] = {-0.27490320261998774, 0.013037524423562482, 0.26186567819642526};
static const double CE_ROW2[3] = {0.01570780550822138, -0.0178336258157021, 0.0021258203074807653};

typedef struct bad_row_case {
    int col;
    double value;
    double loss_idx, loss_prob; /* PyTorch's loss with indices, with one-hot probabilities */
    double row1[3];             /* PyTorch's gradient of row 1 (NaN: NaN) */
} bad_row_case;

static int same_double(double got, double want)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    return fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want));
}

static void bad_row(const bad_row_case *c, int probabilities)
{
    clmad_context *ctx = test_context();
    double x[3][3];
    memcpy(x, CE_BASE, sizeof x);
    x[1][c->col] = c->value;
    double onehot[3][3] = {{0}};
    for (int r = 0; r < 3; r++)
        onehot[r][(int)CE_IDX[r]] = 1.0;
    size_t shape[2] = {3, 3};
    clmad_tensor *logits, *target, *loss, *g;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, shape, x, &logits));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(logits, 1));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, probabilities ? 2 : 1, shape,
                                      probabilities ? (const void *)onehot : CE_IDX, &target));
    CHECK_OK(ctx, clmad_cross_entropy(ctx, logits, target, &loss));
    double l;
    CHECK_OK(ctx, clmad_tensor_item(loss, &l));
    double want_loss = probabilities ? c->loss_prob : c->loss_idx;
    cr_expect(same_double(l, want_loss), "x[1][%d] = %g, %s: loss %.17g, PyTorch %.17g", c->col, c->value,
              probabilities ? "probabilities" : "indices", l, want_loss);
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(logits, &g));
    double d[3][3];
    CHECK_OK(ctx, clmad_tensor_read(g, d, sizeof d));
    const double *want[3] = {CE_ROW0, c->row1, CE_ROW2};
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            cr_expect(same_double(d[r][k], want[r][k]), "x[1][%d] = %g, %s: grad[%d][%d] = %.17g, PyTorch %.17g",
                      c->col, c->value, probabilities ? "probabilities" : "indices", r, k, d[r][k], want[r][k]);
    clmad_tensor_release(g);
    clmad_tensor_release(loss);
    clmad_tensor_release(target);
    clmad_tensor_release(logits);
    clmad_context_release(ctx);
}

Test(losses, cross_entropy_one_bad_row_spoils_only_itself)
{
    const bad_row_case cases[] = {
        {0, INFINITY, NAN, NAN, {NAN, NAN, NAN}},
        {2, NAN, NAN, NAN, {NAN, NAN, NAN}},
        /* -inf in a class that is not the row's target: finite, except the
         * loss with probabilities (PyTorch's 0 * -inf). */
        {0, -INFINITY, 0.9777225127164014, NAN, {0.0, 0.226392899725131, -0.226392899725131}},
        /* -inf in the target class: an infinite loss, a finite gradient. */
        {2, -INFINITY, INFINITY, INFINITY, {0.226392899725131, 0.10694043360820234, -0.3333333333333333}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int probabilities = 0; probabilities < 2; probabilities++)
            bad_row(&cases[i], probabilities);
}

/* The same for clmad_mse_loss: a NaN or inf element spoils only its own
 * gradient, 2 (pred - target) / n, as PyTorch's mse_loss (before: every
 * element's gradient was NaN). */
Test(losses, mse_one_bad_element_spoils_only_itself)
{
    const double bad[2] = {NAN, INFINITY};
    for (int b = 0; b < 2; b++) {
        clmad_context *ctx = test_context();
        double p[3] = {1.0, bad[b], 3.0}, t[3] = {0.5, 0.0, -1.0};
        size_t n = 3;
        clmad_tensor *pred, *target, *loss, *g;
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, p, &pred));
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, t, &target));
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(pred, 1));
        CHECK_OK(ctx, clmad_mse_loss(ctx, pred, target, &loss));
        double l, d[3];
        CHECK_OK(ctx, clmad_tensor_item(loss, &l));
        cr_expect(same_double(l, bad[b]), "pred[1] = %g: loss %g", bad[b], l);
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        CHECK_OK(ctx, clmad_tensor_grad(pred, &g));
        CHECK_OK(ctx, clmad_tensor_read(g, d, sizeof d));
        /* The bad element's own: non-finite (PyTorch's is inf at inf; here the
         * vocabulary's 0 * inf in ad_mul's other partial may make it NaN). */
        cr_expect(!isfinite(d[1]), "pred[1] = %g: grad[1] = %g", bad[b], d[1]);
        for (int i = 0; i < 3; i += 2)
            cr_expect(same_double(d[i], 2 * (p[i] - t[i]) / 3), "pred[1] = %g: grad[%d] = %g, want %g", bad[b], i,
                      d[i], 2 * (p[i] - t[i]) / 3);
        clmad_tensor_release(g);
        clmad_tensor_release(loss);
        clmad_tensor_release(target);
        clmad_tensor_release(pred);
        clmad_context_release(ctx);
    }
}
