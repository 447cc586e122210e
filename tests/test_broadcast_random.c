/* SPDX-License-Identifier: Apache-2.0 */
/* Randomised broadcasts (fixed seed: reproducible). A few fixed kernels with
 * 1, 2, 3, 6 and 12 inputs (one or two outputs) mix ad_mul, ad_sin, ad_cos,
 * ad_exp, ad_tanh of scaled inputs and branch on ad_val(x0):
 *
 *   s  = sum_j w_j x_j,   w_j = (-1)^j (1/4 + j/32)   (exact in float)
 *   y0 = x0 > 0 ? sin(s) exp(x_{n-1} / 4)  :  x0 cos(s) + x_{n-1} / 2
 *   y1 = tanh(x_{n-1}) s                                (two-output kernels)
 *
 * Each scenario draws a kernel, a dtype (f32/f64), a broadcast pattern
 * (output rank 0..8; per input its rank, 0-d scalars, size-1 axes, (n,1) x
 * (1,m) outer products, rank-8 shapes with small dims; at most 2000
 * elements), a mode (partials with a random activity mask, or a JVP with
 * random tangents, some NULL) and a chunk cap (0 = default, 1..8, at most 3
 * chunks). It then runs with 5 fresh draws of the sizes and the values: 40
 * scenarios, 200 calls. Outputs, partials and tangents are compared with a
 * host reference in double (f64: 1e-12, f32: 1e-5, mixed absolute/relative);
 * partials of inactive inputs must be NULL; some scenarios also compare
 * clmad_broadcast's outputs with the dual run's, to within 16 ulps (two
 * programs: bs_ulps_equal).
 *
 * The sizes vary within a scenario but not which axes are 1, so each
 * scenario compiles its kernel variants once: that bounds the run time on
 * POCL, where every variant is a compile. */
#include "bcast_support.h"

#include <stdio.h>

#define N_SCENARIOS 40
#define DRAWS 5
#define MAX_NUMEL 2000
#define MAX_IN 12

static const int KERNEL_INPUTS[] = {1, 2, 3, 6, 12};
static const int KERNEL_OUTPUTS[] = {1, 2, 2, 1, 2};
#define N_KERNELS 5

static double weight(int j) { return (j % 2 ? -1 : 1) * (0.25 + j / 32.0); }

/* The OpenCL C source of the kernel with n inputs and n_out outputs. */
static void make_source(char *buf, size_t cap, int n, int n_out)
{
    size_t u = 0;
#define PUT(...) (u += (size_t)snprintf(buf + u, cap - u, __VA_ARGS__))
    PUT("%s rk%d(", n_out == 1 ? "T" : "void", n);
    for (int j = 0; j < n; j++)
        PUT("%sT x%d", j ? ", " : "", j);
    if (n_out == 2)
        PUT(", T *y0, T *y1");
    PUT(")\n{\n    T s = ad_mulr(x0, %.17gf);\n", weight(0));
    for (int j = 1; j < n; j++)
        PUT("    s = ad_add(s, ad_mulr(x%d, %.17gf));\n", j, weight(j));
    PUT("    T r;\n"
        "    if (ad_val(x0) > 0)\n"
        "        r = ad_mul(ad_sin(s), ad_exp(ad_mulr(x%d, 0.25f)));\n"
        "    else\n"
        "        r = ad_add(ad_mul(x0, ad_cos(s)), ad_mulr(x%d, 0.5f));\n",
        n - 1, n - 1);
    if (n_out == 1)
        PUT("    return r;\n}\n");
    else
        PUT("    *y0 = r;\n    *y1 = ad_mul(ad_tanh(x%d), s);\n}\n", n - 1);
#undef PUT
    cr_assert_lt(u, cap);
}

/* Host reference: values y[o] and Jacobian J[o][j] at one element. */
static void reference(int n, int n_out, const double *x, double *y, double (*J)[MAX_IN])
{
    double s = 0;
    for (int j = 0; j < n; j++)
        s += weight(j) * x[j];
    double last = x[n - 1];
    for (int o = 0; o < n_out; o++)
        for (int j = 0; j < n; j++)
            J[o][j] = 0;
    if (x[0] > 0) {
        double E = exp(0.25 * last);
        y[0] = sin(s) * E;
        for (int j = 0; j < n; j++)
            J[0][j] = cos(s) * weight(j) * E;
        J[0][n - 1] += sin(s) * 0.25 * E;
    } else {
        y[0] = x[0] * cos(s) + 0.5 * last;
        for (int j = 0; j < n; j++)
            J[0][j] = -x[0] * sin(s) * weight(j);
        J[0][0] += cos(s);
        J[0][n - 1] += 0.5;
    }
    if (n_out == 2) {
        double th = tanh(last);
        y[1] = th * s;
        for (int j = 0; j < n; j++)
            J[1][j] = th * weight(j);
        J[1][n - 1] += (1 - th * th) * s;
    }
}

/* ---- scenarios ---------------------------------------------------------- */

typedef struct scenario {
    int kernel;                       /* index into KERNEL_INPUTS */
    clmad_dtype dtype;
    int rank;                         /* rank of the pattern (the output's at most) */
    int big[CLMAD_MAX_DIMS];          /* axis has a size > 1 */
    int ndim[MAX_IN];                 /* input ranks (aligned at the last axis) */
    int full[MAX_IN][CLMAD_MAX_DIMS]; /* input axis (of its own) carries the axis's size */
    int jvp;                          /* 0: partials; 1: jvp */
    int active_null;                  /* partials with active = NULL */
    int mask[MAX_IN];                 /* activity, or presence of tangents */
    int cap;                          /* chunk cap, 0 = default */
    int check_primal;                 /* also compare clmad_broadcast, bitwise */
} scenario;

static void make_scenario(uint64_t *rng, scenario *sc)
{
    memset(sc, 0, sizeof *sc);
    sc->kernel = bs_int(rng, 0, N_KERNELS - 1);
    int n = KERNEL_INPUTS[sc->kernel];
    sc->dtype = bs_int(rng, 0, 1) ? CLMAD_F64 : CLMAD_F32;
    int kind = bs_int(rng, 0, 9);
    if (kind == 0) {
        /* Every input a 0-d scalar. */
        sc->rank = 0;
    } else if (kind <= 2 && n >= 2) {
        /* Outer product: (n, 1) x (1, m), the others scalars, rows, columns or full. */
        sc->rank = 2;
        sc->big[0] = sc->big[1] = 1;
        int a = bs_int(rng, 0, n - 1), b = (a + bs_int(rng, 1, n - 1)) % n;
        for (int j = 0; j < n; j++) {
            int form = j == a ? 0 : j == b ? 1 : bs_int(rng, 0, 4);
            switch (form) {
            case 0: sc->ndim[j] = 2, sc->full[j][0] = 1; break;               /* (n, 1) */
            case 1: sc->ndim[j] = 2, sc->full[j][1] = 1; break;               /* (1, m) */
            case 2: sc->ndim[j] = 1, sc->full[j][0] = 1; break;               /* (m,)   */
            case 3: sc->ndim[j] = 2, sc->full[j][0] = sc->full[j][1] = 1; break; /* full */
            default: sc->ndim[j] = 0; break;                                  /* ()     */
            }
        }
    } else {
        /* General: rank 1..8 (rank 8 often), axes of size 1 or more. */
        sc->rank = bs_int(rng, 0, 3) == 0 ? CLMAD_MAX_DIMS : bs_int(rng, 1, CLMAD_MAX_DIMS);
        for (int d = 0; d < sc->rank; d++)
            sc->big[d] = bs_int(rng, 0, 9) < 7;
        int spanner = bs_int(rng, 0, n - 1); /* this input spans every axis */
        for (int j = 0; j < n; j++) {
            int r = j == spanner             ? sc->rank
                    : bs_int(rng, 0, 6) == 0 ? 0
                    : bs_int(rng, 0, 2)      ? sc->rank
                                             : bs_int(rng, 0, sc->rank);
            sc->ndim[j] = r;
            for (int d = 0; d < r; d++) {
                int axis = sc->rank - r + d;
                sc->full[j][d] = sc->big[axis] && bs_int(rng, 0, 9) < 7;
            }
        }
    }
    sc->jvp = bs_int(rng, 0, 3) == 0;
    sc->active_null = !sc->jvp && bs_int(rng, 0, 7) == 0;
    for (int j = 0; j < n; j++)
        sc->mask[j] = bs_int(rng, 0, 9) < 6;
    if (bs_int(rng, 0, 9) == 0) /* sometimes nothing active / no tangent */
        for (int j = 0; j < n; j++)
            sc->mask[j] = 0;
    /* Each chunk is a compile on POCL: keep to at most 3 chunks. */
    int n_active = 0;
    for (int j = 0; j < n; j++)
        n_active += sc->active_null || sc->mask[j];
    sc->cap = bs_int(rng, 0, 8);
    if (!sc->jvp && sc->cap && (n_active + sc->cap - 1) / sc->cap > 3)
        sc->cap = bs_int(rng, (n_active + 2) / 3, 8);
    sc->check_primal = !sc->jvp && bs_int(rng, 0, 3) == 0;
}

/* Draws the sizes of the big axes: 2..max, at most MAX_NUMEL elements. */
static void draw_sizes(uint64_t *rng, const scenario *sc, size_t *sizes)
{
    int nbig = 0;
    for (int d = 0; d < sc->rank; d++)
        nbig += sc->big[d];
    int max = nbig <= 1 ? 300 : nbig == 2 ? 40 : nbig == 3 ? 12 : nbig == 4 ? 6 : 3;
    size_t numel = 1;
    for (int d = 0; d < sc->rank; d++) {
        sizes[d] = sc->big[d] ? (size_t)bs_int(rng, 2, max) : 1;
        numel *= sizes[d];
    }
    for (int d = 0; numel > MAX_NUMEL; d = (d + 1) % sc->rank)
        if (sizes[d] > 2) {
            numel = numel / sizes[d] * (sizes[d] - 1);
            sizes[d]--;
        }
}

typedef struct ctx_kernels {
    clmad_context *ctx;
    clmad_kernel *k[N_KERNELS];
} ctx_kernels;

static void describe(char *buf, size_t cap, int si, int draw, const scenario *sc, const int *ndims,
                     const size_t (*shapes)[CLMAD_MAX_DIMS])
{
    int n = KERNEL_INPUTS[sc->kernel];
    size_t u = (size_t)snprintf(buf, cap, "scenario %d draw %d: rk%d %s %s cap %d mask ", si, draw, n,
                                sc->dtype == CLMAD_F64 ? "f64" : "f32", sc->jvp ? "jvp" : "partials", sc->cap);
    for (int j = 0; j < n && u < cap; j++)
        u += (size_t)snprintf(buf + u, cap - u, "%d", sc->active_null ? 1 : sc->mask[j]);
    for (int j = 0; j < n && u < cap; j++) {
        u += (size_t)snprintf(buf + u, cap - u, " (");
        for (int d = 0; d < ndims[j] && u < cap; d++)
            u += (size_t)snprintf(buf + u, cap - u, d ? ", %zu" : "%zu", shapes[j][d]);
        if (u < cap)
            u += (size_t)snprintf(buf + u, cap - u, ")");
    }
}

static void run_draw(ctx_kernels *ck, int si, int draw, const scenario *sc, uint64_t *rng)
{
    clmad_context *ctx = ck->ctx;
    clmad_kernel *k = ck->k[sc->kernel];
    int n = KERNEL_INPUTS[sc->kernel], n_out = KERNEL_OUTPUTS[sc->kernel];
    clmad_dtype dtype = sc->dtype;
    double tol = dtype == CLMAD_F64 ? 1e-12 : 1e-5;

    size_t sizes[CLMAD_MAX_DIMS];
    draw_sizes(rng, sc, sizes);
    int ndims[MAX_IN];
    size_t shapes[MAX_IN][CLMAD_MAX_DIMS];
    for (int j = 0; j < n; j++) {
        ndims[j] = sc->ndim[j];
        for (int d = 0; d < ndims[j]; d++)
            shapes[j][d] = sc->full[j][d] ? sizes[sc->rank - ndims[j] + d] : 1;
    }
    int out_ndim;
    size_t out_shape[CLMAD_MAX_DIMS];
    cr_assert(bs_broadcast_shape(n, ndims, (const size_t(*)[CLMAD_MAX_DIMS])shapes, &out_ndim, out_shape));
    size_t numel = bs_numel(out_ndim, out_shape);
    cr_assert_leq(numel, MAX_NUMEL);
    char what[512];
    describe(what, sizeof what, si, draw, sc, ndims, (const size_t(*)[CLMAD_MAX_DIMS])shapes);

    double *host[MAX_IN], *than[MAX_IN] = {0};
    clmad_tensor *in[MAX_IN], *tan[MAX_IN] = {0};
    for (int j = 0; j < n; j++) {
        size_t m = bs_numel(ndims[j], shapes[j]);
        host[j] = malloc(m * sizeof(double));
        cr_assert_not_null(host[j]);
        for (size_t e = 0; e < m; e++)
            host[j][e] = bs_uniform(rng, -1, 1);
        in[j] = bs_tensor(ctx, dtype, ndims[j], shapes[j], host[j]);
        if (sc->jvp && sc->mask[j]) {
            than[j] = malloc(m * sizeof(double));
            cr_assert_not_null(than[j]);
            for (size_t e = 0; e < m; e++)
                than[j][e] = bs_uniform(rng, -2, 2);
            tan[j] = bs_tensor(ctx, dtype, ndims[j], shapes[j], than[j]);
        }
    }

    clmad_tensor *out[2] = {NULL, NULL}, *der[2 * MAX_IN];
    for (int i = 0; i < 2 * MAX_IN; i++)
        der[i] = NULL;
    int active[MAX_IN];
    for (int j = 0; j < n; j++)
        active[j] = sc->active_null || sc->mask[j];
    if (sc->jvp) {
        CHECK_OK(ctx, clmad_broadcast_jvp(ctx, k, in, tan, out, der));
    } else {
        for (int i = 0; i < n_out * n; i++)
            der[i] = (clmad_tensor *)&der; /* poison: every entry must be written */
        CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, in, sc->active_null ? NULL : sc->mask, out, der));
    }

    double *y[2] = {0}, *d[2 * MAX_IN] = {0};
    for (int o = 0; o < n_out; o++) {
        y[o] = bs_read(ctx, out[o], dtype, out_ndim, out_shape);
        if (sc->jvp)
            d[o] = bs_read(ctx, der[o], dtype, out_ndim, out_shape);
        else
            for (int j = 0; j < n; j++) {
                if (active[j])
                    d[o * n + j] = bs_read(ctx, der[o * n + j], dtype, out_ndim, out_shape);
                else
                    cr_assert_null(der[o * n + j], "%s: partial %d/%d of an inactive input is not NULL", what, o, j);
            }
    }

    for (size_t e = 0; e < numel; e++) {
        double x[MAX_IN], t[MAX_IN], ry[2], J[2][MAX_IN];
        for (int j = 0; j < n; j++) {
            size_t idx = bs_bindex(e, out_ndim, out_shape, ndims[j], shapes[j]);
            x[j] = host[j][idx];
            t[j] = than[j] ? than[j][idx] : 0;
        }
        reference(n, n_out, x, ry, J);
        for (int o = 0; o < n_out; o++) {
            cr_assert(bs_close(y[o][e], ry[o], tol), "%s: element %zu: y%d = %.17g, expected %.17g", what, e, o,
                      y[o][e], ry[o]);
            if (sc->jvp) {
                double want = 0, scale = 1;
                for (int j = 0; j < n; j++) {
                    want += J[o][j] * t[j];
                    scale += fabs(J[o][j] * t[j]);
                }
                cr_assert(fabs(d[o][e] - want) <= tol * scale, "%s: element %zu: tangent of y%d = %.17g, expected %.17g",
                          what, e, o, d[o][e], want);
            } else {
                for (int j = 0; j < n; j++)
                    if (d[o * n + j])
                        cr_assert(bs_close(d[o * n + j][e], J[o][j], tol),
                                  "%s: element %zu: d y%d / d x%d = %.17g, expected %.17g", what, e, o, j,
                                  d[o * n + j][e], J[o][j]);
            }
        }
    }

    if (sc->check_primal) {
        clmad_tensor *prim[2] = {NULL, NULL};
        CHECK_OK(ctx, clmad_broadcast(ctx, k, in, prim));
        for (int o = 0; o < n_out; o++)
            cr_assert(bs_ulps_equal(ctx, prim[o], out[o], 16), "%s: clmad_broadcast output %d differs from the dual run",
                      what, o);
        bs_release_all(prim, 2);
    }

    for (int o = 0; o < 2; o++)
        free(y[o]);
    for (int i = 0; i < 2 * MAX_IN; i++)
        free(d[i]);
    bs_release_all(out, 2);
    bs_release_all(der, sc->jvp ? 2 : n_out * n);
    for (int j = 0; j < n; j++) {
        free(host[j]);
        free(than[j]);
    }
    bs_release_all(in, n);
    bs_release_all(tan, n);
}

/* The compiles a scenario costs, roughly: one per chunk (or one for a JVP or
 * no active input), one more for the primal check; the 12-input kernel
 * compiles slower. */
static int scenario_cost(const scenario *sc)
{
    int n = KERNEL_INPUTS[sc->kernel], n_active = 0;
    for (int j = 0; j < n; j++)
        n_active += sc->active_null || sc->mask[j];
    int cap = sc->cap ? sc->cap : 8, chunks = (n_active + cap - 1) / cap;
    int cost = sc->jvp || chunks == 0 ? 1 : chunks;
    cost += sc->check_primal;
    return n == 12 ? 2 * cost : cost;
}

/* Runs the scenarios assigned to `part` of `parts`. Every part generates all
 * scenarios from the same seed and assigns each to the part with the least
 * estimated cost so far, so the parts take about as long and each scenario
 * is reproducible on its own. */
static void run_scenarios(int part, int parts)
{
    ctx_kernels ck;
    ck.ctx = test_context();
    for (int i = 0; i < N_KERNELS; i++) {
        char src[4096];
        make_source(src, sizeof src, KERNEL_INPUTS[i], KERNEL_OUTPUTS[i]);
        char name[16];
        snprintf(name, sizeof name, "rk%d", KERNEL_INPUTS[i]);
        CHECK_OK(ck.ctx, clmad_kernel_create(ck.ctx, src, name, KERNEL_INPUTS[i], KERNEL_OUTPUTS[i], &ck.k[i]));
    }
    uint64_t rng = 20261122;
    int calls = 0, load[8] = {0};
    /* What the whole set of scenarios covers (checked at the end, so that a
     * change of seed or of the distributions cannot lose it silently). */
    int seen_kernel[N_KERNELS] = {0}, seen_dtype[2] = {0}, seen_rank[CLMAD_MAX_DIMS + 1] = {0};
    int seen_jvp = 0, seen_null_active = 0, seen_none_active = 0, seen_chunked = 0, seen_outer = 0;
    int seen_scalar_input = 0, seen_primal = 0;
    cr_assert_leq(parts, 8);
    for (int si = 0; si < N_SCENARIOS; si++) {
        scenario sc;
        make_scenario(&rng, &sc);
        uint64_t draw_rng = rng ^ (0x5851F42D4C957F2Dull * (uint64_t)(si + 1));
        int to = 0;
        for (int p = 1; p < parts; p++)
            if (load[p] < load[to])
                to = p;
        load[to] += scenario_cost(&sc);
        int n = KERNEL_INPUTS[sc.kernel], n_active = 0, n_outer = 0;
        for (int j = 0; j < n; j++) {
            n_active += sc.active_null || sc.mask[j];
            seen_scalar_input |= sc.ndim[j] == 0 && sc.rank > 0;
            n_outer += sc.rank == 2 && sc.ndim[j] == 2 && sc.full[j][0] != sc.full[j][1];
        }
        seen_kernel[sc.kernel] = seen_dtype[sc.dtype] = seen_rank[sc.rank] = 1;
        seen_jvp |= sc.jvp;
        seen_null_active |= sc.active_null;
        seen_none_active |= !sc.jvp && n_active == 0;
        seen_chunked |= !sc.jvp && sc.cap && n_active > sc.cap;
        seen_outer |= n_outer >= 2;
        seen_primal |= sc.check_primal;
        if (to != part)
            continue;
        CHECK_OK(ck.ctx, clmad_set_chunk_cap(ck.ctx, sc.cap));
        if (sc.cap)
            cr_assert_eq(clmad_chunk_cap(ck.ctx), sc.cap);
        else
            cr_assert_gt(clmad_chunk_cap(ck.ctx), 0, "the default chunk cap must be positive");
        for (int draw = 0; draw < DRAWS; draw++, calls++)
            run_draw(&ck, si, draw, &sc, &draw_rng);
    }
    cr_assert_gt(calls, N_SCENARIOS * DRAWS / parts / 2, "part %d ran only %d calls", part, calls);
    for (int i = 0; i < N_KERNELS; i++)
        cr_assert(seen_kernel[i], "no scenario uses the %d-input kernel", KERNEL_INPUTS[i]);
    cr_assert(seen_dtype[CLMAD_F32] && seen_dtype[CLMAD_F64]);
    cr_assert(seen_rank[0] && seen_rank[1] && seen_rank[2] && seen_rank[CLMAD_MAX_DIMS]);
    cr_assert(seen_jvp && seen_null_active && seen_none_active && seen_chunked && seen_outer);
    cr_assert(seen_scalar_input && seen_primal);
    for (int i = 0; i < N_KERNELS; i++)
        clmad_kernel_release(ck.k[i]);
    clmad_context_release(ck.ctx);
}

/* Two halves, so that Criterion runs them in parallel. */
Test(broadcast_random, scenarios_even) { run_scenarios(0, 2); }
Test(broadcast_random, scenarios_odd) { run_scenarios(1, 2); }

/* Inputs broadcast along rows, (rows, 1), and along columns, (1, cols), are
 * indexed with their last step known to the generated source (0 and 1):
 * outputs and partials must be bitwise those of the same values expanded
 * to full tensors, which take no strided path at all. The widths give, on
 * CPUs (32 elements per work-item), runs aligned with rows (64), runs
 * crossing a row boundary (40) and coordinates per element (20). */
Test(broadcast_random, row_and_column_inputs_read_like_their_expansions)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx,
                                      "T f(T a, T b, T c)\n"
                                      "{\n"
                                      "    if (a > 0) return sin(b) * c;\n"
                                      "    return cos(c) * b + a * c;\n"
                                      "}\n",
                                      "f", 3, 1, &k));
    uint64_t seed = 11;
    const size_t widths[] = {64, 40, 20}, rows = 3;
    for (int dt = 0; dt < 2; dt++) {
        clmad_dtype dtype = dt ? CLMAD_F64 : CLMAD_F32;
        for (int w = 0; w < 3; w++) {
            size_t cols = widths[w], n = rows * cols;
            size_t col_shape[2] = {rows, 1}, row_shape[2] = {1, cols}, full[2] = {rows, cols};
            double a[3], b[64], c[3 * 64], a_full[3 * 64], b_full[3 * 64];
            for (size_t r = 0; r < rows; r++)
                a[r] = bs_uniform(&seed, -1, 1);
            for (size_t q = 0; q < cols; q++)
                b[q] = bs_uniform(&seed, -2, 2);
            for (size_t e = 0; e < n; e++) {
                c[e] = bs_uniform(&seed, -2, 2);
                a_full[e] = a[e / cols];
                b_full[e] = b[e % cols];
            }
            clmad_tensor *narrow[3] = {bs_tensor(ctx, dtype, 2, col_shape, a), bs_tensor(ctx, dtype, 2, row_shape, b),
                                       bs_tensor(ctx, dtype, 2, full, c)};
            clmad_tensor *wide[3] = {bs_tensor(ctx, dtype, 2, full, a_full), bs_tensor(ctx, dtype, 2, full, b_full),
                                     bs_tensor(ctx, dtype, 2, full, c)};
            const int active[3] = {1, 1, 1};
            clmad_tensor *y[2], *p[2][3];
            CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, narrow, active, &y[0], p[0]));
            CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, wide, active, &y[1], p[1]));
            cr_assert(bs_bitwise_equal(ctx, y[0], y[1]), "%s, %zu x %zu: outputs differ",
                      dt ? "f64" : "f32", rows, cols);
            for (int j = 0; j < 3; j++)
                cr_assert(bs_bitwise_equal(ctx, p[0][j], p[1][j]), "%s, %zu x %zu: partials of input %d differ",
                          dt ? "f64" : "f32", rows, cols, j);
            bs_release_all(narrow, 3);
            bs_release_all(wide, 3);
            bs_release_all(y, 2);
            bs_release_all(p[0], 3);
            bs_release_all(p[1], 3);
        }
    }
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}
