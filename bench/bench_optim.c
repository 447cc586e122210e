/* SPDX-License-Identifier: Apache-2.0 */
/* Training steps per second of examples/mlp.c's model (2 -> 32 tanh -> 2,
 * Adam, softmax cross-entropy over 256 points) with the optimizer's step
 * grouped (its 4 parameters in one launch) and with one launch per
 * parameter (clmad__optimizer_launch_per_parameter), in interleaved blocks
 * on one context; medians over the rounds. Each block also times the
 * optimizer's step alone (the queue drained before it, clmad_finish after
 * it), in steps of its own.
 * Usage: bench_optim [rounds [steps per block]]   (defaults 9, 40) */
#include "bench_common.h"
#include "internal.h"

#include <math.h>

enum { N = 256, H = 32 };

typedef struct model {
    clmad_tensor *w1, *b1, *w2, *b2, *x, *y;
    clmad_optimizer *opt;
} model;

static void model_init(clmad_context *ctx, model *m)
{
    static float xs[N][2], ys[N];
    for (int i = 0; i < N; i++) {
        xs[i][0] = (float)(i % 16) / 7.5f - 1, xs[i][1] = (float)(i / 16) / 7.5f - 1;
        ys[i] = xs[i][0] * xs[i][0] + xs[i][1] * xs[i][1] < 0.5f;
    }
    size_t xn[2] = {N, 2}, n = N, w1n[2] = {2, H}, b1n[1] = {H}, w2n[2] = {H, 2}, b2n[1] = {2};
    BENCH_CHECK(ctx, clmad_tensor_rand_normal(ctx, CLMAD_F32, 2, w1n, 0, 1, 1, &m->w1));
    BENCH_CHECK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, b1n, &m->b1));
    BENCH_CHECK(ctx, clmad_tensor_rand_normal(ctx, CLMAD_F32, 2, w2n, 0, 0.2, 2, &m->w2));
    BENCH_CHECK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, b2n, &m->b2));
    BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, xn, xs, &m->x));
    BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, ys, &m->y));
    clmad_tensor *p[4] = {m->w1, m->b1, m->w2, m->b2};
    for (int i = 0; i < 4; i++)
        BENCH_CHECK(ctx, clmad_tensor_set_requires_grad(p[i], 1));
    BENCH_CHECK(ctx, clmad_optimizer_adam(ctx, p, 4, 0.05, &m->opt));
}

/* One training step as examples/mlp.c takes it. With opt_seconds, the
 * queue is drained before the optimizer's step and after it, and the time
 * between is added to *opt_seconds; without, nothing waits but reading the
 * loss, as in examples/mlp.c. */
static void train_step(clmad_context *ctx, model *m, double *opt_seconds)
{
    clmad_tensor *xw, *h, *t, *hw, *logits, *loss;
    BENCH_CHECK(ctx, clmad_scope_begin(ctx));
    BENCH_CHECK(ctx, clmad_matmul(ctx, m->x, m->w1, 0, 0, &xw));
    BENCH_CHECK(ctx, clmad_add(ctx, xw, m->b1, &h));
    BENCH_CHECK(ctx, clmad_tanh(ctx, h, &t));
    BENCH_CHECK(ctx, clmad_matmul(ctx, t, m->w2, 0, 0, &hw));
    BENCH_CHECK(ctx, clmad_add(ctx, hw, m->b2, &logits));
    BENCH_CHECK(ctx, clmad_cross_entropy(ctx, logits, m->y, &loss));
    clmad_optimizer_zero_grad(m->opt);
    BENCH_CHECK(ctx, clmad_backward(ctx, loss, NULL));
    if (opt_seconds) {
        BENCH_CHECK(ctx, clmad_finish(ctx));
        double t0 = bench_now();
        BENCH_CHECK(ctx, clmad_optimizer_step(m->opt));
        BENCH_CHECK(ctx, clmad_finish(ctx));
        *opt_seconds += bench_now() - t0;
    } else {
        BENCH_CHECK(ctx, clmad_optimizer_step(m->opt));
    }
    double v;
    BENCH_CHECK(ctx, clmad_tensor_item(loss, &v));
    BENCH_CHECK(ctx, clmad_scope_end(ctx));
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 9, steps = argc > 2 ? atoi(argv[2]) : 40;
    if (rounds < 1 || rounds > 1000 || steps < 1) {
        fprintf(stderr, "usage: %s [rounds (1..1000) [steps per block]]\n", argv[0]);
        return 2;
    }
    clmad_context *ctx = NULL;
    BENCH_CHECK(ctx, clmad_context_create(NULL, &ctx));
    model m;
    model_init(ctx, &m);
    double warm = 0;
    for (int s = 0; s < 5; s++) /* compile everything, fill the pool */
        train_step(ctx, &m, &warm);
    double *rate[2], *opt_us[2];
    for (int mode = 0; mode < 2; mode++) {
        rate[mode] = calloc((size_t)rounds, sizeof(double));
        opt_us[mode] = calloc((size_t)rounds, sizeof(double));
    }
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < 2; j++) {
            int mode = (r + j) % 2; /* 0 grouped, 1 per parameter; alternate which goes first */
            clmad__optimizer_launch_per_parameter(m.opt, mode);
            double opt_s = 0, t0 = bench_now();
            for (int s = 0; s < steps; s++)
                train_step(ctx, &m, NULL);
            rate[mode][r] = steps / (bench_now() - t0);
            for (int s = 0; s < steps; s++)
                train_step(ctx, &m, &opt_s);
            opt_us[mode][r] = 1e6 * opt_s / steps;
        }
    char name[256] = "";
    clmad_device_info info;
    if (clmad_context_device(ctx, &info) == CLMAD_OK)
        snprintf(name, sizeof name, "%s", info.name);
    printf("bench_optim: examples/mlp.c's model, Adam over 4 f32 parameters, %d rounds x %d steps, device \"%s\"\n",
           rounds, steps, name);
    const char *label[2] = {"grouped (1 launch) ", "per parameter (4)  "};
    for (int mode = 0; mode < 2; mode++)
        printf("  %s  median %8.1f steps/s   optimizer step median %8.1f us\n", label[mode],
               bench_median(rate[mode], rounds), bench_median(opt_us[mode], rounds));
    for (int mode = 0; mode < 2; mode++) {
        free(rate[mode]);
        free(opt_us[mode]);
    }
    clmad_optimizer_release(m.opt);
    clmad_tensor *all[6] = {m.w1, m.b1, m.w2, m.b2, m.x, m.y};
    for (int i = 0; i < 6; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
    return 0;
}
