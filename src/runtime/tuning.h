/* SPDX-License-Identifier: Apache-2.0 */
/* The tuning of a context's device (clmad_tuning, clmad.h). */
#ifndef CLMAD_TUNING_H
#define CLMAD_TUNING_H

#include "runtime/context.h"

/* Sets ctx->tuning from the table, the device's file in the cache folder
 * (after clmad__disk_cache_open) and the environment. */
void clmad__tuning_resolve(clmad_context *ctx);

#endif
