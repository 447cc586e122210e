/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hmlstm_dp.h: the model and task of examples/hmlstm.c (the HM-LSTM cell as
 * one fused broadcast kernel inside an LSTM layer, trained with Adam), cut
 * for data parallelism: every rank draws the same global batch of G rows
 * from the same random stream and keeps the rows [r * G/P, (r + 1) * G/P)
 * of its own, so that the data of a training step does not depend on the
 * number of ranks. Shared by examples/mpi/hmlstm_mpi.c and
 * bench/mpi/bench_mpi.c; see examples/hmlstm.c for the cell and the task.
 *
 * Data layout as in examples/hmlstm.c: x is (steps * rows, DIN), step-major.
 */
#ifndef HMLSTM_DP_H
#define HMLSTM_DP_H

#include <clmad.h>
#include <clmad_mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *DP_CELL_SOURCE =
    "T cell(T z, T zb, T c, T f, T i, T g)\n"
    "{\n"
    "    if (z == 1)  return sigmoid(i) * tanh(g);          /* FLUSH  */\n"
    "    if (zb == 0) return c;                              /* COPY   */\n"
    "    return sigmoid(f) * c + sigmoid(i) * tanh(g);       /* UPDATE */\n"
    "}\n";

/* Adam, one element; lr has both bias corrections folded in (a 0-d tensor). */
static const char *DP_ADAM_SOURCE =
    "void adam(T p, T g, T m, T v, T lr, T *p_out, T *m_out, T *v_out)\n"
    "{\n"
    "    T m2 = m * (real)0.9 + g * (real)0.1;\n"
    "    T v2 = v * (real)0.999 + g * g * (real)0.001;\n"
    "    *p_out = p - lr * m2 / (sqrt(v2) + (real)1e-8);\n"
    "    *m_out = m2;\n"
    "    *v_out = v2;\n"
    "}\n";

static clmad_context *ctx;

/* A failure on one rank ends every rank: exit() alone would leave the
 * others waiting in the next collective call. */
#define CHECK(call)                                                                     \
    do {                                                                                \
        clmad_status st_ = (call);                                                      \
        if (st_ != CLMAD_OK) {                                                          \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,     \
                    clmad_status_string(st_), clmad_last_error(ctx));                   \
            MPI_Abort(MPI_COMM_WORLD, 1);                                               \
        }                                                                               \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift64: one stream for the data (the same on every rank), one for the
 * initial parameters (seeded per rank: rank 0's values reach the others
 * through clmad_mpi_broadcast). */
static double uniform(unsigned long long *s, double lo, double hi)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return lo + (hi - lo) * (double)(*s >> 11) / 9007199254740992.0;
}

static clmad_tensor *tensor_f32(int ndim, const size_t *shape, const float *host)
{
    clmad_tensor *t = NULL;
    CHECK(clmad_tensor_create(ctx, CLMAD_F32, ndim, shape, host, &t));
    return t;
}

static float scalar_of(clmad_tensor *t)
{
    float v = 0;
    CHECK(clmad_tensor_read(t, &v, sizeof v));
    return v;
}

/* Temporaries of one forward pass, released together. */
typedef struct arena {
    clmad_tensor *t[1024];
    int n;
} arena;

static clmad_tensor *keep(arena *a, clmad_tensor *t)
{
    if (a->n == (int)(sizeof a->t / sizeof *a->t)) {
        fprintf(stderr, "arena full\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    a->t[a->n++] = t;
    return t;
}

static void arena_release(arena *a)
{
    for (int k = 0; k < a->n; k++)
        clmad_tensor_release(a->t[k]);
    a->n = 0;
}

/* ---- the data: a global batch, this rank's rows -------------------------------- */

#define MAX_STEPS 64
#define DIN 4 /* v, reset, valid, and a constant 1 (the bias of the gates) */

typedef struct batch {
    size_t steps, rows;                    /* rows: this rank's share */
    clmad_tensor *x;                       /* (steps * rows, DIN) */
    clmad_tensor *z[MAX_STEPS], *zb[MAX_STEPS]; /* (rows, 1) each */
    clmad_tensor *target;                  /* (steps * rows, 1) */
} batch;

/* Draws the global batch of `global` rows (the stream advances alike on
 * every rank) and keeps rows [first, first + rows). With reverse, global
 * row k holds the sequence drawn for row global-1-k: the same data in
 * another order, which changes only the order of the sums over rows (a
 * measure of f32 reduction noise for one process). */
static void batch_make(batch *b, unsigned long long *rng, size_t steps, size_t global, size_t first,
                       size_t rows, int reverse)
{
    memset(b, 0, sizeof *b);
    b->steps = steps, b->rows = rows;
    float *x = calloc(steps * global * DIN, sizeof *x), *y = calloc(steps * global, sizeof *y);
    double *sum = calloc(global, sizeof *sum);
    for (size_t t = 0; t < steps; t++)
        for (size_t d = 0; d < global; d++) { /* d: the row drawn; r: where it goes */
            size_t r = reverse ? global - 1 - d : d;
            double v = uniform(rng, -1, 1);
            int reset = t == 0 || uniform(rng, 0, 1) < 0.15;
            int valid = reset || uniform(rng, 0, 1) < 0.7;
            if (reset)
                sum[r] = 0;
            if (valid)
                sum[r] += v;
            float *xr = x + (t * global + r) * DIN;
            xr[0] = (float)v, xr[1] = (float)reset, xr[2] = (float)valid, xr[3] = 1;
            y[t * global + r] = (float)(0.5 * sum[r]);
        }
    /* This rank's rows, step by step. */
    float *xm = malloc(steps * rows * DIN * sizeof *xm), *ym = malloc(steps * rows * sizeof *ym);
    float *z = malloc(rows * sizeof *z), *zb = malloc(rows * sizeof *zb);
    size_t col[2] = {rows, 1};
    for (size_t t = 0; t < steps; t++) {
        memcpy(xm + t * rows * DIN, x + (t * global + first) * DIN, rows * DIN * sizeof *xm);
        memcpy(ym + t * rows, y + t * global + first, rows * sizeof *ym);
        for (size_t r = 0; r < rows; r++) /* the controls are the flags: z = reset, zb = valid */
            z[r] = xm[(t * rows + r) * DIN + 1], zb[r] = xm[(t * rows + r) * DIN + 2];
        b->z[t] = tensor_f32(2, col, z);
        b->zb[t] = tensor_f32(2, col, zb);
    }
    size_t xs[2] = {steps * rows, DIN}, ys[2] = {steps * rows, 1};
    b->x = tensor_f32(2, xs, xm);
    b->target = tensor_f32(2, ys, ym);
    free(x), free(y), free(sum), free(xm), free(ym), free(z), free(zb);
}

static void batch_free(batch *b)
{
    for (size_t t = 0; t < b->steps; t++) {
        clmad_tensor_release(b->z[t]);
        clmad_tensor_release(b->zb[t]);
    }
    clmad_tensor_release(b->x);
    clmad_tensor_release(b->target);
}

/* ---- the model ---------------------------------------------------------------------- */

enum { P_WX, P_WH, P_WY, P_BY, NPARAM };

typedef struct model {
    size_t hid;
    clmad_tensor *p[NPARAM]; /* leaves requiring a gradient: the list every collective call gets */
    clmad_tensor *adam_m[NPARAM], *adam_v[NPARAM];
    clmad_kernel *cell, *adam;
} model;

static void model_init(model *m, size_t hid, unsigned long long seed)
{
    memset(m, 0, sizeof *m);
    m->hid = hid;
    unsigned long long rng = seed;
    size_t shapes[NPARAM][2] = {{DIN, 4 * hid}, {hid, 4 * hid}, {hid, 1}, {1, 1}};
    for (int j = 0; j < NPARAM; j++) {
        size_t n = shapes[j][0] * shapes[j][1];
        float *h = malloc(n * sizeof *h);
        double scale = j == P_WX ? 0.5 : j == P_BY ? 0 : 1 / sqrt((double)hid);
        for (size_t k = 0; k < n; k++)
            h[k] = (float)uniform(&rng, -scale, scale);
        if (j == P_WX) /* forget-gate bias +1: remember by default */
            for (size_t k = 0; k < hid; k++)
                h[3 * 4 * hid + 3 * hid + k] = 1;
        m->p[j] = tensor_f32(2, shapes[j], h);
        CHECK(clmad_tensor_set_requires_grad(m->p[j], 1));
        CHECK(clmad_tensor_zeros(ctx, CLMAD_F32, 2, shapes[j], &m->adam_m[j]));
        CHECK(clmad_tensor_zeros(ctx, CLMAD_F32, 2, shapes[j], &m->adam_v[j]));
        free(h);
    }
    CHECK(clmad_kernel_create(ctx, DP_CELL_SOURCE, "cell", 6, 1, &m->cell));
    CHECK(clmad_kernel_create(ctx, DP_ADAM_SOURCE, "adam", 5, 3, &m->adam));
}

static void model_free(model *m)
{
    for (int j = 0; j < NPARAM; j++) {
        clmad_tensor_release(m->p[j]);
        clmad_tensor_release(m->adam_m[j]);
        clmad_tensor_release(m->adam_v[j]);
    }
    clmad_kernel_release(m->cell);
    clmad_kernel_release(m->adam);
}

/* The mean squared error over this rank's rows (recorded when recording is
 * on); the caller owns the returned 0-d tensor. */
static clmad_tensor *model_loss(model *m, batch *b)
{
    arena a = {.n = 0};
    size_t rows = b->rows, H = m->hid, hs[2] = {rows, H};
    clmad_tensor *xw, *h, *c, *hseq[MAX_STEPS];
    CHECK(clmad_matmul(ctx, b->x, m->p[P_WX], 0, 0, &xw));
    keep(&a, xw);
    CHECK(clmad_tensor_zeros(ctx, CLMAD_F32, 2, hs, &h));
    keep(&a, h);
    CHECK(clmad_tensor_zeros(ctx, CLMAD_F32, 2, hs, &c));
    keep(&a, c);
    for (size_t t = 0; t < b->steps; t++) {
        clmad_tensor *xt, *hw, *gates, *gate[4], *so, *tc;
        CHECK(clmad_slice(ctx, xw, 0, t * rows, (t + 1) * rows, &xt));
        keep(&a, xt);
        CHECK(clmad_matmul(ctx, h, m->p[P_WH], 0, 0, &hw));
        keep(&a, hw);
        CHECK(clmad_add(ctx, xt, hw, &gates));
        keep(&a, gates);
        for (int k = 0; k < 4; k++) { /* i, g, o, f */
            CHECK(clmad_slice(ctx, gates, 1, (size_t)k * H, (size_t)(k + 1) * H, &gate[k]));
            keep(&a, gate[k]);
        }
        clmad_tensor *in[6] = {b->z[t], b->zb[t], c, gate[3], gate[0], gate[1]};
        CHECK(clmad_broadcast(ctx, m->cell, in, &c));
        keep(&a, c);
        CHECK(clmad_sigmoid(ctx, gate[2], &so));
        keep(&a, so);
        CHECK(clmad_tanh(ctx, c, &tc));
        keep(&a, tc);
        CHECK(clmad_mul(ctx, so, tc, &h));
        hseq[t] = keep(&a, h);
    }
    clmad_tensor *hall, *y, *yb, *d, *d2, *loss;
    CHECK(clmad_concat(ctx, (int)b->steps, hseq, 0, &hall));
    keep(&a, hall);
    CHECK(clmad_matmul(ctx, hall, m->p[P_WY], 0, 0, &y));
    keep(&a, y);
    CHECK(clmad_add(ctx, y, m->p[P_BY], &yb));
    keep(&a, yb);
    CHECK(clmad_sub(ctx, yb, b->target, &d));
    keep(&a, d);
    CHECK(clmad_mul(ctx, d, d, &d2));
    keep(&a, d2);
    CHECK(clmad_mean(ctx, d2, 0, NULL, 0, &loss));
    arena_release(&a);
    return loss;
}

/* One Adam step (t >= 1) from the parameters' gradients, which are the same
 * on every rank after clmad_mpi_allreduce_grads, so that every rank keeps the
 * same parameters. New parameters replace the old ones (the update is a
 * broadcast kernel run with recording off). */
static void adam_step(model *m, int t, double lr)
{
    float lr_t = (float)(lr * sqrt(1 - pow(0.999, t)) / (1 - pow(0.9, t)));
    clmad_tensor *lrt = tensor_f32(0, NULL, &lr_t);
    CHECK(clmad_set_grad_enabled(ctx, 0));
    for (int j = 0; j < NPARAM; j++) {
        clmad_tensor *g = NULL, *out[3];
        CHECK(clmad_tensor_grad(m->p[j], &g));
        if (!g) {
            fprintf(stderr, "no gradient reached parameter %d\n", j);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        clmad_tensor *in[5] = {m->p[j], g, m->adam_m[j], m->adam_v[j], lrt};
        CHECK(clmad_broadcast(ctx, m->adam, in, out));
        clmad_tensor_release(g);
        clmad_tensor_release(m->p[j]);
        clmad_tensor_release(m->adam_m[j]);
        clmad_tensor_release(m->adam_v[j]);
        m->p[j] = out[0], m->adam_m[j] = out[1], m->adam_v[j] = out[2];
        CHECK(clmad_tensor_set_requires_grad(m->p[j], 1));
    }
    CHECK(clmad_set_grad_enabled(ctx, 1));
    clmad_tensor_release(lrt);
}

#endif
