/* SPDX-License-Identifier: Apache-2.0 */
/* OpenCL C generation: the dual type for K partials (through cl/clmad_ad.clh)
 * and a wrapper kernel specialised to one broadcast pattern and mode. */
#ifndef CLMAD_CODEGEN_H
#define CLMAD_CODEGEN_H

#include "broadcast/plan.h"
#include "base/strbuf.h"

/* Most builtins a loss kernel applies between a broadcast and the sum. */
#define CLMAD_MAX_LOSS_STAGES 4

typedef enum clmad_mode {
    CLMAD_MODE_PRIMAL = 'V',    /* values only (T = real) */
    CLMAD_MODE_PARTIALS = 'P',  /* values + the partials of this chunk's inputs */
    CLMAD_MODE_JVP = 'J',       /* values + one directional derivative */
    CLMAD_MODE_VJP = 'G',       /* backward: per chunk slot s, g_s (+)= sum_o adj_o * d out_o/d slot s */
    CLMAD_MODE_STORED = 'S',    /* STORE backward: as VJP, with stored partials p_o_s for the
                                   derivatives (no inputs, no user function) */
    CLMAD_MODE_SECOND = 'H',    /* second order (CLMAD_ORDER 2): as PARTIALS, each seeded input
                                   with a tangent; also the values' tangents and the partials'
                                   directional derivatives along it */
    CLMAD_MODE_LOSS = 'L'       /* a fused loss over the one output y (fusion): the first pass
                                   of the sum of y (or of y * w) as clmad_sum (clmad_dot) makes
                                   it, and each slot's gradient for an adjoint of exactly 1
                                   (times w), as backward would form it; y is never written */
} clmad_mode;

enum { CLMAD_ROWS_CROSSING = 1, CLMAD_ROWS_ALIGNED = 2 };
enum { CLMAD_SLOT_TANGENT_ONLY = -2 };

/* A strided input's step along the last collapsed dimension, as the
 * generated source knows it: read from the stride arguments, or known to
 * be 0 (a column broadcast along rows: one value per row, which the
 * vectoriser broadcasts) or 1 (contiguous loads). A runtime stride makes
 * every read a gather: the HM-LSTM cell with (rows, 1) controls ran 3x
 * slower on POCL. */
enum { CLMAD_STEP_ARGUMENT = 0, CLMAD_STEP_ZERO = 1, CLMAD_STEP_ONE = 2 };

/* Inputs of a loss kernel's user stages that need a gradient, at most. */
enum { CLMAD_MAX_USER_GRADS = 8 };

/* A loss kernel's stage operands of another shape than y's, at most (the
 * loss's extra inputs: loss_extras). */
enum { CLMAD_MAX_LOSS_EXTRAS = 8 };

/* Everything that changes the generated source, and nothing else: shapes
 * and strides are kernel arguments, so one variant serves every size. */
typedef struct clmad_variant {
    clmad_mode mode;
    clmad_dtype dtype;
    int n_inputs, n_outputs;
    int K;                              /* partials carried (0 for PRIMAL, 1 for JVP) */
    int nd;                             /* collapsed rank, when any input is strided */
    char access[CLMAD_MAX_INPUTS];      /* clmad_access per input */
    char integer[CLMAD_MAX_INPUTS];     /* 0: input j is T; else the dtype (CLMAD_I32, CLMAD_I64,
                                           CLMAD_U8) of an integer parameter, read and passed as
                                           int, long, uchar, never seeded */
    char last_step[CLMAD_MAX_INPUTS];   /* strided input j (nd > 0): CLMAD_STEP_* */
    signed char slot[CLMAD_MAX_INPUTS]; /* PARTIALS, SECOND: slot seeded by input j, or -1;
                                           SECOND: CLMAD_SLOT_TANGENT_ONLY for an input with a
                                           tangent whose partial another chunk computes;
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
    int div_by_mul;                     /* coordinates per element (items == 1, nd > 1) of
                                           fewer than 2^31 elements: each division by a
                                           dimension is a multiply-high (DIVISOR d) */
    /* LOSS only: */
    int loss_weighted;                  /* the loss sums z * w (clmad_dot: CLMAD_LOSS_DOT_W) or
                                           z * z (CLMAD_LOSS_DOT_SELF), else z (the last
                                           stage's value, or y) */
    int loss_ranges;                    /* the sum's first pass by contiguous ranges in eight
                                           lanes (runtime/reduce.c on CPUs), else interleaved */
    int loss_raw;                       /* gradient = the partial itself (a stored partial
                                           taken whole, node.c), else adjoint_times(1 or w, it) */
    int loss_stages;                    /* builtins between y and the sum, applied in order:
                                           z_i = op_i(z_i-1) or op_i(z_i-1, w_i) or op_i(w_i, z_i-1),
                                           z_0 = y (at most CLMAD_MAX_LOSS_STAGES) */
    char loss_stage[CLMAD_MAX_LOSS_STAGES];   /* op_i: CLMAD_STAGE_* */
    char loss_stage_y[CLMAD_MAX_LOSS_STAGES]; /* binary op_i: z_i-1's operand, 0 or 1; a user
                                                 kernel's (CLMAD_STAGE_USER): its input */
    /* CLMAD_STAGE_USER: the user kernel's id (clmad_kernel), its number of
     * inputs, and which of the others are one value (0-d, read at 0; the
     * rest have the loss's shape); its source and function name, read when
     * the variant is generated and not compared (the id names them). */
    uint64_t loss_stage_kernel[CLMAD_MAX_LOSS_STAGES];
    /* The inputs of user stages that need a gradient (of the loss's shape):
     * USER_GRAD u gets input loss_user_grad_input[u] of stage
     * loss_user_grad_stage[u]'s partial times the adjoint from above, or
     * the partial itself (loss_user_grad_raw: the last stage's STORE node's) */
    int loss_user_grads;
    unsigned char loss_user_grad_stage[CLMAD_MAX_USER_GRADS], loss_user_grad_input[CLMAD_MAX_USER_GRADS];
    unsigned char loss_user_grad_raw[CLMAD_MAX_USER_GRADS];
    unsigned char loss_stage_inputs[CLMAD_MAX_LOSS_STAGES];
    uint64_t loss_stage_scalars[CLMAD_MAX_LOSS_STAGES];
    const char *loss_stage_source[CLMAD_MAX_LOSS_STAGES], *loss_stage_fn[CLMAD_MAX_LOSS_STAGES];
    char loss_weight_scalar[CLMAD_MAX_LOSS_STAGES]; /* w_i is one value (0-d), read at 0 */
    int loss_stage_raw;                 /* the last stage's partial is z's adjoint itself (its
                                           STORE node's, taken whole), else adjoint_times(A, it) */
    char loss_stage_wgrad[CLMAD_MAX_LOSS_STAGES]; /* w_i needs a gradient: STAGE_GRAD i gets its
                                           partial times the adjoint from above (1), or the
                                           partial itself (2: the last stage's STORE node's) */
    int loss_write_y;                   /* VALUE 0 gets y (clmad_dot's w needs a gradient: y) */
    int loss_adj;                       /* A, the adjoint of each summed value, is the argument
                                           LOSS_ADJ (clmad_mean's 1/n), else exactly 1 */
    int loss_lanes;                     /* interleaved: work-items per partial sum (> 1: groups
                                           of CLMAD_LOSS_GROUP_PARTS parts x loss_lanes) */
    int loss_terms;                     /* ranges: one element per work-item, its term written
                                           at its index of SUMS (of n), which the range pass
                                           then sums (broadcast/held.c) */
    int loss_region;                    /* a lazy region's kernel (ops/region.c), no sums, no
                                           PARTS or SUMS, `items` elements per work-item:
                                           CLMAD_REGION_VALUES writes the chain's last value
                                           (VALUE 0) from values-only code (K = 0);
                                           CLMAD_REGION_GRADS writes the gradients for the
                                           adjoint WEIGHT CLMAD_LOSS_DOT_WEIGHT (loss_weighted
                                           CLMAD_LOSS_DOT_W), as for clmad_dot's w */
    /* Stage operands (a builtin's w_i, a user stage's STAGE_INPUT) of
     * another shape than y's that broadcasts to it, not 0-d (a row, a
     * column), needing no gradient: extra e is stage loss_extra_stage[e]'s
     * operand loss_extra_input[e] (a builtin's w: 1 - loss_stage_y), read
     * as input n_inputs + e of the loss's plan (access, last_step and its
     * STRIDE arguments there), at the element's broadcast offset as the
     * broadcast's strided inputs are (loss_operands.c). */
    int loss_extras;
    unsigned char loss_extra_stage[CLMAD_MAX_LOSS_EXTRAS], loss_extra_input[CLMAD_MAX_LOSS_EXTRAS];
} clmad_variant;

/* The arrays a variant indexes as inputs: the kernel's, then a loss
 * kernel's extras. */
static inline int clmad__variant_reads(const clmad_variant *v)
{
    return v->n_inputs + v->loss_extras;
}

/* Parts per work-group of a loss kernel with lanes: one warp's worth, so
 * that neighbouring work-items read neighbouring elements. */
enum { CLMAD_LOSS_GROUP_PARTS = 32 };

/* A loss kernel summing ranges (CPUs) evaluates its elements in runs of
 * this many (a multiple of the eight lanes), vectorised as the other
 * kernels' loops are, with the index offsets of the run's rows formed once. */
enum { CLMAD_LOSS_RUN = 64 };

/* loss_region: a lazy region's forward, or its backward. */
enum { CLMAD_REGION_VALUES = 1, CLMAD_REGION_GRADS = 2 };

/* clmad_dot's w is WEIGHT CLMAD_LOSS_DOT_WEIGHT, after the stages' (a dot
 * over a chain of stages has both). */
enum { CLMAD_LOSS_DOT_WEIGHT = CLMAD_MAX_LOSS_STAGES };

/* loss_weighted: clmad_dot(z, w), or clmad_dot(z, z) (no WEIGHT). */
enum { CLMAD_LOSS_DOT_W = 1, CLMAD_LOSS_DOT_SELF = 2 };

/* The builtins a loss kernel applies between y and the sum (loss_stage),
 * each a call of its cl/clmad_ad.clh function as the builtin's source is;
 * from CLMAD_STAGE_NEG on, of one operand. */
enum {
    CLMAD_STAGE_NONE, CLMAD_STAGE_ADD, CLMAD_STAGE_SUB, CLMAD_STAGE_MUL, CLMAD_STAGE_DIV, CLMAD_STAGE_POW,
    CLMAD_STAGE_NEG, CLMAD_STAGE_EXP, CLMAD_STAGE_LOG, CLMAD_STAGE_TANH, CLMAD_STAGE_SIGMOID, CLMAD_STAGE_RELU,
    CLMAD_STAGE_SQRT,
    CLMAD_STAGE_USER, /* a user kernel of one output: z_i-1 is its input loss_stage_y, the
                         others STAGE_INPUT s j (those that need a gradient get a USER_GRAD) */
    CLMAD_STAGE_SQUARE /* clmad_mul(z_i-1, z_i-1): one operand in both of mul's inputs */
};

/* The arguments of a generated kernel, in order: the one contract between
 * the signature codegen writes (clmad__emit_signature) and the arguments
 * the launcher sets (launch.c). Every list starts with the element count;
 * then
 *   PRIMAL, PARTIALS, JVP, SECOND: VALUE o, PARTIALS: PARTIAL o s
 *     (output-major) | JVP: TANGENT_OUT o | SECOND: TANGENT_OUT o, PARTIAL o s,
 *     PARTIAL_T o s;  INPUT j;  JVP: TANGENT_IN j where slot[j] |
 *     SECOND: TANGENT_IN j where slot[j] != -1;
 *   VJP and STORED: ADJ o for the outputs in adj_mask, each followed by its
 *     ADJ_SCALE where adj_scaled has its bit;  GRAD s;  VJP: INPUT j;
 *     STORED: STORED o s for the outputs in adj_mask (no inputs);
 *   LOSS: PARTS, SUMS (not for a loss_region), WEIGHT CLMAD_LOSS_DOT_WEIGHT for CLMAD_LOSS_DOT_W, WEIGHT s for each stage s
 *     of two operands, LOSS_ADJ when loss_adj, VALUE 0 when loss_write_y,
 *     STAGE_GRAD s where loss_stage_wgrad[s], STAGE_INPUT s j for each user
 *     stage s and its input j other than loss_stage_y[s], USER_GRAD u for
 *     u < loss_user_grads, GRAD s, INPUT j;
 *   when any input (or a LOSS kernel's extra, j = n_inputs + e) is
 *     strided: DIM d, then per strided one STRIDE j d, then with div_by_mul
 *     DIVISOR d for d = 1 .. nd - 1. */
typedef enum clmad_arg_kind {
    CLMAD_ARG_COUNT,       /* ulong: elements of the output */
    CLMAD_ARG_VALUE,       /* output o's values (written) */
    CLMAD_ARG_PARTIAL,     /* d output o / d slot s (written) */
    CLMAD_ARG_TANGENT_OUT, /* output o's tangent (written) */
    CLMAD_ARG_ADJ,         /* output o's adjoint */
    CLMAD_ARG_ADJ_SCALE,   /* the one-element scale of output o's adjoint */
    CLMAD_ARG_GRAD,        /* gradient target of slot s (written or accumulated) */
    CLMAD_ARG_STORED,      /* the stored d output o / d slot s */
    CLMAD_ARG_INPUT,       /* input j */
    CLMAD_ARG_TANGENT_IN,  /* input j's tangent */
    CLMAD_ARG_DIM,         /* ulong: collapsed dimension d */
    CLMAD_ARG_STRIDE,      /* ulong: input j's element stride over dimension d */
    CLMAD_ARG_PARTIAL_T,   /* SECOND: the directional derivative of PARTIAL o s (written) */
    CLMAD_ARG_DIVISOR,     /* ulong: clmad__divisor_magic of collapsed dimension d */
    CLMAD_ARG_PARTS,       /* LOSS, ulong: work-items, each one partial sum */
    CLMAD_ARG_SUMS,        /* LOSS: the partial sums (written) */
    CLMAD_ARG_WEIGHT,      /* LOSS: w (dot's, or stage s's), read at the element index (or at 0:
                              loss_weight_scalar) */
    CLMAD_ARG_LOSS_ADJ,    /* LOSS, real: the adjoint of each summed value */
    CLMAD_ARG_STAGE_GRAD,  /* LOSS: the gradient of stage s's w (written) */
    CLMAD_ARG_STAGE_INPUT, /* LOSS: input j of user stage s (not z_s-1), read at the element
                              index (or at 0: loss_stage_scalars) */
    CLMAD_ARG_USER_GRAD    /* LOSS: the gradient of user stage input s (loss_user_grad_*) */
} clmad_arg_kind;

typedef struct clmad_kernel_arg {
    unsigned char kind; /* clmad_arg_kind */
    unsigned char o, s, j, d;
} clmad_kernel_arg;

/* The longest list: SECOND with every input strided (the other modes take
 * fewer). */
#define CLMAD_MAX_KERNEL_ARGS                                                          \
    (1 + CLMAD_MAX_OUTPUTS * (2 + 2 * CLMAD_MAX_INPUTS) + 2 * CLMAD_MAX_INPUTS + \
     CLMAD_MAX_DIMS * (2 + CLMAD_MAX_INPUTS))

/* The DIVISOR argument of a dimension d in [1, 2^31): m | shift << 32 with
 * shift = 31 + l, 2^l >= d and m = ceil(2^shift / d) < 2^32, so that
 * r / d == (r * m) >> shift for every r < 2^31 (m d - 2^shift < d <= 2^l:
 * Granlund and Montgomery, PLDI 1994). A 32 x 32 -> 64-bit multiply and a
 * shift, which vector units and GPUs do at full rate, where a 64-bit
 * division is a scalar loop or a long library routine. */
uint64_t clmad__divisor_magic(uint64_t d);

/* Fills args (CLMAD_MAX_KERNEL_ARGS entries) with the arguments of the
 * kernel that v generates, in order; returns how many. */
int clmad__kernel_arguments(const clmad_variant *v, clmad_kernel_arg *args);

/* The OpenCL C type of an integer parameter of dtype CLMAD_I32, CLMAD_I64
 * or CLMAD_U8 (int, long, uchar), and of input j of v ("T" or that). */
const char *clmad__integer_type(clmad_dtype dtype);
const char *clmad__input_type(const clmad_variant *v, int j);

/* 1 if a and b generate the same program: every field compared, the arrays
 * over their meaningful prefix (access, integer and slot over n_inputs, accumulate
 * over K), so that what a caller left beyond them does not count. This is
 * the identity of a kernel's cached variants. */
int clmad__variant_equal(const clmad_variant *a, const clmad_variant *b);

/* Appends the complete program for v: prelude, vocabulary, the wrapper
 * kernel (clmad__kernel_name), then the user's source under
 * `#line 1 "source"` and the function through which the kernel calls
 * fn_name. The kernel precedes the user's source, so that no user macro
 * or declaration reaches it; the words after it are set aside from the
 * user's macros (clmad__unmacro). force_inline wraps the user's source in
 * a clang pragma that makes its functions always_inline (only where the
 * compiler takes it: context.c).
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

/* Parts of clmad__generate_program: the signature from the argument list
 * (arguments.c) and the body (codegen_body.c). */
void clmad__emit_signature(clmad_strbuf *sb, const clmad_variant *v);
void clmad__emit_body(clmad_strbuf *sb, const clmad_variant *v);

/* The opening of a body's element loop: clmad__e over this work-item's
 * `items` elements (vectorised, rows' offsets formed first), or its one
 * element; the caller closes it with "    }\n}\n". */
void clmad__emit_element_loop(clmad_strbuf *sb, const clmad_variant *v);

/* Before a run's loop (row_runs): the column of clmad__first in the last
 * dimension and the offsets of its row (and of the next) per strided input. */
void clmad__emit_row_offsets(clmad_strbuf *sb, const clmad_variant *v);

/* The index at which input j (< clmad__variant_reads) is read at the
 * element of clmad__emit_element (which forms its coordinates). */
void clmad__emit_index(clmad_strbuf *sb, const clmad_variant *v, int j);

/* The element at clmad__e of the body: coordinates, inputs, the call into
 * clmad__b<o> (codegen_body.c); the LOSS body around it (codegen_loss.c). */
void clmad__emit_element(clmad_strbuf *sb, const clmad_variant *v);
void clmad__emit_loss_body(clmad_strbuf *sb, const clmad_variant *v);

/* Parts of the LOSS body that a lazy region's (loss_region, codegen_region.c)
 * shares: one element's duals, term and gradients; the index at which
 * stage i's operand j is read (an extra's broadcast offset, 0 for one
 * value, else the element's); the cl/clmad_ad.clh function of a
 * CLMAD_STAGE_* builtin. */
void clmad__emit_loss_element(clmad_strbuf *sb, const clmad_variant *v);
void clmad__emit_operand_index(clmad_strbuf *sb, const clmad_variant *v, int i, int j, int scalar);
const char *clmad__stage_fn(int stage);
void clmad__emit_region_body(clmad_strbuf *sb, const clmad_variant *v);

/* The arguments of the user's function, clmad__a<j> for the inputs and,
 * with several outputs, clmad__b<o>, each after `input` or `output` (a
 * type, "&", or nothing). */
void clmad__emit_call_arguments(clmad_strbuf *sb, const clmad_variant *v, const char *input, const char *output);

/* Sets aside the user's macros named like the words (NULL-terminated) of
 * code or a pragma written after the user's source, and restores them
 * after it: clang expands macros in a pragma's arguments too (`#define
 * pop`). */
void clmad__unmacro(clmad_strbuf *sb, const char *const *words);
void clmad__remacro(clmad_strbuf *sb, const char *const *words);

/* Name of the generated kernel: clmad__bcast_<mode> (primal, partials,
 * jvp, vjp, stored, second, loss), in the reserved prefix (no user function can take
 * it), so that profilers and POCL's kernel cache tell them apart
 * (scripts/check-vector.sh reads the latter). */
const char *clmad__kernel_name(clmad_mode mode);

#endif
