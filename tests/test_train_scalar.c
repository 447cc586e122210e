/* Scalar operands and clmad_tensor_item: values, gradients, errors. */
#include "support.h"

#include <math.h>

Test(train_scalar, add_mul_pow_values_and_gradients)
{
    clmad_context *ctx = test_context();
    const double xv[4] = {0.5, -1.25, 2.0, 3.0};
    size_t shape[1] = {4};
    clmad_tensor *x, *a, *m, *p, *s1, *s2, *loss;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, shape, xv, &x));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    CHECK_OK(ctx, clmad_add_scalar(ctx, x, -0.5, &a));
    CHECK_OK(ctx, clmad_mul_scalar(ctx, a, 3.0, &m));
    CHECK_OK(ctx, clmad_pow_scalar(ctx, x, 2.0, &p));
    double av[4], mv[4], pv[4];
    CHECK_OK(ctx, clmad_tensor_read(a, av, sizeof av));
    CHECK_OK(ctx, clmad_tensor_read(m, mv, sizeof mv));
    CHECK_OK(ctx, clmad_tensor_read(p, pv, sizeof pv));
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(av[i], xv[i] - 0.5);
        cr_assert_eq(mv[i], (xv[i] - 0.5) * 3.0);
        cr_assert_float_eq(pv[i], xv[i] * xv[i], 1e-12);
    }
    /* loss = sum(3 (x - 0.5)) + sum(x^2): d/dx = 3 + 2x */
    CHECK_OK(ctx, clmad_sum(ctx, m, 0, NULL, 0, &s1));
    CHECK_OK(ctx, clmad_sum(ctx, p, 0, NULL, 0, &s2));
    CHECK_OK(ctx, clmad_add(ctx, s1, s2, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    clmad_tensor *g;
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    double gv[4];
    CHECK_OK(ctx, clmad_tensor_read(g, gv, sizeof gv));
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(gv[i], 3.0 + 2.0 * xv[i], 1e-12);
    double item;
    CHECK_OK(ctx, clmad_tensor_item(loss, &item));
    double want = 0;
    for (int i = 0; i < 4; i++)
        want += 3.0 * (xv[i] - 0.5) + xv[i] * xv[i];
    cr_assert_float_eq(item, want, 1e-12);
    clmad_tensor *ts[] = {x, a, m, p, s1, s2, loss, g};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clmad_tensor_release(ts[i]);
    clmad_context_release(ctx);
}

Test(train_scalar, item_of_f32_scalar_and_one_element)
{
    clmad_context *ctx = test_context();
    clmad_tensor *s, *one, *two;
    CHECK_OK(ctx, clmad_tensor_scalar(ctx, CLMAD_F32, 0.1, &s));
    cr_assert_eq(clmad_tensor_ndim(s), 0);
    double v;
    CHECK_OK(ctx, clmad_tensor_item(s, &v));
    cr_assert_eq(v, (double)0.1f);
    size_t s11[2] = {1, 1}, s2[1] = {2};
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 2, s11, -4.5, &one));
    CHECK_OK(ctx, clmad_tensor_item(one, &v));
    cr_assert_eq(v, -4.5);
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, s2, 1.0, &two));
    v = 7;
    cr_assert_eq(clmad_tensor_item(two, &v), CLMAD_ERR_SHAPE);
    cr_assert(test_contains(clmad_last_error(ctx), "2 elements"));
    cr_assert_eq(v, 7, "the out-parameter is untouched on failure");
    cr_assert_eq(clmad_tensor_item(NULL, &v), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tensor_item(s, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_mul_scalar(ctx, NULL, 2.0, &two), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "clmad_mul_scalar: x is NULL"));
    clmad_tensor_release(s);
    clmad_tensor_release(one);
    clmad_tensor_release(two);
    clmad_context_release(ctx);
}
