/* SPDX-License-Identifier: Apache-2.0 */
/* In-place updates and optimizer steps against host formulas (PyTorch's),
 * and the refusal to write a tensor the tape still holds. */
#include "support.h"

#include <math.h>
#include <string.h>

Test(train_optim, axpby_values_and_errors)
{
    clmad_context *ctx = test_context();
    const double yv[3] = {1, 2, 3}, xv[3] = {0.5, -1, 4};
    size_t n = 3, m = 2;
    clmad_tensor *y, *x, *z, *w;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, yv, &y));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, xv, &x));
    CHECK_OK(ctx, clmad_tensor_axpby(y, -2.0, x, 0.5));
    double got[3];
    CHECK_OK(ctx, clmad_tensor_read(y, got, sizeof got));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(got[i], -2.0 * xv[i] + 0.5 * yv[i]);
    CHECK_OK(ctx, clmad_tensor_axpby(y, 7.0, NULL, 2.0)); /* y = 2 y */
    CHECK_OK(ctx, clmad_tensor_read(y, got, sizeof got));
    cr_assert_eq(got[2], 2 * (-8.0 + 1.5));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F64, 1, &n, NAN, &z));
    CHECK_OK(ctx, clmad_tensor_axpby(z, 0.0, NULL, 0.0)); /* beta 0 does not read NaN */
    CHECK_OK(ctx, clmad_tensor_read(z, got, sizeof got));
    cr_assert_eq(got[0], 0.0);
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &m, xv, &w));
    cr_assert_eq(clmad_tensor_axpby(y, 1.0, w, 1.0), CLMAD_ERR_SHAPE);
    cr_assert_eq(clmad_tensor_axpby(NULL, 1.0, w, 1.0), CLMAD_ERR_INVALID_ARGUMENT);
    /* On the tape: x is an input of a recorded product, y its output. */
    clmad_tensor *prod;
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_mul(ctx, x, z, &prod));
    cr_assert_eq(clmad_tensor_axpby(x, 1.0, NULL, 2.0), CLMAD_ERR_STATE);
    cr_assert(test_contains(clmad_last_error(ctx), "the tape still holds y"), "%s", clmad_last_error(ctx));
    cr_assert_eq(clmad_tensor_axpby(prod, 1.0, NULL, 2.0), CLMAD_ERR_STATE);
    cr_assert_eq(clmad_tensor_axpby(z, 1.0, NULL, 2.0), CLMAD_ERR_STATE, "z is an input too");
    clmad_tensor *u;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F64, 1, &n, &u));
    CHECK_OK(ctx, clmad_tensor_axpby(u, 1.0, x, 1.0)); /* reading x is fine... */
    clmad_tensor_release(u);
    clmad_tape_clear(ctx);
    CHECK_OK(ctx, clmad_tensor_axpby(x, 1.0, NULL, 2.0)); /* ...and x is free once the tape is cleared */
    clmad_tensor *all[] = {y, x, z, w, prod};
    for (int i = 0; i < 5; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}

/* Two parameters, loss = sum(c0 * p0^2) + sum(c1 * p1^2): g = 2 c p. */
typedef struct problem {
    size_t n[2];
    double p[2][6], c[2][6];
} problem;

static problem make_problem(void)
{
    problem q = {.n = {6, 2}};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < q.n[k]; i++) {
            q.p[k][i] = 0.3 * (double)i - 0.7 + 0.5 * k;
            q.c[k][i] = 0.5 + 0.25 * (double)i;
        }
    return q;
}

static void device_steps(clmad_context *ctx, const clmad_optimizer_options *opt, problem *q, int steps,
                         clmad_dtype dt)
{
    clmad_tensor *p[2], *c[2];
    for (int k = 0; k < 2; k++) {
        float pf[6], cf[6];
        for (size_t i = 0; i < q->n[k]; i++) {
            pf[i] = (float)q->p[k][i];
            cf[i] = (float)q->c[k][i];
        }
        CHECK_OK(ctx, clmad_tensor_create(ctx, dt, 1, &q->n[k], dt == CLMAD_F64 ? (void *)q->p[k] : pf, &p[k]));
        CHECK_OK(ctx, clmad_tensor_create(ctx, dt, 1, &q->n[k], dt == CLMAD_F64 ? (void *)q->c[k] : cf, &c[k]));
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(p[k], 1));
    }
    clmad_optimizer *o;
    CHECK_OK(ctx, clmad_optimizer_create(ctx, opt, p, 2, &o));
    for (int s = 0; s < steps; s++) {
        CHECK_OK(ctx, clmad_scope_begin(ctx));
        clmad_optimizer_zero_grad(o);
        clmad_tensor *loss = NULL;
        for (int k = 0; k < 2; k++) {
            clmad_tensor *sq, *term, *sum;
            CHECK_OK(ctx, clmad_mul(ctx, p[k], p[k], &sq));
            CHECK_OK(ctx, clmad_mul(ctx, sq, c[k], &term));
            CHECK_OK(ctx, clmad_sum(ctx, term, 0, NULL, 0, &sum));
            if (loss)
                CHECK_OK(ctx, clmad_add(ctx, loss, sum, &loss));
            else
                loss = sum;
        }
        cr_assert_eq(clmad_optimizer_step(o), CLMAD_ERR_STATE, "the tape holds the parameters");
        cr_assert(test_contains(clmad_last_error(ctx), "params[0]"));
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        CHECK_OK(ctx, clmad_optimizer_step(o));
        CHECK_OK(ctx, clmad_scope_end(ctx));
    }
    cr_assert_eq(clmad_optimizer_steps(o), (uint64_t)steps);
    for (int k = 0; k < 2; k++) {
        if (dt == CLMAD_F64) {
            CHECK_OK(ctx, clmad_tensor_read(p[k], q->p[k], q->n[k] * sizeof(double)));
        } else {
            float pf[6];
            CHECK_OK(ctx, clmad_tensor_read(p[k], pf, q->n[k] * sizeof(float)));
            for (size_t i = 0; i < q->n[k]; i++)
                q->p[k][i] = pf[i];
        }
        clmad_tensor_release(p[k]);
        clmad_tensor_release(c[k]);
    }
    clmad_optimizer_release(o);
}

static void host_steps(const clmad_optimizer_options *o, problem *q, int steps)
{
    double v[2][6] = {{0}}, m[2][6] = {{0}};
    for (int t = 1; t <= steps; t++)
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < q->n[k]; i++) {
                double p = q->p[k][i], g = 2 * q->c[k][i] * p;
                if (o->kind == CLMAD_OPTIM_SGD) {
                    double d = g + o->weight_decay * p;
                    if (o->momentum > 0) {
                        v[k][i] = o->momentum * v[k][i] + d;
                        d = o->nesterov ? d + o->momentum * v[k][i] : v[k][i];
                    }
                    q->p[k][i] = p - o->lr * d;
                    continue;
                }
                if (o->kind == CLMAD_OPTIM_ADAMW)
                    p *= 1 - o->lr * o->weight_decay;
                else
                    g += o->weight_decay * p;
                m[k][i] = o->beta1 * m[k][i] + (1 - o->beta1) * g;
                v[k][i] = o->beta2 * v[k][i] + (1 - o->beta2) * g * g;
                double bc1 = 1 - pow(o->beta1, t), bc2 = 1 - pow(o->beta2, t);
                q->p[k][i] = p - o->lr / bc1 * m[k][i] / (sqrt(v[k][i]) / sqrt(bc2) + o->eps);
            }
}

static void check_against_host(const clmad_optimizer_options *opt, clmad_dtype dt, double tol)
{
    clmad_context *ctx = test_context();
    problem dev = make_problem(), host = make_problem();
    device_steps(ctx, opt, &dev, 4, dt);
    host_steps(opt, &host, 4);
    double moved = 0;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < dev.n[k]; i++) {
            cr_assert(fabs(dev.p[k][i] - host.p[k][i]) <= tol * (1 + fabs(host.p[k][i])),
                      "kind %d dtype %d p%d[%zu]: device %.17g, host %.17g", (int)opt->kind, (int)dt, k, i,
                      dev.p[k][i], host.p[k][i]);
            moved += fabs(host.p[k][i] - make_problem().p[k][i]);
        }
    cr_assert(moved > 1e-3, "the steps moved the parameters");
    clmad_context_release(ctx);
}

Test(train_optim, sgd_momentum_nesterov_weight_decay)
{
    clmad_optimizer_options o;
    clmad_optimizer_options_init(&o, CLMAD_OPTIM_SGD);
    o.lr = 0.05;
    check_against_host(&o, CLMAD_F64, 1e-14); /* plain */
    o.momentum = 0.9;
    check_against_host(&o, CLMAD_F64, 1e-14);
    o.nesterov = 1;
    o.weight_decay = 0.01;
    check_against_host(&o, CLMAD_F64, 1e-14);
    check_against_host(&o, CLMAD_F32, 1e-6);
}

Test(train_optim, adam_and_adamw)
{
    clmad_optimizer_options o;
    clmad_optimizer_options_init(&o, CLMAD_OPTIM_ADAM);
    o.lr = 0.01;
    check_against_host(&o, CLMAD_F64, 1e-13);
    o.weight_decay = 0.1;
    check_against_host(&o, CLMAD_F64, 1e-13);
    check_against_host(&o, CLMAD_F32, 1e-5);
    clmad_optimizer_options_init(&o, CLMAD_OPTIM_ADAMW);
    cr_assert_eq(o.weight_decay, 1e-2);
    o.lr = 0.01;
    o.weight_decay = 0.5;
    check_against_host(&o, CLMAD_F64, 1e-13);
    check_against_host(&o, CLMAD_F32, 1e-5);
}

Test(train_optim, parameters_without_gradient_and_errors)
{
    clmad_context *ctx = test_context();
    size_t n = 2;
    clmad_tensor *p, *frozen, *other;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 1.0, &p));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 5.0, &frozen));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(p, 1));
    clmad_tensor *ps[2] = {p, frozen};
    clmad_optimizer *o = NULL;
    cr_assert_eq(clmad_optimizer_sgd(ctx, ps, 0, 0.1, 0, &o), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_optimizer_sgd(ctx, ps, 2, -1.0, 0, &o), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "lr"));
    clmad_tensor *twice[2] = {p, p};
    cr_assert_eq(clmad_optimizer_adam(ctx, twice, 2, 0.1, &o), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "the same tensor"));
    clmad_optimizer_options bad;
    clmad_optimizer_options_init(&bad, CLMAD_OPTIM_ADAM);
    bad.beta1 = 1.0;
    cr_assert_eq(clmad_optimizer_create(ctx, &bad, ps, 2, &o), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_null(o);
    clmad_context *ctx2 = test_context();
    CHECK_OK(ctx2, clmad_tensor_fill(ctx2, CLMAD_F32, 1, &n, 1.0, &other));
    clmad_tensor *mixed[2] = {p, other};
    cr_assert_eq(clmad_optimizer_sgd(ctx, mixed, 2, 0.1, 0, &o), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "params[1] belongs to another context"));

    CHECK_OK(ctx, clmad_optimizer_sgd(ctx, ps, 2, 0.5, 0.9, &o));
    clmad_tensor *s, *loss;
    CHECK_OK(ctx, clmad_mul(ctx, p, frozen, &s));
    CHECK_OK(ctx, clmad_sum(ctx, s, 0, NULL, 0, &loss)); /* d/dp = frozen = 5 */
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_optimizer_step(o));
    float pv[2], fv[2];
    CHECK_OK(ctx, clmad_tensor_read(p, pv, sizeof pv));
    CHECK_OK(ctx, clmad_tensor_read(frozen, fv, sizeof fv));
    cr_assert_eq(pv[0], 1.0f - 0.5f * 5.0f);
    cr_assert_eq(fv[1], 5.0f, "no gradient: left alone");
    cr_assert_eq(clmad_optimizer_set_lr(o, NAN), CLMAD_ERR_INVALID_ARGUMENT);
    CHECK_OK(ctx, clmad_optimizer_set_lr(o, 0.0));
    CHECK_OK(ctx, clmad_optimizer_step(o)); /* lr 0: v grows, p stays */
    CHECK_OK(ctx, clmad_tensor_read(p, pv, sizeof pv));
    cr_assert_eq(pv[0], -1.5f);
    cr_assert_eq(clmad_optimizer_step(NULL), CLMAD_ERR_INVALID_ARGUMENT);
    clmad_optimizer_release(o);
    clmad_optimizer_release(NULL);
    clmad_tensor_release(s);
    clmad_tensor_release(loss);
    clmad_tensor_release(p);
    clmad_tensor_release(frozen);
    clmad_tensor_release(other);
    clmad_context_release(ctx2);
    clmad_context_release(ctx);
}

/* Issue 24 item 2: Adam's and AdamW's bias correction counts the steps of
 * each parameter (PyTorch's state['step']): p1 has no gradient at step 1
 * (its first update, at step 2, is then a full lr step), p0 none at step
 * 3 (its count skips it). The figures are PyTorch 2.15's, f64:
 *
 *   import torch; torch.set_default_dtype(torch.float64)
 *   G = [([0.1, -0.3], None), ([0.2, 0.4], [-0.5, 1.0]),
 *        (None, [0.3, -0.2]), ([-0.1, 0.05], [0.7, 0.1])]
 *   for make in [lambda ps: torch.optim.Adam(ps, lr=0.1),
 *                lambda ps: torch.optim.Adam(ps, lr=0.1, weight_decay=0.1),
 *                lambda ps: torch.optim.AdamW(ps, lr=0.1, weight_decay=0.1)]:
 *       ps = [torch.tensor([1.0, -2.0], requires_grad=True),
 *             torch.tensor([0.5, 3.0], requires_grad=True)]
 *       opt = make(ps)
 *       for gs in G:
 *           for p, g in zip(ps, gs):
 *               p.grad = None if g is None else torch.tensor(g)
 *           opt.step()
 *       print([repr(v) for p in ps for v in p.detach().tolist()])
 *
 * Here a gradient g comes from backward of dot(g, p). */
static const double LATE_G[4][2][2] = {
    {{0.1, -0.3}, {NAN, NAN}}, {{0.2, 0.4}, {-0.5, 1.0}}, {{NAN, NAN}, {0.3, -0.2}}, {{-0.1, 0.05}, {0.7, 0.1}}};

static void late_parameters(clmad_optimizer_kind kind, double wd, const double want[4])
{
    clmad_context *ctx = test_context();
    const double p0[2] = {1.0, -2.0}, p1[2] = {0.5, 3.0};
    size_t n = 2;
    clmad_tensor *p[2];
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, p0, &p[0]));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, p1, &p[1]));
    for (int k = 0; k < 2; k++)
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(p[k], 1));
    clmad_optimizer_options opt;
    clmad_optimizer_options_init(&opt, kind);
    opt.lr = 0.1;
    opt.weight_decay = wd;
    clmad_optimizer *o;
    CHECK_OK(ctx, clmad_optimizer_create(ctx, &opt, p, 2, &o));
    for (int s = 0; s < 4; s++) {
        clmad_optimizer_zero_grad(o);
        for (int k = 0; k < 2; k++) {
            if (isnan(LATE_G[s][k][0]))
                continue; /* no gradient for p[k] at this step */
            clmad_tensor *g, *loss;
            CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, LATE_G[s][k], &g));
            CHECK_OK(ctx, clmad_dot(ctx, g, p[k], &loss));
            CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
            clmad_tensor_release(loss);
            clmad_tensor_release(g);
        }
        CHECK_OK(ctx, clmad_optimizer_step(o));
    }
    cr_assert_eq(clmad_optimizer_steps(o), 4);
    for (int k = 0; k < 2; k++) {
        double got[2];
        CHECK_OK(ctx, clmad_tensor_read(p[k], got, sizeof got));
        for (int e = 0; e < 2; e++)
            cr_expect_float_eq(got[e], want[2 * k + e], 1e-13, "kind %d wd %g: p%d[%d] = %.17g, PyTorch %.17g",
                               (int)kind, wd, k, e, got[e], want[2 * k + e]);
    }
    clmad_optimizer_release(o);
    clmad_tensor_release(p[0]);
    clmad_tensor_release(p[1]);
    clmad_context_release(ctx);
}

Test(train_optim, adam_bias_correction_per_parameter)
{
    const double adam[4] = {0.7614728861347055, -1.9405958332730062, 0.5795185398329179, 2.803343611320101};
    const double adam_l2[4] = {0.7276800080908188, -1.8267324153467404, 0.5575929522632999, 2.7566044403447885};
    const double adamw[4] = {0.7347270679004929, -1.8829903228030094, 0.5624865418421356, 2.716741637370296};
    late_parameters(CLMAD_OPTIM_ADAM, 0.0, adam);
    late_parameters(CLMAD_OPTIM_ADAM, 0.1, adam_l2);
    late_parameters(CLMAD_OPTIM_ADAMW, 0.1, adamw);
}
