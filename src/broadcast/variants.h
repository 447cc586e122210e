/* SPDX-License-Identifier: Apache-2.0 */
/* A kernel's cache of compiled variants. */
#ifndef CLMAD_BROADCAST_VARIANTS_H
#define CLMAD_BROADCAST_VARIANTS_H

#include "broadcast/kernel.h"

/* The cl_kernel of variant v of k: from k's list, else generated and built
 * (through the context's program cache). Owned by k, until k has built
 * CLMAD_MAX_VARIANTS others since it last used it (kernel.h). */
clmad_status clmad__kernel_variant(clmad_kernel *k, const clmad_variant *v, cl_kernel *out);

/* Releases every cached variant of k and its uses of their programs. */
void clmad__kernel_variants_release(clmad_kernel *k);

#endif
