/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fusion (CLMAD_PARAM_DISABLE_FUSION): a loss over a held broadcast runs as
 * one loss kernel, and every result must be bitwise that of the eager run.
 * Each case runs the same program on two contexts, fusion on and off, over
 * the same inputs (special values among them: +-0, +-inf, NaN, subnormals),
 * and compares the loss, every gradient and every forced intermediate
 * bitwise (a NaN equals any NaN: first_difference). The cases cover the
 * loss forms (clmad_dot either way round, clmad_sum, keepdims, clmad_mean,
 * and one builtin stage between y and the sum: y * w, w * y, y / w, w - y,
 * y + 0.5, y * -3, under clmad_sum and clmad_mean; chains of them; user
 * kernels as stages: g(y, w), g(y, 0.5) with a 0-d constant, h(g(y, w)) * w
 * with h's function named f as the broadcast's is and a macro of its own,
 * g(g(y, w), w), which takes one kernel once; h looping 12 times per
 * element, which rusticl's loop limit cut short; clmad_dot over stages:
 * y + 0.5, exp(-y) (w first), g(y, 0.5); clmad_dot(y, y) and
 * dot(exp(-y), exp(-y))), both partials policies, f32 and f64, sizes 1 to
 * 2^20, a broadcast (row) input, and the hazards that must force the held
 * work or fall back: reading y, a user seed, a retained tape run twice,
 * gradients already present, y feeding another op, y released early, the
 * loss used further, the stage's output used by another op; and the loss
 * plus another (an add hands clmad_backward's seed on): the loss kernel's
 * gradients are used when no node still to run reads the chain or its
 * inputs that take gradients (sum(c * c), 0.5 sum(a * a) run first), and
 * not otherwise (sum(y * y); 0.5 sum(g(y, w)) with g before the loss).
 * A loss kernel
 * that fails to build (injected) leaves eager's results, and is not tried
 * again. The fused runs' kernel and pass counts are checked
 * through clmad_stats. Test stage_operands_of_other_shapes: the stages'
 * w and a user stage's input as a row or a column (SHAPED, check_shaped).
 */
#include <criterion/criterion.h>

#include "support.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Branches and a data-dependent loop, as user kernels have them. */
static const char *SOURCE =
    "T f(T a, T b, T c)\n"
    "{\n"
    "    if (ad_val(c) > 0.5) return ad_mul(ad_sin(a), b);\n"
    "    T s = a;\n"
    "    for (int i = 0; i < 3 && ad_val(s) < 4; i++) s = ad_add(ad_mul(s, b), a);\n"
    "    return s;\n"
    "}\n";

enum form {
    DOT, DOT_SWAPPED, SUM, SUM_KEEPDIMS, MEAN,
    /* a stage z between y and the loss: */
    SUM_MUL, SUM_MUL_SWAPPED, MEAN_MUL, SUM_DIV, SUM_SUB_SWAPPED, SUM_ADD_SCALAR, MEAN_MUL_SCALAR, SUM_ADD,
    /* chains of stages: */
    SUM_ADD_MUL, MEAN_SQUARED_ERROR, SUM_EXP_NEG, SUM_FIVE_NEGS,
    /* user kernels as stages (USER_G, USER_H): */
    SUM_USER, MEAN_USER_SCALAR, SUM_USER_USER_MUL, SUM_USER_TWICE,
    /* clmad_dot over stages: */
    DOT_ADD_SCALAR, DOT_EXP_NEG_SWAPPED, DOT_USER_SCALAR,
    /* clmad_dot(y, y), and over stages: */
    DOT_SELF, DOT_SELF_EXP_NEG,
    /* clmad_mul(z, z): a square stage */
    SUM_SQUARE, MEAN_DIFF_SQUARED, SUM_EXP_SQUARE, SUM_SQUARE_FOUR_NEGS,
    /* a user kernel with y in two places: held, but eager under the loss */
    SUM_USER_SELF, N_FORMS
};
enum hazard {
    NONE, READ_Y, READ_Y_FIRST, SEED, RETAIN, GRAD_PRESENT, Y_USED_TWICE, RELEASE_Y, LOSS_USED, Z_USED,
    /* the loss plus another: sum(c * c) (no gradient), 0.5 * sum(a * a) (a an input of y), sum(y * y),
     * 0.5 * sum(g(y, w)) (g recorded before the loss) */
    PLUS_CONSTANT, PLUS_A, PLUS_Y, PLUS_STAGE, LAST_HAZARD = PLUS_STAGE
};
static const char *FORMS[] = {"dot(y, w)", "dot(w, y)", "sum(y)", "sum(y, keepdims)", "mean(y)", "sum(y * w)",
                              "sum(w * y)", "mean(y * w)", "sum(y / w)", "sum(w - y)", "sum(y + 0.5)",
                              "mean(y * -3)", "sum(y + w)", "sum((y + 0.5) * w)", "mean((y - w) ^ 2)", "sum(exp(-y))",
                              "sum(-(-(-(-(-y)))))", "sum(g(y, w))", "mean(g(y, 0.5))", "sum(h(g(y, w)) * w)",
                              "sum(g(g(y, w), w))", "dot(y + 0.5, w)", "dot(w, exp(-y))", "dot(g(y, 0.5), w)",
                              "dot(y, y)", "dot(exp(-y), exp(-y))", "sum(y * y)", "mean((y - w) * (y - w))",
                              "sum(exp(-(y * y)))", "sum(-(-(-(-(y * y)))))", "sum(g(y, y))"};

/* User kernels over y, as stages: a branch on the other operand, and a
 * data-dependent loop (in plain syntax) in a function named as the
 * broadcast's own (f). The loop's test is far from the values (it ends at
 * inf and NaN) and its step contracts: y comes from sin and g from tanh
 * and exp, which a device may round apart in two programs
 * (test_programs_round_alike: within TEST_PROGRAM_ULPS there), and a test
 * near the values would take other branches in fused and eager runs, or
 * repeated squaring grow the ulps apart. */
static const char *USER_G = "T g(T y, T u)\n"
                            "{\n"
                            "    if (ad_val(u) > 0) return ad_mul(ad_tanh(y), u);\n"
                            "    return ad_sub(y, ad_mul(y, ad_exp(u)));\n"
                            "}\n";
#define USER_H_FUNCTION                                                                \
    "T f(T v)\n"                                                                        \
    "{\n"                                                                               \
    "    T s = v;\n"                                                                    \
    "    for (int i = 0; i < ROUNDS && s < 1e30; i++) s = s * 0.5 + v;\n"               \
    "    return s;\n"                                                                   \
    "}\n"
static const char *USER_H = "#define ROUNDS 2\n" USER_H_FUNCTION;
/* h with a loop of 12 rounds (test long_user_loops). */
static const char *USER_H_LONG = "#define ROUNDS 12\n" USER_H_FUNCTION;
static const char *user_h_source; /* NULL: USER_H */

/* The user kernels of a context (made before y: making a kernel runs the
 * held work, as most calls do). */
static clmad_kernel *kernel_g, *kernel_h;

static void user(clmad_context *ctx, clmad_kernel *k, clmad_tensor **inputs, clmad_tensor **out)
{
    CHECK_OK(ctx, clmad_broadcast(ctx, k, inputs, out));
}
static const char *HAZARDS[] = {"none", "read y", "read y first", "seed", "retain", "grad present",
                                "y used twice", "release y", "loss used", "z used", "loss + sum(c * c)",
                                "loss + 0.5 sum(a * a)", "loss + sum(y * y)", "loss + 0.5 sum(g(y, w))"};

/* z = the stage (or chain of them) of form f over y (NULL: none); the
 * chain's intermediates are released at once (the tape keeps them). */
static clmad_tensor *stage(clmad_context *ctx, int f, clmad_tensor *y, clmad_tensor *w)
{
    clmad_tensor *z = NULL, *t = NULL;
    switch (f) {
    case SUM_ADD_MUL:
        CHECK_OK(ctx, clmad_add_scalar(ctx, y, 0.5, &t));
        CHECK_OK(ctx, clmad_mul(ctx, t, w, &z));
        break;
    case MEAN_SQUARED_ERROR:
        CHECK_OK(ctx, clmad_sub(ctx, y, w, &t));
        CHECK_OK(ctx, clmad_pow_scalar(ctx, t, 2.0, &z));
        break;
    case SUM_EXP_NEG:
    case DOT_EXP_NEG_SWAPPED:
    case DOT_SELF_EXP_NEG:
        CHECK_OK(ctx, clmad_neg(ctx, y, &t));
        CHECK_OK(ctx, clmad_exp(ctx, t, &z));
        break;
    case SUM_SQUARE: CHECK_OK(ctx, clmad_mul(ctx, y, y, &z)); break;
    case MEAN_DIFF_SQUARED:
        CHECK_OK(ctx, clmad_sub(ctx, y, w, &t));
        CHECK_OK(ctx, clmad_mul(ctx, t, t, &z));
        break;
    case SUM_EXP_SQUARE: {
        clmad_tensor *u = NULL;
        CHECK_OK(ctx, clmad_mul(ctx, y, y, &t));
        CHECK_OK(ctx, clmad_neg(ctx, t, &u));
        CHECK_OK(ctx, clmad_exp(ctx, u, &z));
        clmad_tensor_release(u);
        break;
    }
    case SUM_FIVE_NEGS: /* one more than a loss kernel takes: the first is its broadcast */
    case SUM_SQUARE_FOUR_NEGS: /* the same with a square first: the negs' kernel writes it */
        if (f == SUM_SQUARE_FOUR_NEGS)
            CHECK_OK(ctx, clmad_mul(ctx, y, y, &z));
        else
            CHECK_OK(ctx, clmad_neg(ctx, y, &z));
        for (int i = 0; i < 4; i++) {
            clmad_tensor_release(t);
            t = z;
            CHECK_OK(ctx, clmad_neg(ctx, t, &z));
        }
        break;
    case SUM_USER_SELF: {
        clmad_tensor *in[2] = {y, y};
        user(ctx, kernel_g, in, &z);
        break;
    }
    case SUM_USER:
    case SUM_USER_USER_MUL:
    case SUM_USER_TWICE: {
        clmad_tensor *in[2] = {y, w};
        user(ctx, kernel_g, in, f == SUM_USER ? &z : &t);
        clmad_tensor *again[2] = {t, w}, *u = NULL;
        if (f == SUM_USER_TWICE)
            user(ctx, kernel_g, again, &z);
        if (f == SUM_USER_USER_MUL) {
            user(ctx, kernel_h, &t, &u);
            CHECK_OK(ctx, clmad_mul(ctx, u, w, &z));
            clmad_tensor_release(u);
        }
        break;
    }
    case MEAN_USER_SCALAR:
    case DOT_USER_SCALAR: {
        double half = 0.5;
        float halff = 0.5f;
        clmad_tensor *s;
        const clmad_dtype dt = clmad_tensor_dtype(y);
        CHECK_OK(ctx, clmad_tensor_create(ctx, dt, 0, NULL, dt == CLMAD_F64 ? (void *)&half : (void *)&halff, &s));
        clmad_tensor *in[2] = {y, s};
        user(ctx, kernel_g, in, &z);
        clmad_tensor_release(s);
        break;
    }
    case SUM_MUL:
    case MEAN_MUL: CHECK_OK(ctx, clmad_mul(ctx, y, w, &z)); break;
    case SUM_MUL_SWAPPED: CHECK_OK(ctx, clmad_mul(ctx, w, y, &z)); break;
    case SUM_DIV: CHECK_OK(ctx, clmad_div(ctx, y, w, &z)); break;
    case SUM_SUB_SWAPPED: CHECK_OK(ctx, clmad_sub(ctx, w, y, &z)); break;
    case SUM_ADD: CHECK_OK(ctx, clmad_add(ctx, y, w, &z)); break;
    case SUM_ADD_SCALAR:
    case DOT_ADD_SCALAR: CHECK_OK(ctx, clmad_add_scalar(ctx, y, 0.5, &z)); break;
    case MEAN_MUL_SCALAR: CHECK_OK(ctx, clmad_mul_scalar(ctx, y, -3.0, &z)); break;
    default: break;
    }
    clmad_tensor_release(t);
    return z;
}

typedef test_results results;

/* A value of element e: mostly ordinary, with the special values among them. */
static double value(size_t e, int which)
{
    static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-40, -1e-310, 0.75};
    if (e % 97 == (size_t)(13 + which))
        return special[(e / 97 + (size_t)which) % 8];
    return sin((double)e * (1.3 + which)) * (2.0 + which);
}

static double value_of(size_t e, void *which)
{
    return value(e, *(const int *)which);
}

static clmad_tensor *make(clmad_context *ctx, clmad_dtype dt, int ndim, const size_t *shape, int which, int grad)
{
    clmad_tensor *t = test_tensor_of(ctx, dt, ndim, shape, value_of, &which);
    if (grad)
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(t, 1));
    return t;
}

typedef struct program {
    clmad_dtype dtype;
    size_t rows, cols;
    int form, hazard;
    clmad_partials_policy policy;
    int w_grad; /* w (dot's, the stages') needs a gradient too */
    int w_shape; /* the stages' w: y's shape, a row (cols,) or a column (rows, 1) */
    int full_c;  /* the broadcast's c of y's shape, not a row: only w is broadcast */
} program;
enum { W_FULL, W_ROW, W_COL, W_SCALAR };
static const char *W_SHAPES[] = {"", ", w a row", ", w a column", ", w 0-d"};

static void run(clmad_context *ctx, const program *p, results *r)
{
    size_t shape[2] = {p->rows, p->cols}, row[2] = {1, p->cols}, col[2] = {p->rows, 1};
    const size_t *w_dims = p->w_shape == W_ROW ? shape + 1 : p->w_shape == W_COL ? col : shape;
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, SOURCE, "f", 3, 1, &k));
    CHECK_OK(ctx, clmad_kernel_create(ctx, USER_G, "g", 2, 1, &kernel_g));
    CHECK_OK(ctx, clmad_kernel_create(ctx, user_h_source ? user_h_source : USER_H, "f", 1, 1, &kernel_h));
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, p->policy));
    CHECK_OK(ctx, clmad_set_retain_tape(ctx, p->hazard == RETAIN));
    clmad_tensor *a = make(ctx, p->dtype, 2, shape, 0, 1), *b = make(ctx, p->dtype, 2, shape, 1, 1);
    clmad_tensor *c = make(ctx, p->dtype, 2, p->full_c ? shape : row, 2, 0);
    clmad_tensor *w = make(ctx, p->dtype, p->w_shape == W_ROW ? 1 : p->w_shape == W_SCALAR ? 0 : 2, w_dims, 3, p->w_grad);
    clmad_tensor *in[3] = {a, b, c}, *y, *loss, *other = NULL, *z = NULL;
    clmad_stats s0, s1;
    CHECK_OK(ctx, clmad_context_stats(ctx, &s0));
    for (int step = 0; step < (p->hazard == GRAD_PRESENT ? 2 : 1); step++) {
        CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
        if (p->hazard == READ_Y_FIRST)
            test_keep(ctx, r, y);
        int axes_all = 0;
        z = stage(ctx, p->form, y, w);
        clmad_tensor *side = NULL; /* PLUS_STAGE: another user of y, on the tape before the loss */
        if (p->hazard == PLUS_STAGE) {
            clmad_tensor *gin[2] = {y, w};
            user(ctx, kernel_g, gin, &side);
        }
        clmad_tensor *x = z ? z : y;
        switch (p->form) {
        case DOT: CHECK_OK(ctx, clmad_dot(ctx, y, w, &loss)); break;
        case DOT_SWAPPED: CHECK_OK(ctx, clmad_dot(ctx, w, y, &loss)); break;
        case DOT_ADD_SCALAR:
        case DOT_USER_SCALAR: CHECK_OK(ctx, clmad_dot(ctx, x, w, &loss)); break;
        case DOT_EXP_NEG_SWAPPED: CHECK_OK(ctx, clmad_dot(ctx, w, x, &loss)); break;
        case DOT_SELF:
        case DOT_SELF_EXP_NEG: CHECK_OK(ctx, clmad_dot(ctx, x, x, &loss)); break;
        case MEAN:
        case MEAN_MUL:
        case MEAN_MUL_SCALAR:
        case MEAN_USER_SCALAR:
        case MEAN_SQUARED_ERROR:
        case MEAN_DIFF_SQUARED: CHECK_OK(ctx, clmad_mean(ctx, x, axes_all, NULL, 0, &loss)); break;
        default: CHECK_OK(ctx, clmad_sum(ctx, x, axes_all, NULL, p->form == SUM_KEEPDIMS, &loss));
        }
        test_keep(ctx, r, loss);
        if (p->hazard == Z_USED)
            CHECK_OK(ctx, clmad_exp(ctx, x, &other));
        if (p->hazard == READ_Y)
            test_keep(ctx, r, y);
        if (p->hazard == Y_USED_TWICE)
            CHECK_OK(ctx, clmad_exp(ctx, y, &other));
        if (p->hazard == RELEASE_Y) {
            clmad_tensor_release(y);
            clmad_tensor_release(z);
            y = z = NULL;
        }
        clmad_tensor *target = loss, *seed = NULL;
        if (p->hazard == LOSS_USED)
            CHECK_OK(ctx, clmad_exp(ctx, loss, &target));
        if (p->hazard >= PLUS_CONSTANT) {
            /* An add hands the seed on: the loss kernel's gradients are used
             * when no node still to run reads y, z, a or b (PLUS_CONSTANT;
             * PLUS_A's product runs before the loss's backward, but a's
             * slot is then taken, which a raw partial needs empty), not when
             * y gets another adjoint first (PLUS_Y) or later (PLUS_STAGE:
             * then they would be added apart, not as eager adds them). */
            clmad_tensor *of = p->hazard == PLUS_CONSTANT ? c : p->hazard == PLUS_A ? a : y, *sq = NULL, *r, *half;
            if (p->hazard == PLUS_STAGE)
                CHECK_OK(ctx, clmad_sum(ctx, side, 0, NULL, 0, &r));
            else
                CHECK_OK(ctx, clmad_mul(ctx, of, of, &sq));
            if (sq)
                CHECK_OK(ctx, clmad_sum(ctx, sq, 0, NULL, 0, &r));
            CHECK_OK(ctx, clmad_mul_scalar(ctx, r, 0.5, &half));
            const int halved = p->hazard == PLUS_A || p->hazard == PLUS_STAGE;
            CHECK_OK(ctx, clmad_add(ctx, loss, halved ? half : r, &target));
            /* those calls read only their operands: the fused loss's y
             * stays unwritten (the regulariser of c, after the loss) */
            if (p->hazard == PLUS_CONSTANT && clmad__fusion_enabled(ctx) && p->rows * p->cols > 1)
                cr_assert(y->held, "%sy was written by a call that does not read it", test_case());
            clmad_tensor *done[] = {sq, r, half, side};
            for (int i = 0; i < 4; i++)
                clmad_tensor_release(done[i]);
        }
        if (p->hazard == SEED) {
            size_t one = 1;
            CHECK_OK(ctx, clmad_tensor_fill(ctx, p->dtype, clmad_tensor_ndim(loss), &one, 1.0, &seed));
        }
        CHECK_OK(ctx, clmad_backward(ctx, target, seed));
        if (p->hazard == RETAIN)
            CHECK_OK(ctx, clmad_backward(ctx, target, seed));
        if (target != loss)
            clmad_tensor_release(target);
        clmad_tensor_release(seed);
        if (y && p->hazard != RELEASE_Y && step == 0)
            test_keep(ctx, r, y); /* forced after backward */
        if (z && step == 0)
            test_keep(ctx, r, z); /* forced after backward */
        clmad_tensor_release(z);
        clmad_tensor_release(y);
        clmad_tensor_release(loss);
        clmad_tensor_release(other);
        other = NULL;
    }
    CHECK_OK(ctx, clmad_context_stats(ctx, &s1));
    test_keep_grad(ctx, r, a);
    test_keep_grad(ctx, r, b);
    if (p->w_grad)
        test_keep_grad(ctx, r, w);
    clmad_tape_clear(ctx);
    r->stats.fused_losses = s1.fused_losses - s0.fused_losses;
    r->stats.fusion_fallbacks = s1.fusion_fallbacks - s0.fusion_fallbacks;
    r->stats.kernels_launched = s1.kernels_launched - s0.kernels_launched;
    r->stats.bytes_moved = s1.bytes_moved - s0.bytes_moved;
    clmad_tensor *all[] = {a, b, c, w};
    for (int i = 0; i < 4; i++)
        clmad_tensor_release(all[i]);
    clmad_kernel_release(k);
    clmad_kernel_release(kernel_g);
    clmad_kernel_release(kernel_h);
}

static clmad_context *on, *off;
/* CLMAD_TEST_SMALL=1 (make test-oclgrind): the sizes under 100 elements. */
static size_t n_sizes(size_t all, const size_t (*sizes)[2])
{
    const int small = test_small();
    size_t n = 0;
    while (n < all && (!small || sizes[n][0] * sizes[n][1] < 100))
        n++;
    return n;
}

/* The first byte where a and b differ, element by element of `size`
 * bytes; a.len if none. Bitwise, signs of zero included, except that a NaN
 * equals any NaN: IEEE 754 leaves a NaN's sign and payload open, and
 * vectorised and scalar code of one kernel do give sin(inf) different ones.
 * On a device whose primal and dual programs round sin apart (fused and
 * eager compute y in different programs), within TEST_PROGRAM_ULPS, or
 * `chain` times that for user kernels in a row (each takes the ulps
 * apart of the one before through its transcendental functions: up to 50
 * on Intel's runtime for h(g(y, w)) * w). */
static size_t first_difference(const results *a, const results *b, size_t size, int chain)
{
    const double ulps = test_programs_round_alike() ? 0 : chain * TEST_PROGRAM_ULPS;
    for (size_t at = 0; at < a->len; at += size)
        if (!test_elements_equal(a->bytes + at, b->bytes + at, size, ulps))
            return at;
    return a->len;
}

/* Two stages read w (a user kernel and a product, or g twice): a w that
 * needs a gradient would get two from one loss kernel, so the chain stops
 * (the loss may be fused below, or not at all). */
static int w_read_twice(int form)
{
    return form == SUM_USER_USER_MUL || form == SUM_USER_TWICE;
}

static void check(const program *p)
{
    test_set_case("%s %zux%zu %s%s%s%s %s %s: ", p->dtype == CLMAD_F64 ? "f64" : "f32", p->rows, p->cols,
                  FORMS[p->form], p->w_grad ? " (w needing a gradient)" : "", W_SHAPES[p->w_shape],
                  p->full_c ? ", c full" : "", HAZARDS[p->hazard], p->policy == CLMAD_PARTIALS_STORE ? "STORE" : "RECOMPUTE");
    results fused = {0}, eager = {0};
    run(on, p, &fused);
    run(off, p, &eager);
    cr_assert_eq(fused.len, eager.len, "%sresult sizes differ", test_case());
    size_t at = first_difference(&fused, &eager, p->dtype == CLMAD_F64 ? 8 : 4,
                                 p->form == SUM_USER_USER_MUL || p->form == SUM_USER_TWICE ? 4 : 1);
    cr_assert(at == fused.len, "%sfused and eager results differ at byte %zu of %zu", test_case(), at, fused.len);
    cr_assert_eq(eager.stats.fused_losses, 0, "%sfusion off fused a loss", test_case());
    /* The plain case fuses and uses the loss kernel's gradients (one
     * element reads every input as a scalar: eager then). */
    if (p->form == SUM_USER_SELF) /* the kernel would write y's gradient as two: eager */
        cr_assert_eq(fused.stats.fused_losses, 0, "%sa loss over g(y, y) was fused", test_case());
    else if ((p->hazard == NONE || p->hazard == RELEASE_Y) && p->rows * p->cols > 1 &&
             !(p->w_grad && p->w_shape && w_read_twice(p->form))) {
        cr_assert_eq(fused.stats.fused_losses, 1, "%sno fused loss", test_case());
        cr_assert_eq(fused.stats.fusion_fallbacks, 0, "%sa fallback", test_case());
    }
    if (p->hazard == SEED || p->hazard == LOSS_USED || p->hazard == PLUS_Y || p->hazard == PLUS_STAGE)
        cr_assert_eq(fused.stats.fusion_fallbacks, fused.stats.fused_losses, "%sa fused gradient was used",
                     test_case());
    if (p->hazard == PLUS_CONSTANT && p->rows * p->cols > 1) {
        cr_assert_eq(fused.stats.fused_losses, 1, "%sno fused loss", test_case());
        cr_assert_eq(fused.stats.fusion_fallbacks, 0, "%sa fallback", test_case());
    }
    if (p->hazard == READ_Y_FIRST && p->form < SUM_MUL)
        cr_assert_eq(fused.stats.fused_losses, 0, "%sfused a written y", test_case());
    free(fused.bytes);
    free(eager.bytes);
    test_set_case(NULL);
}

/* Passes over memory of a fused loss against eager's, from clmad_stats at
 * 2 x 32771 elements: a, b (and a full w) read, two gradients written; the
 * row input c adds half a pass. The stage forms make the dot's passes. A
 * context whose loss kernels write their terms for the range pass
 * (clmad__loss_terms: Intel's CPU runtime) moves two passes more. */
static void check_passes_of(int form, double expected, int w_grad, int w_shape)
{
    program p = {CLMAD_F32, 2, 32771, form, RELEASE_Y, CLMAD_PARTIALS_STORE, w_grad, w_shape, 0};
    results fused = {0}, eager = {0};
    test_set_case("passes of %s%s%s: ", FORMS[form], w_grad ? ", w needing a gradient" : "", W_SHAPES[w_shape]);
    run(on, &p, &fused);
    run(off, &p, &eager);
    double n = 2 * 32771.0 * 4, passes = (double)fused.stats.bytes_moved / n, eager_passes = (double)eager.stats.bytes_moved / n;
    const double fused_expected = expected + (clmad__loss_terms(on, -1) ? 2 : 0);
    cr_assert(passes < fused_expected + 0.6 && passes >= fused_expected, "%s%.2f passes, not %.1f", test_case(),
              passes, fused_expected);
    cr_assert(eager_passes > expected + 4.9, "%seager: %.2f passes", test_case(), eager_passes);
    cr_assert(fused.stats.kernels_launched < eager.stats.kernels_launched, "%sfused %llu kernels, eager %llu",
              test_case(), (unsigned long long)fused.stats.kernels_launched,
              (unsigned long long)eager.stats.kernels_launched);
    free(fused.bytes);
    free(eager.bytes);
    test_set_case(NULL);
}

static void check_passes(int form, double expected, int w_grad)
{
    check_passes_of(form, expected, w_grad, W_FULL);
}

/* Every loss kernel fails to build on a context with fusion on: each
 * program runs eagerly, bitwise as with fusion off, and a kernel whose loss
 * kernel failed is not rebuilt at the next step (GRAD_PRESENT runs two).
 * Its own context: the builtins' kernels remember their failures. */
static void check_build_failure(void)
{
    clmad_options opt = {0};
    clmad_context *broken = test_context_with(&opt);
    clmad__inject_build_failure(broken, CLMAD_MODE_LOSS);
    static const int forms[] = {DOT, MEAN, SUM_MUL, SUM_USER_USER_MUL};
    for (int f = 0; f < 4; f++) {
        program p = {CLMAD_F32, 3, 33, forms[f], GRAD_PRESENT, CLMAD_PARTIALS_STORE, 0, W_FULL, 0};
        test_set_case("injected build failure, %s: ", FORMS[forms[f]]);
        results fused = {0}, eager = {0};
        run(broken, &p, &fused);
        run(off, &p, &eager);
        cr_assert_eq(fused.len, eager.len, "%sresult sizes differ", test_case());
        size_t at = first_difference(&fused, &eager, 4, forms[f] == SUM_USER_USER_MUL ? 4 : 1);
        cr_assert(at == fused.len, "%sresults differ at byte %zu", test_case(), at);
        cr_assert_eq(fused.stats.fused_losses, 0, "%sa loss was fused", test_case());
        cr_assert_eq(fused.stats.kernels_launched, eager.stats.kernels_launched, "%s%llu kernels, eager %llu",
                     test_case(), (unsigned long long)fused.stats.kernels_launched,
                     (unsigned long long)eager.stats.kernels_launched);
        free(fused.bytes);
        free(eager.bytes);
    }
    /* The builtin clmad_mul's loss kernel failed above (the second step of
     * sum(y * w), y no longer fusible, summed its own held product): with
     * the compiler well again, it is still not tried. */
    clmad__inject_build_failure(broken, 0);
    program p = {CLMAD_F32, 3, 33, SUM_MUL, READ_Y_FIRST, CLMAD_PARTIALS_STORE, 0, W_FULL, 0};
    test_set_case("after an injected build failure: ");
    results again = {0};
    run(broken, &p, &again);
    cr_assert_eq(again.stats.fused_losses, 0, "%sthe failed loss kernel was built again", test_case());
    p.form = DOT;
    run(broken, &p, &again);
    cr_assert_eq(again.stats.fused_losses, 0, "%sfused a written y", test_case());
    p.hazard = NONE;
    run(broken, &p, &again);
    cr_assert_eq(again.stats.fused_losses, 1, "%sa new kernel's loss was not fused", test_case());
    free(again.bytes);
    clmad_context_release(broken);
    test_set_case(NULL);
}

/* GPUs' sums (interleaved parts) on this device, both contexts, the fused
 * one's loss kernel with lanes (several work-items per part, their terms
 * added in order: codegen_loss.c): one, eight, and as many as fill this
 * device (0: by the parts, loss_lanes.c; on 2 compute units 8 at 3 x 11
 * and 2 at 64 x 4096). */
static void check_interleaved(void)
{
    clmad_options opt = {0};
    clmad_context *saved_on = on, *saved_off = off;
    opt.disable_fusion = 1;
    off = test_context_with(&opt);
    clmad__sum_as_gpus(off, 1);
    static const size_t sizes[][2] = {{1, 7}, {3, 11}, {64, 4096}};
    const size_t n = n_sizes(3, sizes);
    for (int lanes = 0; lanes <= 8; lanes += lanes ? 7 : 1) {
        opt.disable_fusion = 0;
        on = test_context_with(&opt);
        clmad__sum_as_gpus(on, lanes);
        for (size_t s = 0; s < n; s++)
            for (int form = DOT; form < N_FORMS; form += (s == 2 || lanes == 1 ? 3 : 2)) {
                program p = {CLMAD_F32, sizes[s][0], sizes[s][1], form, NONE,
                             form % 2 ? CLMAD_PARTIALS_RECOMPUTE : CLMAD_PARTIALS_STORE, 0, W_FULL, 0};
                check(&p);
            }
        program p = {CLMAD_F32, 3, 33, SUM_MUL, SEED, CLMAD_PARTIALS_STORE, 0, W_FULL, 0};
        check(&p);
        clmad_context_release(on);
    }
    clmad_context_release(off);
    on = saved_on, off = saved_off;
}

/* The loss kernels that write their terms for the range pass (the form of
 * Intel's CPU runtime, tuning.c) on this device, against eager, and their
 * passes: ranges with tails (65535 elements: 8 ranges of 8191 or 8192), one
 * range with a tail, forms of a few kinds (user stages too), w needing a
 * gradient (few: each compiles its own variants). Only where sums go by ranges (CPUs). */
static void check_terms(void)
{
    clmad_context *saved_on = on;
    clmad_options opt = {0};
    on = test_context_with(&opt);
    clmad__loss_terms(on, 1);
    size_t one = 1;
    if (clmad__sum_by_ranges(on, 1, 1, &one)) {
        static const size_t sizes[][2] = {{3, 11}, {5, 13107}};
        const size_t n = n_sizes(2, sizes);
        if (n == 2) {
            check_passes(DOT, 5, 0);
            check_passes(SUM_MUL, 5, 0);
            check_passes(SUM_MUL, 6, 1);
        }
        static const int forms[] = {DOT, MEAN, SUM_MUL, SUM_EXP_NEG, SUM_USER_USER_MUL};
        for (size_t s = 0; s < n; s++)
            for (int f = 0; f < 5; f++) {
                program p = {CLMAD_F32, sizes[s][0], sizes[s][1], forms[f], NONE,
                             f % 2 ? CLMAD_PARTIALS_RECOMPUTE : CLMAD_PARTIALS_STORE, 0, W_FULL, 0};
                check(&p);
            }
        for (int f = 0; f < 2; f++) {
            program p = {CLMAD_F32, sizes[n - 1][0], sizes[n - 1][1], f ? MEAN_SQUARED_ERROR : DOT, NONE,
                         CLMAD_PARTIALS_STORE, 1, W_FULL, 0};
            check(&p);
        }
    }
    clmad_context_release(on);
    on = saved_on;
}

/* y = f(a, b) at ties of signed zeros, dot(y, w) with w needing a
 * gradient (y itself), then y forced: y, w's and a's gradients into out. */
static void run_ties(clmad_context *ctx, const char *source, clmad_partials_policy policy, float *out)
{
    enum { N = 8 };
    static const float A[N] = {0.0f, -0.0f, 0.0f, -0.0f, 1.0f, 0.0f, -2.0f, -0.0f};
    static const float B[N] = {-0.0f, 0.0f, 0.0f, -0.0f, -0.0f, 1.0f, -2.0f, -1.0f};
    static const float W[N] = {1, 1, 1, 1, 1, 1, 1, 1};
    size_t n = N;
    clmad_kernel *k;
    clmad_tensor *a, *b, *w, *y, *loss, *g;
    CHECK_OK(ctx, clmad_kernel_create(ctx, source, "f", 2, 1, &k));
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, policy));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, A, &a));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, B, &b));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, W, &w));
    clmad_tensor *in[2] = {a, b}, *all[3] = {a, b, w};
    for (int i = 0; i < 3; i++)
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(all[i], 1));
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    CHECK_OK(ctx, clmad_dot(ctx, y, w, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_read(y, out, N * sizeof *out));
    for (int i = 0; i < 3; i += 2) {
        CHECK_OK(ctx, clmad_tensor_grad(all[2 - i], &g));
        CHECK_OK(ctx, clmad_tensor_read(g, out + (1 + i / 2) * N, N * sizeof *out));
        clmad_tensor_release(g);
    }
    clmad_tensor *rest[] = {a, b, w, y, loss};
    for (int i = 0; i < 5; i++)
        clmad_tensor_release(rest[i]);
    clmad_kernel_release(k);
}

/* fmin and fmax at ties of signed zeros (found by test_fusion_random):
 * their values variant took the builtins, which gave fmin(+0, -0) = -0 on
 * POCL where the dual variants give the first operand, so a RECOMPUTE
 * forward, a STORE forward and the loss kernel (the dual's values)
 * disagreed: w's gradient of a fused dot(y, w) (y itself) under RECOMPUTE,
 * y forced after a fused loss under STORE (the values variant then). */
/* The lanes of an interleaved loss kernel: a fixed count wins; else the
 * fewest that, with the parts, fill compute units x 2 x the largest group,
 * in powers of two up to 8 (and 32 parts x lanes in a group). */
Test(fusion, loss_lanes_fill_the_device_unless_fixed)
{
    clmad_context *ctx = test_context();
    clmad_device_info info;
    CHECK_OK(ctx, clmad_context_device(ctx, &info));
    clmad__sum_as_gpus(ctx, 0);
    const size_t fill = (size_t)info.compute_units * 2 * info.max_work_group_size;
    const int most = info.max_work_group_size >= 256 ? 8 : (int)(info.max_work_group_size / 32);
    cr_assert_eq(clmad__loss_lanes_for(ctx, 1), most, "one part");
    cr_assert_eq(clmad__loss_lanes_for(ctx, fill), 1, "parts enough to fill the device");
    for (size_t parts = 1; parts <= 4 * fill; parts = parts * 3 + 1) {
        const int lanes = clmad__loss_lanes_for(ctx, parts);
        cr_assert(lanes >= 1 && lanes <= most && (lanes & (lanes - 1)) == 0, "%d lanes for %zu parts", lanes, parts);
        cr_assert(lanes == 1 || (size_t)lanes * parts <= fill, "%d lanes x %zu parts overfill", lanes, parts);
        cr_assert(lanes == most || (size_t)lanes * 2 * parts > fill, "%d lanes for %zu parts: too few", lanes, parts);
    }
    clmad__loss_lanes(ctx, 4);
    cr_assert_eq(clmad__loss_lanes_for(ctx, 1), 4);
    cr_assert_eq(clmad__loss_lanes_for(ctx, 4 * fill), 4);
    clmad_context_release(ctx);
}

Test(fusion, signed_zero_ties)
{
    static const char *SOURCES[] = {"T f(T a, T b) { return ad_fmin(a, b); }",
                                    "T f(T a, T b) { return fmax(a, b); }"};
    clmad_options opt = {0};
    clmad_context *fused = test_context_with(&opt);
    opt.disable_fusion = 1;
    clmad_context *eager = test_context_with(&opt);
    for (int s = 0; s < 2; s++) {
        float first[24], on_[24], off_[24];
        for (int pol = CLMAD_PARTIALS_STORE; pol <= CLMAD_PARTIALS_RECOMPUTE; pol++) {
            run_ties(fused, SOURCES[s], (clmad_partials_policy)pol, on_);
            run_ties(eager, SOURCES[s], (clmad_partials_policy)pol, off_);
            if (pol == CLMAD_PARTIALS_STORE)
                memcpy(first, off_, sizeof first);
            for (int e = 0; e < 24; e++) {
                cr_assert(memcmp(&on_[e], &off_[e], 4) == 0, "%s, %s: %s %d: fused %g, eager %g", SOURCES[s],
                          pol == CLMAD_PARTIALS_STORE ? "STORE" : "RECOMPUTE", e < 8 ? "y" : e < 16 ? "grad w" : "grad a",
                          e % 8, on_[e], off_[e]);
                cr_assert(memcmp(&first[e], &off_[e], 4) == 0, "%s: %s %d: STORE %g, RECOMPUTE %g", SOURCES[s],
                          e < 8 ? "y" : e < 16 ? "grad w" : "grad a", e % 8, first[e], off_[e]);
            }
        }
    }
    clmad_context_release(fused);
    clmad_context_release(eager);
}

/* Zeros of both signs under an add. A node given backward's seed takes its
 * stored partials whole where a kernel forms adjoint_times(1, p), which is
 * +0 for a partial of -0; fused and eager must agree on which: the loss
 * kernel of sum(y + 0.5) forms the add's adjoint as its kernel does (the
 * add hands no seed to a broadcast's output), and a loss under an add
 * (loss + sum(c * c)) takes them whole as it would at the root. Each fuses
 * and uses its gradients. (A partial of -0 itself came from rusticl's sin:
 * test_fusion's sum(y + 0.5) at 5 x 13107 there.) Into out: the loss and
 * a's and b's gradients. */
enum { N_ZERO = 8 };
static void run_zero_partials(clmad_context *ctx, int form, clmad_partials_policy policy, float *out)
{
    static const float A[N_ZERO] = {-0.0f, 0.0f, -0.0f, 1.5f, -0.0f, 2.0f, 0.0f, -1.0f};
    static const float B[N_ZERO] = {1.0f, -1.0f, -2.0f, 0.5f, 3.0f, -0.0f, 2.0f, -0.0f};
    size_t n = N_ZERO;
    clmad_kernel *k;
    clmad_tensor *a, *b, *c, *y, *t = NULL, *loss, *sq = NULL, *r = NULL, *total = NULL, *g;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T f(T a, T b) { return a * b; }", "f", 2, 1, &k));
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, policy));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, A, &a));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, B, &b));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, B, &c));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(a, 1));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(b, 1));
    clmad_tensor *in[2] = {a, b};
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    if (form == 0)
        CHECK_OK(ctx, clmad_add_scalar(ctx, y, 0.5, &t));
    if (form == 2)
        CHECK_OK(ctx, clmad_mul(ctx, y, c, &t));
    CHECK_OK(ctx, form == 3 ? clmad_dot(ctx, y, y, &loss) : clmad_sum(ctx, t ? t : y, 0, NULL, 0, &loss));
    if (form > 0) { /* the loss plus another */
        CHECK_OK(ctx, clmad_mul(ctx, c, c, &sq));
        CHECK_OK(ctx, clmad_sum(ctx, sq, 0, NULL, 0, &r));
        CHECK_OK(ctx, clmad_add(ctx, loss, r, &total));
    }
    CHECK_OK(ctx, clmad_backward(ctx, total ? total : loss, NULL));
    CHECK_OK(ctx, clmad_tensor_read(loss, out, sizeof *out));
    for (int i = 0; i < 2; i++) {
        CHECK_OK(ctx, clmad_tensor_grad(in[i], &g));
        CHECK_OK(ctx, clmad_tensor_read(g, out + 1 + i * N_ZERO, N_ZERO * sizeof *out));
        clmad_tensor_release(g);
    }
    clmad_tensor *all[] = {a, b, c, y, t, loss, sq, r, total};
    for (int i = 0; i < 9; i++)
        clmad_tensor_release(all[i]);
    clmad_kernel_release(k);
}

Test(fusion, zero_partials_under_an_add)
{
    static const char *FORMS_Z[] = {"sum(y + 0.5)", "sum(y) + sum(c * c)", "sum(y * c) + sum(c * c)",
                                    "dot(y, y) + sum(c * c)"};
    clmad_options opt = {0};
    clmad_context *fused = test_context_with(&opt);
    opt.disable_fusion = 1;
    clmad_context *eager = test_context_with(&opt);
    for (int form = 0; form < 4; form++)
        for (int pol = CLMAD_PARTIALS_STORE; pol <= CLMAD_PARTIALS_RECOMPUTE; pol++) {
            float on_[1 + 2 * N_ZERO], off_[1 + 2 * N_ZERO];
            clmad_stats s0, s1;
            CHECK_OK(fused, clmad_context_stats(fused, &s0));
            run_zero_partials(fused, form, (clmad_partials_policy)pol, on_);
            CHECK_OK(fused, clmad_context_stats(fused, &s1));
            run_zero_partials(eager, form, (clmad_partials_policy)pol, off_);
            cr_assert_eq(s1.fused_losses - s0.fused_losses, 1, "%s: not fused", FORMS_Z[form]);
            cr_assert_eq(s1.fusion_fallbacks - s0.fusion_fallbacks, 0, "%s: a fallback", FORMS_Z[form]);
            for (int e = 0; e < 1 + 2 * N_ZERO; e++)
                cr_assert(memcmp(&on_[e], &off_[e], 4) == 0, "%s, %s: %s %d: fused %g, eager %g", FORMS_Z[form],
                          pol == CLMAD_PARTIALS_STORE ? "STORE" : "RECOMPUTE", e == 0 ? "loss" : e <= N_ZERO ? "grad a" : "grad b",
                          (e - 1) % N_ZERO, on_[e], off_[e]);
        }
    clmad_context_release(fused);
    clmad_context_release(eager);
}

/* Calls between a broadcast and its loss that read no tensor leave the
 * broadcast held, so the loss and a user stage over it still fuse, bitwise
 * as eager and with as many kernels as with nothing between them: making a
 * kernel (a Python function that makes its kernels as it runs), making a
 * tensor (Python's g(y, 0.5) makes its 0-d constant there), setting the
 * partials policy. Each writing y first would launch its kernel. */
enum { BETWEEN_NOTHING, BETWEEN_KERNEL, BETWEEN_TENSOR, BETWEEN_POLICY, N_BETWEEN };

static void run_between(clmad_context *ctx, int fusing, int between, float *got, uint64_t *kernels)
{
    size_t shape[2] = {3, 11}, row[2] = {1, 11};
    float half = 0.5f;
    clmad_kernel *k, *g, *later = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, SOURCE, "f", 3, 1, &k));
    CHECK_OK(ctx, clmad_kernel_create(ctx, USER_G, "g", 2, 1, &g));
    clmad_tensor *a = make(ctx, CLMAD_F32, 2, shape, 0, 1), *b = make(ctx, CLMAD_F32, 2, shape, 1, 1);
    clmad_tensor *c = make(ctx, CLMAD_F32, 2, row, 2, 0), *w = make(ctx, CLMAD_F32, 2, shape, 3, 0);
    clmad_tensor *in[3] = {a, b, c}, *s = NULL, *y, *z, *loss, *ga, *gb;
    if (between != BETWEEN_TENSOR)
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 0, NULL, &half, &s));
    clmad_stats s0, s1;
    CHECK_OK(ctx, clmad_context_stats(ctx, &s0));
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    if (between == BETWEEN_KERNEL)
        CHECK_OK(ctx, clmad_kernel_create(ctx, USER_H, "f", 1, 1, &later));
    if (between == BETWEEN_TENSOR)
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 0, NULL, &half, &s));
    if (between == BETWEEN_POLICY)
        CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_RECOMPUTE));
    clmad_tensor *gin[2] = {y, s};
    CHECK_OK(ctx, clmad_broadcast(ctx, g, gin, &z));
    CHECK_OK(ctx, clmad_dot(ctx, z, w, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_context_stats(ctx, &s1));
    cr_assert_eq(s1.fused_losses - s0.fused_losses, fusing ? 1u : 0u, "between %d: fused losses",
                 between);
    *kernels = s1.kernels_launched - s0.kernels_launched;
    CHECK_OK(ctx, clmad_tensor_grad(a, &ga));
    CHECK_OK(ctx, clmad_tensor_grad(b, &gb));
    CHECK_OK(ctx, clmad_tensor_read(ga, got, 33 * sizeof(float)));
    CHECK_OK(ctx, clmad_tensor_read(gb, got + 33, 33 * sizeof(float)));
    CHECK_OK(ctx, clmad_tensor_read(loss, got + 66, sizeof(float)));
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_AUTO));
    clmad_tensor *all[] = {a, b, c, w, s, y, z, loss, ga, gb};
    for (int t = 0; t < 10; t++)
        clmad_tensor_release(all[t]);
    clmad_kernel_release(k);
    clmad_kernel_release(g);
    clmad_kernel_release(later);
}

Test(fusion, calls_between_the_broadcast_and_its_loss)
{
    clmad_options opt = {0};
    clmad_context *fused = test_context_with(&opt);
    opt.disable_fusion = 1;
    clmad_context *eager = test_context_with(&opt);
    const double ulps = test_programs_round_alike() ? 0 : 4 * TEST_PROGRAM_ULPS;
    uint64_t plain = 0;
    for (int between = BETWEEN_NOTHING; between < N_BETWEEN; between++) {
        float on_[67], off_[67];
        uint64_t k_on, k_off;
        run_between(fused, 1, between, on_, &k_on);
        run_between(eager, 0, between, off_, &k_off);
        for (int e = 0; e < 67; e++)
            cr_assert(test_elements_equal(&on_[e], &off_[e], 4, ulps), "between %d: element %d: fused %g, eager %g",
                      between, e, on_[e], off_[e]);
        if (between == BETWEEN_NOTHING)
            plain = k_on;
        cr_assert(k_on < k_off, "between %d: fused %llu kernels, eager %llu", between, (unsigned long long)k_on,
                  (unsigned long long)k_off);
        cr_assert_eq(k_on, plain, "between %d: %llu kernels, %llu with nothing between", between,
                     (unsigned long long)k_on, (unsigned long long)plain);
    }
    clmad_context_release(fused);
    clmad_context_release(eager);
}

/* The contexts on (fusion on) and off, with default options. */
static void open_on_and_off(clmad_options *opt)
{
    on = test_context_with(opt);
    opt->disable_fusion = 1;
    off = test_context_with(opt);
}

Test(fusion, bitwise_equal_to_eager, .timeout = 900)
{
    clmad_options opt = {0};
    open_on_and_off(&opt);
    int64_t v;
    CHECK_OK(off, clmad_context_get_param(off, CLMAD_PARAM_DISABLE_FUSION, &v));
    cr_assert_eq(v, 1);
    static const size_t sizes[][2] = {{1, 1}, {1, 7}, {3, 11}, {5, 13107}, {1024, 1024}};
    const size_t n = n_sizes(5, sizes);
    if (n == 5) {
        check_passes(DOT, 5, 0);
        check_passes(SUM_MUL, 5, 0);
        check_passes(MEAN_MUL, 5, 0);
        check_passes(MEAN, 4, 0);
        check_passes(SUM_ADD_SCALAR, 4, 0);
        check_passes(SUM_ADD_MUL, 5, 0);
        check_passes(MEAN_SQUARED_ERROR, 5, 0);
        check_passes(SUM_EXP_NEG, 4, 0);
        /* user kernels as stages: w read by g (and by the product) */
        check_passes(SUM_USER, 5, 0);
        check_passes(SUM_USER_USER_MUL, 6, 0);
        /* w needs a gradient: written too; dot's is y (written), times the
         * seed into w's gradient in backward as eager does (2 passes) */
        check_passes(DOT, 8, 1);
        check_passes(SUM_MUL, 6, 1);
        check_passes(MEAN_SQUARED_ERROR, 6, 1);
        check_passes(SUM_USER, 6, 1); /* w's gradient from the user stage */
        check_passes(DOT_ADD_SCALAR, 5, 0); /* dot over stages: as over y */
        check_passes(DOT_EXP_NEG_SWAPPED, 5, 0);
        check_passes(DOT_USER_SCALAR, 5, 0);
        check_passes(DOT_EXP_NEG_SWAPPED, 8, 1);
        check_passes(DOT_SELF, 4, 0); /* no w to read */
        check_passes(DOT_SELF_EXP_NEG, 4, 0);
        check_passes(SUM_SQUARE, 4, 0); /* as dot(y, y) */
        check_passes(MEAN_DIFF_SQUARED, 5, 0);
        check_passes(SUM_EXP_SQUARE, 4, 0);
        check_passes(MEAN_DIFF_SQUARED, 6, 1);
    }
    for (size_t s = 0; s < n; s++)
        for (int form = DOT; form < N_FORMS; form++)
            for (int pol = 0; pol < 2; pol++) {
                if (sizes[s][0] == 1024 && form > MEAN && form != SUM_MUL && form != MEAN_MUL)
                    continue; /* the other stages at the smaller sizes */
                if (sizes[s][1] == 1 && form > MEAN)
                    continue; /* one element is eager anyway (every input a scalar) */
                program p = {CLMAD_F32, sizes[s][0], sizes[s][1], form, NONE,
                             pol ? CLMAD_PARTIALS_RECOMPUTE : CLMAD_PARTIALS_STORE, 0, W_FULL, 0};
                check(&p);
            }
    static const int hazard_forms[] = {DOT, SUM, MEAN, SUM_MUL, MEAN_MUL_SCALAR, MEAN_SQUARED_ERROR,
                                       SUM_USER_USER_MUL, DOT_EXP_NEG_SWAPPED, DOT_SELF, MEAN_DIFF_SQUARED};
    for (int hazard = READ_Y; hazard <= LAST_HAZARD; hazard++)
        for (int f = 0; f < 10; f++)
            for (int pol = 0; pol < 2; pol++) {
                int form = hazard_forms[f];
                program p = {CLMAD_F32, 3, 33, form, hazard, pol ? CLMAD_PARTIALS_RECOMPUTE : CLMAD_PARTIALS_STORE, 0, W_FULL, 0};
                if ((hazard == Z_USED && form < SUM_MUL) || (hazard == PLUS_STAGE && form >= SUM_MUL))
                    continue; /* no stage; PLUS_STAGE's g over y would end a chain's fusion */
                check(&p);
            }
    /* w needing a gradient, where w is a tensor of y's shape */
    static const int w_forms[] = {DOT, DOT_SWAPPED, SUM_MUL, SUM_MUL_SWAPPED, MEAN_MUL, SUM_DIV,
                                  SUM_SUB_SWAPPED, SUM_ADD_MUL, MEAN_SQUARED_ERROR, SUM_USER, SUM_USER_USER_MUL,
                                  DOT_ADD_SCALAR, DOT_EXP_NEG_SWAPPED, DOT_USER_SCALAR, MEAN_DIFF_SQUARED};
    for (size_t s = 1; s < n && s < 4; s++)
        for (int f = 0; f < 15; f++)
            for (int pol = 0; pol < 2; pol++) {
                program p = {CLMAD_F32, sizes[s][0], sizes[s][1], w_forms[f], NONE,
                             pol ? CLMAD_PARTIALS_RECOMPUTE : CLMAD_PARTIALS_STORE, 1, W_FULL, 0};
                check(&p);
            }
    for (int hazard = READ_Y; hazard <= LAST_HAZARD; hazard++)
        for (int f = 0; f < 3; f++) {
            program p = {CLMAD_F32, 3, 33, f == 0 ? DOT : f == 1 ? SUM_MUL : MEAN_SQUARED_ERROR, hazard,
                         hazard % 2 ? CLMAD_PARTIALS_RECOMPUTE : CLMAD_PARTIALS_STORE, 1, W_FULL, 0};
            if ((hazard != Z_USED || p.form != DOT) && (hazard != PLUS_STAGE || p.form == DOT))
                check(&p);
        }
    /* f64: a form of each kind (each compiles its own variants) */
    static const int f64_forms[] = {DOT, MEAN, SUM_MUL_SWAPPED, MEAN_SQUARED_ERROR, SUM_EXP_NEG, SUM_USER_USER_MUL,
                                    DOT_USER_SCALAR, DOT_SELF_EXP_NEG, MEAN_DIFF_SQUARED};
    for (int f = 0; f < 9 && test_device_fp64(); f++) {
        program p = {CLMAD_F64, 7, 33, f64_forms[f], NONE, f % 2 ? CLMAD_PARTIALS_STORE : CLMAD_PARTIALS_RECOMPUTE, 0, W_FULL, 0};
        check(&p);
    }
    check_build_failure();
    check_interleaved();
    check_terms();
    clmad_context_release(on);
    clmad_context_release(off);
}

/* A user stage that loops 12 times per element, over ranges of 8192
 * elements (CPUs). rusticl's llvmpipe ends all the loops of a work-item
 * once they made 65535 iterations together: a range per work-item lost
 * its last elements (their gradients unwritten, the loss short), as
 * h(g(y, w)) * w did with runs (docs/design-notes.md). */
Test(fusion, long_user_loops, .timeout = 300)
{
    clmad_options opt = {0};
    on = test_context_with(&opt);
    opt.disable_fusion = 1;
    off = test_context_with(&opt);
    user_h_source = USER_H_LONG;
    static const size_t sizes[][2] = {{3, 11}, {5, 13107}};
    const size_t s = n_sizes(2, sizes) - 1; /* 3 x 11 under CLMAD_TEST_SMALL (Oclgrind) */
    program p = {CLMAD_F32, sizes[s][0], sizes[s][1], SUM_USER_USER_MUL, NONE, CLMAD_PARTIALS_STORE, 0, W_FULL, 0};
    check(&p);
    clmad_context_release(on);
    clmad_context_release(off);
}

/* Stage operands of other shapes than y's that need no gradient: a row w
 * (cols,) or a column w (rows, 1), read by the loss kernel at each
 * element's broadcast offset. Sizes: rows shorter than a run (3 x 11),
 * runs crossing rows (5 x 13107: 13107 = 3 x 17 x 257), runs aligned with
 * rows (64 x 4096), one row (1 x 7: the row w is y's elements, the column
 * one value); with c full, the broadcast reads no strided input and only
 * w is indexed by coordinates. Also: the hazards, f64, GPUs' sums with and
 * without lanes, the terms form, and the passes: w adds none. A builtin
 * stage's w, or a user stage's input, of these shapes (or 0-d) that needs
 * a gradient is fused too: the loss kernel writes its contributions at y's
 * shape, and backward sums them to w's as the stage's node sums its
 * temporary. */
typedef struct shaped {
    int form, w_shape;
} shaped;
static const shaped SHAPED[] = {{SUM_MUL, W_ROW},      {SUM_MUL_SWAPPED, W_COL}, {MEAN_MUL, W_ROW},
                                {SUM_ADD, W_COL},      {SUM_SUB_SWAPPED, W_COL}, {SUM_DIV, W_COL},
                                {SUM_DIV, W_ROW},      {MEAN_SQUARED_ERROR, W_COL}, {SUM_ADD_MUL, W_ROW},
                                {SUM_USER, W_ROW},     {SUM_USER, W_COL},        {SUM_USER_USER_MUL, W_ROW},
                                {SUM_USER_TWICE, W_COL}};
enum { N_SHAPED = sizeof SHAPED / sizeof SHAPED[0] };

/* The fused context launches as many kernels for p as for p with a w of
 * y's shape: the stages fused alike. (Without them fused, the stage under
 * the loss is the loss kernel's broadcast, which also counts one fused
 * loss: y is written first, and its node's backward runs.) */
static void check_fused_as_full(const program *p)
{
    program full = *p;
    full.w_shape = W_FULL;
    results shaped = {0}, same = {0};
    run(on, p, &shaped);
    run(on, &full, &same);
    cr_assert_eq(shaped.stats.kernels_launched, same.stats.kernels_launched,
                 "%s%llu kernels launched, with a full w %llu", test_case(),
                 (unsigned long long)shaped.stats.kernels_launched, (unsigned long long)same.stats.kernels_launched);
    free(shaped.bytes);
    free(same.bytes);
}

/* The forms of SHAPED, every `step`-th from the first, at rows x cols,
 * each also with c full where its index is a multiple of full_c (> 0):
 * each is a compile or two on POCL, so a few of them at the larger sizes.
 * With as_full, each also launches as many kernels as with a full w. */
static void check_shaped(size_t rows, size_t cols, int step, int full_c, int as_full)
{
    for (int f = 0; f < N_SHAPED; f += step)
        for (int c = 0; c <= (full_c > 0 && f % full_c == 0); c++) {
            program p = {CLMAD_F32, rows, cols, SHAPED[f].form, NONE,
                         (f + c) % 2 ? CLMAD_PARTIALS_RECOMPUTE : CLMAD_PARTIALS_STORE, 0, SHAPED[f].w_shape, c};
            check(&p);
            if (as_full) {
                test_set_case("%s, as with a full w: ", FORMS[p.form]);
                check_fused_as_full(&p);
                test_set_case(NULL);
            }
        }
}

Test(fusion, stage_operands_of_other_shapes, .timeout = 900)
{
    clmad_options opt = {0};
    open_on_and_off(&opt);
    static const size_t sizes[][2] = {{1, 7}, {3, 11}, {5, 13107}, {64, 4096}};
    const int large = n_sizes(4, sizes) == 4; /* not with CLMAD_TEST_SMALL (Oclgrind) */
    if (large) { /* over 2 rows: a row w is half a pass (as c is), a column w none */
        check_passes_of(SUM_MUL, 4.5, 0, W_ROW);
        check_passes_of(SUM_DIV, 4, 0, W_COL);
        check_passes_of(SUM_USER, 4.5, 0, W_ROW);
        check_passes_of(SUM_USER_USER_MUL, 4, 0, W_COL);
        /* needing a gradient: its contributions written (a pass) and summed to its shape
         * (another; over the 2 rows, two passes of clmad__sum_to_shape: one more) */
        check_passes_of(SUM_MUL, 7.5, 1, W_ROW);
        check_passes_of(SUM_ADD, 6.5, 1, W_COL);
        check_passes_of(SUM_USER, 7.5, 1, W_ROW);
    }
    check_shaped(3, 11, 1, 6, 1);
    check_shaped(1, 7, 12, 0, 0);
    if (large) {
        check_shaped(5, 13107, 3, 6, 0);
        check_shaped(64, 4096, 6, 6, 0);
    }
    for (int hazard = READ_Y; hazard <= Z_USED; hazard++)
        for (int f = 0; f < 3; f++) {
            static const shaped forms[] = {{SUM_MUL, W_ROW}, {SUM_DIV, W_COL}, {SUM_USER_USER_MUL, W_ROW}};
            program p = {CLMAD_F32, 3, 33, forms[f].form, hazard,
                         f % 2 ? CLMAD_PARTIALS_RECOMPUTE : CLMAD_PARTIALS_STORE, 0, forms[f].w_shape, 0};
            check(&p);
        }
    /* needing a gradient (a learnable bias row, a scale column): the loss
     * kernel writes its per-element contributions, summed to w's shape as
     * the stage's node sums them (a builtin's w, a user stage's input) */
    for (size_t s = 1; s < (large ? 3u : 2u); s++)
        for (int f = 0; f < N_SHAPED; f++) {
            program p = {CLMAD_F32, sizes[s][0], sizes[s][1], SHAPED[f].form, NONE,
                         (f + (int)s) % 2 ? CLMAD_PARTIALS_RECOMPUTE : CLMAD_PARTIALS_STORE, 1, SHAPED[f].w_shape, 0};
            check(&p);
        }
    static const int scalar_forms[] = {SUM_MUL, SUM_ADD, MEAN_MUL, SUM_DIV, SUM_ADD_MUL, MEAN_SQUARED_ERROR};
    for (int f = 0; f < 12; f++) { /* a 0-d w, with a gradient and without */
        program p = {CLMAD_F32, 3, 33, scalar_forms[f / 2], NONE,
                     f % 4 < 2 ? CLMAD_PARTIALS_STORE : CLMAD_PARTIALS_RECOMPUTE, f % 2, W_SCALAR, 0};
        check(&p);
    }
    for (int hazard = READ_Y; hazard <= LAST_HAZARD; hazard++) {
        program p = {CLMAD_F32, 3, 33, hazard % 2 ? SUM_ADD : MEAN_MUL, hazard,
                     hazard % 3 ? CLMAD_PARTIALS_STORE : CLMAD_PARTIALS_RECOMPUTE, 1, hazard % 2 ? W_ROW : W_COL, 0};
        if (hazard != PLUS_STAGE)
            check(&p);
    }
    for (int f = 0; f < 2 && test_device_fp64(); f++) {
        program p = {CLMAD_F64, 7, 33, SHAPED[9 * f].form, NONE, f ? CLMAD_PARTIALS_STORE : CLMAD_PARTIALS_RECOMPUTE,
                     0, SHAPED[9 * f].w_shape, f};
        check(&p);
    }
    /* GPUs' sums, with lanes and without */
    clmad_context *saved_on = on, *saved_off = off;
    opt.disable_fusion = 1;
    off = test_context_with(&opt);
    clmad__sum_as_gpus(off, 1);
    for (int lanes = 0; lanes <= 8; lanes += lanes ? 7 : 1) {
        opt.disable_fusion = 0;
        on = test_context_with(&opt);
        clmad__sum_as_gpus(on, lanes);
        check_shaped(3, 11, lanes != 1 ? 6 : 12, 0, 0);
        if (large && lanes != 1)
            check_shaped(64, 4096, 6, 0, 0);
        clmad_context_release(on);
    }
    clmad_context_release(off);
    off = saved_off;
    /* the terms form (Intel's CPU runtime), where sums go by ranges */
    opt.disable_fusion = 0;
    on = test_context_with(&opt);
    clmad__loss_terms(on, 1);
    size_t one = 1;
    if (clmad__sum_by_ranges(on, 1, 1, &one)) {
        check_shaped(3, 11, 6, 0, 0);
        if (large)
            check_shaped(5, 13107, 6, 0, 0);
    }
    clmad_context_release(on);
    on = saved_on;
    clmad_context_release(on);
    clmad_context_release(off);
}
