/* SPDX-License-Identifier: Apache-2.0 */
/* Internal building blocks shared by the builtin operations and the tape. */
#ifndef CLMAD_OPS_H
#define CLMAD_OPS_H

#include "runtime/primitives.h"

/* C = op(A) op(B) + beta C through CLBlast, row-major, each matrix at an
 * element offset in its buffer with its leading dimension; m, n, k > 0.
 * The first CLBlast call of the process is serialised (ops_matmul.c says
 * why). */
clmad_status clmad__gemm_at(clmad_context *ctx, clmad_dtype dtype, int ta, int tb, size_t m, size_t n,
                            size_t k, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb,
                            double beta, cl_mem c, size_t c_off, size_t ldc);

#endif
