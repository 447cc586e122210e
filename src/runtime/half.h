/* SPDX-License-Identifier: Apache-2.0 */
/* 16-bit floats on the host (the public four in clmad.h, and f64's). */
#ifndef CLMAD_RUNTIME_HALF_H
#define CLMAD_RUNTIME_HALF_H

#include "clmad.h"

/* value rounded to f16 in one step (as NumPy), and to bf16 through f32
 * (as PyTorch): bit patterns. */
uint16_t clmad__f16_from_double(double value);
uint16_t clmad__bf16_from_double(double value);

#endif
