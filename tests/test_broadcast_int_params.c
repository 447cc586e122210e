/* SPDX-License-Identifier: Apache-2.0 */
/* Integer parameters of broadcast functions (int, long, uchar bound to
 * CLMAD_I32, CLMAD_I64, CLMAD_U8 tensors): values against host references,
 * tape gradients of the T inputs against central finite differences in f64
 * under STORE and RECOMPUTE (and chunked), JVP and partials against closed
 * forms, second order (clmad_broadcast_second against closed forms, clmad_hvp
 * against central differences of gradients) and the refusals (status,
 * message naming the parameter). The cases are functions run by one
 * Criterion test (end of file): a test is a process, and a process per
 * case cost seconds each under valgrind. */
#include "gradcheck.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static clmad_tensor *int_tensor(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                                const void *v)
{
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, ndim, shape, v, &t));
    return t;
}

static void expect_close(const double *got, const double *want, size_t n, double tol, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol * fmax(1, fabs(want[i])), "%s%s, element %zu: %.17g, host %.17g",
                  test_case(), what, i, got[i], want[i]);
}

/* A kernel's inputs with the T ones taken from params (in order) and the
 * integer ones fixed: loss = sum_o dot(y_o, w). */
typedef struct env {
    clmad_kernel *k;
    int n_in;
    clmad_tensor *in[8]; /* integer inputs set, T ones NULL */
    clmad_tensor *w;
} env;

static clmad_status env_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    env *e = user;
    clmad_tensor *in[8], *y = NULL;
    for (int j = 0, t = 0; j < e->n_in; j++)
        in[j] = e->in[j] ? e->in[j] : p[t++];
    clmad_status st = clmad_broadcast(ctx, e->k, in, &y);
    if (st == CLMAD_OK)
        st = clmad_dot(ctx, y, e->w, loss);
    clmad_tensor_release(y);
    return st;
}

/* Gradients of the T inputs under both policies against finite differences. */
static void check_gradients(clmad_context *ctx, env *e, int n_params, clmad_tensor **params)
{
    const clmad_partials_policy policies[2] = {CLMAD_PARTIALS_STORE, CLMAD_PARTIALS_RECOMPUTE};
    for (int p = 0; p < 2; p++) {
        CHECK_OK(ctx, clmad_set_partials_policy(ctx, policies[p]));
        gc_check(ctx, env_loss, e, n_params, params, 1e-6);
    }
}

static void release_env(env *e)
{
    for (int j = 0; j < e->n_in; j++)
        clmad_tensor_release(e->in[j]);
    clmad_tensor_release(e->w);
    clmad_kernel_release(e->k);
}

/* ---- the example of the README: T f(T x, int label) --------------------- */

static const char *const EXAMPLE_SRC = "T f(T x, int label) { if (label == 2) return x * x; return x + 1; }\n";

static void int_label_values_and_gradients(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 3;
    size_t shape[2] = {3, 4};
    const int32_t lab[12] = {0, 2, 1, 2, 2, 0, -7, 2, 5, 2, 0, 2};
    env e = {.n_in = 2};
    CHECK_OK(ctx, clmad_kernel_create(ctx, EXAMPLE_SRC, "f", 2, 1, &e.k));
    clmad_tensor *x = gc_random(ctx, 2, shape, -2, 2, &seed);
    e.in[1] = int_tensor(ctx, CLMAD_I32, 2, shape, lab);
    e.w = gc_random(ctx, 2, shape, -1, 1, &seed);

    clmad_tensor *in[2] = {x, e.in[1]}, *y;
    CHECK_OK(ctx, clmad_broadcast(ctx, e.k, in, &y));
    cr_assert_eq(clmad_tensor_dtype(y), CLMAD_F64);
    double hx[12], hy[12], want[12];
    test_read_f64(ctx, x, hx, 12);
    test_read_f64(ctx, y, hy, 12);
    for (int i = 0; i < 12; i++)
        want[i] = lab[i] == 2 ? hx[i] * hx[i] : hx[i] + 1;
    expect_close(hy, want, 12, 1e-15, "f(x, label)");
    clmad_tensor_release(y);

    check_gradients(ctx, &e, 1, &x);
    clmad_tensor_release(x);
    release_env(&e);
    clmad_context_release(ctx);
}

/* ---- a three-way branch on an I64 label, the label between T inputs ----- */

static const char *const THREE_SRC = "T g(T x, long c, T y)\n"
                                     "{\n"
                                     "    if (c == 0)\n"
                                     "        return x * y;\n"
                                     "    if (c == 1)\n"
                                     "        return exp(x) - y;\n"
                                     "    return sin(x * y);\n"
                                     "}\n";

static double three_host(double x, int64_t c, double y)
{
    return c == 0 ? x * y : c == 1 ? exp(x) - y : sin(x * y);
}

static void long_label_three_way_branch(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 5;
    size_t shape[1] = {9};
    const int64_t lab[9] = {0, 1, 2, 2, 1, 0, 0, 1, 2};
    env e = {.n_in = 3};
    CHECK_OK(ctx, clmad_kernel_create(ctx, THREE_SRC, "g", 3, 1, &e.k));
    clmad_tensor *p[2] = {gc_random(ctx, 1, shape, -1, 1, &seed), gc_random(ctx, 1, shape, -1, 1, &seed)};
    e.in[1] = int_tensor(ctx, CLMAD_I64, 1, shape, lab);
    e.w = gc_random(ctx, 1, shape, -1, 1, &seed);

    clmad_tensor *in[3] = {p[0], e.in[1], p[1]}, *y;
    CHECK_OK(ctx, clmad_broadcast(ctx, e.k, in, &y));
    double hx[9], hz[9], hy[9], want[9];
    test_read_f64(ctx, p[0], hx, 9);
    test_read_f64(ctx, p[1], hz, 9);
    test_read_f64(ctx, y, hy, 9);
    for (int i = 0; i < 9; i++)
        want[i] = three_host(hx[i], lab[i], hz[i]);
    expect_close(hy, want, 9, 1e-14, "g(x, c, y)");
    clmad_tensor_release(y);

    /* JVP with a tangent on x only, against the closed form of d/dx. */
    double tx[9];
    for (int i = 0; i < 9; i++)
        tx[i] = 0.5 + 0.1 * i;
    clmad_tensor *t0;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, shape, tx, &t0));
    clmad_tensor *tangents[3] = {t0, NULL, NULL}, *v, *dv;
    CHECK_OK(ctx, clmad_broadcast_jvp(ctx, e.k, in, tangents, &v, &dv));
    double hv[9], hdv[9], dwant[9];
    test_read_f64(ctx, v, hv, 9);
    test_read_f64(ctx, dv, hdv, 9);
    for (int i = 0; i < 9; i++) {
        double x = hx[i], z = hz[i];
        dwant[i] = tx[i] * (lab[i] == 0 ? z : lab[i] == 1 ? exp(x) : cos(x * z) * z);
    }
    expect_close(hv, want, 9, 1e-14, "jvp values");
    expect_close(hdv, dwant, 9, 1e-14, "jvp tangent");
    clmad_tensor_release(v);
    clmad_tensor_release(dv);

    /* A tangent on the integer parameter is refused, naming it. */
    tangents[1] = t0;
    REFUSED(ctx, clmad_broadcast_jvp(ctx, e.k, in, tangents, &v, &dv), CLMAD_ERR_INVALID_ARGUMENT, "\"c\"");
    clmad_tensor_release(t0);

    /* Partials, every input (active NULL): none for the integer one. */
    clmad_tensor *parts[3] = {0}, *vals;
    CHECK_OK(ctx, clmad_broadcast_partials(ctx, e.k, in, NULL, &vals, parts));
    cr_assert_null(parts[1], "an integer parameter has no partials");
    double hp0[9], hp2[9];
    test_read_f64(ctx, parts[0], hp0, 9);
    test_read_f64(ctx, parts[2], hp2, 9);
    for (int i = 0; i < 9; i++) {
        double x = hx[i], z = hz[i];
        dwant[i] = lab[i] == 0 ? z : lab[i] == 1 ? exp(x) : cos(x * z) * z;
        want[i] = lab[i] == 0 ? x : lab[i] == 1 ? -1 : cos(x * z) * x;
    }
    expect_close(hp0, dwant, 9, 1e-14, "d g / d x");
    expect_close(hp2, want, 9, 1e-14, "d g / d y");
    clmad_tensor_release(vals);
    clmad_tensor_release(parts[0]);
    clmad_tensor_release(parts[2]);
    /* ... and asking for them explicitly is refused. */
    const int active[3] = {1, 1, 0};
    REFUSED(ctx, clmad_broadcast_partials(ctx, e.k, in, active, &vals, parts), CLMAD_ERR_INVALID_ARGUMENT,
            "\"c\"");

    check_gradients(ctx, &e, 2, p);
    /* gradcheck cannot make points of an integer parameter: refused. */
    double points[3] = {0.1, 0, 0.2}, worst[3];
    REFUSED(ctx, clmad_gradcheck(ctx, e.k, CLMAD_F64, 1, points, worst), CLMAD_ERR_INVALID_ARGUMENT, "\"c\"");
    clmad_tensor_release(p[0]);
    clmad_tensor_release(p[1]);
    release_env(&e);
    clmad_context_release(ctx);
}

/* ---- a U8 mask, first among the inputs, and f32 ------------------------- */

static const char *const MASK_SRC = "T h(uchar m, T x)\n"
                                    "{\n"
                                    "    if (m)\n"
                                    "        return x * x * x;\n"
                                    "    return -x;\n"
                                    "}\n";

static void uchar_mask(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 7;
    size_t shape[2] = {2, 5};
    const uint8_t mask[10] = {1, 0, 0, 255, 1, 0, 1, 1, 0, 3};
    env e = {.n_in = 2};
    CHECK_OK(ctx, clmad_kernel_create(ctx, MASK_SRC, "h", 2, 1, &e.k));
    clmad_tensor *x = gc_random(ctx, 2, shape, -2, 2, &seed);
    e.in[0] = int_tensor(ctx, CLMAD_U8, 2, shape, mask);
    e.w = gc_random(ctx, 2, shape, -1, 1, &seed);
    double hx[10], hy[10], want[10];
    test_read_f64(ctx, x, hx, 10);
    for (int i = 0; i < 10; i++)
        want[i] = mask[i] ? hx[i] * hx[i] * hx[i] : -hx[i];

    clmad_tensor *in[2] = {e.in[0], x}, *y;
    CHECK_OK(ctx, clmad_broadcast(ctx, e.k, in, &y));
    test_read_f64(ctx, y, hy, 10);
    expect_close(hy, want, 10, 1e-15, "h(m, x)");
    clmad_tensor_release(y);

    /* f32: the T inputs set the dtype, the mask stays u8. */
    float fx[10], fy[10];
    for (int i = 0; i < 10; i++)
        fx[i] = (float)hx[i];
    clmad_tensor *x32;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, shape, fx, &x32));
    clmad_tensor *in32[2] = {e.in[0], x32};
    CHECK_OK(ctx, clmad_broadcast(ctx, e.k, in32, &y));
    cr_assert_eq(clmad_tensor_dtype(y), CLMAD_F32);
    CHECK_OK(ctx, clmad_tensor_read(y, fy, sizeof fy));
    for (int i = 0; i < 10; i++)
        cr_assert(fabs(fy[i] - want[i]) <= 1e-5 * fmax(1, fabs(want[i])), "f32 element %d: %g, host %g", i,
                  (double)fy[i], want[i]);
    clmad_tensor_release(y);
    clmad_tensor_release(x32);

    check_gradients(ctx, &e, 1, &x);
    clmad_tensor_release(x);
    release_env(&e);
    clmad_context_release(ctx);
}

/* ---- an I32 label per row, (n, 1) against (n, m) ------------------------ */

static void int_label_broadcast_along_rows(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 11;
    enum { N = 5, M = 37 }; /* rows longer than a work-item's run, not a multiple of it */
    size_t xs[2] = {N, M}, ls[2] = {N, 1};
    const int32_t lab[N] = {2, 0, 2, 1, 2};
    env e = {.n_in = 2};
    CHECK_OK(ctx, clmad_kernel_create(ctx, EXAMPLE_SRC, "f", 2, 1, &e.k));
    clmad_tensor *x = gc_random(ctx, 2, xs, -2, 2, &seed);
    e.in[1] = int_tensor(ctx, CLMAD_I32, 2, ls, lab);
    e.w = gc_random(ctx, 2, xs, -1, 1, &seed);

    clmad_tensor *in[2] = {x, e.in[1]}, *y;
    CHECK_OK(ctx, clmad_broadcast(ctx, e.k, in, &y));
    double hx[N * M], hy[N * M], want[N * M];
    test_read_f64(ctx, x, hx, N * M);
    test_read_f64(ctx, y, hy, N * M);
    for (int i = 0; i < N * M; i++)
        want[i] = lab[i / M] == 2 ? hx[i] * hx[i] : hx[i] + 1;
    expect_close(hy, want, N * M, 1e-15, "f(x, label per row)");
    clmad_tensor_release(y);

    check_gradients(ctx, &e, 1, &x);
    clmad_tensor_release(x);
    release_env(&e);
    clmad_context_release(ctx);
}

/* ---- many T inputs, chunked, around two integer parameters -------------- */

static const char *const MANY_SRC = "T many(T a, int s, T b, T c, long t, T d, T e)\n"
                                    "{\n"
                                    "    T r = a * b + c * d * e;\n"
                                    "    if (s > 0)\n"
                                    "        r = r + sin(a * e);\n"
                                    "    if (t == 3)\n"
                                    "        r = r * b;\n"
                                    "    return r;\n"
                                    "}\n";

static void chunked_gradients(void)
{
    clmad_context *ctx = test_context();
    CHECK_OK(ctx, clmad_set_chunk_cap(ctx, 2)); /* five T inputs: three chunks */
    unsigned seed = 13;
    size_t shape[2] = {3, 4}, row[1] = {4};
    const int32_t s[12] = {1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0};
    const int64_t t[4] = {3, 0, 3, 1};
    env e = {.n_in = 7};
    CHECK_OK(ctx, clmad_kernel_create(ctx, MANY_SRC, "many", 7, 1, &e.k));
    clmad_tensor *p[5];
    for (int i = 0; i < 5; i++)
        p[i] = gc_random(ctx, 2, shape, -1, 1, &seed);
    e.in[1] = int_tensor(ctx, CLMAD_I32, 2, shape, s);
    e.in[4] = int_tensor(ctx, CLMAD_I64, 1, row, t);
    e.w = gc_random(ctx, 2, shape, -1, 1, &seed);

    clmad_tensor *in[7] = {p[0], e.in[1], p[1], p[2], e.in[4], p[3], p[4]}, *y;
    CHECK_OK(ctx, clmad_broadcast(ctx, e.k, in, &y));
    double h[5][12], hy[12], want[12];
    for (int i = 0; i < 5; i++)
        test_read_f64(ctx, p[i], h[i], 12);
    test_read_f64(ctx, y, hy, 12);
    for (int i = 0; i < 12; i++) {
        double a = h[0][i], b = h[1][i], c = h[2][i], d = h[3][i], ee = h[4][i];
        double r = a * b + c * d * ee;
        if (s[i] > 0)
            r += sin(a * ee);
        if (t[i % 4] == 3)
            r *= b;
        want[i] = r;
    }
    expect_close(hy, want, 12, 1e-14, "many(...)");
    clmad_tensor_release(y);

    check_gradients(ctx, &e, 5, p);
    for (int i = 0; i < 5; i++)
        clmad_tensor_release(p[i]);
    release_env(&e);
    clmad_context_release(ctx);
}

/* ---- several outputs ------------------------------------------------------ */

static const char *const TWO_SRC = "void two(const int l, T x, T *y0, T *y1)\n"
                                   "{\n"
                                   "    if (l > 0) {\n"
                                   "        *y0 = x * x;\n"
                                   "        *y1 = -x * l;\n"
                                   "    } else {\n"
                                   "        *y0 = exp(x);\n"
                                   "        *y1 = x * x * x;\n"
                                   "    }\n"
                                   "}\n";

typedef struct two_env {
    clmad_kernel *k;
    clmad_tensor *l, *w0, *w1;
} two_env;

static clmad_status two_loss(clmad_context *ctx, clmad_tensor **p, void *user, clmad_tensor **loss)
{
    two_env *e = user;
    clmad_tensor *in[2] = {e->l, p[0]}, *y[2] = {0}, *a = NULL, *b = NULL;
    clmad_status st = clmad_broadcast(ctx, e->k, in, y);
    if (st == CLMAD_OK)
        st = clmad_dot(ctx, y[0], e->w0, &a);
    if (st == CLMAD_OK)
        st = clmad_dot(ctx, y[1], e->w1, &b);
    if (st == CLMAD_OK)
        st = clmad_add(ctx, a, b, loss);
    clmad_tensor_release(y[0]);
    clmad_tensor_release(y[1]);
    clmad_tensor_release(a);
    clmad_tensor_release(b);
    return st;
}

static void several_outputs(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 17;
    size_t shape[1] = {8};
    const int32_t lab[8] = {1, 0, 3, 0, -1, 2, 1, 0};
    two_env e = {0};
    CHECK_OK(ctx, clmad_kernel_create(ctx, TWO_SRC, "two", 2, 2, &e.k));
    clmad_tensor *x = gc_random(ctx, 1, shape, -1, 1, &seed);
    e.l = int_tensor(ctx, CLMAD_I32, 1, shape, lab);
    e.w0 = gc_random(ctx, 1, shape, -1, 1, &seed);
    e.w1 = gc_random(ctx, 1, shape, -1, 1, &seed);
    clmad_tensor *in[2] = {e.l, x}, *y[2];
    CHECK_OK(ctx, clmad_broadcast(ctx, e.k, in, y));
    double hx[8], h0[8], h1[8], w0[8], w1[8];
    test_read_f64(ctx, x, hx, 8);
    test_read_f64(ctx, y[0], h0, 8);
    test_read_f64(ctx, y[1], h1, 8);
    for (int i = 0; i < 8; i++) {
        w0[i] = lab[i] > 0 ? hx[i] * hx[i] : exp(hx[i]);
        w1[i] = lab[i] > 0 ? -hx[i] * lab[i] : hx[i] * hx[i] * hx[i];
    }
    expect_close(h0, w0, 8, 1e-15, "two: y0");
    expect_close(h1, w1, 8, 1e-15, "two: y1");
    clmad_tensor_release(y[0]);
    clmad_tensor_release(y[1]);
    const clmad_partials_policy policies[2] = {CLMAD_PARTIALS_STORE, CLMAD_PARTIALS_RECOMPUTE};
    for (int p = 0; p < 2; p++) {
        CHECK_OK(ctx, clmad_set_partials_policy(ctx, policies[p]));
        gc_check(ctx, two_loss, &e, 1, &x, 1e-6);
    }
    clmad_tensor_release(x);
    clmad_tensor_release(e.l);
    clmad_tensor_release(e.w0);
    clmad_tensor_release(e.w1);
    clmad_kernel_release(e.k);
    clmad_context_release(ctx);
}

/* ---- second order through an integer label: nested duals and clmad_hvp -- */

static void second_skips_the_integer_parameter(void)
{
    clmad_context *ctx = test_context();
    unsigned seed = 11;
    size_t shape[1] = {9};
    const int64_t lab[9] = {0, 1, 2, 2, 1, 0, 0, 1, 2};
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, THREE_SRC, "g", 3, 1, &k));
    clmad_tensor *x = gc_random(ctx, 1, shape, -1, 1, &seed), *z = gc_random(ctx, 1, shape, -1, 1, &seed);
    clmad_tensor *c = int_tensor(ctx, CLMAD_I64, 1, shape, lab);
    double tx[9];
    for (int i = 0; i < 9; i++)
        tx[i] = 0.3 - 0.07 * i;
    clmad_tensor *t0;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, shape, tx, &t0));
    clmad_tensor *in[3] = {x, c, z}, *tangents[3] = {t0, NULL, NULL};
    clmad_tensor *y = NULL, *ty = NULL, *p[3] = {0}, *pt[3] = {0};

    /* Every input (active NULL), a tangent on x only (y's is zero). */
    CHECK_OK(ctx, clmad_broadcast_second(ctx, k, in, tangents, NULL, &y, &ty, p, pt));
    cr_assert_null(p[1], "an integer parameter has no partials");
    cr_assert_null(pt[1], "an integer parameter has no partial tangents");
    double hx[9], hz[9], hty[9], hpt0[9], hpt2[9], want[9];
    test_read_f64(ctx, x, hx, 9);
    test_read_f64(ctx, z, hz, 9);
    test_read_f64(ctx, ty, hty, 9);
    test_read_f64(ctx, pt[0], hpt0, 9);
    test_read_f64(ctx, pt[2], hpt2, 9);
    for (int i = 0; i < 9; i++) {
        double a = hx[i], b = hz[i];
        want[i] = tx[i] * (lab[i] == 0 ? b : lab[i] == 1 ? exp(a) : cos(a * b) * b);
    }
    expect_close(hty, want, 9, 1e-14, "tangent of g along x");
    for (int i = 0; i < 9; i++) { /* d2g/dx2 tx */
        double a = hx[i], b = hz[i];
        want[i] = tx[i] * (lab[i] == 0 ? 0 : lab[i] == 1 ? exp(a) : -sin(a * b) * b * b);
    }
    expect_close(hpt0, want, 9, 1e-14, "tangent of d g / d x");
    for (int i = 0; i < 9; i++) { /* d2g/dxdy tx */
        double a = hx[i], b = hz[i];
        want[i] = tx[i] * (lab[i] == 0 ? 1 : lab[i] == 1 ? 0 : cos(a * b) - sin(a * b) * a * b);
    }
    expect_close(hpt2, want, 9, 1e-14, "tangent of d g / d y");
    clmad_tensor_release(y);
    clmad_tensor_release(ty);
    clmad_tensor_release(p[0]);
    clmad_tensor_release(p[2]);
    clmad_tensor_release(pt[0]);
    clmad_tensor_release(pt[2]);

    /* A tangent on, or active set for, the integer parameter: refused, naming it. */
    tangents[1] = t0;
    REFUSED(ctx, clmad_broadcast_second(ctx, k, in, tangents, NULL, &y, &ty, p, pt), CLMAD_ERR_INVALID_ARGUMENT,
            "\"c\"");
    tangents[1] = NULL;
    const int active[3] = {1, 1, 1};
    REFUSED(ctx, clmad_broadcast_second(ctx, k, in, tangents, active, &y, &ty, p, pt), CLMAD_ERR_INVALID_ARGUMENT,
            "\"c\"");
    cr_assert_null(p[1]);
    clmad_tensor_release(t0);
    clmad_tensor_release(x);
    clmad_tensor_release(z);
    clmad_tensor_release(c);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* A 1-d f64 tensor of host values. */
static clmad_tensor *f64_tensor(clmad_context *ctx, const size_t *shape, const double *h)
{
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, shape, h, &t));
    return t;
}

/* Gradients of env_loss at host points (x, y) into g[0], g[1]. */
static void host_gradients(clmad_context *ctx, env *e, const size_t *shape, const double *hx, const double *hy,
                           double g[2][9])
{
    clmad_tensor *p[2] = {f64_tensor(ctx, shape, hx), f64_tensor(ctx, shape, hy)};
    double **grads = gc_backward(ctx, env_loss, e, 2, p);
    memcpy(g[0], grads[0], 9 * sizeof(double));
    memcpy(g[1], grads[1], 9 * sizeof(double));
    gc_free(grads, 2);
    clmad_tensor_release(p[0]);
    clmad_tensor_release(p[1]);
}

static void hvp_through_an_integer_label_against_differences_of_gradients(void)
{
    clmad_context *ctx = test_context();
    if (!test_device_fp64())
        cr_skip_test("%sthe device has no fp64", test_case());
    size_t shape[1] = {9};
    const int64_t lab[9] = {0, 1, 2, 2, 1, 0, 0, 1, 2};
    env e = {.n_in = 3};
    CHECK_OK(ctx, clmad_kernel_create(ctx, THREE_SRC, "g", 3, 1, &e.k));
    e.in[1] = int_tensor(ctx, CLMAD_I64, 1, shape, lab);
    unsigned seed = 17;
    e.w = gc_random(ctx, 1, shape, -1, 1, &seed);
    double x[2][9], v[2][9], xp[2][9], xm[2][9], gp[2][9], gm[2][9], hv[2][9];
    const double h = 1e-5;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 9; i++) {
            x[k][i] = 0.9 * sin(1.7 * i + k);
            v[k][i] = cos(0.6 * i - 2.0 * k);
            xp[k][i] = x[k][i] + h * v[k][i];
            xm[k][i] = x[k][i] - h * v[k][i];
        }
    clmad_tensor *p[2] = {f64_tensor(ctx, shape, x[0]), f64_tensor(ctx, shape, x[1])};
    clmad_tensor *tv[2] = {f64_tensor(ctx, shape, v[0]), f64_tensor(ctx, shape, v[1])}, *out[2] = {0}, *loss;
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(p[0], 1));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(p[1], 1));
    CHECK_OK(ctx, env_loss(ctx, p, &e, &loss));
    CHECK_OK(ctx, clmad_hvp(ctx, loss, p, 2, tv, out));
    clmad_tape_clear(ctx);
    for (int k = 0; k < 2; k++) {
        test_read_f64(ctx, out[k], hv[k], 9);
        clmad_tensor_release(out[k]);
        clmad_tensor_release(tv[k]);
        clmad_tensor_release(p[k]);
    }
    clmad_tensor_release(loss);
    host_gradients(ctx, &e, shape, xp[0], xp[1], gp);
    host_gradients(ctx, &e, shape, xm[0], xm[1], gm);
    double scale = 0;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 9; i++) {
            const double fd = (gp[k][i] - gm[k][i]) / (2 * h);
            scale = fmax(scale, fabs(fd));
            cr_expect(fabs(hv[k][i] - fd) <= 1e-6 * fmax(1.0, fabs(fd)),
                      "H v of parameter %d [%d] = %.12g, differences of gradients %.12g", k, i, hv[k][i], fd);
        }
    cr_expect(scale > 1e-3, "a Hessian that is not ~0 (largest |H v| %g)", scale);
    release_env(&e);
    clmad_context_release(ctx);
}

/* ---- refusals ------------------------------------------------------------ */

static void wrong_tensors_are_refused(void)
{
    clmad_context *ctx = test_context();
    size_t shape[1] = {4};
    const int32_t i32[4] = {0, 1, 2, 3};
    const int64_t i64[4] = {0, 1, 2, 3};
    const double f[4] = {0, 1, 2, 3};
    clmad_kernel *k, *g;
    CHECK_OK(ctx, clmad_kernel_create(ctx, EXAMPLE_SRC, "f", 2, 1, &k));
    CHECK_OK(ctx, clmad_kernel_create(ctx, THREE_SRC, "g", 3, 1, &g));
    clmad_tensor *x, *ti32 = int_tensor(ctx, CLMAD_I32, 1, shape, i32);
    clmad_tensor *ti64 = int_tensor(ctx, CLMAD_I64, 1, shape, i64), *y = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, shape, f, &x));

    /* a float tensor where int is declared */
    clmad_tensor *a[2] = {x, x};
    REFUSED(ctx, clmad_broadcast(ctx, k, a, &y), CLMAD_ERR_DTYPE, "parameter 2 (\"label\") is int");
    cr_assert(test_contains(clmad_last_error(ctx), "f64"), "%s", clmad_last_error(ctx));
    /* an I32 tensor where long is declared */
    clmad_tensor *b[3] = {x, ti32, x};
    REFUSED(ctx, clmad_broadcast(ctx, g, b, &y), CLMAD_ERR_DTYPE, "parameter 2 (\"c\") is long");
    cr_assert(test_contains(clmad_last_error(ctx), "i32"), "%s", clmad_last_error(ctx));
    /* an integer tensor where T is declared (first or later T input) */
    clmad_tensor *c[2] = {ti32, ti32};
    REFUSED(ctx, clmad_broadcast(ctx, k, c, &y), CLMAD_ERR_DTYPE, "parameter 1 (\"x\") is T");
    clmad_tensor *d[3] = {x, ti64, ti64};
    REFUSED(ctx, clmad_broadcast(ctx, g, d, &y), CLMAD_ERR_DTYPE, "parameter 3 (\"y\") is T");
    cr_assert_null(y);
    /* the right ones still work: nothing was lost */
    clmad_tensor *ok[3] = {x, ti64, x};
    CHECK_OK(ctx, clmad_broadcast(ctx, g, ok, &y));
    clmad_tensor_release(y);
    /* integer tensors take no gradient */
    REFUSED(ctx, clmad_tensor_set_requires_grad(ti32, 1), CLMAD_ERR_DTYPE, "");
    clmad_tensor_release(x);
    clmad_tensor_release(ti32);
    clmad_tensor_release(ti64);
    clmad_kernel_release(k);
    clmad_kernel_release(g);
    clmad_context_release(ctx);
}

static void expect_create_error(clmad_context *ctx, const char *src, const char *fn, int n_in, int n_out,
                                const char *needle)
{
    clmad_kernel *k = NULL;
    REFUSED(ctx, clmad_kernel_create(ctx, src, fn, n_in, n_out, &k), CLMAD_ERR_BUILD, needle);
    cr_assert_null(k);
}

static void wrong_signatures_are_refused_at_create(void)
{
    clmad_context *ctx = test_context();
    expect_create_error(ctx, "int f(T x, int label) { return label; }\n", "f", 2, 1,
                        "source:1:5: error: f returns int: its one output must be T");
    expect_create_error(ctx, "void f(T x, int label, T *y, int *z) { *y = x; *z = label; }\n", "f", 2, 2,
                        "source:1:30: error: every output of f must be T *");
    expect_create_error(ctx, "T f(T x, uint label) { return x; }\n", "f", 2, 1,
                        "source:1:10: error: every input of f must be T, or an integer parameter int, long or "
                        "uchar: parameter 2 is \"uint label\"");
    expect_create_error(ctx, "T f(T x, double y) { return x; }\n", "f", 2, 1,
                        "source:1:10: error: every input of f must be T, or an integer parameter int, long or "
                        "uchar: parameter 2 is \"double y\"");
    expect_create_error(ctx, "T f(int a, long b) { return a + b; }\n", "f", 2, 1,
                        "source:1:3: error: f has no T input");
    clmad_context_release(ctx);
}

/* ---- the test ------------------------------------------------------------- */

/* The signatures first: every other case needs fp64, and a device without
 * it skips the rest at the first f64 tensor. */
Test(broadcast_int_params, all_cases)
{
    RUN_CASE(wrong_signatures_are_refused_at_create);
    RUN_CASE(int_label_values_and_gradients);
    RUN_CASE(long_label_three_way_branch);
    RUN_CASE(uchar_mask);
    RUN_CASE(int_label_broadcast_along_rows);
    RUN_CASE(chunked_gradients);
    RUN_CASE(several_outputs);
    RUN_CASE(second_skips_the_integer_parameter);
    RUN_CASE(hvp_through_an_integer_label_against_differences_of_gradients);
    RUN_CASE(wrong_tensors_are_refused);
}
