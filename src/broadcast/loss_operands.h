/* SPDX-License-Identifier: Apache-2.0 */
/* A loss kernel's stage operands of other shapes than y's (a row, a
 * column): read at the element's broadcast offset, as the broadcast's
 * strided inputs are, they join the loss kernel's plan as inputs after the
 * broadcast's own (codegen.h's loss_extras). */
#ifndef CLMAD_BROADCAST_LOSS_OPERANDS_H
#define CLMAD_BROADCAST_LOSS_OPERANDS_H

#include "broadcast/held.h"

/* 1 if t's shape broadcasts to y's without growing it (NumPy's rule,
 * aligned at the last axis: no more axes, each of y's size or 1). */
int clmad__broadcasts_to(const clmad_tensor *t, const clmad_tensor *y);

/* The extras of a loss form: its stages' operands neither of y's shape
 * nor 0-d, in stage order (clmad_variant's loss_extra_*). */
typedef struct clmad_loss_extras {
    int n;
    clmad_tensor *t[CLMAD_MAX_LOSS_EXTRAS];
    unsigned char stage[CLMAD_MAX_LOSS_EXTRAS], input[CLMAD_MAX_LOSS_EXTRAS];
} clmad_loss_extras;

/* 1 if form's extras over held y (the broadcast under its stages) are at
 * most CLMAD_MAX_LOSS_EXTRAS, and with the broadcast's inputs at most
 * CLMAD_MAX_INPUTS: a loss kernel may read them all. */
int clmad__loss_extras_fit(const clmad_loss_form *form, const clmad_tensor *y);

/* The plan of a loss kernel over y, whose broadcast k reads inputs, for
 * form: k's inputs, then the form's extras (*x). */
clmad_status clmad__loss_plan(clmad_context *ctx, const clmad_kernel *k, clmad_tensor *const *inputs,
                              const clmad_loss_form *form, const clmad_tensor *y, clmad_loss_extras *x,
                              clmad_bcast_plan *plan);

/* The extras' part of a loss kernel's variant v over that plan. */
void clmad__loss_variant_extras(clmad_variant *v, const clmad_bcast_plan *plan, const clmad_loss_extras *x);

/* The LOSS variant of k over plan (the loss's: clmad__loss_plan) for form
 * over y, summing by ranges or interleaved (ranges), or a lazy region's
 * kernel (form->region); weights[s] gets WEIGHT s's tensor. */
void clmad__loss_variant(const clmad_kernel *k, const clmad_bcast_plan *plan, clmad_tensor *y,
                         const clmad_loss_form *form, int ranges, clmad_variant *v, clmad_tensor **weights);

#endif
