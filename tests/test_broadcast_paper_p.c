/* SPDX-License-Identifier: Apache-2.0 */
/* A multi-output broadcast in the spirit of the paper's p(A, alpha, a):
 * R^3 -> R^2, broadcast over a matrix A (rows, cols), a 0-d scalar alpha and
 * a vector a (cols,), with a branch on the value of A:
 *
 *   y0 = alpha A + sin a
 *   y1 = s alpha exp(A a),   s = -1 where A < 0, else +1
 *
 * Partials (s as above, E = exp(A a)):
 *   dy0/dA = alpha   dy0/dalpha = A         dy0/da = cos a
 *   dy1/dA = s alpha a E   dy1/dalpha = s E   dy1/da = s alpha A E
 * Checked: outputs and the 6 partials (all inputs active, and subsets),
 * clmad_broadcast's outputs (to within 16 ulps: another program), and clmad_broadcast_jvp with random
 * tangents (some NULL) against sum_j d out_o / d in_j t_j on the host. */
#include "bcast_support.h"

static const char *P_SRC =
    "void p(T A, T alpha, T a, T *y0, T *y1)\n"
    "{\n"
    "    *y0 = ad_add(ad_mul(alpha, A), ad_sin(a));\n"
    "    *y1 = ad_mul(ad_exp(ad_mul(A, a)), alpha);\n"
    "    if (ad_val(A) < 0)\n"
    "        *y1 = ad_neg(*y1);\n"
    "}\n";

#define ROWS 29
#define COLS 41

enum { IN_A, IN_ALPHA, IN_VEC, N_IN };

/* Values and the Jacobian of p at one element: y[o], J[o][j]. */
static void p_ref(double A, double alpha, double a, double y[2], double J[2][N_IN])
{
    double s = A < 0 ? -1 : 1, E = exp(A * a);
    y[0] = alpha * A + sin(a);
    y[1] = s * alpha * E;
    J[0][IN_A] = alpha, J[0][IN_ALPHA] = A, J[0][IN_VEC] = cos(a);
    J[1][IN_A] = s * alpha * a * E, J[1][IN_ALPHA] = s * E, J[1][IN_VEC] = s * alpha * A * E;
}

typedef struct p_case {
    clmad_context *ctx;
    clmad_kernel *k;
    clmad_dtype dtype;
    int ndim[N_IN];
    size_t shape[N_IN][CLMAD_MAX_DIMS];
    double *host[N_IN];
    clmad_tensor *in[N_IN];
} p_case;

static const size_t OUT_SHAPE[2] = {ROWS, COLS};

static void fill(p_case *pc, double **host, clmad_tensor **t, uint64_t *seed, double lo, double hi)
{
    for (int j = 0; j < N_IN; j++) {
        size_t n = bs_numel(pc->ndim[j], pc->shape[j]);
        host[j] = malloc(n * sizeof(double));
        cr_assert_not_null(host[j]);
        for (size_t e = 0; e < n; e++)
            host[j][e] = bs_uniform(seed, lo, hi);
        t[j] = bs_tensor(pc->ctx, pc->dtype, pc->ndim[j], pc->shape[j], host[j]);
    }
}

static void case_init(p_case *pc, clmad_context *ctx, clmad_kernel *k, clmad_dtype dtype, uint64_t seed)
{
    memset(pc, 0, sizeof *pc);
    pc->ctx = ctx, pc->k = k, pc->dtype = dtype;
    pc->ndim[IN_A] = 2, pc->shape[IN_A][0] = ROWS, pc->shape[IN_A][1] = COLS;
    pc->ndim[IN_ALPHA] = 0;
    pc->ndim[IN_VEC] = 1, pc->shape[IN_VEC][0] = COLS;
    fill(pc, pc->host, pc->in, &seed, -1.5, 1.5);
    /* Half of A negative (the branch), and a few exact zeros of A (s = +1). */
    pc->host[IN_A][0] = 0, pc->host[IN_A][COLS + 3] = 0;
    clmad_tensor_release(pc->in[IN_A]);
    pc->in[IN_A] = bs_tensor(ctx, dtype, 2, pc->shape[IN_A], pc->host[IN_A]);
}

static void case_free(p_case *pc)
{
    for (int j = 0; j < N_IN; j++) {
        clmad_tensor_release(pc->in[j]);
        free(pc->host[j]);
    }
}

static void element(const p_case *pc, double *const *host, size_t e, double x[N_IN])
{
    for (int j = 0; j < N_IN; j++)
        x[j] = host[j][bs_bindex(e, 2, OUT_SHAPE, pc->ndim[j], pc->shape[j])];
}

static clmad_kernel *p_kernel(clmad_context *ctx)
{
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, P_SRC, "p", N_IN, 2, &k));
    return k;
}

static double tol_of(clmad_dtype dtype) { return dtype == CLMAD_F64 ? 1e-12 : 1e-5; }

/* Outputs and partials for one activity mask (NULL: all). */
static void check_partials(p_case *pc, const int *active)
{
    clmad_context *ctx = pc->ctx;
    double tol = tol_of(pc->dtype);
    clmad_tensor *out[2] = {NULL, NULL}, *parts[2 * N_IN];
    CHECK_OK(ctx, clmad_broadcast_partials(ctx, pc->k, pc->in, active, out, parts));
    double *y[2], *d[2 * N_IN] = {0};
    for (int o = 0; o < 2; o++)
        y[o] = bs_read(ctx, out[o], pc->dtype, 2, OUT_SHAPE);
    for (int o = 0; o < 2; o++)
        for (int j = 0; j < N_IN; j++) {
            if (active && !active[j])
                cr_assert_null(parts[o * N_IN + j], "partial d y%d / d in%d of an inactive input must be NULL", o, j);
            else
                d[o * N_IN + j] = bs_read(ctx, parts[o * N_IN + j], pc->dtype, 2, OUT_SHAPE);
        }
    int negatives = 0;
    for (size_t e = 0; e < (size_t)ROWS * COLS; e++) {
        double x[N_IN], ry[2], J[2][N_IN];
        element(pc, pc->host, e, x);
        p_ref(x[IN_A], x[IN_ALPHA], x[IN_VEC], ry, J);
        negatives += x[IN_A] < 0;
        for (int o = 0; o < 2; o++) {
            cr_assert(bs_close(y[o][e], ry[o], tol), "element %zu (A = %g, alpha = %g, a = %g): y%d = %.17g, expected %.17g",
                      e, x[0], x[1], x[2], o, y[o][e], ry[o]);
            for (int j = 0; j < N_IN; j++)
                if (d[o * N_IN + j])
                    cr_assert(bs_close(d[o * N_IN + j][e], J[o][j], tol),
                              "element %zu (A = %g, alpha = %g, a = %g): d y%d / d in%d = %.17g, expected %.17g", e,
                              x[0], x[1], x[2], o, j, d[o * N_IN + j][e], J[o][j]);
        }
    }
    cr_assert(negatives > 0 && negatives < ROWS * COLS, "both branches must be taken");

    /* clmad_broadcast computes the same values, to within the builtins'
     * ulps (a separately compiled program: bs_ulps_equal). */
    clmad_tensor *prim[2] = {NULL, NULL};
    CHECK_OK(ctx, clmad_broadcast(ctx, pc->k, pc->in, prim));
    for (int o = 0; o < 2; o++)
        cr_assert(bs_ulps_equal(ctx, prim[o], out[o], 16), "output %d: clmad_broadcast differs from the partials run", o);

    bs_release_all(prim, 2);
    for (int o = 0; o < 2; o++)
        free(y[o]);
    for (int i = 0; i < 2 * N_IN; i++)
        free(d[i]);
    bs_release_all(out, 2);
    bs_release_all(parts, 2 * N_IN);
}

static void partials_test(clmad_dtype dtype)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = p_kernel(ctx);
    p_case pc;
    case_init(&pc, ctx, k, dtype, dtype == CLMAD_F64 ? 64 : 32);
    check_partials(&pc, NULL);
    static const int only_alpha[N_IN] = {0, 1, 0}, a_and_vec[N_IN] = {1, 0, 1};
    check_partials(&pc, only_alpha);
    check_partials(&pc, a_and_vec);
    case_free(&pc);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

Test(broadcast_paper_p, partials_f32) { partials_test(CLMAD_F32); }
Test(broadcast_paper_p, partials_f64) { partials_test(CLMAD_F64); }

/* JVP with tangents tA (rows, cols), talpha (), ta (cols,); `present` says
 * which tangents are passed (the others are NULL: zero). */
static void check_jvp(p_case *pc, const int present[N_IN], uint64_t seed)
{
    clmad_context *ctx = pc->ctx;
    double tol = tol_of(pc->dtype);
    double *th[N_IN];
    clmad_tensor *tt[N_IN];
    fill(pc, th, tt, &seed, -2, 2);
    for (int j = 0; j < N_IN; j++)
        if (!present[j]) {
            clmad_tensor_release(tt[j]);
            tt[j] = NULL;
        }
    clmad_tensor *out[2] = {NULL, NULL}, *ot[2] = {NULL, NULL};
    CHECK_OK(ctx, clmad_broadcast_jvp(ctx, pc->k, pc->in, tt, out, ot));
    double *y[2], *dy[2];
    for (int o = 0; o < 2; o++) {
        y[o] = bs_read(ctx, out[o], pc->dtype, 2, OUT_SHAPE);
        dy[o] = bs_read(ctx, ot[o], pc->dtype, 2, OUT_SHAPE);
    }
    int any = present[0] || present[1] || present[2];
    for (size_t e = 0; e < (size_t)ROWS * COLS; e++) {
        double x[N_IN], t[N_IN], ry[2], J[2][N_IN];
        element(pc, pc->host, e, x);
        element(pc, th, e, t);
        p_ref(x[IN_A], x[IN_ALPHA], x[IN_VEC], ry, J);
        for (int o = 0; o < 2; o++) {
            double want = 0, scale = 0;
            for (int j = 0; j < N_IN; j++)
                if (present[j]) {
                    want += J[o][j] * t[j];
                    scale += fabs(J[o][j] * t[j]);
                }
            cr_assert(bs_close(y[o][e], ry[o], tol), "jvp element %zu: y%d = %.17g, expected %.17g", e, o,
                      y[o][e], ry[o]);
            if (!any) {
                cr_assert_eq(dy[o][e], 0.0, "jvp without tangents: element %zu of tangent %d is %g", e, o,
                             dy[o][e]);
                continue;
            }
            /* Relative to the sum of magnitudes: the terms may cancel. */
            double err = fabs(dy[o][e] - want), bound = tol * (scale > 1 ? scale : 1);
            cr_assert(err <= bound,
                      "jvp element %zu (A = %g, alpha = %g, a = %g; tangents %g %g %g, present %d%d%d): "
                      "tangent of y%d = %.17g, expected %.17g",
                      e, x[0], x[1], x[2], t[0], t[1], t[2], present[0], present[1], present[2], o, dy[o][e],
                      want);
        }
    }
    for (int o = 0; o < 2; o++) {
        free(y[o]);
        free(dy[o]);
    }
    bs_release_all(out, 2);
    bs_release_all(ot, 2);
    bs_release_all(tt, N_IN);
    for (int j = 0; j < N_IN; j++)
        free(th[j]);
}

static void jvp_test(clmad_dtype dtype)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = p_kernel(ctx);
    p_case pc;
    case_init(&pc, ctx, k, dtype, dtype == CLMAD_F64 ? 640 : 320);
    static const int masks[][N_IN] = {{1, 1, 1}, {1, 0, 1}, {0, 1, 0}, {0, 0, 1}, {0, 0, 0}};
    for (int m = 0; m < (int)(sizeof masks / sizeof masks[0]); m++)
        check_jvp(&pc, masks[m], 1000 + (uint64_t)m);
    case_free(&pc);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

Test(broadcast_paper_p, jvp_f32) { jvp_test(CLMAD_F32); }
Test(broadcast_paper_p, jvp_f64) { jvp_test(CLMAD_F64); }

/* The JVP with a unit tangent on one input is that input's partial, and the
 * JVP's outputs are the primal outputs, bitwise (f64). */
Test(broadcast_paper_p, jvp_unit_tangent_equals_partial)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = p_kernel(ctx);
    p_case pc;
    case_init(&pc, ctx, k, CLMAD_F64, 77);
    clmad_tensor *out[2], *parts[2 * N_IN];
    CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, pc.in, NULL, out, parts));
    for (int j = 0; j < N_IN; j++) {
        clmad_tensor *tt[N_IN] = {NULL, NULL, NULL};
        CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F64, pc.ndim[j], pc.shape[j], 1.0, &tt[j]));
        clmad_tensor *jy[2], *jt[2];
        CHECK_OK(ctx, clmad_broadcast_jvp(ctx, k, pc.in, tt, jy, jt));
        for (int o = 0; o < 2; o++) {
            cr_assert(bs_bitwise_equal(ctx, jy[o], out[o]), "input %d: jvp output %d differs from the partials run", j, o);
            double *a = bs_read(ctx, jt[o], CLMAD_F64, 2, OUT_SHAPE);
            double *b = bs_read(ctx, parts[o * N_IN + j], CLMAD_F64, 2, OUT_SHAPE);
            for (size_t e = 0; e < (size_t)ROWS * COLS; e++)
                cr_assert(bs_close(a[e], b[e], 1e-14), "input %d, output %d, element %zu: jvp %.17g, partial %.17g",
                          j, o, e, a[e], b[e]);
            free(a);
            free(b);
        }
        bs_release_all(jy, 2);
        bs_release_all(jt, 2);
        clmad_tensor_release(tt[j]);
    }
    bs_release_all(out, 2);
    bs_release_all(parts, 2 * N_IN);
    case_free(&pc);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}
