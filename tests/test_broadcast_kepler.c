/* SPDX-License-Identifier: Apache-2.0 */
/* A loop with a data-dependent trip count: Kepler's equation E - e sin E = M
 * solved per element by Newton's method until |dE| < 1e-12 (at most 100
 * steps), in f64. Forward mode differentiates through the iterations; the
 * partials must match the implicit-function derivatives
 *   dE/dM = 1 / (1 - e cos E),   dE/de = sin E / (1 - e cos E)
 * to 1e-10 relative (see rel_close), at the device's E, which must satisfy
 * the equation to 1e-12.
 * The kernel's second output is the number of Newton steps taken, a constant
 * (zero partials) that shows the trip count really varies per element. */
#include "bcast_support.h"

static const char *KEPLER_SRC =
    "/* Newton's method for E - e sin E = M, from E0 = M + e sin M. */\n"
    "void kepler(T M, T e, T *E_out, T *steps)\n"
    "{\n"
    "    T E = ad_add(M, ad_mul(e, ad_sin(M)));\n"
    "    int it = 0;\n"
    "    while (it < 100) {\n"
    "        T f = ad_sub(ad_sub(E, ad_mul(e, ad_sin(E))), M);\n"
    "        T fp = ad_rsub(1, ad_mul(e, ad_cos(E)));\n"
    "        T dE = ad_div(f, fp);\n"
    "        E = ad_sub(E, dE);\n"
    "        it++;\n"
    "        if (fabs(ad_val(dE)) < 1e-12f)\n"
    "            break;\n"
    "    }\n"
    "    *E_out = E;\n"
    "    *steps = ad_const((real)it);\n"
    "}\n";

#define PI 3.14159265358979323846

/* Relative closeness, |got - want| <= tol * max(|want|, floor): dE/dM is at
 * least 1/1.9, so it is compared purely relatively (floor 0); dE/de vanishes
 * with sin E (M = 0, +-pi), so it gets a floor. */
static int rel_close(double got, double want, double tol, double floor)
{
    double scale = fabs(want) > floor ? fabs(want) : floor;
    return fabs(got - want) <= tol * scale;
}

/* Checks E, the step counts and the partials at every element of the output;
 * M and e are host arrays of the inputs' shapes. */
static void check_kepler(clmad_context *ctx, clmad_kernel *k, int m_ndim, const size_t *m_shape,
                         double *M, int e_ndim, const size_t *e_shape, double *ecc, int varying)
{
    int ndims[2] = {m_ndim, e_ndim};
    size_t shapes[2][CLMAD_MAX_DIMS] = {{0}}, out_shape[CLMAD_MAX_DIMS];
    if (m_ndim > 0) /* a 0-d shape may be NULL: memcpy from NULL is undefined even for 0 bytes */
        memcpy(shapes[0], m_shape, (size_t)m_ndim * sizeof(size_t));
    if (e_ndim > 0)
        memcpy(shapes[1], e_shape, (size_t)e_ndim * sizeof(size_t));
    int out_ndim;
    cr_assert(bs_broadcast_shape(2, ndims, (const size_t(*)[CLMAD_MAX_DIMS])shapes, &out_ndim, out_shape));
    size_t n = bs_numel(out_ndim, out_shape);

    clmad_tensor *in[2] = {bs_tensor(ctx, CLMAD_F64, m_ndim, m_shape, M),
                           bs_tensor(ctx, CLMAD_F64, e_ndim, e_shape, ecc)};
    clmad_tensor *out[2] = {NULL, NULL}, *parts[4] = {NULL, NULL, NULL, NULL};
    CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, in, NULL, out, parts));
    double *E = bs_read(ctx, out[0], CLMAD_F64, out_ndim, out_shape);
    double *steps = bs_read(ctx, out[1], CLMAD_F64, out_ndim, out_shape);
    double *dM = bs_read(ctx, parts[0], CLMAD_F64, out_ndim, out_shape);
    double *de = bs_read(ctx, parts[1], CLMAD_F64, out_ndim, out_shape);
    double *sM = bs_read(ctx, parts[2], CLMAD_F64, out_ndim, out_shape);
    double *se = bs_read(ctx, parts[3], CLMAD_F64, out_ndim, out_shape);

    int min_steps = 1000, max_steps = 0;
    for (size_t i = 0; i < n; i++) {
        double m = M[bs_bindex(i, out_ndim, out_shape, m_ndim, m_shape)];
        double ec = ecc[bs_bindex(i, out_ndim, out_shape, e_ndim, e_shape)];
        double Ei = E[i];
        /* The solution satisfies the equation. */
        double resid = Ei - ec * sin(Ei) - m;
        cr_assert(fabs(resid) <= 1e-12, "M = %.17g, e = %.17g: E = %.17g leaves residual %g", m, ec, Ei,
                  resid);
        /* Implicit-function derivatives at the device's E. */
        double den = 1 - ec * cos(Ei);
        double want_dM = 1 / den, want_de = sin(Ei) / den;
        cr_assert(rel_close(dM[i], want_dM, 1e-10, 0), "M = %.17g, e = %.17g: dE/dM = %.17g, expected %.17g",
                  m, ec, dM[i], want_dM);
        cr_assert(rel_close(de[i], want_de, 1e-10, 1e-6), "M = %.17g, e = %.17g: dE/de = %.17g, expected %.17g",
                  m, ec, de[i], want_de);
        /* A step count is an integer in 1..100 and carries no derivative. */
        cr_assert(steps[i] >= 1 && steps[i] <= 100 && steps[i] == floor(steps[i]),
                  "M = %g, e = %g: %g Newton steps", m, ec, steps[i]);
        cr_assert(steps[i] < 100, "M = %g, e = %g: Newton did not converge in 100 steps", m, ec);
        cr_assert_eq(sM[i], 0.0);
        cr_assert_eq(se[i], 0.0);
        if (steps[i] < min_steps)
            min_steps = (int)steps[i];
        if (steps[i] > max_steps)
            max_steps = (int)steps[i];
        /* e = 0 is the identity map: E = M, dE/dM = 1, dE/de = sin M. */
        if (ec == 0) {
            cr_assert(bs_close(Ei, m, 1e-15), "e = 0: E = %.17g, expected M = %.17g", Ei, m);
            cr_assert(bs_close(dM[i], 1, 1e-15));
            cr_assert(bs_close(de[i], sin(m), 1e-12));
        }
    }
    /* The trip count depends on the data. */
    if (varying)
        cr_assert_lt(min_steps, max_steps, "every element took %d steps: the loop is not data-dependent", min_steps);

    free(E);
    free(steps);
    free(dM);
    free(de);
    free(sM);
    free(se);
    bs_release_all(out, 2);
    bs_release_all(parts, 4);
    bs_release_all(in, 2);
}

static clmad_kernel *kepler_kernel(clmad_context *ctx)
{
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, KEPLER_SRC, "kepler", 2, 2, &k));
    return k;
}

/* M and e of shape (n,), random in [-pi, pi] x [0, 0.9], with a few edges. */
Test(broadcast_kepler, vector_eccentricities)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = kepler_kernel(ctx);
    enum { N = 1000 };
    double M[N], e[N];
    uint64_t seed = 2718;
    for (int i = 0; i < N; i++) {
        M[i] = bs_uniform(&seed, -PI, PI);
        e[i] = bs_uniform(&seed, 0, 0.9);
    }
    /* Edges: e = 0, e = 0.9, M = 0, M = +-pi. */
    e[0] = 0, e[1] = 0, e[2] = 0.9, e[3] = 0.9, e[4] = 0.9, e[5] = 0.5;
    M[1] = 0, M[2] = PI, M[3] = -PI, M[4] = 0.01, M[5] = 0;
    size_t shape[1] = {N};
    check_kepler(ctx, k, 1, shape, M, 1, shape, e, 1);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* e is a 0-d scalar broadcast against M of shape (n,). */
Test(broadcast_kepler, scalar_eccentricity)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = kepler_kernel(ctx);
    enum { N = 777 };
    double M[N];
    uint64_t seed = 1618;
    for (int i = 0; i < N; i++)
        M[i] = bs_uniform(&seed, -PI, PI);
    size_t shape[1] = {N};
    const double es[3] = {0.0, 0.3, 0.9};
    for (int t = 0; t < 3; t++) {
        double e = es[t];
        check_kepler(ctx, k, 1, shape, M, 0, NULL, &e, e > 0);
    }
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* A grid: M of shape (1, 61) against e of shape (23, 1), covering
 * [-pi, pi] x [0, 0.9] evenly, edges included. */
Test(broadcast_kepler, grid)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = kepler_kernel(ctx);
    enum { NM = 61, NE = 23 };
    double M[NM], e[NE];
    for (int i = 0; i < NM; i++)
        M[i] = -PI + 2 * PI * i / (NM - 1);
    for (int i = 0; i < NE; i++)
        e[i] = 0.9 * i / (NE - 1);
    size_t ms[2] = {1, NM}, es[2] = {NE, 1};
    check_kepler(ctx, k, 2, ms, M, 2, es, e, 1);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}
