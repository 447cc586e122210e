/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_tensor_copy: values into an existing tensor, outside the tape. */
#include "support.h"

#include <string.h>

static clmad_tensor *vec(clmad_context *ctx, size_t n, const float *v)
{
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, v, &t));
    return t;
}

static void expect_values(clmad_tensor *t, const float *want, size_t n)
{
    float got[16];
    cr_assert(n <= 16);
    cr_assert_eq(clmad_tensor_read(t, got, sizeof got), CLMAD_OK);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "element %zu: %g, want %g", i, got[i], want[i]);
}

Test(tensor_copy, copies_values_into_the_same_handle)
{
    clmad_context *ctx = test_context();
    const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {-1, -2, -3, -4, -5, -6};
    size_t shape[] = {2, 3};
    clmad_tensor *dst = NULL, *src = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, shape, a, &dst));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, shape, b, &src));
    CHECK_OK(ctx, clmad_tensor_copy(dst, src));
    expect_values(dst, b, 6);
    expect_values(src, b, 6);
    /* A copy into itself changes nothing. */
    CHECK_OK(ctx, clmad_tensor_copy(dst, dst));
    expect_values(dst, b, 6);
    clmad_tensor_release(dst);
    clmad_tensor_release(src);

    double d[] = {0.1, 0.2}, e[] = {7, 8}, got[2];
    size_t n = 2;
    clmad_device_info info;
    CHECK_OK(ctx, clmad_context_device(ctx, &info));
    if (info.fp64) {
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, d, &dst));
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, &n, e, &src));
        CHECK_OK(ctx, clmad_tensor_copy(dst, src));
        CHECK_OK(ctx, clmad_tensor_read(dst, got, sizeof got));
        cr_assert(got[0] == 7 && got[1] == 8);
        clmad_tensor_release(dst);
        clmad_tensor_release(src);
    }
    /* Empty tensors copy nothing and succeed. */
    size_t zero[] = {3, 0};
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, zero, &dst));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, zero, &src));
    CHECK_OK(ctx, clmad_tensor_copy(dst, src));
    clmad_tensor_release(dst);
    clmad_tensor_release(src);
    clmad_context_release(ctx);
}

Test(tensor_copy, bad_arguments_change_nothing)
{
    clmad_context *ctx = test_context(), *other = test_context();
    const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
    clmad_tensor *dst = vec(ctx, 4, a), *src3 = vec(ctx, 3, b), *far = vec(other, 4, b);
    size_t shape22[] = {2, 2};
    clmad_tensor *src22 = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, shape22, b, &src22));

    cr_assert_eq(clmad_tensor_copy(NULL, src3), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tensor_copy(dst, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "src is NULL"), "%s", clmad_last_error(ctx));
    cr_assert_eq(clmad_tensor_copy(dst, src3), CLMAD_ERR_SHAPE);
    cr_assert(test_contains(clmad_last_error(ctx), "dst has shape (4,), src (3,)"), "%s",
              clmad_last_error(ctx));
    /* Same element count, another shape: still refused. */
    cr_assert_eq(clmad_tensor_copy(dst, src22), CLMAD_ERR_SHAPE);
    cr_assert_eq(clmad_tensor_copy(dst, far), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "another context"), "%s", clmad_last_error(ctx));

    clmad_device_info info;
    CHECK_OK(ctx, clmad_context_device(ctx, &info));
    if (info.fp64) {
        size_t n = 4;
        clmad_tensor *f64 = NULL;
        CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F64, 1, &n, &f64));
        cr_assert_eq(clmad_tensor_copy(dst, f64), CLMAD_ERR_DTYPE);
        cr_assert(test_contains(clmad_last_error(ctx), "dst is f32, src f64"), "%s",
                  clmad_last_error(ctx));
        clmad_tensor_release(f64);
    }
    expect_values(dst, a, 4);
    clmad_tensor_release(dst);
    clmad_tensor_release(src3);
    clmad_tensor_release(src22);
    clmad_tensor_release(far);
    clmad_context_release(ctx);
    clmad_context_release(other);
}

Test(tensor_copy, refuses_a_dst_the_tape_holds)
{
    clmad_context *ctx = test_context();
    const float xs[] = {0, 1, 2}, ws[] = {3, 4, 5}, news[] = {9, 9, 9};
    clmad_tensor *x = vec(ctx, 3, xs), *w = vec(ctx, 3, ws), *fresh = vec(ctx, 3, news);
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    clmad_tensor *y = NULL, *loss = NULL;
    CHECK_OK(ctx, clmad_mul(ctx, x, w, &y));   /* keeps x and w for backward */
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));

    /* An input of a recorded operation (a leaf that requires a gradient,
     * and a constant), and an output: all refused, values kept. */
    cr_assert_eq(clmad_tensor_copy(x, fresh), CLMAD_ERR_STATE);
    cr_assert(test_contains(clmad_last_error(ctx), "the tape still holds dst"), "%s",
              clmad_last_error(ctx));
    cr_assert_eq(clmad_tensor_copy(w, fresh), CLMAD_ERR_STATE);
    cr_assert_eq(clmad_tensor_copy(y, fresh), CLMAD_ERR_STATE);
    expect_values(x, xs, 3);
    expect_values(w, ws, 3);
    /* Reading from the tape's tensors is fine. */
    clmad_tensor *spare = vec(ctx, 3, news);
    CHECK_OK(ctx, clmad_tensor_copy(spare, x));
    expect_values(spare, xs, 3);

    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    /* The tape is consumed: x can take new values and keeps its gradient. */
    CHECK_OK(ctx, clmad_tensor_copy(x, fresh));
    CHECK_OK(ctx, clmad_tensor_copy(w, fresh));
    CHECK_OK(ctx, clmad_tensor_copy(y, fresh));
    expect_values(x, news, 3);
    cr_assert(clmad_tensor_requires_grad(x));
    clmad_tensor *g = NULL;
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    cr_assert_not_null(g);
    expect_values(g, ws, 3);
    clmad_tensor_release(g);
    clmad_tensor_release(y);
    clmad_tensor_release(loss);

    /* A retained tape holds its tensors until it is cleared. */
    CHECK_OK(ctx, clmad_set_retain_tape(ctx, 1));
    CHECK_OK(ctx, clmad_dot(ctx, x, w, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    cr_assert_eq(clmad_tensor_copy(x, spare), CLMAD_ERR_STATE);
    clmad_tape_clear(ctx);
    CHECK_OK(ctx, clmad_tensor_copy(x, spare));
    expect_values(x, xs, 3);
    clmad_tensor_release(loss);

    /* Nothing is recorded in the no-grad mode: nothing is held. */
    CHECK_OK(ctx, clmad_set_grad_enabled(ctx, 0));
    CHECK_OK(ctx, clmad_mul(ctx, x, w, &y));
    CHECK_OK(ctx, clmad_tensor_copy(x, fresh));
    clmad_tensor_release(y);

    clmad_tensor_release(x);
    clmad_tensor_release(w);
    clmad_tensor_release(fresh);
    clmad_tensor_release(spare);
    clmad_context_release(ctx);
}

Test(tensor_copy, works_on_a_released_context)
{
    /* A released context's tensors can still be read and written. */
    clmad_context *ctx = test_context();
    const float a[] = {1, 2}, b[] = {3, 4};
    clmad_tensor *dst = vec(ctx, 2, a), *src = vec(ctx, 2, b);
    clmad_context_release(ctx);
    cr_assert_eq(clmad_tensor_copy(dst, src), CLMAD_OK);
    expect_values(dst, b, 2);
    clmad_tensor_release(dst);
    clmad_tensor_release(src);
}
