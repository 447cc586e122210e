/* SPDX-License-Identifier: Apache-2.0 */
/* Checks of a broadcast function's source against clmad_kernel_create's
 * arguments, in the user's terms and at the user's line, before anything
 * compiles (lower/kernel_check.c). */
#ifndef CLMAD_LOWER_KERNEL_CHECK_H
#define CLMAD_LOWER_KERNEL_CHECK_H

#include "clmad.h"

#include <stddef.h>

/* An input of a broadcast function as its definition declares it: T, or an
 * integer parameter (int, long, uchar: the dtype of the tensor it binds),
 * and its name ("" where the check could not see it). */
#define LOWER_PARAM_T (-1)
typedef struct lower_param {
    int dtype;     /* LOWER_PARAM_T, CLMAD_I32, CLMAD_I64 or CLMAD_U8 */
    char name[32]; /* cut to fit */
} lower_param;

/* CLMAD_OK, or CLMAD_ERR_BUILD with "source:LINE:COL: error: ..." in msg
 * when the source names an identifier in the reserved prefixes (clmad__,
 * CLMAD__), holds no function fn, or defines fn with another parameter
 * count, an input that is neither T nor int, long or uchar, no T input,
 * or an output that is not of the form n_outputs asks (one: returns T;
 * several: void, a T * per output); CLMAD_ERR_OUT_OF_MEMORY. params
 * (n_inputs entries) receives each input's type and name; what it cannot
 * see through (a definition made by a macro, a type name it does not know)
 * is left to the compiler, as T. */
clmad_status clmad__lower_check_kernel(const char *src, const char *fn, int n_inputs, int n_outputs,
                                       lower_param *params, char *msg, size_t msg_cap);

#endif
