/* SPDX-License-Identifier: Apache-2.0 */
/* Randomised plain syntax (issue 15). Each program of plain_gen.h, drawn
 * from a fixed seed (2 to 4 T inputs, 1 to 3 outputs, a helper, locals,
 * compound assignments, branches and loops on T, math names, real and int
 * operands), is printed in plain syntax (a) and in the canonical ad_ form
 * (b), and interpreted on the host in double (c). On POCL:
 *   - (a) and (b) give bitwise identical outputs and partials
 *     (clmad_broadcast_partials, f32 and f64) and primal outputs (f32);
 *   - (a) in f64 agrees with (c): values to 1e-12, partials with central
 *     finite differences of (c) (h = 1e-6) to 1e-6, both relative to
 *     max(1, |reference|);
 *   - on every other program, the gradients of clmad_backward under the
 *     STORE and the RECOMPUTE policy are bitwise equal between (a) and (b)
 *     and agree with the finite differences.
 * Sample points lie at least 1e-3 from every branch threshold, kink and
 * fmax/fmin tie that the evaluation meets, and the finite differences at
 * +-h and +-2h take the same branches and agree (else the point is
 * redrawn); a program with too few such points or with huge values is
 * redrawn from the next seed. Messages carry the seed and both sources. */
#include "plain_gen.h"

#define N_PROGRAMS 12
#define PARTS 3
#define N_POINTS 32
#define BASE_SEED 1500000u
#define FD_H 1e-6
#define MARGIN 1e-3
#define MAX_ABS 1e4

typedef struct pr_case {
    pg_prog prog;
    int n_in, n_out;
    char *plain, *ad;
    double x[N_POINTS][PG_MAX_IN];
    double y[N_POINTS][PG_MAX_OUT];
    double fd[N_POINTS][PG_MAX_OUT][PG_MAX_IN];
} pr_case;

/* The outputs at x with input j moved by dx; returns the branch trace. */
static uint64_t eval_moved(const pg_prog *p, const double *x, int n_in, int j, double dx, double *y)
{
    double moved[PG_MAX_IN];
    memcpy(moved, x, (size_t)n_in * sizeof *x);
    moved[j] += dx;
    pg_eval ev;
    pg_eval_main(p, moved, y, &ev);
    return ev.trace;
}

/* Fills c->y and c->fd at x if x is a good point: far from branches and
 * kinks, moderate values, consistent differences. */
static int accept_point(pr_case *c, int pt, const double *x)
{
    const pg_prog *p = &c->prog;
    pg_eval ev;
    double y[PG_MAX_OUT];
    pg_eval_main(p, x, y, &ev);
    if (ev.margin < MARGIN || !(ev.maxabs < MAX_ABS))
        return 0;
    for (int j = 0; j < c->n_in; j++) {
        double yp[PG_MAX_OUT], ym[PG_MAX_OUT], yp2[PG_MAX_OUT], ym2[PG_MAX_OUT];
        if (eval_moved(p, x, c->n_in, j, FD_H, yp) != ev.trace || eval_moved(p, x, c->n_in, j, -FD_H, ym) != ev.trace ||
            eval_moved(p, x, c->n_in, j, 2 * FD_H, yp2) != ev.trace ||
            eval_moved(p, x, c->n_in, j, -2 * FD_H, ym2) != ev.trace)
            return 0;
        for (int o = 0; o < c->n_out; o++) {
            double d1 = (yp[o] - ym[o]) / (2 * FD_H), d2 = (yp2[o] - ym2[o]) / (4 * FD_H);
            if (!bs_close(d1, d2, 1e-8))
                return 0; /* curvature or cancellation too large for this step */
            c->fd[pt][o][j] = d1;
        }
    }
    memcpy(c->x[pt], x, (size_t)c->n_in * sizeof *x);
    memcpy(c->y[pt], y, (size_t)c->n_out * sizeof *y);
    return 1;
}

/* Program i: the first seed from BASE_SEED + 1000 i on whose program
 * N_POINTS good points can be drawn. */
static void make_case(pr_case *c, int i)
{
    memset(c, 0, sizeof *c);
    for (int attempt = 0; attempt < 50; attempt++) {
        uint64_t seed = BASE_SEED + 1000u * (uint64_t)i + (uint64_t)attempt, rng = seed ^ 0xA5A5A5A5u;
        c->n_in = 2 + i % 3;
        c->n_out = 1 + (i / 3) % 3;
        pg_generate(&c->prog, seed, c->n_in, c->n_out);
        int got = 0;
        for (int tries = 0; tries < 40 * N_POINTS && got < N_POINTS; tries++) {
            double x[PG_MAX_IN];
            for (int j = 0; j < c->n_in; j++)
                x[j] = bs_uniform(&rng, -2, 2);
            got += accept_point(c, got, x);
        }
        if (got == N_POINTS) {
            c->plain = pg_print(&c->prog, PG_PLAIN, "f", NULL);
            c->ad = pg_print(&c->prog, PG_AD, "f", NULL);
            return;
        }
    }
    cr_assert_fail("program %d: no seed in 50 gives %d good points", i, N_POINTS);
}

static void free_case(pr_case *c)
{
    free(c->plain);
    free(c->ad);
}

#define WHAT "seed %llu (%s)\n--- plain ---\n%s--- ad_ ---\n%s"
#define WHO(c, dtype) (unsigned long long)(c)->prog.seed, (dtype) == CLMAD_F64 ? "f64" : "f32", (c)->plain, (c)->ad

static void make_inputs(clmad_context *ctx, const pr_case *c, clmad_dtype dtype, clmad_tensor **in)
{
    size_t shape[1] = {N_POINTS};
    for (int j = 0; j < c->n_in; j++) {
        double col[N_POINTS];
        for (int e = 0; e < N_POINTS; e++)
            col[e] = c->x[e][j];
        in[j] = bs_tensor(ctx, dtype, 1, shape, col);
    }
}

/* Partials of both kernels in dtype: bitwise equal; in f64 also against the
 * host. In f32 the primal outputs too. */
static void check_partials(clmad_context *ctx, const pr_case *c, clmad_kernel *kp, clmad_kernel *ka, clmad_dtype dtype)
{
    int n = c->n_in, m = c->n_out;
    clmad_tensor *in[PG_MAX_IN], *out[2][PG_MAX_OUT] = {{0}}, *der[2][PG_MAX_OUT * PG_MAX_IN] = {{0}};
    make_inputs(ctx, c, dtype, in);
    CHECK_OK(ctx, clmad_broadcast_partials(ctx, kp, in, NULL, out[0], der[0]));
    CHECK_OK(ctx, clmad_broadcast_partials(ctx, ka, in, NULL, out[1], der[1]));
    for (int o = 0; o < m; o++) {
        cr_assert(bs_bitwise_equal(ctx, out[0][o], out[1][o]), "output %d of plain and ad_ differ: " WHAT, o,
                  WHO(c, dtype));
        for (int j = 0; j < n; j++)
            cr_assert(bs_bitwise_equal(ctx, der[0][o * n + j], der[1][o * n + j]),
                      "d y%d / d x%d of plain and ad_ differ: " WHAT, o, j, WHO(c, dtype));
    }
    if (dtype == CLMAD_F64) {
        size_t shape[1] = {N_POINTS};
        for (int o = 0; o < m; o++) {
            double *y = bs_read(ctx, out[0][o], dtype, 1, shape);
            for (int e = 0; e < N_POINTS; e++)
                cr_assert(bs_close(y[e], c->y[e][o], 1e-12), "point %d: y%d = %.17g, host %.17g: " WHAT, e, o, y[e],
                          c->y[e][o], WHO(c, dtype));
            free(y);
            for (int j = 0; j < n; j++) {
                double *d = bs_read(ctx, der[0][o * n + j], dtype, 1, shape);
                for (int e = 0; e < N_POINTS; e++)
                    cr_assert(bs_close(d[e], c->fd[e][o][j], 1e-6),
                              "point %d: d y%d / d x%d = %.17g, finite difference %.17g: " WHAT, e, o, j, d[e],
                              c->fd[e][o][j], WHO(c, dtype));
                free(d);
            }
        }
    } else {
        clmad_tensor *prim[2][PG_MAX_OUT] = {{0}};
        CHECK_OK(ctx, clmad_broadcast(ctx, kp, in, prim[0]));
        CHECK_OK(ctx, clmad_broadcast(ctx, ka, in, prim[1]));
        for (int o = 0; o < m; o++)
            cr_assert(bs_bitwise_equal(ctx, prim[0][o], prim[1][o]), "primal output %d of plain and ad_ differ: " WHAT,
                      o, WHO(c, dtype));
        for (int f = 0; f < 2; f++)
            bs_release_all(prim[f], m);
    }
    for (int f = 0; f < 2; f++) {
        bs_release_all(out[f], m);
        bs_release_all(der[f], m * n);
    }
    bs_release_all(in, n);
}

/* The gradient of sum_o y_o * seed under policy, for kernel k (f64): one
 * host array per input, seed[e] = 1 + e / N_POINTS. */
static void backward_grads(clmad_context *ctx, const pr_case *c, clmad_kernel *k, clmad_partials_policy policy,
                           double (*grad)[N_POINTS])
{
    size_t shape[1] = {N_POINTS};
    clmad_tensor *in[PG_MAX_IN], *out[PG_MAX_OUT] = {0};
    make_inputs(ctx, c, CLMAD_F64, in);
    for (int j = 0; j < c->n_in; j++)
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(in[j], 1));
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, policy));
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, out));
    clmad_tensor *total = clmad_tensor_retain(out[0]);
    for (int o = 1; o < c->n_out; o++) {
        clmad_tensor *sum;
        CHECK_OK(ctx, clmad_add(ctx, total, out[o], &sum));
        clmad_tensor_release(total);
        total = sum;
    }
    double s[N_POINTS];
    for (int e = 0; e < N_POINTS; e++)
        s[e] = 1 + (double)e / N_POINTS;
    clmad_tensor *seed = bs_tensor(ctx, CLMAD_F64, 1, shape, s);
    CHECK_OK(ctx, clmad_backward(ctx, total, seed));
    for (int j = 0; j < c->n_in; j++) {
        clmad_tensor *g = NULL;
        CHECK_OK(ctx, clmad_tensor_grad(in[j], &g));
        double *h = bs_read(ctx, g, CLMAD_F64, 1, shape);
        memcpy(grad[j], h, sizeof grad[j]);
        free(h);
        clmad_tensor_release(g);
    }
    clmad_tensor_release(seed);
    clmad_tensor_release(total);
    bs_release_all(out, c->n_out);
    bs_release_all(in, c->n_in);
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_AUTO));
}

static void check_backward(clmad_context *ctx, const pr_case *c, clmad_kernel *kp, clmad_kernel *ka)
{
    static const clmad_partials_policy POLICIES[] = {CLMAD_PARTIALS_STORE, CLMAD_PARTIALS_RECOMPUTE};
    for (int pi = 0; pi < 2; pi++) {
        const char *name = pi ? "RECOMPUTE" : "STORE";
        double gp[PG_MAX_IN][N_POINTS], ga[PG_MAX_IN][N_POINTS];
        backward_grads(ctx, c, kp, POLICIES[pi], gp);
        backward_grads(ctx, c, ka, POLICIES[pi], ga);
        for (int j = 0; j < c->n_in; j++) {
            cr_assert(!memcmp(gp[j], ga[j], sizeof gp[j]), "%s: gradients of x%d of plain and ad_ differ: " WHAT, name,
                      j, WHO(c, CLMAD_F64));
            for (int e = 0; e < N_POINTS; e++) {
                double want = 0;
                for (int o = 0; o < c->n_out; o++)
                    want += (1 + (double)e / N_POINTS) * c->fd[e][o][j];
                cr_assert(bs_close(gp[j][e], want, 1e-6), "%s: point %d: gradient of x%d = %.17g, expected %.17g: " WHAT,
                          name, e, j, gp[j][e], want, WHO(c, CLMAD_F64));
            }
        }
    }
}

static void run_part(int part)
{
    clmad_context *ctx = test_context();
    int ran = 0;
    for (int i = part; i < N_PROGRAMS; i += PARTS, ran++) {
        pr_case *c = malloc(sizeof *c);
        cr_assert_not_null(c);
        make_case(c, i);
        clmad_kernel *kp = NULL, *ka = NULL;
        clmad_status st = clmad_kernel_create(ctx, c->ad, "f", c->n_in, c->n_out, &ka);
        cr_assert_eq(st, CLMAD_OK, "the ad_ form does not build: %s\n" WHAT, clmad_last_error(ctx), WHO(c, CLMAD_F32));
        st = clmad_kernel_create(ctx, c->plain, "f", c->n_in, c->n_out, &kp);
        cr_assert_eq(st, CLMAD_OK, "the plain form does not build: %s\n" WHAT, clmad_last_error(ctx),
                     WHO(c, CLMAD_F32));
        check_partials(ctx, c, kp, ka, CLMAD_F64);
        check_partials(ctx, c, kp, ka, CLMAD_F32);
        if (i % 2 == 0)
            check_backward(ctx, c, kp, ka);
        clmad_kernel_release(kp);
        clmad_kernel_release(ka);
        free_case(c);
        free(c);
    }
    cr_assert_gt(ran, 0);
    clmad_context_release(ctx);
}

Test(plain_random, part0) { run_part(0); }
Test(plain_random, part1) { run_part(1); }
Test(plain_random, part2) { run_part(2); }

/* What the whole set of programs covers (so that a change of seed or of the
 * generator's weights cannot lose a construct silently). Host only. */
Test(plain_random, coverage)
{
    unsigned char seen[F_COUNT] = {0};
    for (int i = 0; i < N_PROGRAMS; i++) {
        pr_case *c = malloc(sizeof *c);
        cr_assert_not_null(c);
        make_case(c, i);
        char *s = pg_print(&c->prog, PG_PLAIN, "f", seen);
        free(s);
        free_case(c);
        free(c);
    }
    for (int f = 0; f < F_COUNT; f++)
        cr_expect(seen[f], "no program uses: %s", PG_FEATURE_NAMES[f]);
}
