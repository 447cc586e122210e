/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quickstart: differentiate a broadcast kernel that branches on its data.
 *
 * The kernel is a piecewise function of x with a parameter a:
 *
 *     f(x, a) = a x^2        for x < 1
 *             = a (2x - 1)   otherwise        (continuous, with f' continuous)
 *
 *     df/dx = 2 a x  or  2 a           df/da = x^2  or  2x - 1
 *
 * 1. clmad_broadcast_partials gives the values and both partials at every
 *    element (forward mode: the kernel runs once on dual numbers; each
 *    element follows its own branch).
 * 2. The tape: loss = sum(f(x, a)) with x a vector and a a 0-d scalar, both
 *    requiring a gradient; clmad_backward gives d loss/dx_i = df/dx at x_i
 *    and d loss/da = sum_i df/da at x_i (a was broadcast, so its gradient is
 *    summed).
 * Every number is checked against the formulas above; exit status 1 on a
 * mismatch. Build: see the README ("Using clmad from another project").
 */
#include <clmad.h>

#include <math.h>
#include <stdio.h>

static const char *SOURCE =
    "T f(T x, T a)\n"
    "{\n"
    "    if (x < 1)\n"
    "        return a * (x * x);\n"
    "    return a * (2 * x - 1);\n"
    "}\n";

#define N 6

static int failed = 0;

/* Fails unless got is within 1e-5 (relative, absolute below 1) of want. */
static void check(const char *what, int i, double got, double want)
{
    double scale = fabs(want) > 1 ? fabs(want) : 1;
    if (!(fabs(got - want) <= 1e-5 * scale)) {
        fprintf(stderr, "MISMATCH %s[%d]: got %.9g, expected %.9g\n", what, i, got, want);
        failed = 1;
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
    clmad_device_info dev;
    TRY(clmad_context_device(ctx, &dev));
    printf("device: %s\n", dev.name);

    const float xs[N] = {-1.5f, -0.5f, 0.0f, 0.75f, 1.0f, 2.5f};
    const float a_value = 0.5f;
    size_t n = N;
    clmad_tensor *x = NULL, *a = NULL;
    TRY(clmad_tensor_create(ctx, CLMAD_F32, 1, &n, xs, &x));
    TRY(clmad_tensor_create(ctx, CLMAD_F32, 0, NULL, &a_value, &a)); /* a 0-d scalar */

    clmad_kernel *k = NULL;
    TRY(clmad_kernel_create(ctx, SOURCE, "f", 2, 1, &k));

    /* 1. Values and partials in forward mode. */
    clmad_tensor *in[2] = {x, a}, *y = NULL, *parts[2] = {NULL, NULL};
    TRY(clmad_broadcast_partials(ctx, k, in, NULL, &y, parts));
    float yv[N], dx[N], da[N];
    TRY(clmad_tensor_read(y, yv, sizeof yv));
    TRY(clmad_tensor_read(parts[0], dx, sizeof dx));
    TRY(clmad_tensor_read(parts[1], da, sizeof da));

    printf("\n     x      f(x,a)     df/dx      df/da   (a = %g)\n", a_value);
    double want_grad_a = 0;
    for (int i = 0; i < N; i++) {
        double xi = xs[i], ai = a_value, lo = xi < 1;
        double f = lo ? ai * xi * xi : ai * (2 * xi - 1);
        double fx = lo ? 2 * ai * xi : 2 * ai;
        double fa = lo ? xi * xi : 2 * xi - 1;
        want_grad_a += fa;
        printf("%6.2f  %10.6f %10.6f %10.6f   %s\n", xi, yv[i], dx[i], da[i], lo ? "x < 1" : "x >= 1");
        check("f", i, yv[i], f);
        check("df/dx", i, dx[i], fx);
        check("df/da", i, da[i], fa);
    }

    /* 2. A gradient through the tape. */
    TRY(clmad_tensor_set_requires_grad(x, 1));
    TRY(clmad_tensor_set_requires_grad(a, 1));
    clmad_tensor *fy = NULL, *loss = NULL, *gx = NULL, *ga = NULL;
    TRY(clmad_broadcast(ctx, k, in, &fy));
    TRY(clmad_sum(ctx, fy, 0, NULL, 0, &loss));
    TRY(clmad_backward(ctx, loss, NULL));
    TRY(clmad_tensor_grad(x, &gx));
    TRY(clmad_tensor_grad(a, &ga));
    float lv, gxv[N], gav;
    TRY(clmad_tensor_read(loss, &lv, sizeof lv));
    TRY(clmad_tensor_read(gx, gxv, sizeof gxv));
    TRY(clmad_tensor_read(ga, &gav, sizeof gav));

    printf("\nloss = sum f(x, a) = %.6f\n", lv);
    printf("d loss/dx =");
    for (int i = 0; i < N; i++) {
        printf(" %.4f", gxv[i]);
        check("d loss/dx", i, gxv[i], dx[i]);
    }
    printf("\nd loss/da = %.6f (expected %.6f)\n", gav, want_grad_a);
    check("d loss/da", 0, gav, want_grad_a);

    clmad_tensor *all[] = {x, a, y, parts[0], parts[1], fy, loss, gx, ga};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
    printf("\n%s\n", failed ? "FAILED: derivatives do not match the formulas"
                            : "ok: values, partials and gradients match the formulas");
    return failed;
}
