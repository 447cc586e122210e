/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_mlp: one training step of a 2-layer MLP, the step beside which
 * bench/peers/peer_torch_mlp.py (torch.compile) and peer_jax_mlp.py (JAX
 * jit) are timed on the same inputs:
 *   logits = gelu(x W1 + b1) W2 + b2       x (batch, in), f32
 *   loss   = mean softmax cross-entropy against integer labels (batch,)
 *   backward, then one Adam step on W1, b1, W2, b2 (PyTorch's defaults:
 *   lr 1e-3, betas 0.9, 0.999, eps 1e-8, no weight decay)
 * gelu is GELU in its tanh form (PyTorch's gelu(approximate="tanh")),
 * written as a broadcast kernel over T. Variants, interleaved in one run:
 *   fused     gelu_bias(z, b1): the bias added inside the activation
 *             kernel (b1's gradient is the reduction of its partials)
 *   separate  clmad_add(z, b1), then gelu(h): the bias as a builtin
 *   region    separate, with h released once gelu(h) is recorded: the two
 *             are then a lazy region (docs/fusion.md), one kernel forward
 *             and one backward, as fused's
 *   per-param fused, with the optimizer launched once per parameter
 *             (clmad__optimizer_launch_per_parameter) instead of its
 *             grouped launch (one kernel for all four): the same bits
 *   gemms     the step's five matrix products alone (x W1, a W2, x^T dz,
 *             a^T dz2, dz2 W2^T), recording off: the floor that CLBlast's
 *             GEMMs set on this device
 * fused, separate, region and per-param each train their own copy of the
 * parameters from the same start.
 * Before timing, K untimed steps (--check-steps, default 5) read the loss
 * at each step: it must be finite and fall, and the variants must agree
 * (losses within 1e-5 relative, parameters within 2 lr a step); with --check-dir
 * the fused variant's parameters after those steps and its losses (as
 * metadata) go to <dir>/<device>.mlp.<dims>.safetensors, which
 * bench/peers/check_mlp.py compares with PyTorch on the same inputs.
 * Inputs: a fresh xorshift64 stream per size (bench/peers/mlp_inputs.py
 * draws the same floats): x (2u - 1), labels floor(u C), then W1, b1
 * ((2u - 1) / sqrt(in)), W2, b2 ((2u - 1) / sqrt(hidden)), PyTorch's
 * nn.Linear initialisation.
 * Usage: bench_mlp [--dims BxIxHxC,...] [--reps N] [--out folder]
 *                  [--check-steps K] [--check-dir folder]
 * Writes <out>/<device>.mlp.json; progress on stderr.
 */
#include "bench_common.h"
#include "internal.h"

#include <math.h>
#include <stdint.h>

/* sqrt(2 / pi) and 0.044715: the constants of PyTorch's tanh GELU. */
static const char *GELU_SOURCE =
    "T gelu(T h)\n"
    "{\n"
    "    return 0.5f * h * (1 + tanh(0.7978845608028654f * (h + 0.044715f * h * h * h)));\n"
    "}\n"
    "T gelu_bias(T z, T b) { return gelu(z + b); }\n";

enum { FUSED, SEPARATE, REGION, PER_PARAM, GEMMS, NV, NMODELS = GEMMS };
static const char *NAMES[NV] = {"fused", "separate", "region", "per-param", "gemms"};

enum { MAX_SIZES = 8, MAX_CHECK_STEPS = 64 };

typedef struct dims {
    size_t batch, in, hidden, classes;
} dims;

typedef struct model {
    clmad_tensor *p[4]; /* W1, b1, W2, b2 */
    clmad_optimizer *opt;
} model;

typedef struct bench {
    clmad_context *ctx;
    clmad_kernel *gelu, *gelu_bias;
    clmad_tensor *x, *labels;
    model m[NMODELS];
} bench;

static const char *PARAM_NAMES[4] = {"W1", "b1", "W2", "b2"};

/* bench_hmlstm's generator (bench/peers/inputs.py replays it), restarted per size. */
static uint64_t rng;
static double uniform01(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static float *draw(size_t n, double scale)
{
    float *h = malloc(n * sizeof *h);
    if (!h) {
        fprintf(stderr, "bench_mlp: out of host memory\n");
        exit(1);
    }
    for (size_t e = 0; e < n; e++)
        h[e] = (float)((2 * uniform01() - 1) * scale);
    return h;
}

static clmad_tensor *tensor_of(clmad_context *ctx, int ndim, const size_t *shape, float *host)
{
    clmad_tensor *t;
    BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, ndim, shape, host, &t));
    free(host);
    return t;
}

/* The inputs of one size, and each variant's parameters and Adam. */
static void setup(bench *b, dims d)
{
    clmad_context *ctx = b->ctx;
    rng = 0x2545F4914F6CDD1Dull;
    size_t xs[2] = {d.batch, d.in};
    b->x = tensor_of(ctx, 2, xs, draw(d.batch * d.in, 1.0));
    int64_t *labels = malloc(d.batch * sizeof *labels);
    for (size_t r = 0; r < d.batch; r++)
        labels[r] = (int64_t)(uniform01() * (double)d.classes);
    BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_I64, 1, &d.batch, labels, &b->labels));
    free(labels);
    size_t shapes[4][2] = {{d.in, d.hidden}, {d.hidden}, {d.hidden, d.classes}, {d.classes}};
    double scales[4] = {1 / sqrt((double)d.in), 1 / sqrt((double)d.in), 1 / sqrt((double)d.hidden),
                        1 / sqrt((double)d.hidden)};
    float *host[4];
    size_t count[4];
    for (int i = 0; i < 4; i++) {
        count[i] = shapes[i][0] * (i % 2 ? 1 : shapes[i][1]);
        host[i] = draw(count[i], scales[i]);
    }
    for (int v = 0; v < NMODELS; v++) {
        for (int i = 0; i < 4; i++) {
            BENCH_CHECK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2 - i % 2, shapes[i], host[i], &b->m[v].p[i]));
            BENCH_CHECK(ctx, clmad_tensor_set_requires_grad(b->m[v].p[i], 1));
        }
        clmad_optimizer_options o;
        clmad_optimizer_options_init(&o, CLMAD_OPTIM_ADAM); /* lr 1e-3, 0.9, 0.999, 1e-8 */
        BENCH_CHECK(ctx, clmad_optimizer_create(ctx, &o, b->m[v].p, 4, &b->m[v].opt));
        clmad__optimizer_launch_per_parameter(b->m[v].opt, v == PER_PARAM);
    }
    for (int i = 0; i < 4; i++)
        free(host[i]);
}

static void teardown(bench *b)
{
    for (int v = 0; v < NMODELS; v++) {
        clmad_optimizer_release(b->m[v].opt);
        for (int i = 0; i < 4; i++)
            clmad_tensor_release(b->m[v].p[i]);
    }
    clmad_tensor_release(b->x);
    clmad_tensor_release(b->labels);
}

/* One training step of variant v; the loss into *loss when asked (that
 * waits for it). The scope releases every tensor of the step. */
static void step(bench *b, int v, double *loss)
{
    clmad_context *ctx = b->ctx;
    clmad_tensor **p = b->m[v].p, *z, *h, *a, *z2, *logits, *l;
    BENCH_CHECK(ctx, clmad_scope_begin(ctx));
    BENCH_CHECK(ctx, clmad_matmul(ctx, b->x, p[0], 0, 0, &z));
    if (v != SEPARATE && v != REGION) {
        clmad_tensor *in[2] = {z, p[1]};
        BENCH_CHECK(ctx, clmad_broadcast(ctx, b->gelu_bias, in, &a));
    } else {
        BENCH_CHECK(ctx, clmad_add(ctx, z, p[1], &h));
        BENCH_CHECK(ctx, clmad_broadcast(ctx, b->gelu, &h, &a));
        if (v == REGION)
            clmad_tensor_release(h); /* the tape keeps what backward needs */
    }
    BENCH_CHECK(ctx, clmad_matmul(ctx, a, p[2], 0, 0, &z2));
    BENCH_CHECK(ctx, clmad_add(ctx, z2, p[3], &logits));
    BENCH_CHECK(ctx, clmad_cross_entropy_index(ctx, logits, b->labels, &l));
    clmad_optimizer_zero_grad(b->m[v].opt);
    BENCH_CHECK(ctx, clmad_backward(ctx, l, NULL));
    BENCH_CHECK(ctx, clmad_optimizer_step(b->m[v].opt));
    if (loss)
        BENCH_CHECK(ctx, clmad_tensor_item(l, loss));
    BENCH_CHECK(ctx, clmad_scope_end(ctx));
}

/* The step's matrix products with the shapes and transpositions of its
 * forward and backward, recording off; the products' inputs stand in for
 * the adjoints of the same shapes (values do not change a GEMM's time). */
static void gemms(bench *b)
{
    clmad_context *ctx = b->ctx;
    clmad_tensor **p = b->m[FUSED].p, *z, *z2, *dw1, *dw2, *da;
    BENCH_CHECK(ctx, clmad_set_grad_enabled(ctx, 0));
    BENCH_CHECK(ctx, clmad_scope_begin(ctx));
    BENCH_CHECK(ctx, clmad_matmul(ctx, b->x, p[0], 0, 0, &z));  /* x W1 */
    BENCH_CHECK(ctx, clmad_matmul(ctx, z, p[2], 0, 0, &z2));    /* a W2 */
    BENCH_CHECK(ctx, clmad_matmul(ctx, b->x, z, 1, 0, &dw1));   /* x^T dz */
    BENCH_CHECK(ctx, clmad_matmul(ctx, z, z2, 1, 0, &dw2));     /* a^T dz2 */
    BENCH_CHECK(ctx, clmad_matmul(ctx, z2, p[2], 0, 1, &da));   /* dz2 W2^T */
    BENCH_CHECK(ctx, clmad_scope_end(ctx));
    BENCH_CHECK(ctx, clmad_set_grad_enabled(ctx, 1));
}

static uint64_t g_kernels[NV];

static double timed_step(bench *b, int v)
{
    clmad_stats s0, s1;
    BENCH_CHECK(b->ctx, clmad_finish(b->ctx));
    BENCH_CHECK(b->ctx, clmad_context_stats(b->ctx, &s0));
    double t0 = bench_now();
    if (v == GEMMS)
        gemms(b);
    else
        step(b, v, NULL);
    BENCH_CHECK(b->ctx, clmad_finish(b->ctx));
    double dt = bench_now() - t0;
    BENCH_CHECK(b->ctx, clmad_context_stats(b->ctx, &s1));
    g_kernels[v] = s1.kernels_launched - s0.kernels_launched;
    return dt;
}

static float *read_all(clmad_tensor *t, size_t n)
{
    float *h = malloc(n * sizeof *h);
    if (!h || clmad_tensor_read(t, h, n * sizeof *h) != CLMAD_OK) {
        fprintf(stderr, "bench_mlp: cannot read a parameter back\n");
        exit(1);
    }
    return h;
}

/* The largest difference between model v's parameters and the fused
 * variant's, relative to the learning rate (each Adam step moves an
 * element by about lr). */
static double apart_from_fused(bench *b, dims d, int v)
{
    size_t count[4] = {d.in * d.hidden, d.hidden, d.hidden * d.classes, d.classes};
    double worst = 0;
    for (int i = 0; i < 4; i++) {
        float *f = read_all(b->m[FUSED].p[i], count[i]), *o = read_all(b->m[v].p[i], count[i]);
        for (size_t e = 0; e < count[i]; e++)
            worst = fmax(worst, fabs((double)f[e] - (double)o[e]) / 1e-3);
        free(f);
        free(o);
    }
    return worst;
}

/* The untimed steps that check the training: losses finite and falling,
 * the variants in agreement; the fused variant's result saved for
 * bench/peers/check_mlp.py when check_dir is set. */
static void check_steps(bench *b, dims d, const char *dims_text, int k, double *losses, const char *check_dir,
                        const char *slug)
{
    for (int s = 0; s < k; s++) {
        for (int v = 0; v < NMODELS; v++) {
            double loss = 0;
            step(b, v, v == FUSED ? &losses[s] : &loss);
            if (v == FUSED ? !isfinite(losses[s]) : fabs(loss - losses[s]) > 1e-5 * fabs(losses[s])) {
                fprintf(stderr, "bench_mlp: %s, step %d: loss %.9g (fused), %.9g (%s)\n", dims_text, s, losses[s],
                        v == FUSED ? losses[s] : loss, NAMES[v]);
                exit(1);
            }
        }
    }
    if (!(losses[k - 1] < losses[0])) {
        fprintf(stderr, "bench_mlp: %s: the loss did not fall in %d steps (%.9g to %.9g)\n", dims_text, k,
                losses[0], losses[k - 1]);
        exit(1);
    }
    /* Adam takes each element's step from the sign and size of its own
     * moments, so an element whose gradient is rounding noise may step the
     * other way: allow 2 lr a step for such elements, no more. */
    for (int v = SEPARATE; v < NMODELS; v++) {
        double apart = apart_from_fused(b, d, v);
        if (apart > 2.0 * k) {
            fprintf(stderr, "bench_mlp: %s: %s's parameters differ from fused's by %.3g lr after %d steps\n",
                    dims_text, NAMES[v], apart, k);
            exit(1);
        }
    }
    if (!check_dir)
        return;
    char path[1024], text[MAX_CHECK_STEPS * 24 + 1] = "";
    for (int s = 0; s < k; s++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%.9g", s ? "," : "", losses[s]);
    const char *meta[] = {"losses", text, "dims", dims_text, "activation", "gelu_tanh", NULL};
    snprintf(path, sizeof path, "%s/%s.mlp.%s.safetensors", check_dir, slug, dims_text);
    BENCH_CHECK(b->ctx, clmad_save(path, PARAM_NAMES, b->m[FUSED].p, 4, meta));
}

static int parse_dims(char *list, dims *out)
{
    int n = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        dims d = {0, 0, 0, 0};
        if (n == MAX_SIZES || sscanf(tok, "%zux%zux%zux%zu", &d.batch, &d.in, &d.hidden, &d.classes) != 4 ||
            !d.batch || !d.in || !d.hidden || !d.classes)
            return 0;
        out[n++] = d;
    }
    return n;
}

/* Multiply-adds of the step, counted twice: the two forward GEMMs, dW1,
 * dW2 and the adjoint of the hidden layer (x needs no gradient). */
static double step_flops(dims d)
{
    double b = (double)d.batch, i = (double)d.in, h = (double)d.hidden, c = (double)d.classes;
    return 4 * b * i * h + 6 * b * h * c;
}

int main(int argc, char **argv)
{
    char default_dims[] = "256x784x1024x10,1024x784x1024x10";
    dims sizes[MAX_SIZES];
    int n_sizes = parse_dims(default_dims, sizes), reps = 10, k = 5;
    const char *outdir = "bench/results", *check_dir = NULL;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--dims") && a + 1 < argc) {
            n_sizes = parse_dims(argv[++a], sizes);
        } else if (!strcmp(argv[a], "--reps") && a + 1 < argc) {
            reps = atoi(argv[++a]);
        } else if (!strcmp(argv[a], "--out") && a + 1 < argc) {
            outdir = argv[++a];
        } else if (!strcmp(argv[a], "--check-steps") && a + 1 < argc) {
            k = atoi(argv[++a]);
        } else if (!strcmp(argv[a], "--check-dir") && a + 1 < argc) {
            check_dir = argv[++a];
        } else {
            n_sizes = 0;
            break;
        }
    }
    if (n_sizes == 0 || reps < 1 || k < 2 || k > MAX_CHECK_STEPS) {
        fprintf(stderr, "usage: %s [--dims BATCHxINxHIDDENxCLASSES,...] [--reps N] [--out folder]\n"
                        "       [--check-steps K (2..%d)] [--check-dir folder]\n",
                argv[0], MAX_CHECK_STEPS);
        return 2;
    }
    bench b;
    memset(&b, 0, sizeof b);
    BENCH_CHECK(NULL, clmad_context_create(NULL, &b.ctx));
    clmad_context *ctx = b.ctx;
    clmad_device_info dev;
    BENCH_CHECK(ctx, clmad_context_device(ctx, &dev));
    char slug[256], path[1024];
    bench_slug(dev.name, slug, sizeof slug);
    BENCH_CHECK(ctx, clmad_kernel_create(ctx, GELU_SOURCE, "gelu", 1, 1, &b.gelu));
    BENCH_CHECK(ctx, clmad_kernel_create(ctx, GELU_SOURCE, "gelu_bias", 2, 1, &b.gelu_bias));

    snprintf(path, sizeof path, "%s/%s.mlp.json", outdir, slug);
    FILE *json = fopen(path, "w");
    if (!json) {
        fprintf(stderr, "bench_mlp: cannot write %s\n", path);
        return 1;
    }
    fprintf(json, "{\n  \"benchmark\": \"mlp\",\n  \"device\": \"%s\",\n  \"device_type\": \"%s\",\n"
                  "  \"platform\": \"%s\",\n  \"driver\": \"%s\",\n  \"repetitions\": %d,\n"
                  "  \"activation\": \"gelu_tanh\",\n  \"optimizer\": {\"kind\": \"adam\", \"lr\": 1e-3, "
                  "\"beta1\": 0.9, \"beta2\": 0.999, \"eps\": 1e-8, \"weight_decay\": 0},\n"
                  "  \"check_steps\": %d,\n  \"runs\": [",
            dev.name, clmad_device_type_name(dev.type), dev.platform_name, dev.driver_version, reps, k);
    printf("MLP training step (matmul, bias, GELU-tanh broadcast kernel, matmul, bias, softmax cross-entropy,\n"
           "backward, Adam), f32, %s (%s), median of %d\n",
           dev.name, dev.platform_name, reps);
    for (int si = 0; si < n_sizes; si++) {
        dims d = sizes[si];
        char dims_text[96];
        snprintf(dims_text, sizeof dims_text, "%zux%zux%zux%zu", d.batch, d.in, d.hidden, d.classes);
        setup(&b, d);
        double losses[MAX_CHECK_STEPS], med[NV];
        fprintf(stderr, "bench_mlp: %s, %d check steps\n", dims_text, k);
        check_steps(&b, d, dims_text, k, losses, check_dir, slug);
        double *t = malloc((size_t)reps * NV * sizeof *t);
        for (int r = -2; r < reps; r++) {
            fprintf(stderr, "\rbench_mlp: %s, round %d/%d   ", dims_text, r + 3, reps + 2);
            for (int j = 0; j < NV; j++) {
                int v = r % 2 ? NV - 1 - j : j; /* every other round in reverse: no variant always first */
                double dt = timed_step(&b, v);
                if (r >= 0)
                    t[v * reps + r] = dt;
            }
        }
        fprintf(stderr, "\n");
        double after = 0;
        step(&b, FUSED, &after); /* the loss after every step taken, fused variant */
        if (!isfinite(after) || !(after < losses[0])) {
            fprintf(stderr, "bench_mlp: %s: loss %.9g after %d steps, from %.9g\n", dims_text, after,
                    k + reps + 2, losses[0]);
            return 1;
        }
        printf("%s (batch x in x hidden x classes): loss %.6f, %.6f after %d steps, %.6f after %d:\n",
               dims_text, losses[0], losses[k - 1], k - 1, after, k + reps + 2);
        for (int v = 0; v < NV; v++) {
            med[v] = bench_median(t + v * reps, reps);
            printf("  %-10s %10.3f ms  %8.1f GFLOP/s  %3llu kernels\n", NAMES[v], med[v] * 1e3,
                   step_flops(d) / med[v] * 1e-9, (unsigned long long)g_kernels[v]);
            fprintf(json, "%s\n    {\"dims\": \"%s\", \"batch\": %zu, \"in\": %zu, \"hidden\": %zu, "
                          "\"classes\": %zu, \"variant\": \"%s\", \"median_ms\": %.4f, \"gflops\": %.2f, "
                          "\"kernels\": %llu, \"losses\": [",
                    si || v ? "," : "", dims_text, d.batch, d.in, d.hidden, d.classes, NAMES[v], med[v] * 1e3,
                    step_flops(d) / med[v] * 1e-9, (unsigned long long)g_kernels[v]);
            for (int s = 0; s < k; s++)
                fprintf(json, "%s%.9g", s ? ", " : "", losses[s]);
            fprintf(json, "], \"loss_after\": %.9g, \"steps\": %d}", after, k + reps + 3);
        }
        printf("  separate/fused %.2f  region/fused %.2f  per-param/fused %.2f  gemms/fused %.2f (the matrix "
               "products' share)\n",
               med[SEPARATE] / med[FUSED], med[REGION] / med[FUSED], med[PER_PARAM] / med[FUSED],
               med[GEMMS] / med[FUSED]);
        free(t);
        teardown(&b);
    }
    fprintf(json, "\n  ]\n}\n");
    fclose(json);
    clmad_kernel_release(b.gelu);
    clmad_kernel_release(b.gelu_bias);
    clmad_context_release(ctx);
    return 0;
}
