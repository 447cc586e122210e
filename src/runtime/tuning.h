/* SPDX-License-Identifier: Apache-2.0 */
/* The tuning of a context's device (clmad_tuning, clmad.h). */
#ifndef CLMAD_TUNING_H
#define CLMAD_TUNING_H

#include "runtime/context.h"

/* CLBlast's parameters for a device's F32 GEMMs, where the tuning table
 * has them (tuning.c: CPUs, whose entries CLBlast's database lacks or has
 * from older hosts). */
#define CLMAD_XGEMM_PARAMS 16
#define CLMAD_XGEMM_NAMES                                                                                         \
    {"GEMMK", "MWG", "NWG", "KWG", "MDIMC", "NDIMC", "MDIMA", "NDIMB", "KWI", "VWM", "VWN", "STRM", "STRN", "SA",  \
     "SB", "KREG"}
typedef struct clmad_clblast_tuning {
    size_t xgemm[CLMAD_XGEMM_PARAMS]; /* the Xgemm kernel's, in CLMAD_XGEMM_NAMES' order (the
                                         columns clblast_tuner_xgemm prints, from clblast-utils) */
    size_t min_indirect;              /* GemmRoutine's XGEMM_MIN_INDIRECT_SIZE: products of fewer
                                         than its cube multiply-adds run XgemmDirect instead */
} clmad_clblast_tuning;

/* Sets ctx->tuning from the table, the device's file in the cache folder
 * (after clmad__disk_cache_open) and the environment. */
void clmad__tuning_resolve(clmad_context *ctx);

#endif
