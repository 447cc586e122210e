/* SPDX-License-Identifier: Apache-2.0 */
/* 16-bit floats on the host: f16 and bf16 bit patterns to and from f32 and
 * f64, rounding to nearest even. cl/half.cl does the same in the kernels,
 * in integer arithmetic too, so that every device gives these bits (no
 * dependence on a device's float denormal mode or its half conversions'
 * NaN payloads). */
#include "runtime/half.h"

#include <string.h>

static uint32_t bits_of_float(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static float float_of_bits(uint32_t u)
{
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* q rounded up when the dropped bits rem (of width shift) are above half,
 * or exactly half and q odd. */
static uint64_t round_even(uint64_t q, uint64_t rem, unsigned shift)
{
    uint64_t half = (uint64_t)1 << (shift - 1);
    return q + (rem > half || (rem == half && (q & 1)));
}

uint16_t clmad_f16_from_float(float value)
{
    uint32_t u = bits_of_float(value), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: quiet, the payload's upper bits kept */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* from 65520 (max 65504 plus half a step) up */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) /* normal in f16 (from 2^-14): rebias, round */
        return (uint16_t)(sign | round_even((a - 0x38000000u) >> 13, a & 0x1fffu, 13));
    unsigned e = a >> 23;
    if (e < 102) /* below 2^-25: to zero */
        return (uint16_t)sign;
    uint32_t m = (a & 0x7fffffu) | 0x800000u; /* in units of 2^-24 after the shift */
    unsigned shift = 126 - e;
    return (uint16_t)(sign | round_even(m >> shift, m & ((1u << shift) - 1), shift));
}

uint16_t clmad__f16_from_double(double value)
{
    uint64_t u;
    memcpy(&u, &value, sizeof u);
    uint64_t sign = (u >> 48) & 0x8000u, a = u & 0x7fffffffffffffffull;
    if (a > 0x7ff0000000000000ull)
        return (uint16_t)(sign | 0x7e00u | ((a >> 42) & 0x3ffu));
    if (a >= 0x40effe0000000000ull)
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x3f10000000000000ull)
        return (uint16_t)(sign | round_even((a - 0x3f00000000000000ull) >> 42, a & 0x3ffffffffffull, 42));
    unsigned e = (unsigned)(a >> 52);
    if (e < 998)
        return (uint16_t)sign;
    uint64_t m = (a & 0xfffffffffffffull) | 0x10000000000000ull;
    unsigned shift = 1051 - e;
    return (uint16_t)(sign | round_even(m >> shift, m & (((uint64_t)1 << shift) - 1), shift));
}

float clmad_f16_to_float(uint16_t bits)
{
    uint32_t sign = (uint32_t)(bits & 0x8000u) << 16, e = (bits >> 10) & 0x1fu, m = bits & 0x3ffu;
    if (e == 0x1f)
        return float_of_bits(sign | 0x7f800000u | (m << 13));
    if (e != 0)
        return float_of_bits(sign | ((e + 112) << 23) | (m << 13));
    if (m == 0)
        return float_of_bits(sign);
    e = 113; /* a subnormal: normalised */
    while (!(m & 0x400u)) {
        m <<= 1;
        e--;
    }
    return float_of_bits(sign | (e << 23) | ((m & 0x3ffu) << 13));
}

uint16_t clmad_bf16_from_float(float value)
{
    uint32_t u = bits_of_float(value);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet, of its sign */
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

uint16_t clmad__bf16_from_double(double value)
{
    return clmad_bf16_from_float((float)value);
}

float clmad_bf16_to_float(uint16_t bits)
{
    return float_of_bits((uint32_t)bits << 16);
}
