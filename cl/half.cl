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

/* Without branches or loops (selects of each path's result), so that
 * a CPU runtime's vectoriser packs it: the branchy form ran at a quarter
 * of bf16's speed on POCL. OpenCL masks shift counts, and the clamps keep
 * the unused paths' shifts in range anyway. */
static ushort clmad__f16_from_f32(float v)
{
    uint u = as_uint(v), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    uint r = a - 0x38000000u, qn = r >> 13, remn = r & 0x1fffu; /* normal in f16 (from 2^-14): rebias */
    qn += (uint)(remn > 0x1000u) | ((uint)(remn == 0x1000u) & qn & 1u);
    uint shift = (uint)clamp(126 - (int)(a >> 23), 14, 25); /* subnormal: in units of 2^-24; 0 below 2^-25 */
    uint m = (a & 0x7fffffu) | 0x800000u, qs = m >> shift, rems = m & ((1u << shift) - 1), mid = 1u << (shift - 1);
    qs += (uint)(rems > mid) | ((uint)(rems == mid) & qs & 1u);
    uint h = a > 0x7f800000u   ? 0x7e00u | ((a >> 13) & 0x3ffu) /* NaN: quiet */
             : a >= 0x477ff000u ? 0x7c00u                        /* from 65520 up: infinity */
             : a >= 0x38800000u ? qn
                                : qs;
    return (ushort)(sign | h);
}

static float clmad__f16_to_f32(ushort bits)
{
    uint sign = (uint)(bits & 0x8000u) << 16, e = (bits >> 10) & 0x1fu, m = bits & 0x3ffu;
    uint normal = ((e + 112) << 23) | (m << 13);
    uint special = 0x7f800000u | (m << 13);
    uint sub = as_uint((float)m * 0x1p-24f); /* exact, and normal in f32 (or 0) */
    return as_float(sign | (e == 0x1f ? special : e == 0 ? sub : normal));
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
