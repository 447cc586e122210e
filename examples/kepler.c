/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler: differentiate through a loop whose trip count depends on the data.
 *
 * Kepler's equation E - e sin E = M gives the eccentric anomaly E of an orbit
 * of eccentricity e at mean anomaly M. Each element solves it by Newton's
 * method until |dE| < 1e-12 (at most 50 iterations), in f64. Forward mode
 * carries the partials through every iteration, so clmad_broadcast_partials
 * returns dE/dM and dE/de of the solver; they must equal the derivatives of
 * the implicit function,
 *
 *     dE/dM = 1 / (1 - e cos E),     dE/de = sin E / (1 - e cos E),
 *
 * evaluated at the solution. M is a column (n, 1) and e a row (1, m): the
 * broadcast makes the n x m grid of orbits. Exit status 1 on a mismatch
 * (relative 1e-10) or a residual above 1e-12.
 */
#include <clmad.h>

#include <math.h>
#include <stdio.h>

static const char *SOURCE =
    "/* Newton's method for E - e sin E = M, from E0 = M + e sin M. */\n"
    "void kepler(T M, T e, T *E_out, T *iters)\n"
    "{\n"
    "    T E = M + e * sin(M);\n"
    "    int it = 0;\n"
    "    while (it < 50) {\n"
    "        T f  = E - e * sin(E) - M;   /* E - e sin E - M */\n"
    "        T fp = 1 - e * cos(E);       /* 1 - e cos E     */\n"
    "        T dE = f / fp;\n"
    "        E -= dE;\n"
    "        it++;\n"
    "        if (fabs(dE) < (real)1e-12)\n"
    "            break;\n"
    "    }\n"
    "    *E_out = E;\n"
    "    *iters = it;   /* an int: a constant, zero partials */\n"
    "}\n";

#define NM 7
#define NE 4

#define TRY(call)                                                                      \
    do {                                                                               \
        clmad_status st_ = (call);                                                     \
        if (st_ != CLMAD_OK) {                                                         \
            fprintf(stderr, "%s failed: %s: %s\n", #call, clmad_status_string(st_),     \
                    clmad_last_error(ctx));                                            \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

int main(void)
{
    clmad_context *ctx = NULL;
    if (clmad_context_create(NULL, &ctx) != CLMAD_OK) {
        fprintf(stderr, "no context: %s\n", clmad_last_error(NULL));
        return 1;
    }
    clmad_device_info dev;
    TRY(clmad_context_device(ctx, &dev));
    printf("device: %s\n", dev.name);
    if (!dev.fp64) {
        fprintf(stderr, "kepler needs double precision, which this device lacks\n");
        clmad_context_release(ctx);
        return 1;
    }

    const double pi = 3.14159265358979323846;
    double M[NM] = {0, 0.1, 0.5, 1.0, 2.0, 3.0, pi};
    double ecc[NE] = {0.0, 0.3, 0.7, 0.95};
    size_t m_shape[2] = {NM, 1}, e_shape[2] = {1, NE};
    clmad_tensor *in[2] = {NULL, NULL};
    TRY(clmad_tensor_create(ctx, CLMAD_F64, 2, m_shape, M, &in[0]));
    TRY(clmad_tensor_create(ctx, CLMAD_F64, 2, e_shape, ecc, &in[1]));

    clmad_kernel *k = NULL;
    TRY(clmad_kernel_create(ctx, SOURCE, "kepler", 2, 2, &k));

    /* Outputs E and the iteration count; partials[o * 2 + j] = d out_o / d in_j. */
    clmad_tensor *out[2] = {NULL, NULL}, *parts[4] = {NULL, NULL, NULL, NULL};
    TRY(clmad_broadcast_partials(ctx, k, in, NULL, out, parts));
    double E[NM * NE], iters[NM * NE], dM[NM * NE], de[NM * NE];
    TRY(clmad_tensor_read(out[0], E, sizeof E));
    TRY(clmad_tensor_read(out[1], iters, sizeof iters));
    TRY(clmad_tensor_read(parts[0], dM, sizeof dM));
    TRY(clmad_tensor_read(parts[1], de, sizeof de));

    printf("\n    M      e   iters          E           dE/dM  (implicit)            dE/de  (implicit)\n");
    double worst = 0, worst_resid = 0;
    int min_it = 1000, max_it = 0;
    for (int a = 0; a < NM; a++)
        for (int b = 0; b < NE; b++) {
            int i = a * NE + b;
            double Ei = E[i], den = 1 - ecc[b] * cos(Ei);
            double want_dM = 1 / den, want_de = sin(Ei) / den;
            double err_M = fabs(dM[i] - want_dM) / fmax(fabs(want_dM), 1e-6);
            double err_e = fabs(de[i] - want_de) / fmax(fabs(want_de), 1e-6);
            worst = fmax(worst, fmax(err_M, err_e));
            worst_resid = fmax(worst_resid, fabs(Ei - ecc[b] * sin(Ei) - M[a]));
            min_it = iters[i] < min_it ? (int)iters[i] : min_it;
            max_it = iters[i] > max_it ? (int)iters[i] : max_it;
            printf("%5.3f  %5.2f  %4d  %12.9f   %13.10f %13.10f   %13.10f %13.10f\n", M[a], ecc[b],
                   (int)iters[i], Ei, dM[i], want_dM, de[i], want_de);
        }
    int ok = worst <= 1e-10 && worst_resid <= 1e-12;
    printf("\nNewton iterations per element: %d to %d\n", min_it, max_it);
    printf("largest residual |E - e sin E - M|: %.1e (limit 1e-12)\n", worst_resid);
    printf("largest relative difference from the implicit derivatives: %.1e (limit 1e-10)\n", worst);
    printf("%s\n", ok ? "ok" : "FAILED");

    for (int j = 0; j < 4; j++)
        clmad_tensor_release(parts[j]);
    clmad_tensor_release(out[0]);
    clmad_tensor_release(out[1]);
    clmad_tensor_release(in[0]);
    clmad_tensor_release(in[1]);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
    return ok ? 0 : 1;
}
