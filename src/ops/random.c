/* SPDX-License-Identifier: Apache-2.0 */
/* Random initialisation on the device: counter-based Philox4x32-10, so a
 * tensor is a pure function of its seed, shape and dtype (cl/train.cl). */
#include "runtime/primitives.h"
#include "runtime/tensor.h"
#include "runtime/context_guard.h"

#include <float.h>
#include <math.h>

/* The largest |z| the generator's Box-Muller makes (cl/train.cl): the
 * smallest uniform it takes is one step, 2^-24 (f32) or 2^-53 (f64), so
 * |z| <= sqrt(-2 ln step), with a margin for the device's log. */
static double largest_normal(clmad_dtype dtype)
{
    return 1.001 * sqrt(-2.0 * log(dtype == CLMAD_F64 ? 0x1.0p-53 : 0x1.0p-24));
}

/* x as the dtype holds it is finite (an f32 argument is rounded to float). */
static int fits(clmad_dtype dtype, double x)
{
    return dtype == CLMAD_F64 ? isfinite(x) : isfinite((float)x);
}

/* Refuses what the dtype cannot represent: a bound, mean or std beyond its
 * range, or a range whose values would overflow (hi - lo, or mean + std z
 * at the largest z): every value would be inf. */
static clmad_status check_range(clmad_context *ctx, const char *call, clmad_dtype dtype, double a, double b,
                                double hi, int normal)
{
    const char *dt = dtype == CLMAD_F64 ? "f64" : "f32";
    const double top = dtype == CLMAD_F64 ? DBL_MAX : FLT_MAX;
    const char *names[3] = {normal ? "mean" : "lo", normal ? "std" : "hi", "hi - lo"};
    const double values[3] = {a, normal ? b : hi, b};
    for (int i = 0; i < (normal ? 2 : 3); i++)
        if (!fits(dtype, values[i]))
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                               "%s: %s %g is not finite in %s (its largest finite value is %g)%s", call,
                               names[i], values[i], dt, top, i == 2 ? ": every value would be inf" : "");
    if (normal && !fits(dtype, fabs(a) + largest_normal(dtype) * b))
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "%s: mean %g + std %g z overflows %s at the largest |z| the generator makes "
                           "(%.3f): values would be inf",
                           call, a, b, dt, largest_normal(dtype));
    return CLMAD_OK;
}

/* Values a + b u (uniform, hi = a + b as given) or a + b z (normal). */
static clmad_status rand_tensor(clmad_context *ctx, const char *call, clmad_dtype dtype, int ndim,
                                const size_t *shape, double a, double b, double hi, int normal,
                                uint64_t seed, clmad_tensor **out)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: out is NULL", call);
    if (clmad_dtype_size(dtype) && !clmad__dtype_is_float(dtype))
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "%s: dtype %s is an integer type; random values are f32 or f64",
                           call, clmad_dtype_name(dtype));
    if (isnan(a) || isnan(b) || b < 0)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           normal ? "%s: mean %g and std %g must be numbers, std >= 0"
                                  : "%s: lo %g and hi - lo %g must be numbers, hi >= lo",
                           call, a, b);
    clmad_status checked = check_range(ctx, call, dtype, a, b, hi, normal);
    if (checked != CLMAD_OK)
        return checked;
    clmad_tensor *t;
    clmad_status st = clmad_tensor_create(ctx, dtype, ndim, shape, NULL, &t);
    if (st != CLMAD_OK || t->numel == 0) {
        if (st == CLMAD_OK)
            *out = t;
        return st;
    }
    cl_kernel k;
    st = clmad__cached_kernel(ctx, dtype, CLMAD_TRAIN_RAND, &k);
    if (st == CLMAD_OK) {
        const size_t per = dtype == CLMAD_F64 ? 2 : 4; /* values per Philox block */
        cl_ulong n = t->numel;
        cl_uint k0 = (cl_uint)seed, k1 = (cl_uint)(seed >> 32);
        float af = (float)a, bf = (float)b;
        cl_int flag = normal;
        size_t real_size = clmad_dtype_size(dtype);
        const size_t sizes[7] = {sizeof(cl_mem), sizeof n, sizeof k0, sizeof k1, real_size, real_size,
                                 sizeof flag};
        const void *values[7] = {&t->mem, &n, &k0, &k1, dtype == CLMAD_F64 ? (const void *)&a : &af,
                                 dtype == CLMAD_F64 ? (const void *)&b : &bf, &flag};
        st = clmad__set_kernel_args(ctx, k, 7, sizes, values);
        if (st == CLMAD_OK)
            st = clmad__enqueue_1d(ctx, k, (t->numel + per - 1) / per, clmad__tensor_bytes(t));
    }
    if (st != CLMAD_OK) {
        clmad_tensor_release(t);
        return st;
    }
    *out = t;
    return CLMAD_OK;
}

clmad_status clmad_tensor_rand_uniform(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                                       double lo, double hi, uint64_t seed, clmad_tensor **out)
{
    CLMAD_GUARD(ctx, "clmad_tensor_rand_uniform");
    return rand_tensor(ctx, "clmad_tensor_rand_uniform", dtype, ndim, shape, lo, hi - lo, hi, 0, seed, out);
}

clmad_status clmad_tensor_rand_normal(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                                      double mean, double std, uint64_t seed, clmad_tensor **out)
{
    CLMAD_GUARD(ctx, "clmad_tensor_rand_normal");
    return rand_tensor(ctx, "clmad_tensor_rand_normal", dtype, ndim, shape, mean, std, 0.0, 1, seed, out);
}
