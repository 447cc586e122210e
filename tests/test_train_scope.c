/* SPDX-License-Identifier: Apache-2.0 */
/* Scopes: a training step without releases leaks nothing, gradients and
 * what the tape needs survive, kept and released tensors are left alone. */
#include "support.h"

#include <math.h>

static uint64_t live(clmad_context *ctx)
{
    return test_stats(ctx).live_tensor_bytes;
}

/* loss = sum(tanh(x * w + 1)^2) on ctx, intermediates never released. */
static clmad_tensor *step_loss(clmad_context *ctx, clmad_tensor *x, clmad_tensor *w)
{
    clmad_tensor *xw, *z, *h, *h2, *loss;
    CHECK_OK(ctx, clmad_mul(ctx, x, w, &xw));
    CHECK_OK(ctx, clmad_add_scalar(ctx, xw, 1.0, &z));
    CHECK_OK(ctx, clmad_tanh(ctx, z, &h));
    CHECK_OK(ctx, clmad_pow_scalar(ctx, h, 2.0, &h2));
    CHECK_OK(ctx, clmad_sum(ctx, h2, 0, NULL, 0, &loss));
    return loss;
}

Test(train_scope, training_loop_leaks_nothing_and_keeps_gradients)
{
    clmad_context *ctx = test_context();
    const double xv[3] = {0.5, -1.0, 2.0}, wv[3] = {0.3, 0.2, -0.1};
    size_t n = 3;
    clmad_tensor *x, *w;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, xv, &x));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, wv, &w));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(w, 1));
    uint64_t before = 0;
    for (int it = 0; it < 5; it++) {
        CHECK_OK(ctx, clmad_scope_begin(ctx));
        cr_assert_eq(clmad_scope_depth(ctx), 1);
        clmad_tensor_zero_grad(w);
        clmad_tensor *loss = step_loss(ctx, x, w);
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
        CHECK_OK(ctx, clmad_scope_end(ctx));
        cr_assert_eq(clmad_scope_depth(ctx), 0);
        uint64_t now = live(ctx);
        if (it == 0)
            before = now;
        cr_assert_eq(now, before, "step %d: %llu live bytes, %llu after the first step", it,
                     (unsigned long long)now, (unsigned long long)before);
    }
    /* x and w, and w's gradient, outlive the scopes. */
    clmad_tensor *g;
    CHECK_OK(ctx, clmad_tensor_grad(w, &g));
    cr_assert_not_null(g);
    double gv[3];
    CHECK_OK(ctx, clmad_tensor_read(g, gv, sizeof gv));
    for (int i = 0; i < 3; i++) {
        double h = tanh(xv[i] * wv[i] + 1.0);
        cr_assert_float_eq(gv[i], 2 * h * (1 - h * h) * xv[i], 1e-12);
    }
    clmad_tensor_release(g);
    clmad_tensor_release(x);
    clmad_tensor_release(w);
    cr_assert_eq(live(ctx), 0);
    clmad_context_release(ctx);
}

Test(train_scope, kept_retained_and_released_tensors)
{
    clmad_context *ctx = test_context();
    size_t n = 4;
    uint64_t base = live(ctx);
    CHECK_OK(ctx, clmad_scope_begin(ctx));
    clmad_tensor *a, *b, *c, *d;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 1.0, &a));
    uint64_t one = live(ctx) - base; /* device bytes of one such tensor */
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 2.0, &b));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 3.0, &c));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 4.0, &d));
    clmad_tensor_release(b);              /* released by hand: the scope leaves it alone */
    CHECK_OK(ctx, clmad_scope_keep(c));   /* the caller's now */
    clmad_tensor_retain(d);               /* one more reference: d survives the end */
    uint64_t outer = live(ctx);
    CHECK_OK(ctx, clmad_scope_begin(ctx)); /* nested: e goes with the inner scope */
    clmad_tensor *e;
    CHECK_OK(ctx, clmad_add(ctx, c, d, &e));
    cr_assert_eq(clmad_scope_depth(ctx), 2);
    CHECK_OK(ctx, clmad_scope_end(ctx));
    cr_assert_eq(live(ctx), outer, "e released by the inner end; a, c and d alive");
    cr_assert_eq(outer, base + 3 * one);
    CHECK_OK(ctx, clmad_scope_end(ctx));
    cr_assert_eq(live(ctx), base + 2 * one, "a released; c (kept) and d (retained) alive");
    float cv[4], dv[4];
    CHECK_OK(ctx, clmad_tensor_read(c, cv, sizeof cv));
    CHECK_OK(ctx, clmad_tensor_read(d, dv, sizeof dv));
    cr_assert_eq(cv[3], 3.0f);
    cr_assert_eq(dv[0], 4.0f);
    clmad_tensor_release(c);
    clmad_tensor_release(d);
    cr_assert_eq(live(ctx), base);
    cr_assert_eq(clmad_scope_end(ctx), CLMAD_ERR_STATE);
    cr_assert(test_contains(clmad_last_error(ctx), "no scope is open"));
    cr_assert_eq(clmad_scope_begin(NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_scope_keep(NULL), CLMAD_ERR_INVALID_ARGUMENT);
    clmad_context_release(ctx);
}

/* With STORE and a retained tape, the partials made inside the scope are
 * the node's, so backward after the end still has them. */
Test(train_scope, stored_partials_outlive_the_scope)
{
    clmad_context *ctx = test_context();
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_STORE));
    CHECK_OK(ctx, clmad_set_retain_tape(ctx, 1));
    const double xv[3] = {0.1, 0.2, 0.3};
    size_t n = 3;
    clmad_tensor *x, *loss;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, xv, &x));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_scope_begin(ctx));
    clmad_tensor *s, *t;
    CHECK_OK(ctx, clmad_sigmoid(ctx, x, &s));
    CHECK_OK(ctx, clmad_exp(ctx, s, &t));
    CHECK_OK(ctx, clmad_sum(ctx, t, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_scope_keep(loss));
    CHECK_OK(ctx, clmad_scope_end(ctx));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    clmad_tensor *g;
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    double gv[3];
    CHECK_OK(ctx, clmad_tensor_read(g, gv, sizeof gv));
    for (int i = 0; i < 3; i++) {
        double sg = 1 / (1 + exp(-xv[i]));
        cr_assert_float_eq(gv[i], exp(sg) * sg * (1 - sg), 1e-12);
    }
    clmad_tensor_release(g);
    clmad_tensor_release(loss);
    clmad_tape_clear(ctx);
    clmad_tensor_release(x);
    cr_assert_eq(live(ctx), 0);
    clmad_context_release(ctx);
}

/* A scalar op's 0-d constant is held by the tape, not by the scope: a
 * backward after the scope's end still reads it (it read freed memory
 * before: valgrind "Invalid read" in bcast_backward). */
Test(train_scope, scalar_constants_outlive_the_scope)
{
    clmad_context *ctx = test_context();
    size_t shape[1] = {4};
    const double xs[4] = {1, -2, 3, 0.5};
    clmad_tensor *x = NULL, *y = NULL, *loss = NULL, *g = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, shape, xs, &x));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_scope_begin(ctx));
    CHECK_OK(ctx, clmad_mul_scalar(ctx, x, 3.0, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_scope_keep(loss));
    CHECK_OK(ctx, clmad_scope_end(ctx));
    /* Reuse the pool's freed buffers, so that a dangling constant would be overwritten. */
    clmad_tensor *junk = NULL;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F64, 0, NULL, -7.0, &junk));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    double d[4];
    CHECK_OK(ctx, clmad_tensor_read(g, d, sizeof d));
    for (int e = 0; e < 4; e++)
        cr_expect_eq(d[e], 3.0);
    clmad_tensor_release(junk);
    clmad_tensor_release(g);
    clmad_tensor_release(loss);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}

/* Issue 24: a tensor released by hand inside a scope while the tape still
 * holds it. The scope owns its own reference, so its end drops that one
 * and the tape's reference keeps the tensor for backward (before: the end
 * released the tape's reference, and backward read freed memory: ASan SEGV
 * in clmad_tensor_release, or a gradient of junk). */
Test(train_scope, hand_release_while_the_tape_holds_it)
{
    clmad_context *ctx = test_context();
    size_t n = 4;
    const double xs[4] = {3, 3, -1, 0.5};
    clmad_tensor *x, *a, *b, *loss, *g;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, xs, &x));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    uint64_t base = live(ctx);
    CHECK_OK(ctx, clmad_scope_begin(ctx));
    CHECK_OK(ctx, clmad_exp(ctx, x, &a));
    CHECK_OK(ctx, clmad_mul(ctx, a, a, &b)); /* the tape holds a */
    clmad_tensor_release(a);                 /* the caller's reference, by hand */
    CHECK_OK(ctx, clmad_sum(ctx, b, 0, NULL, 0, &loss));
    clmad_tensor_release(b);
    CHECK_OK(ctx, clmad_scope_keep(loss));
    CHECK_OK(ctx, clmad_scope_end(ctx));
    /* Reuse the pool's freed buffers, so that a dangling a would be overwritten. */
    clmad_tensor *junk;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F64, 1, &n, -7.0, &junk));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    double d[4];
    CHECK_OK(ctx, clmad_tensor_read(g, d, sizeof d));
    for (int e = 0; e < 4; e++)
        cr_expect_float_eq(d[e], 2 * exp(2 * xs[e]), 1e-9 * exp(2 * xs[e]), "d/dx e^2x at %g", xs[e]);
    clmad_tensor_release(junk);
    clmad_tensor_release(g);
    clmad_tensor_release(loss);
    clmad_tensor_zero_grad(x);
    /* The tape was cleared by backward: a and b are gone with it. */
    cr_assert_eq(live(ctx), base, "%llu live bytes, %llu before the scope",
                 (unsigned long long)live(ctx), (unsigned long long)base);
    clmad_tensor_release(x);
    clmad_context_release(ctx);
}

/* A retained tensor released once by hand inside a scope: the retain still
 * holds it after the end (before: the end dropped the retain's reference
 * and the caller read freed memory). */
Test(train_scope, hand_release_of_a_retained_tensor)
{
    clmad_context *ctx = test_context();
    size_t n = 4;
    uint64_t base = live(ctx);
    CHECK_OK(ctx, clmad_scope_begin(ctx));
    clmad_tensor *c;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 3.0, &c));
    uint64_t one = live(ctx) - base;
    cr_assert_eq(clmad_tensor_retain(c), c);
    clmad_tensor_release(c);
    CHECK_OK(ctx, clmad_scope_end(ctx));
    cr_assert_eq(live(ctx), base + one, "the retain holds c past the end");
    clmad_tensor *junk;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, -7.0, &junk));
    float v[4];
    CHECK_OK(ctx, clmad_tensor_read(c, v, sizeof v));
    for (int e = 0; e < 4; e++)
        cr_expect_eq(v[e], 3.0f);
    clmad_tensor_release(junk);
    clmad_tensor_release(c);
    cr_assert_eq(live(ctx), base);
    clmad_context_release(ctx);
}

/* Every way of combining the caller's release, a retain, keep and the
 * scope's end drops exactly the references that exist: the memory returns
 * once, nothing leaks, nothing is read after its free. */
Test(train_scope, releases_and_the_end_balance)
{
    clmad_context *ctx = test_context();
    size_t n = 4;
    uint64_t base = live(ctx);
    for (int way = 0; way < 6; way++) {
        CHECK_OK(ctx, clmad_scope_begin(ctx));
        clmad_tensor *t;
        CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, way, &t));
        int extra = 0; /* references the caller still holds after the end */
        switch (way) {
        case 0: /* nothing: the end frees it */
            break;
        case 1: /* released by hand: freed at once */
            clmad_tensor_release(t);
            cr_assert_eq(live(ctx), base, "a hand release of the only reference frees at once");
            break;
        case 2: /* kept, then released after the end */
            CHECK_OK(ctx, clmad_scope_keep(t));
            extra = 1;
            break;
        case 3: /* retained twice, released once: two references left */
            clmad_tensor_retain(t);
            clmad_tensor_retain(t);
            clmad_tensor_release(t);
            extra = 2;
            break;
        case 4: /* retained, then released twice */
            clmad_tensor_retain(t);
            clmad_tensor_release(t);
            clmad_tensor_release(t);
            cr_assert_eq(live(ctx), base, "retain + two releases free at once");
            break;
        case 5: /* retained and kept: two references of the caller */
            clmad_tensor_retain(t);
            CHECK_OK(ctx, clmad_scope_keep(t));
            extra = 2;
            break;
        }
        CHECK_OK(ctx, clmad_scope_end(ctx));
        cr_assert_eq(live(ctx) > base, extra > 0, "way %d: alive after the end: %d", way, live(ctx) > base);
        if (extra) {
            float v[4];
            CHECK_OK(ctx, clmad_tensor_read(t, v, sizeof v));
            cr_expect_eq(v[0], (float)way);
        }
        for (int r = 0; r < extra; r++)
            clmad_tensor_release(t);
        cr_assert_eq(live(ctx), base, "way %d leaks", way);
    }
    clmad_context_release(ctx);
}
