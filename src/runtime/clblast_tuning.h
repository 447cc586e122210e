/* SPDX-License-Identifier: Apache-2.0 */
/* CLBlast's GEMM parameters for a device (the tuning table, tuning.c, or
 * the device's tuning file in the cache folder), handed over by
 * ops/gemm.c; the rest of that file beyond clmad_tuning. */
#ifndef CLMAD_CLBLAST_TUNING_H
#define CLMAD_CLBLAST_TUNING_H

#include <stddef.h>

#define CLMAD_XGEMM_PARAMS 16
#define CLMAD_XGEMM_NAMES                                                      \
  {                                                                            \
    "GEMMK", "MWG", "NWG", "KWG", "MDIMC", "NDIMC", "MDIMA", "NDIMB", "KWI",   \
        "VWM", "VWN", "STRM", "STRN", "SA", "SB", "KREG"                       \
  }
typedef struct clmad_clblast_tuning {
  size_t xgemm[CLMAD_XGEMM_PARAMS]; /* the Xgemm kernel's, in CLMAD_XGEMM_NAMES'
                                       order (the columns clblast_tuner_xgemm
                                       prints, from clblast-utils) */
  size_t
      min_indirect; /* GemmRoutine's XGEMM_MIN_INDIRECT_SIZE: products of fewer
                       than its cube multiply-adds run XgemmDirect instead */
} clmad_clblast_tuning;

/* What the device's tuning file in the cache folder says beyond
 * clmad_tuning (tuning.c): kept when clmad_tuning_save writes the file
 * again. */
typedef struct clmad_tuned_extras {
    int has_clblast_f32;
    clmad_clblast_tuning clblast_f32;
    int loss_lanes; /* 0: not in the file */
} clmad_tuned_extras;

#endif
