/* SPDX-License-Identifier: Apache-2.0 */
/* Plain copy: the bandwidth reference the benchmarks compare against, and
 * the kernel the program-cache tests build. `real` comes from the prelude. */
__kernel void clmad_copy(__global const real *restrict src, __global real *restrict dst, ulong n)
{
    size_t i = get_global_id(0);
    if (i < n)
        dst[i] = src[i];
}

/* Four elements per work-item in one vload4/vstore4 (wider, fewer memory
 * accesses), the last n % 4 one each by the n % 4 work-items after n / 4:
 * how much of the bandwidth scalar accesses leave (bench_hmlstm). */
__kernel void clmad_copy_vec4(__global const real *restrict src, __global real *restrict dst, ulong n)
{
    const size_t i = get_global_id(0), quads = n / 4;
    if (i < quads)
        vstore4(vload4(i, src), i, dst);
    else if (i - quads < n % 4)
        dst[4 * quads + (i - quads)] = src[4 * quads + (i - quads)];
}
