/* SPDX-License-Identifier: Apache-2.0 */
/* Failure reporting: every failing path sets a message and returns a status. */
#ifndef CLMAD_ERROR_H
#define CLMAD_ERROR_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "base/attributes.h"
#include "clmad.h"

/* Records the message of a failure on ctx (as this thread's failure without
 * a context when ctx is NULL; either way as this thread's last failure, see
 * clmad_last_error) and returns s, so that callers write
 * `return clmad__fail(...)`. */
clmad_status clmad__fail(const clmad_context *ctx, clmad_status s, const char *fmt, ...)
    CLMAD_PRINTF(3, 4);

/* As clmad__fail for a failed OpenCL call: the message names `what`, the
 * OpenCL error and code and the device. Allocation errors map to
 * CLMAD_ERR_OUT_OF_MEMORY, the rest to CLMAD_ERR_OPENCL. */
clmad_status clmad__fail_cl(const clmad_context *ctx, cl_int err, const char *what);

/* The name of an OpenCL error code, e.g. "CL_OUT_OF_RESOURCES". */
const char *clmad__cl_error_name(cl_int err);

/* Empties this thread's messages (a call without a context starting). */
void clmad__clear_thread_error(void);

/* CLMAD_ERR_CONCURRENT_USE for `call` on ctx, which another thread is in
 * (context_guard.h). The message is this thread's: the other thread owns
 * the context's slot. clmad_last_error(ctx) returns it on this thread
 * until this thread's next call on ctx enters (clmad__forget_refusal). */
clmad_status clmad__refuse_concurrent(const clmad_context *ctx, const char *call);
void clmad__forget_refusal(const clmad_context *ctx);

#endif
