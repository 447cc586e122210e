/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by the training helpers (inplace.c, optim.c). */
#ifndef CLMAD_TRAIN_H
#define CLMAD_TRAIN_H

#include "runtime/tensor.h"


/* CLMAD_ERR_STATE, naming `call` and `what`, when the tape keeps t. */
clmad_status clmad__check_not_on_tape(clmad_context *ctx, const clmad_tensor *t, const char *call,
                                      const char *what);

#endif
