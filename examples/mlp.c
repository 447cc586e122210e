/* SPDX-License-Identifier: Apache-2.0 -- a 2-layer MLP (2 -> 32 tanh -> 2 classes) learns which grid points lie inside a circle:
 * integer labels, Adam, cross-entropy, accuracy on the device, a safetensors checkpoint saved and loaded. Exits 1 on a miss. */
#include <clmad.h>
#include <stdio.h>

#define CK(call) do { if ((call) != CLMAD_OK) { fprintf(stderr, "%s: %s\n", #call, clmad_last_error(ctx)); return 1; } } while (0)
enum { N = 256, H = 32, STEPS = 200 };

static clmad_status forward(clmad_context *ctx, clmad_tensor *x, clmad_tensor **p, clmad_tensor **out)
{                                                   /* tanh(x w1 + b1) w2 + b2; the caller's scope releases the rest */
    clmad_tensor *a, *b, *c, *d;
    clmad_status s = clmad_matmul(ctx, x, p[0], 0, 0, &a);
    s = s ? s : clmad_add(ctx, a, p[1], &b), s = s ? s : clmad_tanh(ctx, b, &c);
    s = s ? s : clmad_matmul(ctx, c, p[2], 0, 0, &d);
    return s ? s : clmad_add(ctx, d, p[3], out);
}

int main(void)
{
    clmad_context *ctx = NULL;
    CK(clmad_context_create(NULL, &ctx));
    float xs[N][2];                                 /* 16 x 16 points in [-1, 1]^2; class 1 inside */
    int64_t ys[N];
    for (int i = 0; i < N; i++)
        xs[i][0] = (float)(i % 16) / 7.5f - 1, xs[i][1] = (float)(i / 16) / 7.5f - 1,
        ys[i] = xs[i][0] * xs[i][0] + xs[i][1] * xs[i][1] < 0.5f;
    size_t xn[2] = {N, 2}, n = N, shapes[4][2] = {{2, H}, {H}, {H, 2}, {2}};
    clmad_tensor *p[4], *q[4], *x, *y, *logits, *loss;
    for (int i = 0; i < 4; i++) {                   /* weights normal (std 1, 0.2), biases 0 */
        CK(i % 2 ? clmad_tensor_zeros(ctx, CLMAD_F32, 1, shapes[i], &p[i])
                 : clmad_tensor_rand_normal(ctx, CLMAD_F32, 2, shapes[i], 0, i ? 0.2 : 1, i + 1, &p[i]));
        CK(clmad_tensor_set_requires_grad(p[i], 1));
    }
    CK(clmad_tensor_create(ctx, CLMAD_F32, 2, xn, xs, &x));
    CK(clmad_tensor_create(ctx, CLMAD_I64, 1, &n, ys, &y));   /* class indices */
    clmad_optimizer *opt;
    CK(clmad_optimizer_adam(ctx, p, 4, 0.05, &opt));
    double first = 0, loss_v = 0, acc = 0, acc_loaded = -1;
    for (int step = 0; step < STEPS; step++) {
        CK(clmad_scope_begin(ctx));                 /* scope_end releases every tensor made here */
        CK(forward(ctx, x, p, &logits)); CK(clmad_cross_entropy(ctx, logits, y, &loss));
        clmad_optimizer_zero_grad(opt);
        CK(clmad_backward(ctx, loss, NULL)); CK(clmad_optimizer_step(opt));
        CK(clmad_tensor_item(loss, &loss_v)); CK(clmad_accuracy(ctx, logits, y, &acc));
        CK(clmad_scope_end(ctx));
        first = step == 0 ? loss_v : first;
        if (step % 50 == 0) printf("step %3d  loss %.5f  accuracy %.3f\n", step, loss_v, acc);
    }
    const char *names[4] = {"w1", "b1", "w2", "b2"}, *file = "mlp_checkpoint.safetensors";
    CK(clmad_save(file, names, p, 4, NULL));        /* a checkpoint, read back into fresh tensors */
    for (int i = 0; i < 4; i++) CK(clmad_tensor_zeros(ctx, CLMAD_F32, 2 - i % 2, shapes[i], &q[i]));
    CK(clmad_load(ctx, file, names, q, 4)); CK(clmad_set_grad_enabled(ctx, 0)); CK(clmad_scope_begin(ctx));
    CK(forward(ctx, x, p, &logits)); CK(clmad_accuracy(ctx, logits, y, &acc));   /* the trained model, */
    CK(forward(ctx, x, q, &logits)); CK(clmad_accuracy(ctx, logits, y, &acc_loaded)); CK(clmad_scope_end(ctx));
    printf("loss %.5f -> %.5f; accuracy %.3f, reloaded %.3f\n", first, loss_v, acc, acc_loaded);
    for (int i = 0; i < 4; i++) clmad_tensor_release(p[i]), clmad_tensor_release(q[i]);
    clmad_optimizer_release(opt), clmad_tensor_release(x), clmad_tensor_release(y), clmad_context_release(ctx), remove(file);
    return loss_v <= 0.1 * first && acc > 0.95 && acc == acc_loaded ? 0 : 1;
}
