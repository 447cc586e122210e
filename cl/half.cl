/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clmad_cast's conversions (ops/index_cast.c) between 16-bit floats and
 * `real` (float or double), with half.clh's roundings.
 */
#include "real.clh"
#include "half.clh"

#if CLMAD_REAL_DOUBLE
/* q rounded up when the dropped bits rem (of width shift) are above half,
 * or exactly half and q odd. */
static ulong clmad__round_even(ulong q, ulong rem, uint shift)
{
    ulong mid = (ulong)1 << (shift - 1);
    return q + (rem > mid || (rem == mid && (q & 1)));
}

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
        dst[e] = (real)clmad__bf16_to_f32(src[e]);
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
