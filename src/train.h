/* Internals shared by the training helpers (inplace.c, optim.c). */
#ifndef CLMAD_TRAIN_H
#define CLMAD_TRAIN_H

#include "tensor.h"

/* 1 while the current tape still needs t's values or routes gradients
 * through it: an input of a node on the tape, or the output of one.
 * Writing into t then would make backward wrong without a word. */
int clmad__tape_keeps(const clmad_context *ctx, const clmad_tensor *t);

/* CLMAD_ERR_STATE, naming `call` and `what`, when the tape keeps t. */
clmad_status clmad__check_not_on_tape(clmad_context *ctx, const clmad_tensor *t, const char *call,
                                      const char *what);

#endif
