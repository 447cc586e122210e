/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clmad_hvp's cost against one gradient, side by side in one run: the time
 * of forward + clmad_hvp over the time of forward + clmad_backward, on an
 * MLP (matmul, bias add, tanh, matmul, squared error, mean) and an HM-LSTM
 * cell update (three matmuls feeding the user broadcast with branches),
 * f32. Medians of REPS runs after warm-up. Usage: bench_hvp [reps]
 */
#include "bench_common.h"

#include <math.h>

typedef struct model {
    const char *name;
    int n;
    clmad_tensor *p[4], *v[4];
    clmad_tensor *x, *y, *z, *zb;
    clmad_kernel *cell;
} model;

static clmad_tensor *fill(clmad_context *ctx, int ndim, const size_t *shape, double scale, uint64_t seed)
{
    clmad_tensor *t;
    BENCH_CHECK(ctx, clmad_tensor_rand_normal(ctx, CLMAD_F32, ndim, shape, 0, scale, seed, &t));
    return t;
}

static void mlp_loss(clmad_context *ctx, model *m, clmad_tensor **loss)
{
    clmad_tensor *a, *b, *h, *o, *q, *d, *s;
    BENCH_CHECK(ctx, clmad_matmul(ctx, m->x, m->p[0], 0, 0, &a));
    BENCH_CHECK(ctx, clmad_add(ctx, a, m->p[1], &b));
    BENCH_CHECK(ctx, clmad_tanh(ctx, b, &h));
    BENCH_CHECK(ctx, clmad_matmul(ctx, h, m->p[2], 0, 0, &o));
    BENCH_CHECK(ctx, clmad_add(ctx, o, m->p[3], &q));
    BENCH_CHECK(ctx, clmad_sub(ctx, q, m->y, &d));
    BENCH_CHECK(ctx, clmad_mul(ctx, d, d, &s));
    BENCH_CHECK(ctx, clmad_mean(ctx, s, 0, NULL, 0, loss));
    clmad_tensor *all[] = {a, b, h, o, q, d, s};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
}

static const char *CELL = "T cell(T z, T zb, T c, T f, T i, T g)\n"
                          "{\n"
                          "    if (ad_val(z) == 1) return ad_mul(ad_sigmoid(i), ad_tanh(g));\n"
                          "    if (ad_val(zb) == 0) return c;\n"
                          "    return ad_add(ad_mul(ad_sigmoid(f), c), ad_mul(ad_sigmoid(i), ad_tanh(g)));\n"
                          "}\n";

static void cell_loss(clmad_context *ctx, model *m, clmad_tensor **loss)
{
    clmad_tensor *f, *i, *g, *c, *sq;
    BENCH_CHECK(ctx, clmad_matmul(ctx, m->x, m->p[0], 0, 0, &f));
    BENCH_CHECK(ctx, clmad_matmul(ctx, m->x, m->p[1], 0, 0, &i));
    BENCH_CHECK(ctx, clmad_matmul(ctx, m->x, m->p[2], 0, 0, &g));
    clmad_tensor *in[6] = {m->z, m->zb, m->p[3], f, i, g};
    BENCH_CHECK(ctx, clmad_broadcast(ctx, m->cell, in, &c));
    BENCH_CHECK(ctx, clmad_mul(ctx, c, c, &sq));
    BENCH_CHECK(ctx, clmad_sum(ctx, sq, 0, NULL, 0, loss));
    clmad_tensor *all[] = {f, i, g, c, sq};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++)
        clmad_tensor_release(all[j]);
}

/* Median seconds of forward + backward (hvp = 0) or forward + clmad_hvp. */
static double time_once(clmad_context *ctx, model *m, int hvp)
{
    const double t0 = bench_now();
    clmad_tensor *loss, *hv[4];
    if (m->cell)
        cell_loss(ctx, m, &loss);
    else
        mlp_loss(ctx, m, &loss);
    if (hvp) {
        BENCH_CHECK(ctx, clmad_hvp(ctx, loss, m->p, m->n, m->v, hv));
        clmad_tape_clear(ctx);
    } else {
        BENCH_CHECK(ctx, clmad_backward(ctx, loss, NULL));
    }
    BENCH_CHECK(ctx, clmad_finish(ctx));
    const double t = bench_now() - t0;
    if (hvp)
        for (int k = 0; k < m->n; k++)
            clmad_tensor_release(hv[k]);
    for (int k = 0; k < m->n; k++)
        clmad_tensor_zero_grad(m->p[k]);
    clmad_tensor_release(loss);
    return t;
}

static void run(clmad_context *ctx, model *m, int reps)
{
    double tg[64], th[64];
    for (int w = 0; w < 2; w++) {
        time_once(ctx, m, 0);
        time_once(ctx, m, 1);
    }
    for (int r = 0; r < reps; r++) { /* interleaved: both see the same machine */
        tg[r] = time_once(ctx, m, 0);
        th[r] = time_once(ctx, m, 1);
    }
    const double g = bench_median(tg, reps), h = bench_median(th, reps);
    printf("%-14s gradient %8.3f ms   hvp %8.3f ms   hvp / gradient %.2f\n", m->name, 1e3 * g, 1e3 * h, h / g);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 9;
    if (reps < 1 || reps > 64)
        reps = 9;
    clmad_context *ctx;
    BENCH_CHECK(NULL, clmad_context_create(NULL, &ctx));
    clmad_device_info info;
    BENCH_CHECK(ctx, clmad_context_device(ctx, &info));
    printf("device: %s, f32, median of %d\n", info.name, reps);

    enum { B = 256, I = 64, H = 256, O = 10 };
    model mlp = {.name = "MLP", .n = 4};
    const size_t w1[2] = {I, H}, b1[1] = {H}, w2[2] = {H, O}, b2[1] = {O}, xs[2] = {B, I}, ys[2] = {B, O};
    const size_t *shapes[4] = {w1, b1, w2, b2};
    const int nd[4] = {2, 1, 2, 1};
    for (int k = 0; k < 4; k++) {
        mlp.p[k] = fill(ctx, nd[k], shapes[k], 0.1, 1 + (uint64_t)k);
        mlp.v[k] = fill(ctx, nd[k], shapes[k], 1.0, 11 + (uint64_t)k);
        BENCH_CHECK(ctx, clmad_tensor_set_requires_grad(mlp.p[k], 1));
    }
    mlp.x = fill(ctx, 2, xs, 1.0, 21);
    mlp.y = fill(ctx, 2, ys, 1.0, 22);
    run(ctx, &mlp, reps);

    enum { CB = 1024, CH = 256 };
    model cell = {.name = "HM-LSTM cell", .n = 4};
    const size_t w[2] = {CH, CH}, c[2] = {1, CH}, x[2] = {CB, CH}, col[2] = {CB, 1};
    for (int k = 0; k < 4; k++) {
        cell.p[k] = fill(ctx, 2, k < 3 ? w : c, 0.1, 31 + (uint64_t)k);
        cell.v[k] = fill(ctx, 2, k < 3 ? w : c, 1.0, 41 + (uint64_t)k);
        BENCH_CHECK(ctx, clmad_tensor_set_requires_grad(cell.p[k], 1));
    }
    cell.x = fill(ctx, 2, x, 1.0, 51);
    float *zs = malloc(CB * sizeof *zs), *zbs = malloc(CB * sizeof *zbs);
    for (int r = 0; r < CB; r++) {
        zs[r] = r % 3 == 0;
        zbs[r] = r % 3 == 1 ? 0.0f : 1.0f;
    }
    BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, col, zs, &cell.z));
    BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, col, zbs, &cell.zb));
    free(zs);
    free(zbs);
    BENCH_CHECK(ctx, clmad_kernel_create(ctx, CELL, "cell", 6, 1, &cell.cell));
    run(ctx, &cell, reps);

    model *ms[2] = {&mlp, &cell};
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 4; k++) {
            clmad_tensor_release(ms[i]->p[k]);
            clmad_tensor_release(ms[i]->v[k]);
        }
        clmad_tensor_release(ms[i]->x);
        clmad_tensor_release(ms[i]->y);
        clmad_tensor_release(ms[i]->z);
        clmad_tensor_release(ms[i]->zb);
    }
    clmad_kernel_release(cell.cell);
    clmad_context_release(ctx);
    return 0;
}
