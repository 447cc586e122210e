/* SPDX-License-Identifier: Apache-2.0 */
/* Compile notices (clmad.h, clmad_context_set_notice). */
#ifndef CLMAD_NOTICE_H
#define CLMAD_NOTICE_H

#include "base/attributes.h"
#include "clmad.h"

/* Gives ctx's notice function (or CLMAD_COMPILE_NOTICE's stderr) the text;
 * nothing when notices are off. */
void clmad__notice(clmad_context *ctx, const char *fmt, ...) CLMAD_PRINTF(2, 3);

/* Called before each compile from source: in a warm-up, says its step
 * (ctx->warm_up_step, once); else the first one of ctx says that the first
 * run compiles (once per context). */
void clmad__notice_compile(clmad_context *ctx);

#endif
