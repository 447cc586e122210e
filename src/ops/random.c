/* SPDX-License-Identifier: Apache-2.0 */
/* Random initialisation on the device: counter-based Philox4x32-10, so a
 * tensor is a pure function of its seed, shape and dtype (cl/train.cl). */
#include "runtime/primitives.h"
#include "runtime/tensor.h"
#include "runtime/context_guard.h"

#include <math.h>

static clmad_status rand_tensor(clmad_context *ctx, const char *call, clmad_dtype dtype, int ndim,
                                const size_t *shape, double a, double b, int normal, uint64_t seed,
                                clmad_tensor **out)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: out is NULL", call);
    if (!isfinite(a) || !isfinite(b) || b < 0)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           normal ? "%s: mean %g and std %g must be finite, std >= 0"
                                  : "%s: lo %g and hi - lo %g must be finite, hi >= lo",
                           call, a, b);
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
    return rand_tensor(ctx, "clmad_tensor_rand_uniform", dtype, ndim, shape, lo, hi - lo, 0, seed, out);
}

clmad_status clmad_tensor_rand_normal(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                                      double mean, double std, uint64_t seed, clmad_tensor **out)
{
    CLMAD_GUARD(ctx, "clmad_tensor_rand_normal");
    return rand_tensor(ctx, "clmad_tensor_rand_normal", dtype, ndim, shape, mean, std, 1, seed, out);
}
