/* SPDX-License-Identifier: Apache-2.0 */
/* Plain copy: the bandwidth reference the benchmarks compare against, and
 * the kernel the program-cache tests build. `real` comes from the prelude. */
__kernel void clmad_copy(__global const real *restrict src, __global real *restrict dst, ulong n)
{
    size_t i = get_global_id(0);
    if (i < n)
        dst[i] = src[i];
}
