/* SPDX-License-Identifier: Apache-2.0 */
/* OpenCL C generation: the dual type for K partials (through cl/clmad_ad.clh)
 * and a wrapper kernel specialised to one broadcast pattern and mode. */
#ifndef CLMAD_CODEGEN_H
#define CLMAD_CODEGEN_H

#include "broadcast/plan.h"
#include "base/strbuf.h"

typedef enum clmad_mode {
    CLMAD_MODE_PRIMAL = 'V',    /* values only (T = real) */
    CLMAD_MODE_PARTIALS = 'P',  /* values + the partials of this chunk's inputs */
    CLMAD_MODE_JVP = 'J',       /* values + one directional derivative */
    CLMAD_MODE_VJP = 'G',       /* backward: per chunk slot s, g_s (+)= sum_o adj_o * d out_o/d slot s */
    CLMAD_MODE_STORED = 'S'     /* STORE backward: as VJP, with stored partials p_o_s for the
                                   derivatives (no inputs, no user function) */
} clmad_mode;

enum { CLMAD_ROWS_CROSSING = 1, CLMAD_ROWS_ALIGNED = 2 };

/* Everything that changes the generated source, and nothing else: shapes
 * and strides are kernel arguments, so one variant serves every size. */
typedef struct clmad_variant {
    clmad_mode mode;
    clmad_dtype dtype;
    int n_inputs, n_outputs;
    int K;                              /* partials carried (0 for PRIMAL, 1 for JVP) */
    int nd;                             /* collapsed rank, when any input is strided */
    char access[CLMAD_MAX_INPUTS];      /* clmad_access per input */
    signed char slot[CLMAD_MAX_INPUTS]; /* PARTIALS: slot seeded by input j, or -1;
                                           JVP: 1 if input j has a tangent, else 0 */
    int write_values;                   /* 0 for the second and later chunks */
    unsigned adj_mask;                  /* VJP, STORED: bit o set when output o has an adjoint */
    unsigned adj_scalar;                /* bit o: adjoint o is one value for every element */
    unsigned adj_scaled;                /* bit o: adjoint o is times a one-element scale tensor */
    char accumulate[CLMAD_MAX_INPUTS];  /* VJP: per slot, 1: g_s += ..., 0: g_s = ... */
    int items;                          /* elements per work-item: 1, or a loop of `items` */
    int row_runs;                       /* items > 1, strided inputs, and the last collapsed
                                           dimension holds at least `items`: index by rows
                                           (CLMAD_ROWS_*); 0: coordinates per element */
} clmad_variant;

/* 1 if a and b generate the same program: every field compared, the arrays
 * over their meaningful prefix (access and slot over n_inputs, accumulate
 * over K), so that what a caller left beyond them does not count. This is
 * the identity of a kernel's cached variants. */
int clmad__variant_equal(const clmad_variant *a, const clmad_variant *b);

/* Appends the complete program for v: prelude, vocabulary, the user's source
 * under `#line 1 "source"`, and the wrapper kernel (clmad__kernel_name).
 * force_inline wraps the user's source in a clang pragma that makes its
 * functions always_inline (only where the compiler takes it: context.c).
 * Returns the line of the program that holds the user's line 1, for
 * compilers that ignore #line (clmad__map_build_log). */
int clmad__generate_program(clmad_strbuf *sb, const clmad_variant *v, const char *user_source,
                            const char *fn_name, int force_inline);

/* A copy of a build log in which positions "<name>:LINE:" that fall inside
 * the user's source (first_line .. first_line + n_lines - 1 of the program)
 * read "source:L:", as #line would have made them; NULL on allocation
 * failure. NVIDIA's compiler ignores #line. */
char *clmad__map_build_log(const char *log, int first_line, int n_lines);

/* 1 if a build log blames the type T (a quoted type 'T', '__private T',
 * ...): in a dual variant, an operator or builtin applied to a dual number. */
int clmad__log_blames_T(const char *log);

/* Name of the generated kernel: clmad_bcast_<mode> (primal, partials, jvp,
 * vjp, stored), so that profilers and POCL's kernel cache tell them apart
 * (scripts/check-vector.sh reads the latter). */
const char *clmad__kernel_name(clmad_mode mode);

#endif
