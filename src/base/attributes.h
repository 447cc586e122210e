/* SPDX-License-Identifier: Apache-2.0 */
/* Compiler attributes that every layer may use. */
#ifndef CLMAD_ATTRIBUTES_H
#define CLMAD_ATTRIBUTES_H

/* Lets the compiler check a printf-like call: argument f is the format,
 * arguments from a on are its values. */
#if defined(__GNUC__)
#define CLMAD_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLMAD_PRINTF(f, a)
#endif

#endif
