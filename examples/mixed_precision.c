/* SPDX-License-Identifier: Apache-2.0 -- mixed-precision training: the MLP of mlp.c (2 -> 32 tanh -> 2 classes) trained
 * three times from the same start, in f32, and with bf16 and f16 forwards from f32 master weights (Adam on the masters,
 * each step's weights and inputs cast to 16 bits, the gradients back through the casts, f16 with a dynamic loss scaler).
 * Prints the three loss curves side by side; exits 1 unless every 16-bit loss stays within 0.03 of f32's along the way
 * and its final loss within 5% of f32's. */
#include <clmad.h>
#include <math.h>
#include <stdio.h>

#define CK(call) do { if ((call) != CLMAD_OK) { fprintf(stderr, "%s: %s\n", #call, clmad_last_error(ctx)); return 1; } } while (0)
enum { N = 256, H = 32, STEPS = 200, EVERY = 25 }; /* mlp.c's schedule */
static const clmad_dtype DTYPES[3] = {CLMAD_F32, CLMAD_BF16, CLMAD_F16};

/* tanh(x w1 + b1) w2 + b2 in dtype: the f32 masters cast (recorded: their gradients come back widened). */
static clmad_status forward(clmad_context *ctx, clmad_dtype dtype, clmad_tensor *x, clmad_tensor **p, clmad_tensor **out)
{                                                   /* the caller's scope releases the intermediates */
    clmad_tensor *w[4], *x16, *a, *b, *c, *d;
    clmad_status s = clmad_cast(ctx, x, dtype, &x16);
    for (int i = 0; i < 4; i++)
        s = s ? s : clmad_cast(ctx, p[i], dtype, &w[i]);
    s = s ? s : clmad_matmul(ctx, x16, w[0], 0, 0, &a);
    s = s ? s : clmad_add(ctx, a, w[1], &b), s = s ? s : clmad_tanh(ctx, b, &c);
    s = s ? s : clmad_matmul(ctx, c, w[2], 0, 0, &d);
    return s ? s : clmad_add(ctx, d, w[3], out);
}

int main(void)
{
    clmad_context *ctx = NULL;
    CK(clmad_context_create(NULL, &ctx));
    float xs[N][2];                                 /* 16 x 16 points in [-1, 1]^2; class 1 inside the circle */
    int64_t ys[N];
    for (int i = 0; i < N; i++)
        xs[i][0] = (float)(i % 16) / 7.5f - 1, xs[i][1] = (float)(i / 16) / 7.5f - 1,
        ys[i] = xs[i][0] * xs[i][0] + xs[i][1] * xs[i][1] < 0.5f;
    size_t xn[2] = {N, 2}, n = N, shapes[4][2] = {{2, H}, {H}, {H, 2}, {2}};
    clmad_tensor *x, *y;
    CK(clmad_tensor_create(ctx, CLMAD_F32, 2, xn, xs, &x));
    CK(clmad_tensor_create(ctx, CLMAD_I64, 1, &n, ys, &y));
    double curve[3][STEPS / EVERY + 1], final[3];
    int skipped[3] = {0, 0, 0};
    for (int run = 0; run < 3; run++) {
        clmad_tensor *p[4], *logits, *loss, *scaled;
        for (int i = 0; i < 4; i++) {               /* the same start each run: f32 masters */
            CK(i % 2 ? clmad_tensor_zeros(ctx, CLMAD_F32, 1, shapes[i], &p[i])
                     : clmad_tensor_rand_normal(ctx, CLMAD_F32, 2, shapes[i], 0, i ? 0.2 : 1, i + 1, &p[i]));
            CK(clmad_tensor_set_requires_grad(p[i], 1));
        }
        clmad_optimizer *opt;
        CK(clmad_optimizer_adam(ctx, p, 4, 0.05, &opt));
        clmad_grad_scaler *scaler = NULL;           /* f16's narrow range needs one; bf16 has f32's */
        if (DTYPES[run] == CLMAD_F16)
            CK(clmad_grad_scaler_create(ctx, NULL, &scaler));
        for (int step = 0; step <= STEPS; step++) {
            CK(clmad_scope_begin(ctx));
            CK(forward(ctx, DTYPES[run], x, p, &logits));
            CK(clmad_cross_entropy(ctx, logits, y, &loss));   /* in f32, rounded to the logits' dtype */
            double v;
            CK(clmad_tensor_item(loss, &v));
            if (step % EVERY == 0)
                curve[run][step / EVERY] = v;
            final[run] = v;
            if (step < STEPS) {
                clmad_optimizer_zero_grad(opt);
                int stepped = 1;
                if (scaler) {
                    CK(clmad_grad_scaler_scale(scaler, loss, &scaled));
                    CK(clmad_backward(ctx, scaled, NULL));
                    CK(clmad_grad_scaler_step(scaler, opt, &stepped));
                } else {
                    CK(clmad_backward(ctx, loss, NULL));
                    CK(clmad_optimizer_step(opt));
                }
                skipped[run] += !stepped;
            }
            CK(clmad_scope_end(ctx));
        }
        clmad_grad_scaler_release(scaler);
        clmad_optimizer_release(opt);
        for (int i = 0; i < 4; i++)
            clmad_tensor_release(p[i]);
    }
    int ok = 1;
    printf("step   f32       bf16      f16\n");
    for (int k = 0; k <= STEPS / EVERY; k++) {
        printf("%4d   %.5f   %.5f   %.5f\n", k * EVERY, curve[0][k], curve[1][k], curve[2][k]);
        ok &= fabs(curve[1][k] - curve[0][k]) <= 0.03 && fabs(curve[2][k] - curve[0][k]) <= 0.03;
    }
    printf("final  %.5f   %.5f (%+.1f%%)   %.5f (%+.1f%%); f16 steps skipped by the loss scaler: %d\n", final[0],
           final[1], 100 * (final[1] / final[0] - 1), final[2], 100 * (final[2] / final[0] - 1), skipped[2]);
    ok &= fabs(final[1] - final[0]) <= 0.05 * final[0] && fabs(final[2] - final[0]) <= 0.05 * final[0];
    ok &= final[0] < 0.1 * curve[0][0];
    clmad_tensor_release(x), clmad_tensor_release(y), clmad_context_release(ctx);
    return ok ? 0 : 1;
}
