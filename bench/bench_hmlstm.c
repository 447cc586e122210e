/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_hmlstm: the paper's experiment. Forward + backward of
 * loss = sum(cell(z, zb, c, f, i, g) * w) (clmad_dot) with c, f, i, g dims x dims f32
 * requiring gradients and the controls z, zb of shape (1, dims), inactive.
 * Variants, side by side in one run on one device:
 *   store      fused mixed mode, partials stored in the forward pass
 *   recompute  fused mixed mode, partials recomputed in backward
 *   summed     the same loss written with the weight inside the kernel,
 *              sum(cell_w(z, zb, c, f, i, g, w)) (clmad_sum), partials
 *              stored: the backward's adjoint is exactly 1, so the stored
 *              partials are the gradients and backward launches no kernel
 *   natural    the loss as most users write it, sum(mul(cell(...), w)), STORE
 *   mean       mean(mul(cell(...), w)), STORE (with fusion, the natural
 *              forms and store run as one loss kernel: docs/fusion.md)
 *   unfused    the same function as a chain of builtins with where (pure reverse mode)
 *   hand       a hand-written forward kernel and a hand-written backward kernel
 *   primal     the primal forward of the cell alone
 *   copy       clmad's contiguous copy kernel over dims x dims (the device's
 *              bandwidth): a flat kernel, one vector access of the tuning
 *              table's width per work-item, as slices and accumulations run
 *   copy4      a copy kernel with vload4/vstore4 (four elements per work-item)
 *   copybuf    clEnqueueCopyBuffer over the same buffers (the driver's copy)
 *   chain      two user kernels in a row, sum(out(cell(...), w)) with
 *              out(c, o) = o * tanh(c), STORE (with fusion, one loss kernel
 *              with out as a user stage: docs/fusion.md)
 *   plus       natural plus a regulariser, sum(mul(cell(...), w)) +
 *              0.001 * dot(c, c), STORE (with fusion, the add hands
 *              backward's seed on and the loss kernel's gradients are used)
 *   mse        the squared error written by hand, mean(d * d) with
 *              d = sub(cell(...), w), STORE (with fusion one loss kernel, a
 *              sub and a square stage)
 *   lanes1     natural with one work-item per partial sum of the loss kernel
 *              (a tuning file's loss_lanes 1), where natural has as many as
 *              fill the device (GPUs); where sums go by ranges (CPUs)
 *              lanes are not used and it is natural again
 * Controls "random" (branches mixed among neighbours) and "uniform" (each
 * control value repeated over 32 consecutive elements).
 * Usage: bench_hmlstm [--dims 512,1024,2048] [--reps N] [--out folder]
 * Writes <out>/<device>.hmlstm.json and .csv, with the kernels each variant
 * launches and the bytes they move per run (clmad_context_stats; "passes" =
 * bytes / (N * 4), N-element f32 arrays read or written); progress on stderr.
 */
#include "bench_common.h"
#include "hmlstm_cell.h"
#include "internal.h"

#include <math.h>

/* The loss's weight inside the cell: sum(cell_w(...)) = sum(cell(...) * w). */
static const char *CELL_W_SOURCE =
    "T cell_w(T z, T zb, T c, T f, T i, T g, T w)\n"
    "{\n"
    "    if (ad_val(z) == 1)  return ad_mul(ad_mul(ad_sigmoid(i), ad_tanh(g)), w);\n"
    "    if (ad_val(zb) == 0) return ad_mul(c, w);\n"
    "    return ad_mul(ad_add(ad_mul(ad_sigmoid(f), c), ad_mul(ad_sigmoid(i), ad_tanh(g))), w);\n"
    "}\n";

/* A second user kernel after the cell (bench variant chain). */
static const char *OUT_SOURCE = "T out(T c, T o) { return ad_mul(o, ad_tanh(c)); }\n";

/* The hand-written pair walks the elements as the generated kernels do
 * (HAND_ITEMS from clmad__items_per_work_item: a vectorised run of elements
 * per work-item on POCL, the column of a run's first element reused, as
 * runs stay in a row: dims must be a multiple of HAND_ITEMS; one element
 * per work-item elsewhere), so that
 * hand vs fused compares the arithmetic and the pipeline, not the loop. */
static const char *HAND_SOURCE =
    "float sig(float x) { return 1.0f / (1.0f + exp(-x)); }\n"
    "#if HAND_ITEMS > 1\n"
    "#define FOR_EACH_ELEMENT(e)                                                            \\\n"
    "    const ulong first = get_global_id(0) * HAND_ITEMS, last = min(first + HAND_ITEMS, n); \\\n"
    "    const ulong col0 = first % cols;                                               \\\n"
    "    _Pragma(\"clang loop vectorize(assume_safety) vectorize_width(16) interleave(disable)\") \\\n"
    "    for (ulong e = first; e < last; e++)\n"
    "#define COLUMN(e) (col0 + ((e) - first)) /* dims % HAND_ITEMS == 0: runs stay in a row */\n"
    "#else\n"
    "#define FOR_EACH_ELEMENT(e) const ulong e = get_global_id(0); if (e < n)\n"
    "#define COLUMN(e) ((e) % cols)\n"
    "#endif\n"
    "#pragma clang diagnostic ignored \"-Wpass-failed\"\n"
    "__kernel void hand_fwd(ulong n, ulong cols, __global const float *z, __global const float *zb,\n"
    "    __global const float *c, __global const float *f, __global const float *i,\n"
    "    __global const float *g, __global float *y)\n"
    "{\n"
    "    FOR_EACH_ELEMENT(e) {\n"
    "        const ulong col = COLUMN(e);\n"
    "        if (z[col] == 1.0f) y[e] = sig(i[e]) * tanh(g[e]);\n"
    "        else if (zb[col] == 0.0f) y[e] = c[e];\n"
    "        else y[e] = sig(f[e]) * c[e] + sig(i[e]) * tanh(g[e]);\n"
    "    }\n"
    "}\n"
    "__kernel void hand_bwd(ulong n, ulong cols, __global const float *z, __global const float *zb,\n"
    "    __global const float *c, __global const float *f, __global const float *i,\n"
    "    __global const float *g, __global const float *adj, __global float *gc,\n"
    "    __global float *gf, __global float *gi, __global float *gg)\n"
    "{\n"
    "    FOR_EACH_ELEMENT(e) {\n"
    "        const ulong col = COLUMN(e);\n"
    "        float a = adj[e];\n"
    "        if (z[col] == 1.0f) {\n"
    "            float si = sig(i[e]), tg = tanh(g[e]);\n"
    "            gc[e] = 0.0f; gf[e] = 0.0f; gi[e] = a * si * (1.0f - si) * tg; gg[e] = a * si * (1.0f - tg * tg);\n"
    "        } else if (zb[col] == 0.0f) {\n"
    "            gc[e] = a; gf[e] = 0.0f; gi[e] = 0.0f; gg[e] = 0.0f;\n"
    "        } else {\n"
    "            float sf = sig(f[e]), si = sig(i[e]), tg = tanh(g[e]);\n"
    "            gc[e] = a * sf; gf[e] = a * sf * (1.0f - sf) * c[e];\n"
    "            gi[e] = a * si * (1.0f - si) * tg; gg[e] = a * si * (1.0f - tg * tg);\n"
    "        }\n"
    "    }\n"
    "}\n";

enum { STORE, RECOMPUTE, SUMMED, NATURAL, MEAN, UNFUSED, HAND, PRIMAL, COPY, COPY4, COPYBUF, CHAIN, PLUS, MSE,
       LANES1, NV };
static const char *NAMES[NV] = {"store", "recompute", "summed", "natural", "mean", "unfused", "hand", "primal",
                                "copy",  "copy4",     "copybuf", "chain",  "plus", "mse",     "lanes1"};

typedef struct setup {
    clmad_context *ctx;
    size_t dims;
    clmad_tensor *z, *zb, *x[4], *w, *one, *zero;
    clmad_kernel *cell, *cell_w, *out;
    cl_kernel hand_fwd, hand_bwd, copy4;
    clmad_tensor *hy, *hg[4], *cdst;
} setup;

static unsigned long long rng = 0x2545F4914F6CDD1Dull;
static double uniform01(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static cl_kernel build(clmad_context *ctx, const char *src, const char *name)
{
    cl_program p;
    BENCH_CHECK(ctx, clmad__program_get(ctx, src, "", &p, NULL));
    cl_int err;
    cl_kernel k = clCreateKernel(p, name, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clCreateKernel(%s): %d\n", name, err);
        exit(1);
    }
    return k;
}

static void make_controls(setup *s, int uniform_controls)
{
    size_t d = s->dims, row[2] = {1, d};
    float *zh = malloc(d * sizeof *zh), *zbh = malloc(d * sizeof *zbh);
    float zr = 0, zbr = 0;
    for (size_t k = 0; k < d; k++) {
        if (!uniform_controls || k % 32 == 0) {
            zr = uniform01() < 1.0 / 3 ? 1.0f : 0.0f;
            zbr = uniform01() < 0.5 ? 1.0f : 0.0f;
        }
        zh[k] = zr;
        zbh[k] = zbr;
    }
    clmad_tensor_release(s->z);
    clmad_tensor_release(s->zb);
    BENCH_CHECK(s->ctx, clmad_tensor_create(s->ctx, CLMAD_F32, 2, row, zh, &s->z));
    BENCH_CHECK(s->ctx, clmad_tensor_create(s->ctx, CLMAD_F32, 2, row, zbh, &s->zb));
    free(zh);
    free(zbh);
}

/* A hand-written kernel over n elements, HAND_ITEMS per work-item. */
static void run_hand(clmad_context *ctx, cl_kernel k, size_t n, uint64_t bytes)
{
    size_t items = (size_t)clmad__items_per_work_item(ctx);
    BENCH_CHECK(ctx, clmad__enqueue_1d(ctx, k, (n + items - 1) / items, bytes));
}

static clmad_tensor *unfused_cell(setup *s)
{
    clmad_context *ctx = s->ctx;
    clmad_tensor *c = s->x[0], *f = s->x[1], *i = s->x[2], *g = s->x[3];
    clmad_tensor *si, *tg, *flush, *sf, *fc, *update, *mz, *mzb, *inner, *out;
    BENCH_CHECK(ctx, clmad_sigmoid(ctx, i, &si));
    BENCH_CHECK(ctx, clmad_tanh(ctx, g, &tg));
    BENCH_CHECK(ctx, clmad_mul(ctx, si, tg, &flush));
    BENCH_CHECK(ctx, clmad_sigmoid(ctx, f, &sf));
    BENCH_CHECK(ctx, clmad_mul(ctx, sf, c, &fc));
    BENCH_CHECK(ctx, clmad_add(ctx, fc, flush, &update));
    BENCH_CHECK(ctx, clmad_compare(ctx, CLMAD_EQ, s->z, s->one, &mz));
    BENCH_CHECK(ctx, clmad_compare(ctx, CLMAD_EQ, s->zb, s->zero, &mzb));
    BENCH_CHECK(ctx, clmad_where(ctx, mzb, c, update, &inner));
    BENCH_CHECK(ctx, clmad_where(ctx, mz, flush, inner, &out));
    clmad_tensor *tmp[] = {si, tg, flush, sf, fc, update, mz, mzb, inner};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++)
        clmad_tensor_release(tmp[k]);
    return out;
}

/* The loss of the fused cell, for comparison with the peers (bench/peers):
 * dot(cell(...), w), or (summed) sum(cell_w(..., w)). */
static double fused_loss(setup *s, int summed)
{
    clmad_context *ctx = s->ctx;
    clmad_tensor *in[7] = {s->z, s->zb, s->x[0], s->x[1], s->x[2], s->x[3], s->w}, *y, *loss;
    float value = 0;
    BENCH_CHECK(ctx, clmad_set_grad_enabled(ctx, 0));
    BENCH_CHECK(ctx, clmad_broadcast(ctx, summed ? s->cell_w : s->cell, in, &y));
    BENCH_CHECK(ctx, summed ? clmad_sum(ctx, y, 0, NULL, 0, &loss) : clmad_dot(ctx, y, s->w, &loss));
    BENCH_CHECK(ctx, clmad_tensor_read(loss, &value, sizeof value));
    BENCH_CHECK(ctx, clmad_set_grad_enabled(ctx, 1));
    clmad_tensor_release(y);
    clmad_tensor_release(loss);
    return value;
}

/* Kernels launched and bytes moved by the last run of each variant. */
static uint64_t g_kernels[NV], g_bytes[NV];

/* One timed forward + backward (or forward / copy) of variant v. */
static double run_variant(setup *s, int v)
{
    clmad_context *ctx = s->ctx;
    size_t n = s->dims * s->dims;
    clmad_stats s0, s1;
    clmad_finish(ctx);
    clmad_context_stats(ctx, &s0);
    double t0 = bench_now();
    if (v == STORE || v == RECOMPUTE || v == UNFUSED) {
        /* The policy of the cell (store, recompute) or of the chain of
         * builtins (unfused: STORE, reverse mode keeping what it needs). */
        BENCH_CHECK(ctx, clmad_set_partials_policy(ctx, v == RECOMPUTE ? CLMAD_PARTIALS_RECOMPUTE
                                                                       : CLMAD_PARTIALS_STORE));
        clmad_tensor *y, *loss;
        if (v == UNFUSED) {
            y = unfused_cell(s);
        } else {
            clmad_tensor *in[6] = {s->z, s->zb, s->x[0], s->x[1], s->x[2], s->x[3]};
            BENCH_CHECK(ctx, clmad_broadcast(ctx, s->cell, in, &y));
        }
        BENCH_CHECK(ctx, clmad_dot(ctx, y, s->w, &loss));
        BENCH_CHECK(ctx, clmad_backward(ctx, loss, NULL));
        clmad_tensor_release(y);
        clmad_tensor_release(loss);
    } else if (v == NATURAL || v == MEAN || v == PLUS || v == LANES1) {
        BENCH_CHECK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_STORE));
        const int lanes = clmad__loss_lanes(ctx, v == LANES1 ? 1 : -1);
        clmad_tensor *in[6] = {s->z, s->zb, s->x[0], s->x[1], s->x[2], s->x[3]}, *y, *yw, *loss;
        clmad_tensor *reg = NULL, *scaled = NULL, *total = NULL;
        BENCH_CHECK(ctx, clmad_broadcast(ctx, s->cell, in, &y));
        BENCH_CHECK(ctx, clmad_mul(ctx, y, s->w, &yw));
        BENCH_CHECK(ctx, v == MEAN ? clmad_mean(ctx, yw, 0, NULL, 0, &loss) : clmad_sum(ctx, yw, 0, NULL, 0, &loss));
        if (v == PLUS) {
            BENCH_CHECK(ctx, clmad_dot(ctx, s->x[0], s->x[0], &reg));
            BENCH_CHECK(ctx, clmad_mul_scalar(ctx, reg, 0.001, &scaled));
            BENCH_CHECK(ctx, clmad_add(ctx, loss, scaled, &total));
        }
        BENCH_CHECK(ctx, clmad_backward(ctx, total ? total : loss, NULL));
        clmad__loss_lanes(ctx, lanes);
        clmad_tensor *done[] = {yw, y, loss, reg, scaled, total};
        for (int i = 0; i < 6; i++)
            clmad_tensor_release(done[i]);
    } else if (v == MSE) {
        BENCH_CHECK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_STORE));
        clmad_tensor *in[6] = {s->z, s->zb, s->x[0], s->x[1], s->x[2], s->x[3]}, *y, *d, *dd, *loss;
        BENCH_CHECK(ctx, clmad_broadcast(ctx, s->cell, in, &y));
        BENCH_CHECK(ctx, clmad_sub(ctx, y, s->w, &d));
        BENCH_CHECK(ctx, clmad_mul(ctx, d, d, &dd));
        BENCH_CHECK(ctx, clmad_mean(ctx, dd, 0, NULL, 0, &loss));
        BENCH_CHECK(ctx, clmad_backward(ctx, loss, NULL));
        clmad_tensor *done[] = {dd, d, y, loss};
        for (int i = 0; i < 4; i++)
            clmad_tensor_release(done[i]);
    } else if (v == CHAIN) {
        BENCH_CHECK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_STORE));
        clmad_tensor *in[6] = {s->z, s->zb, s->x[0], s->x[1], s->x[2], s->x[3]}, *y, *h, *loss;
        BENCH_CHECK(ctx, clmad_broadcast(ctx, s->cell, in, &y));
        clmad_tensor *out_in[2] = {y, s->w};
        BENCH_CHECK(ctx, clmad_broadcast(ctx, s->out, out_in, &h));
        BENCH_CHECK(ctx, clmad_sum(ctx, h, 0, NULL, 0, &loss));
        BENCH_CHECK(ctx, clmad_backward(ctx, loss, NULL));
        clmad_tensor_release(h);
        clmad_tensor_release(y);
        clmad_tensor_release(loss);
    } else if (v == SUMMED) {
        BENCH_CHECK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_STORE));
        clmad_tensor *in[7] = {s->z, s->zb, s->x[0], s->x[1], s->x[2], s->x[3], s->w}, *y, *loss;
        BENCH_CHECK(ctx, clmad_broadcast(ctx, s->cell_w, in, &y));
        BENCH_CHECK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
        BENCH_CHECK(ctx, clmad_backward(ctx, loss, NULL));
        clmad_tensor_release(y);
        clmad_tensor_release(loss);
    } else if (v == HAND) {
        /* Forward kernel, the same loss, and the backward kernel with the
         * adjoint of the cell output, which is w for this loss. */
        run_hand(ctx, s->hand_fwd, n, 5 * 4 * (uint64_t)n);
        clmad_tensor *loss;
        BENCH_CHECK(ctx, clmad_set_grad_enabled(ctx, 0));
        BENCH_CHECK(ctx, clmad_dot(ctx, s->hy, s->w, &loss));
        BENCH_CHECK(ctx, clmad_set_grad_enabled(ctx, 1));
        run_hand(ctx, s->hand_bwd, n, 9 * 4 * (uint64_t)n);
        clmad_tensor_release(loss);
    } else if (v == PRIMAL) {
        BENCH_CHECK(ctx, clmad_set_grad_enabled(ctx, 0));
        clmad_tensor *in[6] = {s->z, s->zb, s->x[0], s->x[1], s->x[2], s->x[3]}, *y;
        BENCH_CHECK(ctx, clmad_broadcast(ctx, s->cell, in, &y));
        BENCH_CHECK(ctx, clmad_set_grad_enabled(ctx, 1));
        clmad_tensor_release(y);
    } else if (v == COPY) {
        const size_t one = 1, all = n;
        BENCH_CHECK(ctx, clmad__strided_copy(ctx, s->cdst, 0, &one, s->x[0], 0, &one, 1, &all, 1.0, 0));
    } else if (v == COPY4) {
        BENCH_CHECK(ctx, clmad__enqueue_1d(ctx, s->copy4, n / 4 + n % 4, 2 * 4 * (uint64_t)n));
    } else {
        cl_command_queue q;
        BENCH_CHECK(ctx, clmad_context_get_cl(ctx, NULL, NULL, &q));
        if (clEnqueueCopyBuffer(q, bench_mem(s->x[0]), bench_mem(s->cdst), 0, 0, 4 * n, 0, NULL, NULL) != CL_SUCCESS) {
            fprintf(stderr, "bench_hmlstm: clEnqueueCopyBuffer failed\n");
            exit(1);
        }
    }
    clmad_finish(ctx);
    double dt = bench_now() - t0;
    clmad_context_stats(ctx, &s1);
    g_kernels[v] = s1.kernels_launched - s0.kernels_launched;
    g_bytes[v] = s1.bytes_moved - s0.bytes_moved;
    for (int k = 0; k < 4; k++)
        clmad_tensor_zero_grad(s->x[k]);
    return dt;
}

static void set_hand_args(setup *s)
{
    cl_ulong n = s->dims * s->dims, cols = s->dims;
    cl_mem fwd[] = {bench_mem(s->z),    bench_mem(s->zb),   bench_mem(s->x[0]), bench_mem(s->x[1]),
                    bench_mem(s->x[2]), bench_mem(s->x[3]), bench_mem(s->hy)};
    clSetKernelArg(s->hand_fwd, 0, sizeof n, &n);
    clSetKernelArg(s->hand_fwd, 1, sizeof cols, &cols);
    for (cl_uint k = 0; k < 7; k++)
        clSetKernelArg(s->hand_fwd, 2 + k, sizeof(cl_mem), &fwd[k]);
    cl_mem bwd[] = {bench_mem(s->z),     bench_mem(s->zb),    bench_mem(s->x[0]),  bench_mem(s->x[1]),
                    bench_mem(s->x[2]),  bench_mem(s->x[3]),  bench_mem(s->w),     bench_mem(s->hg[0]),
                    bench_mem(s->hg[1]), bench_mem(s->hg[2]), bench_mem(s->hg[3])};
    clSetKernelArg(s->hand_bwd, 0, sizeof n, &n);
    clSetKernelArg(s->hand_bwd, 1, sizeof cols, &cols);
    for (cl_uint k = 0; k < 11; k++)
        clSetKernelArg(s->hand_bwd, 2 + k, sizeof(cl_mem), &bwd[k]);
    bench_arg_tensor(s->copy4, 0, s->x[0]);
    bench_arg_tensor(s->copy4, 1, s->cdst);
    clSetKernelArg(s->copy4, 2, sizeof n, &n);
}

/* Minimal bytes per element each variant must move (f32). Forward + backward:
 * read c f i g, write y; loss reads y w; backward reads w(adjoint) c f i g
 * and writes 4 gradients: 16 floats. Summed: read c f i g w, write y; the
 * sum reads y; write 4 gradients (in the forward pass): 11 floats. */
static double min_bytes(int v)
{
    switch (v) {
    case PRIMAL: return 4.0 * 5;
    case COPY:
    case COPY4:
    case COPYBUF: return 4.0 * 2;
    case SUMMED: return 4.0 * 11;
    default: return 4.0 * 16;
    }
}

int main(int argc, char **argv)
{
    size_t dims_list[8] = {512, 1024, 2048};
    int n_dims = 3, reps = 10;
    const char *outdir = "bench/results";
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--dims") && a + 1 < argc) {
            n_dims = 0;
            for (char *tok = strtok(argv[++a], ","); tok && n_dims < 8; tok = strtok(NULL, ","))
                dims_list[n_dims++] = (size_t)atol(tok);
        } else if (!strcmp(argv[a], "--reps") && a + 1 < argc) {
            reps = atoi(argv[++a]);
        } else if (!strcmp(argv[a], "--out") && a + 1 < argc) {
            outdir = argv[++a];
        } else {
            fprintf(stderr, "usage: %s [--dims 512,1024,2048] [--reps N] [--out folder]\n", argv[0]);
            return 2;
        }
    }
    setup s = {0};
    BENCH_CHECK(NULL, clmad_context_create(NULL, &s.ctx));
    clmad_context *ctx = s.ctx;
    clmad_device_info dev;
    clmad_context_device(ctx, &dev);
    char slug[256], path[1024];
    bench_slug(dev.name, slug, sizeof slug);
    BENCH_CHECK(ctx, clmad_kernel_create(ctx, CELL_SOURCE, "cell_update", 6, 1, &s.cell));
    BENCH_CHECK(ctx, clmad_kernel_create(ctx, CELL_W_SOURCE, "cell_w", 7, 1, &s.cell_w));
    BENCH_CHECK(ctx, clmad_kernel_create(ctx, OUT_SOURCE, "out", 2, 1, &s.out));
    char hand_src[8192];
    snprintf(hand_src, sizeof hand_src, "#define HAND_ITEMS %d\n%s", clmad__items_per_work_item(ctx),
             HAND_SOURCE);
    s.hand_fwd = build(ctx, hand_src, "hand_fwd");
    s.hand_bwd = build(ctx, hand_src, "hand_bwd");
    char copy_src[4096];
    snprintf(copy_src, sizeof copy_src, "typedef float real;\n%s", clmad__embedded_source("copy.cl"));
    s.copy4 = build(ctx, copy_src, "clmad_copy_vec4");
    BENCH_CHECK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 0, NULL, 1.0, &s.one));
    BENCH_CHECK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 0, NULL, &s.zero));

    snprintf(path, sizeof path, "%s/%s.hmlstm.csv", outdir, slug);
    FILE *csv = fopen(path, "w");
    snprintf(path, sizeof path, "%s/%s.hmlstm.json", outdir, slug);
    FILE *json = fopen(path, "w");
    if (!csv || !json) {
        fprintf(stderr, "bench_hmlstm: cannot write into %s\n", outdir);
        return 1;
    }
    fprintf(csv, "device,dims,controls,variant,median_ms,min_gbps,kernels,bytes,passes\n");
    fprintf(json, "{\n  \"benchmark\": \"hmlstm\",\n  \"device\": \"%s\",\n  \"platform\": \"%s\",\n"
                  "  \"driver\": \"%s\",\n  \"repetitions\": %d,\n  \"runs\": [",
            dev.name, dev.platform_name, dev.driver_version, reps);
    printf("HM-LSTM cell update, forward + backward, f32, %s (%s), median of %d\n", dev.name,
           dev.platform_name, reps);
    int first_run = 1;
    for (int di = 0; di < n_dims; di++) {
        s.dims = dims_list[di];
        if (s.dims % (size_t)clmad__items_per_work_item(ctx)) {
            fprintf(stderr, "bench_hmlstm: dims %zu: must be a multiple of %d on this device\n", s.dims,
                    clmad__items_per_work_item(ctx));
            return 2;
        }
        size_t n = s.dims * s.dims, mat[2] = {s.dims, s.dims};
        float *h = malloc(n * sizeof *h);
        for (int k = 0; k < 4; k++) {
            for (size_t e = 0; e < n; e++)
                h[e] = (float)(4 * uniform01() - 2);
            BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, mat, h, &s.x[k]));
            BENCH_CHECK(ctx, clmad_tensor_set_requires_grad(s.x[k], 1));
            BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, mat, NULL, &s.hg[k]));
        }
        for (size_t e = 0; e < n; e++)
            h[e] = (float)(2 * uniform01() - 1);
        BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, mat, h, &s.w));
        BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, mat, NULL, &s.hy));
        BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, mat, NULL, &s.cdst));
        free(h);
        double med[2][NV], loss[2];
        for (int uc = 0; uc < 2; uc++) {
            make_controls(&s, uc);
            set_hand_args(&s);
            loss[uc] = fused_loss(&s, 0);
            double summed = fused_loss(&s, 1);
            if (fabs(summed - loss[uc]) > 1e-4 * fabs(loss[uc]) + 1e-3) {
                fprintf(stderr, "bench_hmlstm: the summed loss %.6f is not the dot loss %.6f\n", summed,
                        loss[uc]);
                return 1;
            }
            double *t = malloc((size_t)reps * NV * sizeof *t);
            for (int r = -2; r < reps; r++) {
                fprintf(stderr, "\rbench_hmlstm: dims %zu, %s controls, round %d/%d   ", s.dims,
                        uc ? "uniform" : "random", r + 3, reps + 2);
                for (int v = 0; v < NV; v++) {
                    double dt = run_variant(&s, v);
                    if (r >= 0)
                        t[v * reps + r] = dt;
                }
            }
            for (int v = 0; v < NV; v++) {
                med[uc][v] = bench_median(t + v * reps, reps);
                double passes = (double)g_bytes[v] / (4.0 * (double)n);
                fprintf(csv, "\"%s\",%zu,%s,%s,%.4f,%.3f,%llu,%llu,%.2f\n", dev.name, s.dims,
                        uc ? "uniform" : "random", NAMES[v], med[uc][v] * 1e3,
                        min_bytes(v) * n / med[uc][v] * 1e-9, (unsigned long long)g_kernels[v],
                        (unsigned long long)g_bytes[v], passes);
                fprintf(json, "%s\n    {\"dims\": %zu, \"controls\": \"%s\", \"variant\": \"%s\", "
                              "\"median_ms\": %.4f, \"min_gbps\": %.3f, \"kernels\": %llu, "
                              "\"bytes\": %llu, \"passes\": %.2f, \"loss\": %.6f}",
                        first_run ? "" : ",", s.dims, uc ? "uniform" : "random", NAMES[v],
                        med[uc][v] * 1e3, min_bytes(v) * n / med[uc][v] * 1e-9,
                        (unsigned long long)g_kernels[v], (unsigned long long)g_bytes[v], passes, loss[uc]);
                first_run = 0;
            }
            free(t);
        }
        fprintf(stderr, "\n");
        for (int uc = 0; uc < 2; uc++) {
            double *m = med[uc];
            int best_v = STORE;
            for (int v = RECOMPUTE; v <= MEAN; v++)
                best_v = m[v] < m[best_v] ? v : best_v;
            double best = m[best_v];
            printf("dims %zu, %s controls (loss %.6f):\n", s.dims, uc ? "uniform" : "random", loss[uc]);
            for (int v = 0; v < NV; v++)
                printf("  %-10s %9.3f ms  %7.2f GB/s (minimal bytes)  %3llu kernels %6.2f passes\n",
                       NAMES[v], m[v] * 1e3, min_bytes(v) * n / m[v] * 1e-9,
                       (unsigned long long)g_kernels[v], (double)g_bytes[v] / (4.0 * (double)n));
            printf("  unfused/store %.2f  unfused/recompute %.2f  store/hand %.2f  recompute/hand %.2f\n",
                   m[UNFUSED] / m[STORE], m[UNFUSED] / m[RECOMPUTE], m[STORE] / m[HAND], m[RECOMPUTE] / m[HAND]);
            printf("  natural/store %.2f  mean/store %.2f  summed/store %.2f  chain/natural %.2f  plus/natural %.2f"
                   "  mse/natural %.2f  lanes1/natural %.2f\n",
                   m[NATURAL] / m[STORE], m[MEAN] / m[STORE], m[SUMMED] / m[STORE], m[CHAIN] / m[NATURAL],
                   m[PLUS] / m[NATURAL], m[MSE] / m[NATURAL], m[LANES1] / m[NATURAL]);
            printf("  best fused (%s)/primal %.2f  best fused GB/s / copy GB/s %.2f\n", NAMES[best_v],
                   best / m[PRIMAL], (min_bytes(best_v) / best) / (min_bytes(COPY) / m[COPY]));
            printf("  copy / clEnqueueCopyBuffer (bandwidth) %.2f  copy4 / clEnqueueCopyBuffer %.2f\n",
                   m[COPYBUF] / m[COPY], m[COPYBUF] / m[COPY4]);
        }
        printf("  random/uniform: store %.2f recompute %.2f unfused %.2f hand %.2f\n",
               med[0][STORE] / med[1][STORE], med[0][RECOMPUTE] / med[1][RECOMPUTE],
               med[0][UNFUSED] / med[1][UNFUSED], med[0][HAND] / med[1][HAND]);
        for (int k = 0; k < 4; k++) {
            clmad_tensor_release(s.x[k]);
            clmad_tensor_release(s.hg[k]);
        }
        clmad_tensor_release(s.w);
        clmad_tensor_release(s.hy);
        clmad_tensor_release(s.cdst);
    }
    fprintf(json, "\n  ]\n}\n");
    fclose(json);
    fclose(csv);
    clmad_tensor_release(s.z);
    clmad_tensor_release(s.zb);
    clmad_tensor_release(s.one);
    clmad_tensor_release(s.zero);
    clReleaseKernel(s.hand_fwd);
    clReleaseKernel(s.hand_bwd);
    clmad_kernel_release(s.cell);
    clmad_kernel_release(s.cell_w);
    clmad_kernel_release(s.out);
    clmad_context_release(ctx);
    return 0;
}
