/* SPDX-License-Identifier: Apache-2.0 */
/* Device primitives that the tape, the broadcast code and the builtins stand
 * on: the context's cached internal kernels, kernel arguments and launches,
 * fill, strided copy and the deterministic reductions. */
#ifndef CLMAD_PRIMITIVES_H
#define CLMAD_PRIMITIVES_H

#include "runtime/tensor.h"

/* The internal kernel `id` (kernel_ids.h) for dtype, built on first use
 * (one program per file and dtype); owned by ctx. */
clmad_status clmad__cached_kernel(clmad_context *ctx, clmad_dtype dtype, clmad_kernel_id id,
                                  cl_kernel *kernel);

/* Sets arguments 0..n-1 of k (sizes[i] bytes at values[i]). */
clmad_status clmad__set_kernel_args(clmad_context *ctx, cl_kernel k, int n, const size_t *sizes,
                                    const void *const *values);

/* Enqueues a 1-d range of at least n work-items (rounded up to the group)
 * and counts it in the stats with the bytes it reads and writes. */
clmad_status clmad__enqueue_1d(clmad_context *ctx, cl_kernel kernel, size_t n, uint64_t bytes);

/* The same for a flat kernel (cl/real.clh's CLMAD_VW): one work-item per
 * run of the context's vector width over n elements. */
clmad_status clmad__enqueue_flat(clmad_context *ctx, cl_kernel kernel, size_t n, uint64_t bytes);

/* n_groups work-groups of `group` work-items each, counted as above. */
clmad_status clmad__enqueue_groups(clmad_context *ctx, cl_kernel kernel, size_t n_groups, size_t group,
                                   uint64_t bytes);

/* The three above in one: sets arguments 0..n-1 of the internal kernel id
 * for dtype and enqueues `work` work-items (the index and axis operations). */
clmad_status clmad__launch_cached(clmad_context *ctx, clmad_dtype dtype, clmad_kernel_id id, int n,
                                  const size_t *sizes, const void *const *values, size_t work, uint64_t bytes);

/* The same with n_groups work-groups of `group` work-items each (kernels
 * that share work within a group: the axis operations' rows on GPUs). */
clmad_status clmad__launch_cached_groups(clmad_context *ctx, clmad_dtype dtype, clmad_kernel_id id, int n,
                                         const size_t *sizes, const void *const *values, size_t n_groups,
                                         size_t group, uint64_t bytes);

/* A kernel argument of type `real` for dtype (an integer type for integer
 * dtypes: value is then in range and integral, as the callers check; float
 * for 16-bit floats, whose kernels compute in float: cl/real.clh). */
typedef union clmad_real_arg {
    float f;
    double d;
    cl_int i;
    cl_long l;
    cl_uchar u;
    cl_ushort h; /* f16 and bf16 */
} clmad_real_arg;

/* Stores value as dtype's `real` in *arg and returns its size in bytes. */
size_t clmad__real_arg(clmad_dtype dtype, double value, clmad_real_arg *arg);

/* Sets the first n elements of `mem` (of dtype) to value, with a kernel
 * rather than clEnqueueFillBuffer: Oclgrind (21.10) does not count a
 * buffer fill as initialising memory, so its uninitialised-value checks of
 * every kernel that reads a filled tensor would be false alarms. */
clmad_status clmad__fill(clmad_context *ctx, cl_mem mem, clmad_dtype dtype, size_t n, double value);

/* Sums src over the dimensions where the target shape (aligned at the last
 * axis, like broadcasting) has size 1 or is missing: the adjoint of a
 * broadcast ("unbroadcast"). Fixed summation order: bitwise reproducible.
 * *out is new, of the target shape. */
clmad_status clmad__sum_to_shape(clmad_context *ctx, clmad_tensor *src, int ndim, const size_t *shape,
                                 clmad_tensor **out);

/* out = scale * sum of src over the dimensions d with reduce[d] != 0; *out
 * is new with shape out_ndim/out_shape (numel = product of kept dims). */
clmad_status clmad__reduce(clmad_context *ctx, clmad_tensor *src, const int *reduce, double scale,
                           int out_ndim, const size_t *out_shape, clmad_tensor **out);

/* For every element e of dims[0..nd): dst[dst_off + e . dst_strides]
 * (+)= scale * src[src_off + e . src_strides]. */
clmad_status clmad__strided_copy(clmad_context *ctx, clmad_tensor *dst, size_t dst_off,
                                 const size_t *dst_strides, clmad_tensor *src, size_t src_off,
                                 const size_t *src_strides, int nd, const size_t *dims, double scale,
                                 int accumulate);

/* How many partial sums per kept element the first pass of clmad__reduce
 * makes (the order of its additions; clmad_dot follows it). */
size_t clmad__reduce_parts(size_t n_keep, size_t n_red);

/* 1 when a pass of clmad__reduce sums one contiguous run to one value by
 * ranges (CPUs: a work-item streams a range in vector loads; GPUs keep the
 * interleaved parts, which coalesce). */
int clmad__sum_by_ranges(const clmad_context *ctx, size_t n_keep, int nr, const size_t *rs);

/* How many ranges such a pass over n elements makes. */
size_t clmad__range_parts(size_t n);

/* Work-items per partial sum of an interleaved loss kernel of `parts`
 * parts: ctx's fixed count (a tuning file's "loss_lanes N", the hooks
 * below), else as many as fill the device (loss_lanes.c). */
int clmad__loss_lanes_for(const clmad_context *ctx, size_t parts);

/* For tests: ctx sums as GPUs do (interleaved parts, no ranges), its loss
 * kernels with `lanes` work-items per part (0: by the device's size),
 * whatever the device. */
void clmad__sum_as_gpus(clmad_context *ctx, int lanes);

/* For tests: the work-items of the one group that sums a sum's last
 * passes (0: as many as the kernel takes on the device, up to 1024), as a
 * device whose group for it is smaller has it. */
void clmad__reduce_tail_group(clmad_context *ctx, size_t group);

/* Benchmarks: the work-items per partial sum of the interleaved loss
 * kernels built from now on (lanes >= 0; 0: by the device's size), as a
 * tuning file's "loss_lanes" would set it; returns the previous value
 * (lanes < 0: only that). bench_hmlstm's lanes1. */
int clmad__loss_lanes(clmad_context *ctx, int lanes);

/* For tests: ctx's loss kernels that sum ranges write each element's term
 * for the range pass (on 1) or sum their ranges themselves (0), whatever
 * the tuning table says (codegen_loss.c); on < 0 changes nothing. Returns
 * the setting in force before. */
int clmad__loss_terms(clmad_context *ctx, int on);

/* One pass by ranges: dst[p] = sum over range p of a[q] (CLMAD_OPS_SUM_RANGES,
 * b NULL) or of a[q] * b[q] (CLMAD_OPS_DOT_RANGES). */
clmad_status clmad__range_pass(clmad_context *ctx, clmad_kernel_id id, cl_mem dst, cl_mem a, cl_mem b,
                               clmad_dtype dtype, size_t n, size_t parts);

/* dst = src converted, elementwise, between a 16-bit float and f32 or f64
 * (either way; cl/half.cl's kernels, built for the f32 or f64 side): the
 * same element count. */
clmad_status clmad__convert_half(clmad_context *ctx, clmad_tensor *dst, clmad_tensor *src);

/* Row-major contiguous strides of a shape. */
void clmad__contiguous_strides(int ndim, const size_t *shape, size_t *strides);

/* Up to 8 sizes as a kernel's ulong8 (the rest 0). */
cl_ulong8 clmad__pack8(int n, const size_t *v);

#endif
