/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_grad_scaler: a scripted run with inf steps against PyTorch's
 * GradScaler rule (restated below from its update kernel), the skipped
 * steps leaving the parameters as they were, f16 gradients that underflow
 * without the scale and survive with it, and the refusals. */
#include "support.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* torch.cuda.amp.GradScaler.update (aten/src/ATen/native/cuda/AmpKernels.cu,
 * _amp_update_scale_cuda_kernel), in f32 as its scale is. */
typedef struct reference {
    float scale;
    int tracker;
} reference;

static void reference_update(reference *r, int found, const clmad_grad_scaler_options *o)
{
    if (found) {
        r->scale *= (float)o->backoff_factor;
        r->tracker = 0;
    } else if (r->tracker + 1 == o->growth_interval) {
        const float grown = r->scale * (float)o->growth_factor;
        if (isfinite(grown))
            r->scale = grown;
        r->tracker = 0;
    } else {
        r->tracker++;
    }
}

/* Ten steps of SGD on loss = sum(w * c), c finite except at the scripted
 * steps; the scale, the steps taken and w after each against the rule and
 * against SGD on the unscaled gradient c. */
Test(grad_scaler, scripted_inf_steps_follow_pytorch)
{
    clmad_context *ctx = test_context();
    enum { N = 4, STEPS = 12 };
    const int inf_at[STEPS] = {0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1};
    clmad_grad_scaler_options o;
    clmad_grad_scaler_options_init(&o);
    cr_assert(o.init_scale == 65536 && o.growth_factor == 2 && o.backoff_factor == 0.5 && o.growth_interval == 2000);
    o.init_scale = 1024;
    o.growth_interval = 3;
    o.backoff_factor = 0.25;
    o.growth_factor = 3; /* not a power of two: the scale's f32 rounding shows */
    clmad_grad_scaler *s;
    CHECK_OK(ctx, clmad_grad_scaler_create(ctx, &o, &s));
    float w[N] = {0.5f, -1.25f, 2.0f, 3.5f}, host_w[N];
    memcpy(host_w, w, sizeof w);
    size_t n = N;
    clmad_tensor *tw;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, w, &tw));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(tw, 1));
    clmad_optimizer *opt;
    CHECK_OK(ctx, clmad_optimizer_sgd(ctx, &tw, 1, 0.125, 0, &opt));
    reference ref = {1024.0f, 0};
    uint64_t taken = 0;
    for (int step = 0; step < STEPS; step++) {
        test_set_case("step %d", step);
        float c[N];
        for (int i = 0; i < N; i++)
            c[i] = (float)(i + 1) * 0.375f - (float)step * 0.0625f;
        if (inf_at[step])
            c[step % N] = step % 2 ? INFINITY : NAN;
        clmad_tensor *tc, *prod, *loss, *scaled;
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, c, &tc));
        CHECK_OK(ctx, clmad_mul(ctx, tw, tc, &prod));
        CHECK_OK(ctx, clmad_sum(ctx, prod, 0, NULL, 0, &loss));
        CHECK_OK(ctx, clmad_grad_scaler_scale(s, loss, &scaled));
        CHECK_OK(ctx, clmad_backward(ctx, scaled, NULL));
        int stepped = -1;
        CHECK_OK(ctx, clmad_grad_scaler_step(s, opt, &stepped));
        cr_assert_eq(stepped, !inf_at[step]);
        if (stepped) {
            taken++;
            for (int i = 0; i < N; i++) /* the gradient c, scaled (by 3^k: rounded) and unscaled */
                host_w[i] = host_w[i] - 0.125f * c[i];
        }
        reference_update(&ref, inf_at[step], &o);
        cr_assert_eq((float)clmad_grad_scaler_get_scale(s), ref.scale, "scale %g, PyTorch's rule %g",
                     clmad_grad_scaler_get_scale(s), (double)ref.scale);
        cr_assert_eq(clmad_optimizer_steps(opt), taken);
        CHECK_OK(ctx, clmad_tensor_read(tw, w, sizeof w));
        for (int i = 0; i < N; i++)
            cr_assert(fabsf(w[i] - host_w[i]) <= 16 * FLT_EPSILON * fmaxf(fabsf(host_w[i]), 1), "w[%d] %.9g, SGD %.9g",
                      i, w[i], host_w[i]);
        clmad_optimizer_zero_grad(opt);
        clmad_tensor *all[] = {tc, prod, loss, scaled};
        for (size_t i = 0; i < 4; i++)
            clmad_tensor_release(all[i]);
    }
    test_set_case(NULL);
    cr_assert(ref.scale != 1024.0f);
    clmad_optimizer_release(opt);
    clmad_grad_scaler_release(s);
    clmad_tensor_release(tw);
    clmad_context_release(ctx);
}

/* f32 master weights cast to f16 for the forward of y = 1e-8 x: the
 * gradient 1e-8 is below f16's smallest subnormal (2^-24, 6e-8) and
 * rounds to 0 unscaled. With the default scale, 2^16, the f16 loss's own
 * gradient (the scale) is above f16's largest finite value (65504): the
 * first step finds an inf, is skipped, and halves the scale, as PyTorch's
 * would; the second stores 2^15 1e-8 in f16, which comes back to the
 * master weights as 1e-8 within f16's precision. */
static void tiny_step(clmad_context *ctx, clmad_kernel *k, clmad_grad_scaler *s, float *g, int *stepped)
{
    size_t n = 3;
    const float w0[3] = {1, 2, 3};
    clmad_tensor *w, *h, *y, *loss, *grad, *big = NULL;
    clmad_optimizer *opt = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, w0, &w));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(w, 1));
    CHECK_OK(ctx, clmad_cast(ctx, w, CLMAD_F16, &h));
    CHECK_OK(ctx, clmad_broadcast(ctx, k, &h, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    if (s) {
        CHECK_OK(ctx, clmad_grad_scaler_scale(s, loss, &big));
        cr_assert_eq(clmad_tensor_dtype(big), CLMAD_F32, "a 16-bit loss scales in f32");
        CHECK_OK(ctx, clmad_backward(ctx, big, NULL));
        CHECK_OK(ctx, clmad_optimizer_sgd(ctx, &w, 1, 0.0, 0, &opt)); /* lr 0: the gradient stays to be read */
        CHECK_OK(ctx, clmad_grad_scaler_step(s, opt, stepped));
    } else {
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    }
    CHECK_OK(ctx, clmad_tensor_grad(w, &grad));
    CHECK_OK(ctx, clmad_tensor_read(grad, g, 3 * sizeof *g));
    clmad_optimizer_release(opt);
    clmad_tensor *all[] = {w, h, y, loss, grad, big};
    for (size_t i = 0; i < 6; i++)
        clmad_tensor_release(all[i]);
}

Test(grad_scaler, f16_gradients_survive_scaling)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T tiny(T x) { return x * 1e-8f; }", "tiny", 1, 1, &k));
    float g[3];
    int stepped;
    tiny_step(ctx, k, NULL, g, NULL);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(g[i], 0.0f, "unscaled, g[%d] = %g (f16 underflow expected)", i, g[i]);
    clmad_grad_scaler *s;
    CHECK_OK(ctx, clmad_grad_scaler_create(ctx, NULL, &s));
    tiny_step(ctx, k, s, g, &stepped);
    cr_assert(!stepped && isinf(g[0]), "2^16 overflows f16: skipped (g %g)", g[0]);
    cr_assert_eq(clmad_grad_scaler_get_scale(s), 32768.0);
    tiny_step(ctx, k, s, g, &stepped);
    cr_assert(stepped);
    for (int i = 0; i < 3; i++)
        cr_assert(fabsf(g[i] - 1e-8f) <= 1e-8f * 0x1p-10f, "scaled, g[%d] = %g", i, g[i]);
    clmad_grad_scaler_release(s);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

Test(grad_scaler, refusals)
{
    clmad_context *ctx = test_context();
    clmad_grad_scaler_options o;
    clmad_grad_scaler *s = NULL;
    clmad_grad_scaler_options_init(&o);
    o.growth_factor = 1;
    REFUSED(ctx, clmad_grad_scaler_create(ctx, &o, &s), CLMAD_ERR_INVALID_ARGUMENT, "growth_factor");
    clmad_grad_scaler_options_init(&o);
    o.backoff_factor = 1;
    REFUSED(ctx, clmad_grad_scaler_create(ctx, &o, &s), CLMAD_ERR_INVALID_ARGUMENT, "backoff_factor");
    clmad_grad_scaler_options_init(&o);
    o.init_scale = 1e39; /* infinite as an f32 */
    REFUSED(ctx, clmad_grad_scaler_create(ctx, &o, &s), CLMAD_ERR_INVALID_ARGUMENT, "init_scale");
    clmad_grad_scaler_options_init(&o);
    o.growth_interval = 0;
    REFUSED(ctx, clmad_grad_scaler_create(ctx, &o, &s), CLMAD_ERR_INVALID_ARGUMENT, "growth_interval");
    cr_assert_null(s);
    REFUSED(ctx, clmad_grad_scaler_create(ctx, NULL, NULL), CLMAD_ERR_INVALID_ARGUMENT, "out is NULL");
    CHECK_OK(ctx, clmad_grad_scaler_create(ctx, NULL, &s));
    size_t n = 2;
    clmad_tensor *w;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, &n, &w));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(w, 1));
    clmad_optimizer *opt;
    CHECK_OK(ctx, clmad_optimizer_sgd(ctx, &w, 1, 0.1, 0, &opt));
    REFUSED(ctx, clmad_grad_scaler_step(s, opt, NULL), CLMAD_ERR_STATE, "no parameter");
    cr_assert_eq(clmad_grad_scaler_get_scale(s), 65536.0, "a refused step leaves the scale");
    REFUSED(ctx, clmad_grad_scaler_step(s, NULL, NULL), CLMAD_ERR_INVALID_ARGUMENT, "o is NULL");
    cr_assert_eq(clmad_grad_scaler_get_scale(NULL), 0.0);
    clmad_grad_scaler_release(NULL);
    clmad_optimizer_release(opt);
    clmad_tensor_release(w);
    clmad_grad_scaler_release(s);
    clmad_context_release(ctx);
}
