/* SPDX-License-Identifier: Apache-2.0 */
/* Integer tensors (CLMAD_I32, CLMAD_I64, CLMAD_U8): creation, fill, read,
 * write, copy, the shape operations against host references; their
 * refusal by requires_grad and by float-only operations, with the status,
 * the message and a context that still works. */
#include "support.h"

#include <stdint.h>
#include <string.h>

static const clmad_dtype INT_DTYPES[3] = {CLMAD_I32, CLMAD_I64, CLMAD_U8};

/* Element i of a host array of dtype, as int64_t. */
static int64_t elem(clmad_dtype dt, const void *a, size_t i)
{
    switch (dt) {
    case CLMAD_I32: return ((const int32_t *)a)[i];
    case CLMAD_I64: return ((const int64_t *)a)[i];
    default: return ((const uint8_t *)a)[i];
    }
}

static void set_elem(clmad_dtype dt, void *a, size_t i, int64_t v)
{
    switch (dt) {
    case CLMAD_I32: ((int32_t *)a)[i] = (int32_t)v; break;
    case CLMAD_I64: ((int64_t *)a)[i] = v; break;
    default: ((uint8_t *)a)[i] = (uint8_t)v; break;
    }
}

/* Values that use the high bits of each type (sign, above 2^32, 255). */
static int64_t value_at(clmad_dtype dt, size_t i)
{
    int64_t k = (int64_t)i;
    switch (dt) {
    case CLMAD_I32: return (k % 2 ? -1 : 1) * (k * 100003 + 2147480000 % (k + 7));
    case CLMAD_I64: return (k % 2 ? -1 : 1) * ((int64_t)1 << 40) * (k + 1) + k;
    default: return (k * 37 + 200) % 256;
    }
}

Test(int_tensors, sizes_and_names)
{
    cr_assert_eq(clmad_dtype_size(CLMAD_I32), 4);
    cr_assert_eq(clmad_dtype_size(CLMAD_I64), 8);
    cr_assert_eq(clmad_dtype_size(CLMAD_U8), 1);
    cr_assert_eq(clmad_dtype_size((clmad_dtype)7), 0);
    cr_assert_eq(CLMAD_F32, 0);
    cr_assert_eq(CLMAD_F64, 1);
}

Test(int_tensors, create_read_write_copy_fill)
{
    clmad_context *ctx = test_context();
    for (int k = 0; k < 3; k++) {
        clmad_dtype dt = INT_DTYPES[k];
        size_t es = clmad_dtype_size(dt), shape[2] = {3, 5}, n = 15;
        unsigned char host[15 * 8], back[15 * 8];
        for (size_t i = 0; i < n; i++)
            set_elem(dt, host, i, value_at(dt, i));
        clmad_tensor *t, *c, *f;
        CHECK_OK(ctx, clmad_tensor_create(ctx, dt, 2, shape, host, &t));
        cr_assert_eq(clmad_tensor_dtype(t), dt);
        memset(back, 0, sizeof back);
        CHECK_OK(ctx, clmad_tensor_read(t, back, n * es));
        cr_assert(memcmp(host, back, n * es) == 0, "dtype %d: read differs from create", dt);
        /* copy */
        CHECK_OK(ctx, clmad_tensor_zeros(ctx, dt, 2, shape, &c));
        CHECK_OK(ctx, clmad_tensor_read(c, back, n * es));
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(elem(dt, back, i), 0);
        CHECK_OK(ctx, clmad_tensor_copy(c, t));
        CHECK_OK(ctx, clmad_tensor_read(c, back, n * es));
        cr_assert(memcmp(host, back, n * es) == 0, "dtype %d: copy differs", dt);
        /* write */
        for (size_t i = 0; i < n; i++)
            set_elem(dt, host, i, value_at(dt, n - 1 - i));
        CHECK_OK(ctx, clmad_tensor_write(c, host, n * es));
        CHECK_OK(ctx, clmad_tensor_read(c, back, n * es));
        cr_assert(memcmp(host, back, n * es) == 0, "dtype %d: write differs", dt);
        /* fill, and item */
        int64_t v = dt == CLMAD_U8 ? 201 : dt == CLMAD_I32 ? -2147483647 - 1 : -((int64_t)1 << 50) - 3;
        CHECK_OK(ctx, clmad_tensor_fill(ctx, dt, 2, shape, (double)v, &f));
        CHECK_OK(ctx, clmad_tensor_read(f, back, n * es));
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(elem(dt, back, i), v, "dtype %d: fill element %zu", dt, i);
        clmad_tensor *s;
        double item;
        CHECK_OK(ctx, clmad_tensor_scalar(ctx, dt, (double)v, &s));
        CHECK_OK(ctx, clmad_tensor_item(s, &item));
        cr_assert_eq(item, (double)v);
        clmad_tensor_release(s);
        clmad_tensor_release(t);
        clmad_tensor_release(c);
        clmad_tensor_release(f);
    }
    clmad_context_release(ctx);
}

/* Slice, concat, reshape and transpose of (2, 3, 4) tensors. */
Test(int_tensors, shape_operations)
{
    clmad_context *ctx = test_context();
    for (int k = 0; k < 3; k++) {
        clmad_dtype dt = INT_DTYPES[k];
        size_t es = clmad_dtype_size(dt), shape[3] = {2, 3, 4}, n = 24;
        unsigned char a[24 * 8], b[24 * 8], got[48 * 8];
        for (size_t i = 0; i < n; i++) {
            set_elem(dt, a, i, value_at(dt, i));
            set_elem(dt, b, i, value_at(dt, i + 30));
        }
        clmad_tensor *ta, *tb, *y;
        CHECK_OK(ctx, clmad_tensor_create(ctx, dt, 3, shape, a, &ta));
        CHECK_OK(ctx, clmad_tensor_create(ctx, dt, 3, shape, b, &tb));
        /* slice [1, 3) of axis 1 */
        CHECK_OK(ctx, clmad_slice(ctx, ta, 1, 1, 3, &y));
        cr_assert_eq(clmad_tensor_dtype(y), dt);
        CHECK_OK(ctx, clmad_tensor_read(y, got, 16 * es));
        for (size_t i = 0; i < 2; i++)
            for (size_t j = 0; j < 2; j++)
                for (size_t l = 0; l < 4; l++)
                    cr_assert_eq(elem(dt, got, (i * 2 + j) * 4 + l), elem(dt, a, (i * 3 + j + 1) * 4 + l));
        clmad_tensor_release(y);
        /* concat along axis 2 */
        clmad_tensor *xs[2] = {ta, tb};
        CHECK_OK(ctx, clmad_concat(ctx, 2, xs, 2, &y));
        CHECK_OK(ctx, clmad_tensor_read(y, got, 48 * es));
        for (size_t r = 0; r < 6; r++)
            for (size_t l = 0; l < 8; l++)
                cr_assert_eq(elem(dt, got, r * 8 + l), l < 4 ? elem(dt, a, r * 4 + l) : elem(dt, b, r * 4 + l - 4));
        clmad_tensor_release(y);
        /* transpose (reverse the axes), then reshape back to flat */
        CHECK_OK(ctx, clmad_transpose(ctx, ta, NULL, &y));
        CHECK_OK(ctx, clmad_tensor_read(y, got, n * es));
        for (size_t i = 0; i < 2; i++)
            for (size_t j = 0; j < 3; j++)
                for (size_t l = 0; l < 4; l++)
                    cr_assert_eq(elem(dt, got, (l * 3 + j) * 2 + i), elem(dt, a, (i * 3 + j) * 4 + l));
        clmad_tensor *r;
        size_t flat[1] = {24};
        CHECK_OK(ctx, clmad_reshape(ctx, y, 1, flat, &r));
        cr_assert_eq(clmad_tensor_dtype(r), dt);
        CHECK_OK(ctx, clmad_tensor_read(r, b, n * es));
        cr_assert(memcmp(b, got, n * es) == 0);
        clmad_tensor_release(r);
        clmad_tensor_release(y);
        clmad_tensor_release(ta);
        clmad_tensor_release(tb);
    }
    clmad_context_release(ctx);
}

/* The context still computes after a refusal. */
static void still_usable(clmad_context *ctx)
{
    clmad_tensor *x, *y;
    size_t shape[1] = {3};
    float h[3] = {1, 2, 3}, g[3];
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, shape, h, &x));
    CHECK_OK(ctx, clmad_add(ctx, x, x, &y));
    CHECK_OK(ctx, clmad_tensor_read(y, g, sizeof g));
    cr_assert_eq(g[2], 6.0f);
    clmad_tensor_release(x);
    clmad_tensor_release(y);
}

Test(int_tensors, never_differentiable)
{
    clmad_context *ctx = test_context();
    for (int k = 0; k < 3; k++) {
        clmad_tensor *t;
        size_t shape[1] = {4};
        CHECK_OK(ctx, clmad_tensor_zeros(ctx, INT_DTYPES[k], 1, shape, &t));
        REFUSED(ctx, clmad_tensor_set_requires_grad(t, 1), CLMAD_ERR_DTYPE, "integer tensor");
        cr_assert_eq(clmad_tensor_requires_grad(t), 0);
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(t, 0)); /* off is always fine */
        clmad_tensor_release(t);
    }
    still_usable(ctx);
    clmad_context_release(ctx);
}

Test(int_tensors, float_operations_refuse_them)
{
    clmad_context *ctx = test_context();
    size_t shape[2] = {2, 2};
    clmad_tensor *i, *f, *out = NULL;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_I32, 2, shape, &i));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, shape, &f));
    REFUSED(ctx, clmad_add(ctx, i, i, &out), CLMAD_ERR_DTYPE, "integer tensor (i32)");
    REFUSED(ctx, clmad_exp(ctx, i, &out), CLMAD_ERR_DTYPE, "integer tensor");
    REFUSED(ctx, clmad_add(ctx, f, i, &out), CLMAD_ERR_DTYPE, "i32");
    REFUSED(ctx, clmad_mul_scalar(ctx, i, 2.0, &out), CLMAD_ERR_DTYPE, "integer tensor");
    REFUSED(ctx, clmad_matmul(ctx, i, i, 0, 0, &out), CLMAD_ERR_DTYPE, "clmad_matmul: a is an integer tensor");
    REFUSED(ctx, clmad_sum(ctx, i, 0, NULL, 0, &out), CLMAD_ERR_DTYPE, "clmad_sum: x is an integer tensor");
    REFUSED(ctx, clmad_mean(ctx, i, 0, NULL, 0, &out), CLMAD_ERR_DTYPE, "integer tensor");
    REFUSED(ctx, clmad_dot(ctx, i, i, &out), CLMAD_ERR_DTYPE, "integer tensor");
    REFUSED(ctx, clmad_softmax(ctx, i, -1, &out), CLMAD_ERR_DTYPE, "integer tensor");
    REFUSED(ctx, clmad_max(ctx, i, -1, 0, &out), CLMAD_ERR_DTYPE, "integer tensor");
    REFUSED(ctx, clmad_mse_loss(ctx, i, i, &out), CLMAD_ERR_DTYPE, "integer tensor");
    REFUSED(ctx, clmad_tensor_axpby(i, 1.0, i, 1.0), CLMAD_ERR_DTYPE, "integer tensor");
    REFUSED(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_I64, 2, shape, 0, 1, 1, &out), CLMAD_ERR_DTYPE,
            "integer type");
    clmad_optimizer *o = NULL;
    REFUSED(ctx, clmad_optimizer_sgd(ctx, &i, 1, 0.1, 0, &o), CLMAD_ERR_DTYPE, "integer tensor");
    cr_assert_null(out);
    cr_assert_null(o);
    /* values that the dtype cannot hold */
    REFUSED(ctx, clmad_tensor_fill(ctx, CLMAD_U8, 2, shape, 256, &out), CLMAD_ERR_INVALID_ARGUMENT, "u8");
    REFUSED(ctx, clmad_tensor_fill(ctx, CLMAD_I32, 2, shape, 0.5, &out), CLMAD_ERR_INVALID_ARGUMENT, "i32");
    REFUSED(ctx, clmad_tensor_fill(ctx, CLMAD_I64, 2, shape, 1e19, &out), CLMAD_ERR_INVALID_ARGUMENT, "i64");
    /* concat and copy of mixed dtypes */
    clmad_tensor *xs[2] = {i, f};
    REFUSED(ctx, clmad_concat(ctx, 2, xs, 0, &out), CLMAD_ERR_DTYPE, "dtype");
    REFUSED(ctx, clmad_tensor_copy(f, i), CLMAD_ERR_DTYPE, "i32");
    cr_assert_null(out);
    still_usable(ctx);
    clmad_tensor_release(i);
    clmad_tensor_release(f);
    clmad_context_release(ctx);
}
