/* SPDX-License-Identifier: Apache-2.0 */
/* clmad-info --tune (tools/tune.c). */
#ifndef CLMAD_INFO_TUNE_H
#define CLMAD_INFO_TUNE_H

/* Measures and stores the device's elements per work-item; 0 on success. */
int clmad_info_tune(void);

#endif
