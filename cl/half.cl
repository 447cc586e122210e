/* SPDX-License-Identifier: Apache-2.0 */
/*
 * 16-bit floats (ops/index_cast.c): f16 and bf16 bit patterns (ushort) to
 * and from `real` (float or double), rounding to nearest even. Integer
 * arithmetic on the bits, as src/runtime/half.c on the host, gives the
 * same bits on every device: no half arithmetic (no cl_khr_fp16), no
 * dependence on a device's float denormal mode or its conversions' NaN
 * payloads. Widening is exact.
 */
#include "real.clh"

/* q rounded up when the dropped bits rem (of width shift) are above half,
 * or exactly half and q odd. */
static ulong clmad__round_even(ulong q, ulong rem, uint shift)
{
    ulong mid = (ulong)1 << (shift - 1);
    return q + (rem > mid || (rem == mid && (q & 1)));
}

static ushort clmad__f16_from_f32(float v)
{
    uint u = as_uint(v), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (ushort)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u)
        return (ushort)(sign | 0x7c00u);
    if (a >= 0x38800000u)
        return (ushort)(sign | clmad__round_even((a - 0x38000000u) >> 13, a & 0x1fffu, 13));
    uint e = a >> 23;
    if (e < 102)
        return (ushort)sign;
    uint m = (a & 0x7fffffu) | 0x800000u, shift = 126 - e;
    return (ushort)(sign | clmad__round_even(m >> shift, m & ((1u << shift) - 1), shift));
}

static float clmad__f16_to_f32(ushort h)
{
    uint sign = (uint)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return as_float(sign | 0x7f800000u | (m << 13));
    if (e != 0)
        return as_float(sign | ((e + 112) << 23) | (m << 13));
    if (m == 0)
        return as_float(sign);
    e = 113;
    while (!(m & 0x400u)) {
        m <<= 1;
        e--;
    }
    return as_float(sign | (e << 23) | ((m & 0x3ffu) << 13));
}

static ushort clmad__bf16_from_f32(float v)
{
    uint u = as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

#if CLMAD_REAL_DOUBLE
/* f64 to f16 in one rounding (as NumPy); to bf16 through f32 (as PyTorch). */
static ushort clmad__f16_from_real(double v)
{
    ulong u = as_ulong(v), sign = (u >> 48) & 0x8000u, a = u & 0x7fffffffffffffffUL;
    if (a > 0x7ff0000000000000UL)
        return (ushort)(sign | 0x7e00u | ((a >> 42) & 0x3ffu));
    if (a >= 0x40effe0000000000UL)
        return (ushort)(sign | 0x7c00u);
    if (a >= 0x3f10000000000000UL)
        return (ushort)(sign | clmad__round_even((a - 0x3f00000000000000UL) >> 42, a & 0x3ffffffffffUL, 42));
    uint e = (uint)(a >> 52);
    if (e < 998)
        return (ushort)sign;
    ulong m = (a & 0xfffffffffffffUL) | 0x10000000000000UL;
    uint shift = 1051 - e;
    return (ushort)(sign | clmad__round_even(m >> shift, m & (((ulong)1 << shift) - 1), shift));
}
#define clmad__bf16_from_real(v) clmad__bf16_from_f32(convert_float_rte(v))
#else
#define clmad__f16_from_real(v) clmad__f16_from_f32(v)
#define clmad__bf16_from_real(v) clmad__bf16_from_f32(v)
#endif

__kernel void clmad_f16_to_real(__global real *restrict dst, __global const ushort *restrict src, ulong n)
{
    ulong e = get_global_id(0);
    if (e < n)
        dst[e] = (real)clmad__f16_to_f32(src[e]);
}

__kernel void clmad_bf16_to_real(__global real *restrict dst, __global const ushort *restrict src, ulong n)
{
    ulong e = get_global_id(0);
    if (e < n)
        dst[e] = (real)as_float((uint)src[e] << 16);
}

__kernel void clmad_real_to_f16(__global ushort *restrict dst, __global const real *restrict src, ulong n)
{
    ulong e = get_global_id(0);
    if (e < n)
        dst[e] = clmad__f16_from_real(src[e]);
}

__kernel void clmad_real_to_bf16(__global ushort *restrict dst, __global const real *restrict src, ulong n)
{
    ulong e = get_global_id(0);
    if (e < n)
        dst[e] = clmad__bf16_from_real(src[e]);
}
