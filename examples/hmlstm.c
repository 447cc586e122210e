/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hmlstm: an LSTM layer whose cell update is the HM-LSTM cell, one fused
 * broadcast kernel with data-dependent branches, trained with Adam.
 *
 * The cell (DESIGN.md section 4) takes two controls per sequence and step:
 *   FLUSH  (z = 1):            c' = sigmoid(i) tanh(g)        start afresh
 *   COPY   (z = 0, zb = 0):    c' = c                         skip this step
 *   UPDATE (otherwise):        c' = sigmoid(f) c + sigmoid(i) tanh(g)
 * It is differentiated in forward mode inside one kernel (4 partials: c, f,
 * i, g; the controls are inactive), inside a reverse-mode tape that holds the
 * matrix products, slices, concatenation and the loss.
 *
 * The task: sequences of STEPS values v_t in [-1, 1] with a reset flag r_t and
 * a valid flag m_t. The target at step t is half the sum of the valid values
 * since the last reset (the reset step included). The controls of the cell
 * are the flags themselves: z = r (FLUSH on reset), zb = m (COPY on an
 * invalid step), so the branches of the kernel do what the task needs.
 * The layer: gates = [x_t, 1] Wx + h Wh; (i, g, o, f) = slices of gates;
 * c = cell(z, zb, c, f, i, g); h = sigmoid(o) tanh(c); y = h Wy + by;
 * loss = mean (y - target)^2 over steps and sequences.
 *
 * The program
 *  1. checks the gradient of every parameter tensor against central finite
 *     differences, in f64 on a small instance (exit 1 above 1e-5 relative),
 *     for the fused cell and for the same cell built from builtins;
 *  2. trains with Adam, whose update rule is itself a broadcast kernel run
 *     with recording off, and prints the loss on a held-out batch before and
 *     after (exit 1 unless it fell by at least 30%). The model is in f64
 *     where the device has it (f32 otherwise): one precision for the check
 *     and the training means half the programs to compile on a first run,
 *     and CLBlast's GEMM alone takes about 40 s per precision to compile on
 *     POCL;
 *  3. times one forward + backward of the fused cell against the same cell
 *     built from builtin operations (clmad_sigmoid, clmad_tanh, clmad_mul,
 *     clmad_add, clmad_where with masks from clmad_compare), and one training
 *     step with either.
 * Usage: example_hmlstm [--iters N] [--cell-rows R] [--cell-cols C]
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <clmad.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the kernels ---------------------------------------------------------- */

static const char *CELL_SOURCE =
    "T cell(T z, T zb, T c, T f, T i, T g)\n"
    "{\n"
    "    if (z == 1)  return sigmoid(i) * tanh(g);          /* FLUSH  */\n"
    "    if (zb == 0) return c;                              /* COPY   */\n"
    "    return sigmoid(f) * c + sigmoid(i) * tanh(g);       /* UPDATE */\n"
    "}\n";

/* Adam (Kingma and Ba), one element: lr is the step size with both bias
 * corrections folded in, lr * sqrt(1 - b2^t) / (1 - b1^t), a 0-d tensor. */
static const char *ADAM_SOURCE =
    "void adam(T p, T g, T m, T v, T lr, T *p_out, T *m_out, T *v_out)\n"
    "{\n"
    "    T m2 = m * (real)0.9 + g * (real)0.1;\n"
    "    T v2 = v * (real)0.999 + g * g * (real)0.001;\n"
    "    *p_out = p - lr * m2 / (sqrt(v2) + (real)1e-8);\n"
    "    *m_out = m2;\n"
    "    *v_out = v2;\n"
    "}\n";

/* ---- small helpers ---------------------------------------------------------- */

static clmad_context *ctx;

#define CHECK(call)                                                                     \
    do {                                                                                \
        clmad_status st_ = (call);                                                      \
        if (st_ != CLMAD_OK) {                                                          \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,     \
                    clmad_status_string(st_), clmad_last_error(ctx));                   \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(double lo, double hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

/* A tensor of dtype dt from host doubles. */
static clmad_tensor *tensor_from(clmad_dtype dt, int ndim, const size_t *shape, const double *host)
{
    size_t n = 1;
    for (int k = 0; k < ndim; k++)
        n *= shape[k];
    clmad_tensor *t = NULL;
    if (dt == CLMAD_F64) {
        CHECK(clmad_tensor_create(ctx, dt, ndim, shape, host, &t));
    } else {
        float *f = malloc((n ? n : 1) * sizeof *f);
        for (size_t k = 0; k < n; k++)
            f[k] = (float)host[k];
        CHECK(clmad_tensor_create(ctx, dt, ndim, shape, f, &t));
        free(f);
    }
    return t;
}

/* The elements of t as a new array of doubles. */
static double *tensor_to_host(clmad_tensor *t)
{
    size_t n = clmad_tensor_numel(t);
    double *d = malloc((n ? n : 1) * sizeof *d);
    if (clmad_tensor_dtype(t) == CLMAD_F64) {
        CHECK(clmad_tensor_read(t, d, n * sizeof *d));
    } else {
        float *f = malloc((n ? n : 1) * sizeof *f);
        CHECK(clmad_tensor_read(t, f, n * sizeof *f));
        for (size_t k = 0; k < n; k++)
            d[k] = f[k];
        free(f);
    }
    return d;
}

static double scalar_of(clmad_tensor *t)
{
    double *d = tensor_to_host(t), v = d[0];
    free(d);
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
        exit(1);
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

/* ---- the data ---------------------------------------------------------------- */

#define MAX_STEPS 64
#define DIN 4 /* v, r, m, and a constant 1 (the bias of the gates) */

typedef struct batch {
    size_t steps, rows;
    clmad_tensor *x;                       /* (steps * rows, DIN): step-major */
    clmad_tensor *z[MAX_STEPS], *zb[MAX_STEPS]; /* (rows, 1) each */
    clmad_tensor *target;                  /* (steps * rows, 1) */
    long branch[3];                        /* elements of rows taking FLUSH, COPY, UPDATE */
} batch;

static void batch_make(batch *b, clmad_dtype dt, size_t steps, size_t rows)
{
    memset(b, 0, sizeof *b);
    b->steps = steps, b->rows = rows;
    double *x = calloc(steps * rows * DIN, sizeof *x), *y = calloc(steps * rows, sizeof *y);
    double *z = calloc(rows, sizeof *z), *zb = calloc(rows, sizeof *zb), *sum = calloc(rows, sizeof *sum);
    size_t col[2] = {rows, 1};
    for (size_t t = 0; t < steps; t++) {
        for (size_t r = 0; r < rows; r++) {
            double v = uniform(-1, 1);
            int reset = t == 0 || uniform(0, 1) < 0.15;
            int valid = reset || uniform(0, 1) < 0.7;
            if (reset)
                sum[r] = 0;
            if (valid)
                sum[r] += v;
            double *xr = x + (t * rows + r) * DIN;
            xr[0] = v, xr[1] = reset, xr[2] = valid, xr[3] = 1;
            y[t * rows + r] = 0.5 * sum[r];
            z[r] = reset, zb[r] = valid;
            b->branch[reset ? 0 : !valid ? 1 : 2]++;
        }
        b->z[t] = tensor_from(dt, 2, col, z);
        b->zb[t] = tensor_from(dt, 2, col, zb);
    }
    size_t xs[2] = {steps * rows, DIN}, ys[2] = {steps * rows, 1};
    b->x = tensor_from(dt, 2, xs, x);
    b->target = tensor_from(dt, 2, ys, y);
    free(x), free(y), free(z), free(zb), free(sum);
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

/* ---- the model ---------------------------------------------------------------- */

enum { P_WX, P_WH, P_WY, P_BY, NPARAM };
static const char *PARAM_NAMES[NPARAM] = {"Wx", "Wh", "Wy", "by"};

typedef struct model {
    clmad_dtype dt;
    size_t hid;
    clmad_tensor *p[NPARAM];              /* leaves requiring a gradient */
    clmad_tensor *adam_m[NPARAM], *adam_v[NPARAM];
    clmad_kernel *cell, *adam;
    clmad_tensor *one, *zero;             /* 0-d constants for the unfused cell's masks */
} model;

static void model_init(model *m, clmad_dtype dt, size_t hid)
{
    memset(m, 0, sizeof *m);
    m->dt = dt, m->hid = hid;
    size_t shapes[NPARAM][2] = {{DIN, 4 * hid}, {hid, 4 * hid}, {hid, 1}, {1, 1}};
    for (int j = 0; j < NPARAM; j++) {
        size_t n = shapes[j][0] * shapes[j][1];
        double *h = malloc(n * sizeof *h);
        double scale = j == P_WX ? 0.5 : j == P_BY ? 0 : 1 / sqrt((double)hid);
        for (size_t k = 0; k < n; k++)
            h[k] = uniform(-scale, scale);
        if (j == P_WX) /* forget-gate bias +1: remember by default */
            for (size_t k = 0; k < hid; k++)
                h[3 * 4 * hid + 3 * hid + k] = 1; /* row of the constant 1, block f */
        m->p[j] = tensor_from(dt, 2, shapes[j], h);
        CHECK(clmad_tensor_set_requires_grad(m->p[j], 1));
        CHECK(clmad_tensor_zeros(ctx, dt, 2, shapes[j], &m->adam_m[j]));
        CHECK(clmad_tensor_zeros(ctx, dt, 2, shapes[j], &m->adam_v[j]));
        free(h);
    }
    CHECK(clmad_kernel_create(ctx, CELL_SOURCE, "cell", 6, 1, &m->cell));
    CHECK(clmad_kernel_create(ctx, ADAM_SOURCE, "adam", 5, 3, &m->adam));
    CHECK(clmad_tensor_fill(ctx, dt, 0, NULL, 1, &m->one));
    CHECK(clmad_tensor_fill(ctx, dt, 0, NULL, 0, &m->zero));
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
    clmad_tensor_release(m->one);
    clmad_tensor_release(m->zero);
}

/* The cell from builtins: both branches computed, selected with where. */
static clmad_tensor *unfused_cell(arena *a, model *m, clmad_tensor *z, clmad_tensor *zb, clmad_tensor *c,
                                  clmad_tensor *f, clmad_tensor *i, clmad_tensor *g)
{
    clmad_tensor *si, *tg, *flush, *sf, *fc, *update, *mz, *mzb, *inner, *out;
    CHECK(clmad_sigmoid(ctx, i, &si));
    keep(a, si);
    CHECK(clmad_tanh(ctx, g, &tg));
    keep(a, tg);
    CHECK(clmad_mul(ctx, si, tg, &flush));
    keep(a, flush);
    CHECK(clmad_sigmoid(ctx, f, &sf));
    keep(a, sf);
    CHECK(clmad_mul(ctx, sf, c, &fc));
    keep(a, fc);
    CHECK(clmad_add(ctx, fc, flush, &update));
    keep(a, update);
    CHECK(clmad_compare(ctx, CLMAD_EQ, z, m->one, &mz));
    keep(a, mz);
    CHECK(clmad_compare(ctx, CLMAD_EQ, zb, m->zero, &mzb));
    keep(a, mzb);
    CHECK(clmad_where(ctx, mzb, c, update, &inner));
    keep(a, inner);
    CHECK(clmad_where(ctx, mz, flush, inner, &out));
    return keep(a, out);
}

/* The loss of the model on batch b (recorded on the tape when recording is
 * on); the caller owns the returned 0-d tensor. */
static clmad_tensor *model_loss(model *m, batch *b, int fused)
{
    arena a = {.n = 0};
    size_t rows = b->rows, H = m->hid, hs[2] = {rows, H};
    clmad_tensor *xw, *h, *c, *hseq[MAX_STEPS];
    CHECK(clmad_matmul(ctx, b->x, m->p[P_WX], 0, 0, &xw)); /* every step's input part at once */
    keep(&a, xw);
    CHECK(clmad_tensor_zeros(ctx, m->dt, 2, hs, &h));
    keep(&a, h);
    CHECK(clmad_tensor_zeros(ctx, m->dt, 2, hs, &c));
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
        if (fused) {
            clmad_tensor *in[6] = {b->z[t], b->zb[t], c, gate[3], gate[0], gate[1]};
            CHECK(clmad_broadcast(ctx, m->cell, in, &c));
            keep(&a, c);
        } else {
            c = unfused_cell(&a, m, b->z[t], b->zb[t], c, gate[3], gate[0], gate[1]);
        }
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

/* The loss with recording off. */
static double model_eval(model *m, batch *b, int fused)
{
    CHECK(clmad_set_grad_enabled(ctx, 0));
    clmad_tensor *loss = model_loss(m, b, fused);
    CHECK(clmad_set_grad_enabled(ctx, 1));
    double v = scalar_of(loss);
    clmad_tensor_release(loss);
    return v;
}

/* One Adam step (step number t >= 1) on every parameter, from the gradients
 * of the last backward. The update is a broadcast kernel; with recording off
 * it adds nothing to the tape. Tensors are values: the new parameters
 * replace the old ones (the buffer pool recycles the memory). */
static void adam_step(model *m, int t, double lr)
{
    double lr_t = lr * sqrt(1 - pow(0.999, t)) / (1 - pow(0.9, t));
    clmad_tensor *lrt = tensor_from(m->dt, 0, NULL, &lr_t);
    CHECK(clmad_set_grad_enabled(ctx, 0));
    for (int j = 0; j < NPARAM; j++) {
        clmad_tensor *g = NULL, *out[3];
        CHECK(clmad_tensor_grad(m->p[j], &g));
        if (!g)
            continue; /* no gradient reached this parameter */
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

/* Forward, backward and the optimizer; returns the training loss. */
static double train_step(model *m, batch *b, int fused, int t, double lr)
{
    clmad_tensor *loss = model_loss(m, b, fused);
    CHECK(clmad_backward(ctx, loss, NULL));
    double v = scalar_of(loss);
    clmad_tensor_release(loss);
    adam_step(m, t, lr);
    return v;
}

/* ---- 1. gradient check ---------------------------------------------------------- */

/* Gradients of every parameter against central differences at a few
 * elements each (f64, small instance). Returns the worst relative error. */
static double gradient_check(int fused)
{
    model m;
    batch b;
    model_init(&m, CLMAD_F64, 5);
    batch_make(&b, CLMAD_F64, 6, 4);
    if (!b.branch[0] || !b.branch[1] || !b.branch[2]) {
        fprintf(stderr, "gradient check: the batch does not exercise all three branches\n");
        exit(1);
    }
    clmad_tensor *loss = model_loss(&m, &b, fused);
    CHECK(clmad_backward(ctx, loss, NULL));
    clmad_tensor_release(loss);

    double worst = 0;
    const double step = 1e-5;
    for (int j = 0; j < NPARAM; j++) {
        clmad_tensor *g = NULL;
        CHECK(clmad_tensor_grad(m.p[j], &g));
        if (!g) {
            fprintf(stderr, "gradient check: no gradient reached %s\n", PARAM_NAMES[j]);
            exit(1);
        }
        double *grad = tensor_to_host(g), *val = tensor_to_host(m.p[j]);
        size_t n = clmad_tensor_numel(m.p[j]), bytes = n * sizeof(double);
        double param_worst = 0;
        int checked = 0;
        /* Elements spread over the tensor (all four gate blocks of Wx, Wh). */
        for (size_t e = 0; e < n && checked < 6; e += n / 6 + 1, checked++) {
            double keep_v = val[e], lp, lm;
            val[e] = keep_v + step;
            CHECK(clmad_tensor_write(m.p[j], val, bytes));
            lp = model_eval(&m, &b, fused);
            val[e] = keep_v - step;
            CHECK(clmad_tensor_write(m.p[j], val, bytes));
            lm = model_eval(&m, &b, fused);
            val[e] = keep_v;
            CHECK(clmad_tensor_write(m.p[j], val, bytes));
            double fd = (lp - lm) / (2 * step);
            double den = fmax(fmax(fabs(fd), fabs(grad[e])), 1e-4);
            double rel = fabs(fd - grad[e]) / den;
            if (rel > param_worst)
                param_worst = rel;
        }
        printf("    %-2s %-9s %d elements, worst relative error %.2e\n", PARAM_NAMES[j],
               fused ? "(fused)" : "(unfused)", checked, param_worst);
        if (param_worst > worst)
            worst = param_worst;
        free(grad), free(val);
        clmad_tensor_release(g);
    }
    batch_free(&b);
    model_free(&m);
    return worst;
}

/* ---- 3. fused vs unfused cell ----------------------------------------------------- */

typedef struct cell_bench {
    clmad_tensor *z, *zb, *x[4], *w; /* x: c, f, i, g */
} cell_bench;

/* One forward + backward of loss = sum(cell * w); returns seconds. */
static double cell_fwd_bwd(model *m, cell_bench *s, int fused)
{
    arena a = {.n = 0};
    CHECK(clmad_finish(ctx));
    double t0 = now();
    clmad_tensor *y, *yw, *loss;
    if (fused) {
        clmad_tensor *in[6] = {s->z, s->zb, s->x[0], s->x[1], s->x[2], s->x[3]};
        CHECK(clmad_broadcast(ctx, m->cell, in, &y));
        keep(&a, y);
    } else {
        y = unfused_cell(&a, m, s->z, s->zb, s->x[0], s->x[1], s->x[2], s->x[3]);
    }
    CHECK(clmad_mul(ctx, y, s->w, &yw));
    keep(&a, yw);
    CHECK(clmad_sum(ctx, yw, 0, NULL, 0, &loss));
    keep(&a, loss);
    CHECK(clmad_backward(ctx, loss, NULL));
    CHECK(clmad_finish(ctx));
    double dt = now() - t0;
    arena_release(&a);
    return dt;
}

static int cmp_double(const void *p, const void *q)
{
    double x = *(const double *)p, y = *(const double *)q;
    return (x > y) - (x < y);
}

static double median_time(model *m, cell_bench *s, int fused, int reps)
{
    double t[16];
    cell_fwd_bwd(m, s, fused); /* warm-up: compiles the kernels' variants */
    for (int r = 0; r < reps; r++)
        t[r] = cell_fwd_bwd(m, s, fused);
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    return t[reps / 2];
}

/* Times both forms of the cell on rows x cols f32 elements and checks that
 * they give the same gradients. Returns the largest gradient difference. */
static double fused_vs_unfused(clmad_kernel *cell_kernel, size_t rows, size_t cols)
{
    model cm = {.dt = CLMAD_F32, .cell = cell_kernel}, *m = &cm; /* the f32 constants of unfused_cell */
    CHECK(clmad_tensor_fill(ctx, CLMAD_F32, 0, NULL, 1, &cm.one));
    CHECK(clmad_tensor_fill(ctx, CLMAD_F32, 0, NULL, 0, &cm.zero));
    cell_bench s;
    size_t full[2] = {rows, cols}, col[2] = {rows, 1}, n = rows * cols;
    double *h = malloc(n * sizeof *h);
    for (int k = 0; k < 4; k++) {
        for (size_t e = 0; e < n; e++)
            h[e] = uniform(-2, 2);
        s.x[k] = tensor_from(CLMAD_F32, 2, full, h);
        CHECK(clmad_tensor_set_requires_grad(s.x[k], 1));
    }
    for (size_t e = 0; e < n; e++)
        h[e] = uniform(-1, 1);
    s.w = tensor_from(CLMAD_F32, 2, full, h);
    for (size_t r = 0; r < rows; r++)
        h[r] = uniform(0, 1) < 1.0 / 3;
    s.z = tensor_from(CLMAD_F32, 2, col, h);
    for (size_t r = 0; r < rows; r++)
        h[r] = uniform(0, 1) < 0.5;
    s.zb = tensor_from(CLMAD_F32, 2, col, h);
    free(h);

    /* Gradients of both forms, compared. */
    double *grads[2][4];
    for (int fused = 0; fused < 2; fused++) {
        cell_fwd_bwd(m, &s, fused);
        for (int k = 0; k < 4; k++) {
            clmad_tensor *g;
            CHECK(clmad_tensor_grad(s.x[k], &g));
            grads[fused][k] = tensor_to_host(g);
            clmad_tensor_release(g);
            clmad_tensor_zero_grad(s.x[k]);
        }
    }
    double diff = 0;
    for (int k = 0; k < 4; k++) {
        for (size_t e = 0; e < n; e++)
            diff = fmax(diff, fabs(grads[0][k][e] - grads[1][k][e]));
        free(grads[0][k]), free(grads[1][k]);
    }

    const int reps = 5;
    double tf = median_time(m, &s, 1, reps);
    CHECK(clmad_set_partials_policy(ctx, CLMAD_PARTIALS_RECOMPUTE));
    double tr = median_time(m, &s, 1, reps);
    CHECK(clmad_set_partials_policy(ctx, CLMAD_PARTIALS_AUTO));
    double tu = median_time(m, &s, 0, reps);
    printf("  cell forward+backward, %zu x %zu f32, median of %d:\n", rows, cols, reps);
    printf("    fused, 1 broadcast kernel (partials policy AUTO)  %8.2f ms\n", 1e3 * tf);
    printf("    fused, partials recomputed in backward            %8.2f ms\n", 1e3 * tr);
    printf("    unfused, 10 builtins with where/compare           %8.2f ms\n", 1e3 * tu);
    printf("    unfused / fused                                   %8.2f x\n", tu / tf);
    printf("    largest gradient difference fused vs unfused      %8.1e\n", diff);
    for (int k = 0; k < 4; k++) {
        clmad_tensor_zero_grad(s.x[k]);
        clmad_tensor_release(s.x[k]);
    }
    clmad_tensor_release(s.w);
    clmad_tensor_release(s.z);
    clmad_tensor_release(s.zb);
    clmad_tensor_release(cm.one);
    clmad_tensor_release(cm.zero);
    return diff;
}

/* ---- main ------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    int iters = 300;
    size_t cell_rows = 512, cell_cols = 1024;
    for (int k = 1; k + 1 < argc; k += 2) {
        if (!strcmp(argv[k], "--iters"))
            iters = atoi(argv[k + 1]);
        else if (!strcmp(argv[k], "--cell-rows"))
            cell_rows = (size_t)atol(argv[k + 1]);
        else if (!strcmp(argv[k], "--cell-cols"))
            cell_cols = (size_t)atol(argv[k + 1]);
        else {
            fprintf(stderr, "usage: %s [--iters N] [--cell-rows R] [--cell-cols C]\n", argv[0]);
            return 2;
        }
    }
    if (iters < 1 || cell_rows < 1 || cell_cols < 1) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    double t_start = now();
    if (clmad_context_create(NULL, &ctx) != CLMAD_OK) {
        fprintf(stderr, "no context: %s\n", clmad_last_error(NULL));
        return 1;
    }
    clmad_device_info dev;
    CHECK(clmad_context_device(ctx, &dev));
    printf("hmlstm on %s\n", dev.name);
    int status = 0;

    /* 1. Gradient check in f64. */
    printf("\n1. gradient check: f64, 6 steps x 4 sequences, hidden 5, central differences\n");
    if (!dev.fp64) {
        printf("  skipped: the device has no fp64\n");
    } else {
        double worst = gradient_check(1);
        worst = fmax(worst, gradient_check(0));
        printf("  worst relative error %.2e (limit 1e-5): %s\n", worst, worst <= 1e-5 ? "ok" : "FAILED");
        if (!(worst <= 1e-5))
            status = 1;
    }

    /* 2. Training, in f64 where the device has it. */
    clmad_dtype dt = dev.fp64 ? CLMAD_F64 : CLMAD_F32;
    const size_t steps = 12, rows = 32, hid = 32;
    const double lr = 0.01;
    printf("\n2. training: %s, %zu steps x %zu sequences, hidden %zu, Adam lr %g, %d iterations\n",
           dt == CLMAD_F64 ? "f64" : "f32", steps, rows, hid, lr, iters);
    model m;
    batch held_out;
    model_init(&m, dt, hid);
    batch_make(&held_out, dt, steps, rows);
    double first = model_eval(&m, &held_out, 1);
    printf("  held-out loss before: %.5f\n", first);
    double t0 = now(), train_loss = 0;
    for (int it = 1; it <= iters; it++) {
        batch b;
        batch_make(&b, dt, steps, rows);
        train_loss = train_step(&m, &b, 1, it, lr);
        batch_free(&b);
        if (it == 1 || it % 50 == 0 || it == iters)
            printf("  iteration %4d  training loss %.5f\n", it, train_loss);
    }
    double t_train = now() - t0;
    double last = model_eval(&m, &held_out, 1);
    double drop = (first - last) / first;
    printf("  held-out loss after:  %.5f (first %.5f, last %.5f, relative drop %.1f%%, need >= 30%%): %s\n",
           last, first, last, 100 * drop, drop >= 0.3 ? "ok" : "FAILED");
    printf("  %.1f ms per training iteration (%d iterations in %.1f s)\n", 1e3 * t_train / iters, iters,
           t_train);
    if (!(drop >= 0.3))
        status = 1;

    /* 3. Fused vs unfused. */
    printf("\n3. fused vs unfused\n");
    double diff = fused_vs_unfused(m.cell, cell_rows, cell_cols);
    if (!(diff <= 1e-5)) {
        printf("  FAILED: the two forms disagree\n");
        status = 1;
    }
    double tt[2];
    for (int fused = 0; fused < 2; fused++) {
        batch b;
        batch_make(&b, dt, steps, rows);
        train_step(&m, &b, fused, iters + 1, lr); /* warm-up */
        double t1 = now();
        const int n = 5;
        for (int k = 0; k < n; k++)
            train_step(&m, &b, fused, iters + 2 + k, lr);
        tt[fused] = (now() - t1) / n;
        batch_free(&b);
    }
    printf("  training iteration (%zu steps x %zu x %zu): fused %.2f ms, unfused %.2f ms (%.2f x)\n", steps,
           rows, hid, 1e3 * tt[1], 1e3 * tt[0], tt[0] / tt[1]);

    clmad_stats stats;
    CHECK(clmad_context_stats(ctx, &stats));
    printf("\nclmad's OpenCL programs: %llu compiled, %llu loaded from the disk cache (a first run\n"
           "on a device compiles them, later runs load them)\n",
           (unsigned long long)stats.programs_compiled, (unsigned long long)stats.programs_from_disk);
    batch_free(&held_out);
    model_free(&m);
    clmad_context_release(ctx);
    printf("\ntotal %.1f s: %s\n", now() - t_start, status ? "FAILED" : "ok");
    return status;
}
