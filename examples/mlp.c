/* SPDX-License-Identifier: Apache-2.0 -- a 2-layer MLP (2 -> 32 tanh -> 2 classes) learns which points of a grid
 * lie inside a circle, with Adam and the softmax cross-entropy (the README's training loop); exits 1 unless the loss falls 90%. */
#include <clmad.h>
#include <stdio.h>

#define CK(call) do { if ((call) != CLMAD_OK) { fprintf(stderr, "%s: %s\n", #call, clmad_last_error(ctx)); return 1; } } while (0)
enum { N = 256, H = 32, STEPS = 200 };

int main(void)
{
    clmad_context *ctx = NULL;
    CK(clmad_context_create(NULL, &ctx));
    float xs[N][2], ys[N];                          /* 16 x 16 points in [-1, 1]^2; class 1 inside */
    for (int i = 0; i < N; i++)
        xs[i][0] = (float)(i % 16) / 7.5f - 1, xs[i][1] = (float)(i / 16) / 7.5f - 1,
        ys[i] = xs[i][0] * xs[i][0] + xs[i][1] * xs[i][1] < 0.5f;
    size_t xn[2] = {N, 2}, n = N, w1n[2] = {2, H}, b1n[1] = {H}, w2n[2] = {H, 2}, b2n[1] = {2};
    clmad_tensor *w1, *b1, *w2, *b2, *x, *y;
    CK(clmad_tensor_rand_normal(ctx, CLMAD_F32, 2, w1n, 0, 1, 1, &w1));
    CK(clmad_tensor_zeros(ctx, CLMAD_F32, 1, b1n, &b1));
    CK(clmad_tensor_rand_normal(ctx, CLMAD_F32, 2, w2n, 0, 0.2, 2, &w2));
    CK(clmad_tensor_zeros(ctx, CLMAD_F32, 1, b2n, &b2));
    CK(clmad_tensor_create(ctx, CLMAD_F32, 2, xn, xs, &x));
    CK(clmad_tensor_create(ctx, CLMAD_F32, 1, &n, ys, &y));  /* class indices, as values */
    clmad_tensor *p[6] = {w1, b1, w2, b2, x, y};    /* the parameters, then the data */
    for (int i = 0; i < 4; i++) CK(clmad_tensor_set_requires_grad(p[i], 1));
    clmad_optimizer *opt;
    CK(clmad_optimizer_adam(ctx, p, 4, 0.05, &opt));
    double first = 0, loss_v = 0;
    for (int step = 0; step < STEPS; step++) {
        clmad_tensor *xw, *h, *t, *hw, *logits, *loss;
        CK(clmad_scope_begin(ctx));                 /* scope_end releases every tensor made here */
        CK(clmad_matmul(ctx, x, w1, 0, 0, &xw)); CK(clmad_add(ctx, xw, b1, &h));
        CK(clmad_tanh(ctx, h, &t));
        CK(clmad_matmul(ctx, t, w2, 0, 0, &hw)); CK(clmad_add(ctx, hw, b2, &logits));
        CK(clmad_cross_entropy(ctx, logits, y, &loss));
        clmad_optimizer_zero_grad(opt);
        CK(clmad_backward(ctx, loss, NULL));
        CK(clmad_optimizer_step(opt));
        CK(clmad_tensor_item(loss, &loss_v));
        CK(clmad_scope_end(ctx));
        first = step == 0 ? loss_v : first;
        if (step % 50 == 0) printf("step %3d  loss %.5f\n", step, loss_v);
    }
    printf("loss %.5f -> %.5f: %.1f%% lower\n", first, loss_v, 100 * (1 - loss_v / first));
    clmad_optimizer_release(opt);
    for (int i = 0; i < 6; i++) clmad_tensor_release(p[i]);
    clmad_context_release(ctx);
    return loss_v <= 0.1 * first ? 0 : 1;
}
