/* SPDX-License-Identifier: Apache-2.0 */
/* The optimizer's step over many parameters per launch against its step
 * of one launch per parameter: bitwise the same parameters after several
 * steps of SGD (plain, momentum, Nesterov, weight decay), Adam and AdamW,
 * over more parameters than one launch takes, of two dtypes, with an empty
 * one and with gradients that come and go (step counts per parameter);
 * and the launches a step takes. The formulas themselves are checked
 * against the host in test_train_optim. */
#include "internal.h"
#include "support.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { NP = 19, STEPS = 4 };

static size_t size_of(int i)
{
    static const size_t sizes[NP] = {5, 1, 17, 0, 33, 2, 8, 64, 3, 7, 1, 12, 40, 9, 4, 6, 11, 2, 130};
    return sizes[i];
}

static clmad_dtype dtype_of(int i)
{
    return test_device_fp64() && i % 3 == 1 ? CLMAD_F64 : CLMAD_F32;
}

/* Parameter i gets a gradient on step s unless (i + s) % 4 == 0. */
static int has_grad(int i, int s)
{
    return (i + s) % 4 != 0;
}

static clmad_tensor *filled(clmad_context *ctx, int i, unsigned salt)
{
    size_t n = size_of(i);
    double h[130];
    for (size_t e = 0; e < n; e++)
        h[e] = sin(0.7 * (double)(e + 1) + 1.3 * i + salt);
    clmad_tensor *t;
    if (dtype_of(i) == CLMAD_F64) {
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, h, &t));
    } else {
        float f[130];
        for (size_t e = 0; e < n; e++)
            f[e] = (float)h[e];
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, f, &t));
    }
    return t;
}

/* Runs STEPS steps of opt over fresh parameters (grouped or one launch
 * each) and leaves their final values in out[i] (bytes). */
static void run(clmad_context *ctx, const clmad_optimizer_options *opt, int per_parameter,
                unsigned char out[NP][130 * 8])
{
    clmad_tensor *p[NP], *w[NP];
    for (int i = 0; i < NP; i++) {
        p[i] = filled(ctx, i, 0);
        w[i] = filled(ctx, i, 5);
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(p[i], 1));
    }
    clmad_optimizer *o;
    CHECK_OK(ctx, clmad_optimizer_create(ctx, opt, p, NP, &o));
    clmad__optimizer_launch_per_parameter(o, per_parameter);
    for (int s = 0; s < STEPS; s++) {
        clmad_optimizer_zero_grad(o);
        for (int i = 0; i < NP; i++) {
            if (!has_grad(i, s))
                continue;
            clmad_tensor *t, *l; /* loss sum(tanh(p) * w): a gradient unlike p */
            CHECK_OK(ctx, clmad_tanh(ctx, p[i], &t));
            CHECK_OK(ctx, clmad_dot(ctx, t, w[i], &l));
            CHECK_OK(ctx, clmad_backward(ctx, l, NULL));
            clmad_tensor_release(t);
            clmad_tensor_release(l);
        }
        CHECK_OK(ctx, clmad_optimizer_step(o));
    }
    for (int i = 0; i < NP; i++) {
        size_t bytes = size_of(i) * clmad_dtype_size(dtype_of(i));
        CHECK_OK(ctx, clmad_tensor_read(p[i], out[i], bytes));
        clmad_tensor_release(p[i]);
        clmad_tensor_release(w[i]);
    }
    clmad_optimizer_release(o);
}

static void expect_same_bits(clmad_context *ctx, const clmad_optimizer_options *opt, const char *what)
{
    static unsigned char grouped[NP][130 * 8], each[NP][130 * 8];
    run(ctx, opt, 0, grouped);
    run(ctx, opt, 1, each);
    for (int i = 0; i < NP; i++) {
        size_t bytes = size_of(i) * clmad_dtype_size(dtype_of(i));
        cr_expect(memcmp(grouped[i], each[i], bytes) == 0,
                  "%s: parameter %d (%zu elements, %s) differs from one launch per parameter", what, i, size_of(i),
                  dtype_of(i) == CLMAD_F64 ? "f64" : "f32");
    }
}

Test(optim_group, bitwise_as_one_launch_per_parameter)
{
    clmad_context *ctx = test_context();
    clmad_optimizer_options o;
    clmad_optimizer_options_init(&o, CLMAD_OPTIM_SGD);
    o.lr = 0.1;
    o.weight_decay = 0.01;
    expect_same_bits(ctx, &o, "SGD with weight decay");
    o.momentum = 0.9;
    expect_same_bits(ctx, &o, "SGD with momentum");
    o.nesterov = 1;
    expect_same_bits(ctx, &o, "SGD Nesterov");
    clmad_optimizer_options_init(&o, CLMAD_OPTIM_ADAM);
    o.lr = 0.05;
    o.weight_decay = 0.1;
    expect_same_bits(ctx, &o, "Adam with L2");
    clmad_optimizer_options_init(&o, CLMAD_OPTIM_ADAMW);
    o.lr = 0.05;
    expect_same_bits(ctx, &o, "AdamW");
    clmad_context_release(ctx);
}

/* 4 parameters of one dtype, one of them empty and one without a
 * gradient: the step is one launch; 11 of one dtype are two. */
Test(optim_group, launches_per_step)
{
    clmad_context *ctx = test_context();
    const size_t sizes[11] = {3, 0, 5, 2, 1, 4, 6, 7, 8, 9, 10};
    clmad_tensor *p[11];
    for (int i = 0; i < 11; i++) {
        CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &sizes[i], 1.0, &p[i]));
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(p[i], 1));
    }
    const int counts[2] = {4, 11};
    const uint64_t want[2] = {1, 2};
    for (int c = 0; c < 2; c++) {
        clmad_optimizer *o;
        CHECK_OK(ctx, clmad_optimizer_adam(ctx, p, counts[c], 0.1, &o));
        clmad_optimizer_zero_grad(o);
        for (int i = 0; i < counts[c]; i++) {
            if (i == 2)
                continue; /* no gradient */
            clmad_tensor *l;
            CHECK_OK(ctx, clmad_sum(ctx, p[i], 0, NULL, 0, &l));
            CHECK_OK(ctx, clmad_backward(ctx, l, NULL));
            clmad_tensor_release(l);
        }
        CHECK_OK(ctx, clmad_finish(ctx));
        uint64_t before = test_stats(ctx).kernels_launched;
        CHECK_OK(ctx, clmad_optimizer_step(o));
        uint64_t launched = test_stats(ctx).kernels_launched - before;
        cr_expect_eq(launched, want[c], "%d parameters: %llu launches, want %llu", counts[c],
                     (unsigned long long)launched, (unsigned long long)want[c]);
        float got[5];
        CHECK_OK(ctx, clmad_tensor_read(p[2], got, sizeof got));
        for (int e = 0; e < 5; e++)
            cr_expect_eq(got[e], 1.0f, "the parameter without a gradient moved: %g", got[e]);
        clmad_optimizer_release(o);
    }
    for (int i = 0; i < 11; i++)
        clmad_tensor_release(p[i]);
    clmad_context_release(ctx);
}
