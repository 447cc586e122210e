/* SPDX-License-Identifier: Apache-2.0 */
/* CLMAD_LOG=info: one line on stderr when a slow first step starts and how
 * long it took (an OpenCL program compiled from source, CLBlast's first
 * GEMM of a precision, which compiles its kernels), so that a first run's
 * pause of seconds is not silent. */
#ifndef CLMAD_LOG_H
#define CLMAD_LOG_H

#include "base/attributes.h"

/* 1 when CLMAD_LOG is "info" (read at each call: logging happens only
 * around compiles, which take far longer). */
int clmad__log_info(void);

/* Prints "clmad: " fmt "\n" on stderr when clmad__log_info(). */
void clmad__log(const char *fmt, ...) CLMAD_PRINTF(1, 2);

/* Seconds on a monotonic clock. */
double clmad__seconds(void);

#endif
