/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paper_p: a broadcast function R^3 -> R^2 in the manner of the paper's
 * p(A, alpha, a), over a matrix A (ROWS x COLS), a 0-d scalar alpha and a
 * vector a (COLS,) broadcast along the rows, with a branch on the data:
 *
 *     d  = A - a
 *     y0 = alpha d^2   where d > 0, else 0          (a one-sided penalty)
 *     y1 = a tanh(alpha A)
 *
 * Partials (t = tanh(alpha A), s = 1 - t^2, [d > 0] is 1 or 0):
 *     dy0/dA = 2 alpha d [d > 0]   dy0/dalpha = d^2 [d > 0]   dy0/da = -2 alpha d [d > 0]
 *     dy1/dA = a alpha s           dy1/dalpha = a A s          dy1/da = t
 *
 * 1. clmad_broadcast_partials: both outputs and all six partials at every
 *    element (one dual kernel with 3 partials).
 * 2. The tape: loss = sum(y0) + sum(y1). The gradient of A is elementwise;
 *    alpha was broadcast over everything, so its gradient is the sum over all
 *    elements; a was broadcast over the rows, so its gradient sums each
 *    column ("unbroadcast").
 * Everything is checked against the formulas; exit status 1 on a mismatch.
 */
#include <clmad.h>

#include <math.h>
#include <stdio.h>

static const char *SOURCE =
    "void p(T A, T alpha, T a, T *y0, T *y1)\n"
    "{\n"
    "    T d = A - a;\n"
    "    if (d > 0)\n"
    "        *y0 = alpha * (d * d);\n"
    "    else\n"
    "        *y0 = 0;\n"
    "    *y1 = a * tanh(alpha * A);\n"
    "}\n";

#define ROWS 3
#define COLS 4
#define N (ROWS * COLS)

enum { IN_A, IN_ALPHA, IN_VEC };

static int failed = 0;

static void check(const char *what, int i, double got, double want)
{
    double scale = fabs(want) > 1 ? fabs(want) : 1;
    if (!(fabs(got - want) <= 2e-5 * scale)) {
        fprintf(stderr, "MISMATCH %s[%d]: got %.9g, expected %.9g\n", what, i, got, want);
        failed = 1;
    }
}

/* Values and Jacobian of p at one element: y[o], J[o][j]. */
static void p_ref(double A, double alpha, double a, double y[2], double J[2][3])
{
    double d = A - a, on = d > 0, t = tanh(alpha * A), s = 1 - t * t;
    y[0] = on * alpha * d * d;
    y[1] = a * t;
    J[0][IN_A] = on * 2 * alpha * d, J[0][IN_ALPHA] = on * d * d, J[0][IN_VEC] = -on * 2 * alpha * d;
    J[1][IN_A] = a * alpha * s, J[1][IN_ALPHA] = a * A * s, J[1][IN_VEC] = t;
}

static void print_matrix(const char *name, const float *m)
{
    printf("%s\n", name);
    for (int r = 0; r < ROWS; r++) {
        printf("   ");
        for (int c = 0; c < COLS; c++)
            printf(" %10.6f", m[r * COLS + c]);
        printf("\n");
    }
}

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
    const float A[N] = {-1.0f, 0.5f, 1.5f, 2.0f, 0.25f, -0.75f, 1.0f, 0.8f, 1.2f, 0.1f, -0.3f, 2.5f};
    const float alpha = 0.8f;
    const float a[COLS] = {0.5f, -0.25f, 0.75f, 1.25f};
    size_t a_shape[2] = {ROWS, COLS}, v_shape[1] = {COLS};
    clmad_tensor *in[3] = {NULL, NULL, NULL};
    TRY(clmad_tensor_create(ctx, CLMAD_F32, 2, a_shape, A, &in[IN_A]));
    TRY(clmad_tensor_create(ctx, CLMAD_F32, 0, NULL, &alpha, &in[IN_ALPHA]));
    TRY(clmad_tensor_create(ctx, CLMAD_F32, 1, v_shape, a, &in[IN_VEC]));

    clmad_kernel *k = NULL;
    TRY(clmad_kernel_create(ctx, SOURCE, "p", 3, 2, &k));

    /* 1. Outputs and partials; parts[o * 3 + j] = d y_o / d in_j. */
    clmad_tensor *out[2] = {NULL, NULL}, *parts[6] = {NULL};
    TRY(clmad_broadcast_partials(ctx, k, in, NULL, out, parts));
    float y[2][N], d[6][N];
    for (int o = 0; o < 2; o++)
        TRY(clmad_tensor_read(out[o], y[o], sizeof y[o]));
    for (int q = 0; q < 6; q++)
        TRY(clmad_tensor_read(parts[q], d[q], sizeof d[q]));

    printf("p(A, alpha, a) with A %dx%d, alpha = %g (0-d), a = (%g, %g, %g, %g)\n\n", ROWS, COLS, alpha,
           a[0], a[1], a[2], a[3]);
    print_matrix("A", A);
    print_matrix("y0 = alpha (A - a)^2 where A > a, else 0", y[0]);
    print_matrix("y1 = a tanh(alpha A)", y[1]);
    static const char *names[6] = {"dy0/dA", "dy0/dalpha", "dy0/da", "dy1/dA", "dy1/dalpha", "dy1/da"};
    for (int q = 0; q < 6; q++)
        print_matrix(names[q], d[q]);

    double want_gA[N], want_galpha = 0, want_ga[COLS] = {0};
    for (int e = 0; e < N; e++) {
        double ry[2], J[2][3];
        p_ref(A[e], alpha, a[e % COLS], ry, J);
        for (int o = 0; o < 2; o++) {
            check(o ? "y1" : "y0", e, y[o][e], ry[o]);
            for (int j = 0; j < 3; j++)
                check(names[o * 3 + j], e, d[o * 3 + j][e], J[o][j]);
        }
        want_gA[e] = J[0][IN_A] + J[1][IN_A];
        want_galpha += J[0][IN_ALPHA] + J[1][IN_ALPHA];
        want_ga[e % COLS] += J[0][IN_VEC] + J[1][IN_VEC];
    }

    /* 2. The tape: loss = sum(y0) + sum(y1). */
    for (int j = 0; j < 3; j++)
        TRY(clmad_tensor_set_requires_grad(in[j], 1));
    clmad_tensor *ty[2] = {NULL, NULL}, *s0 = NULL, *s1 = NULL, *loss = NULL, *g[3] = {NULL};
    TRY(clmad_broadcast(ctx, k, in, ty));
    TRY(clmad_sum(ctx, ty[0], 0, NULL, 0, &s0));
    TRY(clmad_sum(ctx, ty[1], 0, NULL, 0, &s1));
    TRY(clmad_add(ctx, s0, s1, &loss));
    TRY(clmad_backward(ctx, loss, NULL));
    for (int j = 0; j < 3; j++)
        TRY(clmad_tensor_grad(in[j], &g[j]));
    float gA[N], galpha, ga[COLS];
    TRY(clmad_tensor_read(g[IN_A], gA, sizeof gA));
    TRY(clmad_tensor_read(g[IN_ALPHA], &galpha, sizeof galpha));
    TRY(clmad_tensor_read(g[IN_VEC], ga, sizeof ga));

    printf("\nloss = sum(y0) + sum(y1); gradients through the tape:\n");
    print_matrix("d loss/dA", gA);
    printf("d loss/dalpha = %.6f (expected %.6f)\n", galpha, want_galpha);
    printf("d loss/da     =");
    for (int c = 0; c < COLS; c++)
        printf(" %.6f", ga[c]);
    printf("\n     expected =");
    for (int c = 0; c < COLS; c++)
        printf(" %.6f", want_ga[c]);
    printf("\n");
    for (int e = 0; e < N; e++)
        check("d loss/dA", e, gA[e], want_gA[e]);
    check("d loss/dalpha", 0, galpha, want_galpha);
    for (int c = 0; c < COLS; c++)
        check("d loss/da", c, ga[c], want_ga[c]);

    clmad_tensor *all[] = {in[0], in[1], in[2], out[0], out[1], parts[0], parts[1], parts[2], parts[3],
                           parts[4], parts[5], ty[0], ty[1], s0, s1, loss, g[0], g[1], g[2]};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
    printf("\n%s\n", failed ? "FAILED: derivatives do not match the formulas"
                            : "ok: outputs, partials and gradients match the formulas");
    return failed;
}
