/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lazy regions (docs/fusion.md, ops/region.c): a chain of held elementwise
 * calls, y = f(a, b, c) and stages over it, read by clmad_matmul after the
 * program released y and the values between, runs as one kernel that
 * writes only the chain's last value z; backward forms the chain's
 * gradients in one kernel from z's adjoint. Every result must be bitwise
 * that of fusion off (a NaN equals any NaN; within TEST_PROGRAM_ULPS where
 * the device rounds a function apart in two programs, as in test_fusion).
 * Each case runs the program on two contexts, fusion on and off:
 *   z = chain(f(a, b, c)), m = z W (and, Z_TWICE, m + z V), loss = sum(m),
 * or m = log_softmax(z), mse_loss(z, c) or transpose(z) (test read_by_another_call),
 * or where(c > other, z, other), (z < c) * z, a cast of z there and back,
 * clmad_tensor_read(z) (test read_by_elementwise_calls),
 * then reads m, z, the loss and the gradients of a, b, W and of the
 * stages' operands that need one. The chains: a unary builtin, a product
 * with a learnable w, a learnable bias row, a user kernel with a learnable
 * input and a builtin after it, a square, a scalar add then a product.
 * The broadcast y is a user kernel f(a, b, c), or a + b_row with a
 * learnable bias row (test bias_row_in_the_broadcast).
 * The hazards: none (the region's kernels run, fused_regions counts it, no
 * fallback), y kept by the program (no region), a flush between forward and
 * backward (the region's forward ran, its backward falls back: y and the
 * values between are written then), a retained tape run backward twice
 * (the second is eager's), z read by two products (its adjoint a sum),
 * the step in a scope (y released in it: only the scope's reference is
 * left, which does not keep the chain from being a region).
 * A region's kernels that fail to build (injected) leave eager's results.
 * Both partials policies (the last three hazards: one a chain, in turn),
 * f32 and f64, sizes 1x7 to 257x256, special values (+-0, +-inf, NaN,
 * subnormals) among a's.
 */
#include <criterion/criterion.h>

#include "support.h"
#include "internal.h" /* clmad__inject_build_failure */

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Branches and a data-dependent loop, as user kernels have them. */
static const char *SOURCE_F = "T f(T a, T b, T c)\n"
                              "{\n"
                              "    T s = ad_mul(a, b);\n"
                              "    if (ad_val(c) < 0) return ad_add(ad_exp(ad_neg(ad_mul(s, s))), a);\n"
                              "    for (int i = 0; i < 2 && ad_val(s) < 3; i++) s = ad_add(ad_mul(s, ad_cos(b)), a);\n"
                              "    return s;\n"
                              "}\n";
static const char *SOURCE_G = "T g(T y, T u)\n"
                              "{\n"
                              "    if (ad_val(u) > 0) return ad_mul(ad_tanh(y), u);\n"
                              "    return ad_sub(y, ad_mul(y, ad_exp(u)));\n"
                              "}\n";

enum chain { EXP, MUL_W, ADD_ROW, USER_TANH, SQUARE, ADD_SCALAR_MUL, N_CHAINS };
static const char *CHAINS[] = {"exp(y)", "y * w", "y + b_row", "tanh(g(y, w))", "y * y", "(y + 0.5) * w"};
enum hazard { NONE, KEEP_Y, FLUSH, RETAIN, Z_TWICE, SCOPE, N_HAZARDS };
static const char *HAZARDS[] = {"none", "y kept", "flush before backward", "retained tape, twice", "z read twice",
                                "in a scope"};

/* y = f(a, b, c), or y = a + b_row (a learnable bias row in the broadcast) */
enum base { BASE_F, BASE_BIAS_ROW };
/* What reads z: a product, a row operation, a loss against a target */
enum consumer { MATMUL, LOG_SOFTMAX, MSE, TRANSPOSE, WHERE, COMPARE, CAST, READ, N_CONSUMERS };
static const char *CONSUMERS[] = {"z W", "log_softmax(z)", "mse_loss(z, c)", "transpose(z)",
                                  "where(c > other, z, other)", "(z < c) * z", "cast(cast(z, the other float))",
                                  "clmad_tensor_read(z), then transpose(z)"};

typedef struct program {
    clmad_dtype dtype;
    size_t rows, cols;
    int chain, hazard;
    clmad_partials_policy policy;
    int base, consumer;
    int inject; /* a build failure injected for the region's kernels: INJECT_* */
} program;

enum inject { INJECT_NONE, INJECT_FORWARD, INJECT_BACKWARD };

/* What a run read back, and where each tensor's bytes end. */
typedef struct results {
    test_results r;
    size_t end[16];
    int n;
} results;

static void keep(clmad_context *ctx, results *out, clmad_tensor *t)
{
    test_keep(ctx, &out->r, t);
    out->end[out->n++] = out->r.len;
}

static void keep_grad(clmad_context *ctx, results *out, clmad_tensor *x)
{
    test_keep_grad(ctx, &out->r, x);
    out->end[out->n++] = out->r.len;
}

/* Element e of input `which`: ordinary values, a's with special ones among them. */
static double value(size_t e, int which)
{
    static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-40, -1e-310, 0.75};
    if (which == 0 && e % 97 == 5)
        return special[(e / 97) % 8];
    return sin(0.37 * (double)e + 1.3 * which) * (1.5 + which);
}

static double value_of(size_t e, void *which)
{
    return value(e, *(int *)which);
}

static clmad_tensor *tensor(clmad_context *ctx, const program *p, int ndim, const size_t *shape, int which,
                            int grad)
{
    clmad_tensor *t = test_tensor_of(ctx, p->dtype, ndim, shape, value_of, &which);
    if (grad)
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(t, 1));
    return t;
}

/* The chain's operand that needs a gradient, or NULL: made before y
 * (making a tensor from host values runs the held work). */
static clmad_tensor *operand(clmad_context *ctx, const program *p)
{
    size_t shape[2] = {p->rows, p->cols}, row[1] = {p->cols};
    switch (p->chain) {
    case MUL_W:
    case USER_TANH:
    case ADD_SCALAR_MUL: return tensor(ctx, p, 2, shape, 4 + p->chain, 1);
    case ADD_ROW: return tensor(ctx, p, 1, row, 5, 1);
    default: return NULL;
    }
}

/* z = the chain over y, with w its operand; the values between are
 * released at once (the tape keeps them). */
static clmad_tensor *chain(clmad_context *ctx, const program *p, clmad_kernel *g, clmad_tensor *y, clmad_tensor *w)
{
    clmad_tensor *z = NULL, *t = NULL;
    switch (p->chain) {
    case EXP: CHECK_OK(ctx, clmad_exp(ctx, y, &z)); break;
    case MUL_W: CHECK_OK(ctx, clmad_mul(ctx, y, w, &z)); break;
    case ADD_ROW: CHECK_OK(ctx, clmad_add(ctx, y, w, &z)); break;
    case USER_TANH: {
        clmad_tensor *in[2] = {y, w};
        CHECK_OK(ctx, clmad_broadcast(ctx, g, in, &t));
        CHECK_OK(ctx, clmad_tanh(ctx, t, &z));
        break;
    }
    case SQUARE: CHECK_OK(ctx, clmad_mul(ctx, y, y, &z)); break;
    default:
        CHECK_OK(ctx, clmad_add_scalar(ctx, y, 0.5, &t));
        CHECK_OK(ctx, clmad_mul(ctx, t, w, &z));
        break;
    }
    clmad_tensor_release(t);
    return z;
}

static void run(int fuse, const program *p, results *r)
{
    clmad_options opt = {0};
    opt.disable_fusion = !fuse;
    clmad_context *ctx = test_context_with(&opt);
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, p->policy));
    if (fuse && p->inject == INJECT_FORWARD)
        clmad__inject_build_failure(ctx, CLMAD_MODE_LOSS);
    if (p->hazard == RETAIN)
        CHECK_OK(ctx, clmad_set_retain_tape(ctx, 1));
    clmad_kernel *f = NULL, *g = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, SOURCE_F, "f", 3, 1, &f));
    CHECK_OK(ctx, clmad_kernel_create(ctx, SOURCE_G, "g", 2, 1, &g));
    size_t shape[2] = {p->rows, p->cols}, wshape[2] = {p->cols, 3}, vshape[2] = {p->rows, p->rows};
    clmad_tensor *a = tensor(ctx, p, 2, shape, 0, 1), *b = tensor(ctx, p, 2, shape, 1, 1);
    clmad_tensor *c = tensor(ctx, p, 2, shape, 2, 0), *W = tensor(ctx, p, 2, wshape, 3, 1);
    clmad_tensor *V = tensor(ctx, p, 2, vshape, 8, 0), *other = tensor(ctx, p, 2, shape, 9, 0);
    size_t row[1] = {p->cols};
    clmad_tensor *bias = p->base == BASE_BIAS_ROW ? tensor(ctx, p, 1, row, 10, 1) : NULL;
    clmad_tensor *in[3] = {a, b, c}, *y = NULL, *w = operand(ctx, p), *m = NULL, *loss = NULL;
    if (p->hazard == SCOPE) /* y and the values between released in it: the scope's reference waits */
        CHECK_OK(ctx, clmad_scope_begin(ctx));
    if (bias)
        CHECK_OK(ctx, clmad_add(ctx, a, bias, &y));
    else
        CHECK_OK(ctx, clmad_broadcast(ctx, f, in, &y));
    clmad_tensor *z = chain(ctx, p, g, y, w);
    if (p->hazard != KEEP_Y) {
        clmad_tensor_release(y);
        y = NULL;
    }
    if (p->consumer == LOG_SOFTMAX)
        CHECK_OK(ctx, clmad_log_softmax(ctx, z, -1, &m));
    else if (p->consumer == MSE)
        CHECK_OK(ctx, clmad_mse_loss(ctx, z, c, &m));
    else if (p->consumer == TRANSPOSE)
        CHECK_OK(ctx, clmad_transpose(ctx, z, (const int[]){1, 0}, &m));
    else if (p->consumer == WHERE || p->consumer == COMPARE) {
        clmad_tensor *mask = NULL;
        if (p->consumer == WHERE) {
            CHECK_OK(ctx, clmad_compare(ctx, CLMAD_GT, c, other, &mask));
            CHECK_OK(ctx, clmad_where(ctx, mask, z, other, &m));
        } else {
            CHECK_OK(ctx, clmad_compare(ctx, CLMAD_LT, z, c, &mask));
            CHECK_OK(ctx, clmad_mul(ctx, mask, z, &m));
        }
        clmad_tensor_release(mask);
    } else if (p->consumer == READ) {
        const size_t bytes = p->rows * p->cols * clmad_dtype_size(p->dtype);
        void *host = malloc(bytes);
        cr_assert_not_null(host);
        CHECK_OK(ctx, clmad_tensor_read(z, host, bytes));
        free(host);
        CHECK_OK(ctx, clmad_transpose(ctx, z, (const int[]){1, 0}, &m));
    } else if (p->consumer == CAST) {
        clmad_tensor *wide = NULL;
        CHECK_OK(ctx, clmad_cast(ctx, z, p->dtype == CLMAD_F32 ? CLMAD_F64 : CLMAD_F32, &wide));
        CHECK_OK(ctx, clmad_cast(ctx, wide, p->dtype, &m));
        clmad_tensor_release(wide);
    } else
        CHECK_OK(ctx, clmad_matmul(ctx, z, W, 0, 0, &m));
    if (p->hazard == Z_TWICE) { /* m + V z (rows x 3): z's adjoint is a sum of two */
        clmad_tensor *vz = NULL, *vzw = NULL, *sum = NULL;
        CHECK_OK(ctx, clmad_matmul(ctx, V, z, 0, 0, &vz));
        CHECK_OK(ctx, clmad_matmul(ctx, vz, W, 0, 0, &vzw));
        CHECK_OK(ctx, clmad_add(ctx, m, vzw, &sum));
        clmad_tensor_release(vz);
        clmad_tensor_release(vzw);
        clmad_tensor_release(m);
        m = sum;
    }
    if (fuse && p->inject == INJECT_BACKWARD) /* the region's forward ran: its backward fails to build */
        clmad__inject_build_failure(ctx, CLMAD_MODE_LOSS);
    if (p->hazard == FLUSH) /* a call that runs every held tensor's work */
        CHECK_OK(ctx, clmad_tensor_axpby(other, 1.0, c, 0.5));
    CHECK_OK(ctx, clmad_sum(ctx, m, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    if (p->hazard == RETAIN)
        CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    keep(ctx, r, m);
    keep(ctx, r, z);
    keep(ctx, r, loss);
    keep_grad(ctx, r, a);
    keep_grad(ctx, r, bias ? bias : b);
    if (p->consumer == MATMUL)
        keep_grad(ctx, r, W);
    if (w)
        keep_grad(ctx, r, w);
    if (y)
        keep(ctx, r, y);
    CHECK_OK(ctx, clmad_context_stats(ctx, &r->r.stats));
    if (p->hazard == SCOPE) {
        CHECK_OK(ctx, clmad_scope_end(ctx));
        z = m = loss = NULL; /* the scope's */
    }
    clmad_tensor *all[] = {a, b, c, W, V, other, bias, y, w, z, m, loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clmad_tensor_release(all[i]);
    clmad_kernel_release(f);
    clmad_kernel_release(g);
    clmad_context_release(ctx);
}

static double element(const unsigned char *at, size_t size)
{
    float f;
    double d;
    if (size == 8) {
        memcpy(&d, at, 8);
        return d;
    }
    memcpy(&f, at, 4);
    return f;
}

/* The first byte where x and y differ; x's length if none. Bitwise (a NaN
 * equals any NaN), or on a device whose primal and dual programs round a
 * function apart (test_programs_round_alike) within 2 TEST_PROGRAM_ULPS of
 * the largest finite magnitude of the tensor: z's values then differ in
 * their last bits, and a product or a row operation over them adds those
 * up, where a sum may cancel. */
static size_t first_difference(const results *x, const results *y, size_t size)
{
    const double ulps = test_programs_round_alike() ? 0 : 2 * TEST_PROGRAM_ULPS;
    const double eps = size == 8 ? 0x1p-52 : 0x1p-23;
    size_t start = 0;
    for (int t = 0; t < x->n; start = x->end[t++]) {
        double scale = 0;
        for (size_t at = start; at < x->end[t]; at += size)
            if (isfinite(element(y->r.bytes + at, size)))
                scale = fmax(scale, fabs(element(y->r.bytes + at, size)));
        for (size_t at = start; at < x->end[t]; at += size)
            if (!test_elements_equal(x->r.bytes + at, y->r.bytes + at, size, ulps) &&
                !(ulps > 0 && fabs(element(x->r.bytes + at, size) - element(y->r.bytes + at, size)) <=
                                  ulps * eps * scale))
                return at;
    }
    return x->r.len;
}

static void check(const program *p)
{
    static const char *INJECTED[] = {"", ", forward build fails", ", backward build fails"};
    test_set_case("%s %zux%zu %s over %s, read by %s, %s, %s%s: ", p->dtype == CLMAD_F64 ? "f64" : "f32", p->rows,
                  p->cols, CHAINS[p->chain], p->base ? "y = a + b_row" : "y = f(a, b, c)", CONSUMERS[p->consumer],
                  HAZARDS[p->hazard], p->policy == CLMAD_PARTIALS_STORE ? "STORE" : "RECOMPUTE", INJECTED[p->inject]);
    results fused = {0}, eager = {0};
    run(1, p, &fused);
    run(0, p, &eager);
    cr_assert(fused.r.len == eager.r.len && fused.n == eager.n, "%sresult sizes differ", test_case());
    size_t at = first_difference(&fused, &eager, clmad_dtype_size(p->dtype));
    cr_assert_eq(at, fused.r.len, "%sfused and eager differ at byte %zu of %zu", test_case(), at, fused.r.len);
    cr_assert_eq(eager.r.stats.fused_regions, 0, "%sa region with fusion off", test_case());
    const uint64_t regions = p->hazard == KEEP_Y || p->inject == INJECT_FORWARD ? 0 : 1;
    cr_assert_eq(fused.r.stats.fused_regions, regions, "%s%llu regions, expected %llu", test_case(),
                 (unsigned long long)fused.r.stats.fused_regions, (unsigned long long)regions);
    const uint64_t fallbacks = p->hazard == FLUSH || p->inject == INJECT_BACKWARD ? 1 : 0;
    cr_assert_eq(fused.r.stats.fusion_fallbacks, fallbacks, "%s%llu fallbacks, expected %llu", test_case(),
                 (unsigned long long)fused.r.stats.fusion_fallbacks, (unsigned long long)fallbacks);
    if (p->inject == INJECT_FORWARD) /* eager's, kernel for kernel */
        cr_assert_eq(fused.r.stats.kernels_launched, eager.r.stats.kernels_launched, "%s%llu kernels, eager %llu",
                     test_case(), (unsigned long long)fused.r.stats.kernels_launched,
                     (unsigned long long)eager.r.stats.kernels_launched);
    if (regions && !fallbacks) /* the chain's forward and backward: one kernel each */
        cr_assert_lt(fused.r.stats.kernels_launched, eager.r.stats.kernels_launched, "%sno kernel saved", test_case());
    free(fused.r.bytes);
    free(eager.r.bytes);
}

static const size_t SIZES[][2] = {{1, 7}, {7, 9}, {33, 65}, {257, 256}};

Test(regions, every_chain_and_hazard_bitwise_as_eager)
{
    for (int chain = 0; chain < N_CHAINS; chain++)
        for (int hazard = 0; hazard < N_HAZARDS; hazard++)
            for (int policy = 0; policy < 2; policy++) {
                if (hazard > FLUSH && policy != chain % 2)
                    continue; /* the later hazards under one policy a chain, the two in turn (CI's time) */
                program p = {.dtype = CLMAD_F32, .rows = 33, .cols = 65, .chain = chain, .hazard = hazard,
                             .policy = policy ? CLMAD_PARTIALS_STORE : CLMAD_PARTIALS_RECOMPUTE};
                check(&p);
            }
}

Test(regions, sizes_and_f64)
{
    const int n_sizes = test_small() ? 3 : 4;
    for (int dt = 0; dt < 2; dt++) {
        if (dt && !test_device_fp64())
            continue; /* no cl_khr_fp64 (rusticl): f32 alone */
        for (int s = 0; s < n_sizes; s++)
            for (int chain = 0; chain < N_CHAINS; chain++) {
                program p = {.dtype = dt ? CLMAD_F64 : CLMAD_F32, .rows = SIZES[s][0], .cols = SIZES[s][1],
                             .chain = chain, .policy = chain % 2 ? CLMAD_PARTIALS_STORE : CLMAD_PARTIALS_RECOMPUTE};
                check(&p);
            }
    }
}

/* y = a + b_row: the broadcast reads a learnable row, whose contributions
 * the region's backward writes at y's shape and sums as y's node would;
 * with one row, b_row (65) has y's (1, 65) elements and is read at the
 * element index: its gradient goes to its slot unsummed, as eager's. */
Test(regions, bias_row_in_the_broadcast)
{
    static const int hazards[] = {NONE, KEEP_Y, FLUSH, SCOPE};
    for (int rows = 33; rows > 0; rows -= 32)
        for (int chain = 0; chain < N_CHAINS; chain++)
            for (int h = 0; h < 4; h++)
                for (int policy = 0; policy < 2; policy++) {
                    program p = {.dtype = CLMAD_F32, .rows = (size_t)rows, .cols = 65, .chain = chain,
                                 .hazard = hazards[h],
                                 .policy = policy ? CLMAD_PARTIALS_STORE : CLMAD_PARTIALS_RECOMPUTE,
                                 .base = BASE_BIAS_ROW};
                    check(&p);
                }
}

/* The calls that read only their operands and write new tensors try a
 * region too: a row operation, a loss, a shape operation. */
Test(regions, read_by_another_call)
{
    for (int consumer = LOG_SOFTMAX; consumer <= TRANSPOSE; consumer++)
        for (int chain = 0; chain < N_CHAINS; chain++)
            for (int policy = 0; policy < 2; policy++) {
                program p = {.dtype = CLMAD_F32, .rows = 33, .cols = 65, .chain = chain,
                             .hazard = chain % 2 ? NONE : FLUSH,
                             .policy = policy ? CLMAD_PARTIALS_STORE : CLMAD_PARTIALS_RECOMPUTE,
                             .base = chain % 3 == 0 ? BASE_BIAS_ROW : BASE_F, .consumer = consumer};
                check(&p);
            }
}

/* The elementwise calls that end a region: a comparison, a selection, a
 * conversion (when the device has f64); and a read of z. */
Test(regions, read_by_elementwise_calls)
{
    for (int consumer = WHERE; consumer < N_CONSUMERS; consumer++)
        for (int chain = consumer % 2; chain < N_CHAINS; chain += 2) {
            if (consumer == CAST && !test_device_fp64())
                continue;
            program p = {.dtype = CLMAD_F32, .rows = 9, .cols = 17, .chain = chain,
                         .hazard = chain % 4 == 1 ? FLUSH : NONE,
                         .policy = chain % 3 ? CLMAD_PARTIALS_STORE : CLMAD_PARTIALS_RECOMPUTE,
                         .base = chain == 2 ? BASE_BIAS_ROW : BASE_F, .consumer = consumer};
            check(&p);
        }
}

/* A region's kernel that fails to build (injected) leaves eager's results:
 * the forward's, the chain runs eagerly; the backward's, it falls back. */
Test(regions, injected_build_failures)
{
    for (int inject = INJECT_FORWARD; inject <= INJECT_BACKWARD; inject++)
        for (int chain = 0; chain < N_CHAINS; chain += 3) {
            program p = {.dtype = CLMAD_F32, .rows = 7, .cols = 9, .chain = chain,
                         .policy = CLMAD_PARTIALS_STORE, .inject = inject};
            check(&p);
        }
}
