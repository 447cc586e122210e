/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernels of the training helpers: random initialisation (Philox4x32-10),
 * in-place updates and the fused optimizer steps. `real` comes from
 * real.clh. No contraction into fma: results must match the host formulas
 * of the tests on every device.
 */
#pragma OPENCL FP_CONTRACT OFF

#include "real.clh"

/* ---- Philox4x32-10 (Salmon et al., SC'11; the constants of Random123) --- */

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static uint4 philox4x32_10(uint4 c, uint2 k)
{
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k.x += PHILOX_W0;
            k.y += PHILOX_W1;
        }
        const uint hi0 = mul_hi(PHILOX_M0, c.x), lo0 = PHILOX_M0 * c.x;
        const uint hi1 = mul_hi(PHILOX_M1, c.z), lo1 = PHILOX_M1 * c.z;
        c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

#if CLMAD_REAL_DOUBLE
#define CLMAD_RAND_PER 2 /* values per Philox block: 53 bits take two words */
/* [0, 1) in steps of 2^-53, from the top 27 and 26 bits of two words. */
static real clmad_unit(uint a, uint b)
{
    return ((real)(a >> 5) * 67108864.0 + (real)(b >> 6)) * 0x1.0p-53;
}
#define CLMAD_ULP_UNIT 0x1.0p-53
#define CLMAD_TWO_PI 6.283185307179586476925286766559
#else
#define CLMAD_RAND_PER 4
/* [0, 1) in steps of 2^-24, from the top 24 bits of a word. */
static real clmad_unit(uint a, uint b)
{
    (void)b;
    return (real)(a >> 8) * 0x1.0p-24f;
}
#define CLMAD_ULP_UNIT 0x1.0p-24f
#define CLMAD_TWO_PI 6.283185307179586476925286766559f
#endif

/* Element e of the stream of key (k0, k1) is value e % PER of block
 * e / PER, Philox of the counter (block, 0, 0) with the 64-bit block
 * number in its first two words: a pure function of (seed, e), the same on
 * every device and for every launch size. uniform: a + b u, u in [0, 1);
 * normal: a + b z, z from Box-Muller on pairs of uniforms (the first moved
 * to (0, 1] so that its logarithm is finite). */
__kernel void clmad_rand(__global real *dst, ulong n, uint k0, uint k1, real a, real b, int normal)
{
    const ulong block = get_global_id(0);
    const ulong first = block * CLMAD_RAND_PER;
    if (first >= n)
        return;
    const uint4 w = philox4x32_10((uint4)((uint)block, (uint)(block >> 32), 0u, 0u), (uint2)(k0, k1));
    real v[4];
#if CLMAD_REAL_DOUBLE
    v[0] = clmad_unit(w.x, w.y);
    v[1] = clmad_unit(w.z, w.w);
#else
    v[0] = clmad_unit(w.x, 0u);
    v[1] = clmad_unit(w.y, 0u);
    v[2] = clmad_unit(w.z, 0u);
    v[3] = clmad_unit(w.w, 0u);
#endif
    if (normal) {
        for (int i = 0; i < CLMAD_RAND_PER; i += 2) {
            const real r = sqrt((real)-2 * log(v[i] + CLMAD_ULP_UNIT));
            const real t = CLMAD_TWO_PI * v[i + 1];
            v[i] = r * cos(t);
            v[i + 1] = r * sin(t);
        }
    }
    for (int i = 0; i < CLMAD_RAND_PER && first + i < n; i++)
        dst[first + i] = a + b * v[i];
}

/* ---- In-place updates and optimizer steps -------------------------------- */

/* y = alpha x + beta y (x NULL: has_x 0, alpha x left out); beta 0 does not
 * read y (the BLAS rule, so NaN in an unset y does not survive). Flat
 * (real.clh). */
__kernel void clmad_axpby(__global real *y, __global const real *x, ulong n, real alpha, real beta,
                          int has_x)
{
    const ulong i = get_global_id(0);
    if (CLMAD__WHOLE_RUN(i, n)) {
        const clmad__realv by = beta == (real)0 ? (clmad__realv)(0) : beta * CLMAD__VLOAD(i, y);
        CLMAD__VSTORE(has_x ? alpha * CLMAD__VLOAD(i, x) + by : by, i, y);
        return;
    }
    for (ulong e = i * CLMAD_VW; e < n; e++) {
        const real by = beta == (real)0 ? (real)0 : beta * y[e];
        y[e] = has_x ? alpha * x[e] + by : by;
    }
}

/* SGD (PyTorch's torch.optim.SGD, dampening 0): d = g + wd p; with momentum
 * mu (has_v): v = mu v + d, d = nesterov ? d + mu v : v; p = p - lr d.
 * v starts at zero, so the first step stores d itself. One element; the
 * per-parameter kernel and the grouped one share it, so that both give the
 * same bits. */
static void clmad_sgd_element(__global real *p, __global const real *g, __global real *v, ulong e, real lr,
                              real mu, real wd, int has_v, int nesterov)
{
    const real pe = p[e];
    real d = g[e] + wd * pe;
    if (has_v) {
        const real ve = mu * v[e] + d;
        v[e] = ve;
        d = nesterov ? d + mu * ve : ve;
    }
    p[e] = pe - lr * d;
}

__kernel void clmad_sgd(__global real *p, __global const real *g, __global real *v, ulong n, real lr,
                        real mu, real wd, int has_v, int nesterov)
{
    const ulong e = get_global_id(0);
    if (e >= n)
        return;
    clmad_sgd_element(p, g, v, e, lr, mu, wd, has_v, nesterov);
}

/* Adam (decoupled 0: L2, wd p added to the gradient) and AdamW (decoupled
 * 1: p scaled by decay = 1 - lr wd first), at step t:
 * m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g g;
 * p = p - step_size m / (sqrt(v) / sqrt_bc2 + eps), with step_size =
 * lr / (1 - b1^t) and sqrt_bc2 = sqrt(1 - b2^t) formed on the host. One
 * element, shared as clmad_sgd_element is. */
static void clmad_adam_element(__global real *p, __global const real *g, __global real *m, __global real *v,
                               ulong e, real step_size, real b1, real c1, real b2, real c2, real sqrt_bc2,
                               real eps, real wd, real decay, int decoupled)
{
    real pe = p[e], ge = g[e];
    if (decoupled)
        pe = pe * decay;
    else
        ge = ge + wd * pe;
    const real me = b1 * m[e] + c1 * ge;
    const real ve = b2 * v[e] + c2 * (ge * ge);
    m[e] = me;
    v[e] = ve;
    p[e] = pe - step_size * (me / (sqrt(ve) / sqrt_bc2 + eps));
}

__kernel void clmad_adam(__global real *p, __global const real *g, __global real *m, __global real *v,
                         ulong n, real step_size, real b1, real c1, real b2, real c2, real sqrt_bc2,
                         real eps, real wd, real decay, int decoupled)
{
    const ulong e = get_global_id(0);
    if (e >= n)
        return;
    clmad_adam_element(p, g, m, v, e, step_size, b1, c1, b2, c2, sqrt_bc2, eps, wd, decay, decoupled);
}

/* One step of up to 8 parameters in one launch (OpenCL 1.2 has no table of
 * buffers: each parameter's buffers are arguments of their own). Work-item
 * e belongs to the first slot i with e < end_i, at element e - end_(i-1);
 * the host gives unused slots the last end, so no work-item reaches them.
 * The slot's arguments are picked by selects and the element is inlined
 * once: with one inlined copy per slot behind early returns, POCL ran the
 * grouped Adam step 100x slower than a launch per parameter.
 * 8 slots keep the arguments (Adam: 8 x 56 bytes and the common ones) under
 * the 1024 bytes that every device takes (CL_DEVICE_MAX_PARAMETER_SIZE). */
#define CLMAD_PICK(x)                                                                                   \
    (e < end0   ? x##0                                                                                  \
     : e < end1 ? x##1                                                                                  \
     : e < end2 ? x##2                                                                                  \
     : e < end3 ? x##3                                                                                  \
     : e < end4 ? x##4                                                                                  \
     : e < end5 ? x##5                                                                                  \
     : e < end6 ? x##6                                                                                  \
                : x##7)
#define CLMAD_SLOT_START                                                                                \
    (e < end0   ? 0                                                                                     \
     : e < end1 ? end0                                                                                  \
     : e < end2 ? end1                                                                                  \
     : e < end3 ? end2                                                                                  \
     : e < end4 ? end3                                                                                  \
     : e < end5 ? end4                                                                                  \
     : e < end6 ? end5                                                                                  \
                : end6)
#define CLMAD_SGD_SLOT(i) __global real *p##i, __global const real *g##i, __global real *v##i, ulong end##i

__kernel void clmad_sgd_group(CLMAD_SGD_SLOT(0), CLMAD_SGD_SLOT(1), CLMAD_SGD_SLOT(2), CLMAD_SGD_SLOT(3),
                              CLMAD_SGD_SLOT(4), CLMAD_SGD_SLOT(5), CLMAD_SGD_SLOT(6), CLMAD_SGD_SLOT(7),
                              real lr, real mu, real wd, int has_v, int nesterov)
{
    const ulong e = get_global_id(0);
    if (e >= end7)
        return;
    clmad_sgd_element(CLMAD_PICK(p), CLMAD_PICK(g), CLMAD_PICK(v), e - CLMAD_SLOT_START, lr, mu, wd, has_v,
                      nesterov);
}

#define CLMAD_ADAM_SLOT(i)                                                                                \
    __global real *p##i, __global const real *g##i, __global real *m##i, __global real *v##i, ulong end##i, \
        real step_size##i, real sqrt_bc2##i

__kernel void clmad_adam_group(CLMAD_ADAM_SLOT(0), CLMAD_ADAM_SLOT(1), CLMAD_ADAM_SLOT(2), CLMAD_ADAM_SLOT(3),
                               CLMAD_ADAM_SLOT(4), CLMAD_ADAM_SLOT(5), CLMAD_ADAM_SLOT(6), CLMAD_ADAM_SLOT(7),
                               real b1, real c1, real b2, real c2, real eps, real wd, real decay, int decoupled)
{
    const ulong e = get_global_id(0);
    if (e >= end7)
        return;
    clmad_adam_element(CLMAD_PICK(p), CLMAD_PICK(g), CLMAD_PICK(m), CLMAD_PICK(v), e - CLMAD_SLOT_START,
                       CLMAD_PICK(step_size), b1, c1, b2, c2, CLMAD_PICK(sqrt_bc2), eps, wd, decay, decoupled);
}

/* GradScaler's unscale and check in one pass (ops/grad_scaler.c):
 * found[0] = 1 when an element of g is inf or NaN, and g = g * inv_scale. */
__kernel void clmad_unscale_check(__global real *g, ulong n, real inv_scale, __global int *found)
{
    const ulong e = get_global_id(0);
    if (e >= n)
        return;
    const real v = g[e];
    if (!isfinite(v))
        atomic_or(found, 1);
    g[e] = v * inv_scale;
}
