/* SPDX-License-Identifier: Apache-2.0 */
/* Internal building blocks shared by the builtin operations and the tape. */
#ifndef CLMAD_OPS_H
#define CLMAD_OPS_H

#include "runtime/tensor.h"

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

/* One pass by ranges: dst[p] = sum over range p of a[q] (CLMAD_OPS_SUM_RANGES,
 * b NULL) or of a[q] * b[q] (CLMAD_OPS_DOT_RANGES). */
clmad_status clmad__range_pass(clmad_context *ctx, clmad_ops_kernel_id id, cl_mem dst, cl_mem a, cl_mem b,
                               clmad_dtype dtype, size_t n, size_t parts);

/* C = op(A) op(B) + beta C through CLBlast, row-major, each matrix at an
 * element offset in its buffer with its leading dimension; m, n, k > 0.
 * The first CLBlast call of the process is serialised (ops_matmul.c says
 * why). */
clmad_status clmad__gemm_at(clmad_context *ctx, clmad_dtype dtype, int ta, int tb, size_t m, size_t n,
                            size_t k, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb,
                            double beta, cl_mem c, size_t c_off, size_t ldc);

/* Row-major contiguous strides of a shape. */
void clmad__contiguous_strides(int ndim, const size_t *shape, size_t *strides);

#endif
