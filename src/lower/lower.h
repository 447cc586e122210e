/* SPDX-License-Identifier: Apache-2.0 */
/* The plain-syntax front end: broadcast functions written with C operators
 * and math names on T are rewritten to the ad_ vocabulary before code
 * generation (README, "The template language"; rules in lower/rules.c).
 *
 * lower/lex.c         tokens and the preprocessor's object-like macros
 * lower/rules.c       the table of math names and ad_ signatures
 * lower/parser.c      the parser's bookkeeping: memory, failures, names
 * lower/text.c        the texts of rewritten expressions (ropes)
 * lower/calls.c       the call graph of the source's functions: recursion
 * lower/declarator.c  type names: specifiers, declarators, parameters
 * lower/value.c       values: conversions, operators and math rules on T
 * lower/expr.c        expressions: the recursive descent
 * lower/stmt.c        declarations, statements, the pass over a source
 * lower/lower.c       the driver: clmad__lower, clmad_lower_source
 * A file calls only the files above it: statements hold expressions and
 * type names, expressions hold type names (casts), never the reverse. */
#ifndef CLMAD_LOWER_H
#define CLMAD_LOWER_H

#include "clmad.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

/* ---- tokens ------------------------------------------------------------ */

typedef enum { LTK_EOF, LTK_IDENT, LTK_NUMBER, LTK_STRING, LTK_PUNCT } lower_token_kind;

typedef struct {
    lower_token_kind kind;
    size_t start, len; /* bytes of the source */
    int line, col;     /* 1-based */
} lower_token;

/* A #define or #undef, in source order: `tok` is the index of the first
 * token after it, so a use at token i sees the events before i. */
typedef struct {
    int is_define, function_like;
    size_t name, name_len, body, body_len;
    int tok;
} lower_macro;

typedef struct {
    const char *src;
    lower_token *toks; /* ends with LTK_EOF */
    int n_toks;
    lower_macro *macros;
    int n_macros;
} lower_lexed;

/* 0, or -1 when out of memory. */
int clmad__lower_lex(const char *src, lower_lexed *out);
void clmad__lower_lexed_free(lower_lexed *lx);
/* array with room for need elements of elem bytes (*cap of them, doubled
 * from first), or NULL when out of memory (array is then unchanged). */
void *clmad__lower_grow_array(void *array, int *cap, int need, size_t elem, int first);

/* ---- types ------------------------------------------------------------- */

/* What the front end knows of an expression's type: a base and a count of
 * pointer (or array) levels. OTHER is anything else (vectors, structs,
 * names it cannot see, such as function-like macros): mixed with T it is
 * taken as a real, and the OpenCL compiler has the last word. */
typedef enum { LT_OTHER, LT_INT, LT_REAL, LT_T, LT_VOID } lower_base;
typedef struct {
    unsigned char base, ptr;
} lower_type;

/* ---- rules ------------------------------------------------------------- */

typedef enum {
    LR_UNARY,       /* f(a) -> ad_f(a) */
    LR_CLMAD_UNARY, /* sigmoid(a): clmad's names, no OpenCL builtin for reals */
    LR_BINARY,      /* f(a, b) -> ad_f(a, b); a real operand becomes ad_const */
    LR_POW,         /* pow -> ad_pow, ad_powr, ad_rpow */
    LR_POWN,        /* pown(a, n) -> ad_pown(a, n) */
    LR_FMA,         /* fma/mad(a, b, c) -> ad_fma, real operands ad_const */
    LR_CLAMP,       /* clamp(a, lo, hi) with real bounds -> ad_clamp */
    LR_PREDICATE,   /* isnan(a) -> isnan(ad_val(a)): an int */
    LR_STEP,        /* floor(a) -> ad_const(floor(ad_val(a))): zero derivative */
    LR_NO_RULE      /* a builtin with no derivative rule: an error on T */
} lower_rule_kind;

typedef struct {
    const char *name, *ad_name;
    lower_rule_kind kind;
} lower_rule;

/* The rule of a plain math name (NULL if none). */
const lower_rule *clmad__lower_rule(const char *name, size_t len);

/* The signature of an ad_ vocabulary function: "RPPP", return then
 * parameters, each 'T', 'r' (real) or 'i' (int); NULL if not one. */
const char *clmad__lower_ad_signature(const char *name, size_t len);

/* A constant of the OpenCL C library (M_PI_F, INFINITY, ...). */
int clmad__lower_is_real_constant(const char *name, size_t len);

/* Type names: base of a type keyword or predefined type name, or -1. */
int clmad__lower_type_word(const char *name, size_t len);

/* ---- the pass ---------------------------------------------------------- */

typedef struct {
    size_t name, name_len;
    lower_type type;
} lower_symbol;

#define LOWER_MAX_PARAMS 96

typedef struct {
    size_t name, name_len;
    lower_type ret;
    lower_type params[LOWER_MAX_PARAMS];
    int n_params;
} lower_function;

/* The text of a rewritten expression (lower/text.c): a rope whose nodes
 * share their parts, so that building one costs O(1) in what it holds. */
typedef struct lower_text lower_text;

/* A value of an expression: its type, its tokens, and its text when it was
 * rewritten (NULL: the tokens' source, verbatim). `call` marks a text that
 * is one call, which needs no parentheses. */
typedef struct {
    const lower_text *text;
    lower_type type;
    int first, last;
    int call;
} lower_value;

typedef struct {
    size_t start, end;
    char *text;
} lower_replacement;

/* PARSE_FAILED: outside the front end's subset, compiled as written;
 * TYPE_ERROR and LIMIT: refused with the user's line. */
enum { LOWER_PARSE_FAILED = 1, LOWER_TYPE_ERROR, LOWER_LIMIT, LOWER_NO_MEMORY };

/* The front end's limits (include/clmad.h, clmad_kernel_create): past them
 * a source is refused with a clear error rather than lowered slowly or
 * with the C stack at risk. */
#define LOWER_MAX_SOURCE (16 << 20) /* bytes of a source */
#define LOWER_MAX_TEXT (64 << 20)   /* bytes of one lowered expression */

/* A call of a function of the source: its caller and callee (indices in
 * lower_parser.fns) and the token of the callee's name. */
typedef struct {
    int caller, callee, tok;
} lower_call;

typedef struct lower_block lower_block;

typedef struct {
    lower_lexed lx;
    int pos;
    jmp_buf fail;
    int failure; /* LOWER_* */
    int depth;   /* of nesting, bounded so that the C stack is */
    char message[512];
    int line, col;
    lower_symbol *syms;
    int n_syms, cap_syms;
    lower_symbol *typedefs;
    int n_typedefs, cap_typedefs;
    lower_function *fns;
    int n_fns, cap_fns;
    lower_type fn_ret;
    int fn_current; /* the function whose body is parsed, or -1 */
    lower_call *calls;
    int n_calls, cap_calls;
    lower_replacement *repl;
    int n_repl, cap_repl;
    lower_block *arena;
} lower_parser;

/* The parser's bookkeeping (lower/parser.c). Failures: longjmp to p->fail. */
void clmad__lower_fail(lower_parser *p, int failure, int tok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));
void *clmad__lower_alloc(lower_parser *p, size_t size);
char *clmad__lower_printf(lower_parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *clmad__lower_grow(lower_parser *p, void *array, int *cap, int need, size_t elem);

const lower_token *clmad__lower_tok(const lower_parser *p, int i);
int clmad__lower_is(const lower_parser *p, int i, const char *punct_or_word);
int clmad__lower_accept(lower_parser *p, const char *punct_or_word);
void clmad__lower_expect(lower_parser *p, const char *punct);

/* Around each recursive step: a source nested deeper than LOWER_MAX_DEPTH
 * (parentheses, unary operators, blocks) is refused, which bounds the
 * front end's use of the C stack. */
#define LOWER_MAX_DEPTH 200
void clmad__lower_enter(lower_parser *p);
#define clmad__lower_leave(p) ((p)->depth--)

/* Texts (lower/text.c). The text of a value (rewritten, or its source
 * span); tokens first..last with the kids' spans (in order, inside)
 * replaced by their texts, NULL when no kid was rewritten; a text from fmt,
 * where %s takes a C string and %t a text (tok: where a failure points);
 * the bytes of a text (in the parser's memory). */
const lower_text *clmad__lower_piece(lower_parser *p, const lower_value *v);
const lower_text *clmad__lower_splice(lower_parser *p, int first, int last, const lower_value *kids, int n);
lower_text *clmad__lower_textf(lower_parser *p, int tok, const char *fmt, ...);
lower_text *clmad__lower_vtextf(lower_parser *p, int tok, const char *fmt, va_list ap);
char *clmad__lower_render(lower_parser *p, const lower_text *t);

/* Names in scope. */
void clmad__lower_declare(lower_parser *p, int name_tok, lower_type type);
lower_type clmad__lower_lookup(lower_parser *p, int name_tok, int *found);
const lower_function *clmad__lower_function(const lower_parser *p, int name_tok);

/* The memory of the parser and of its lexed source (not p itself). */
void clmad__lower_parser_free(lower_parser *p);

/* Type names (lower/declarator.c). */
typedef struct {
    lower_type type;
    int is_typedef, any;
} lower_specifiers;
int clmad__lower_word_is(const lower_parser *p, int i, const char *word);
int clmad__lower_starts_type(lower_parser *p, int i);
/* Skips a (...), [...] or {...} from its opening token. */
void clmad__lower_skip_balanced(lower_parser *p);
lower_specifiers clmad__lower_specifiers(lower_parser *p);
/* A declarator: pointers, an optional name, array or function suffixes.
 * *name: its token or -1; *params: the first token of a parameter list or -1. */
lower_type clmad__lower_declarator(lower_parser *p, lower_type base, int *name, int *params);
lower_type clmad__lower_type_name(lower_parser *p); /* a cast's or sizeof's type */
/* Parameters from token at, after '(': their types, and with declare, their
 * names in scope; the count. p->pos is left as it was. */
int clmad__lower_params(lower_parser *p, int at, lower_type *types, int declare);

/* Expressions (lower/expr.c). */
lower_value clmad__lower_expression(lower_parser *p);  /* with the comma operator */
lower_value clmad__lower_assignment(lower_parser *p);  /* one argument or initialiser */
/* (lower/value.c) A value converted where the context needs T (ad_const), a real or an int
 * (errors on T), or a condition (ad_val of T). */
lower_value clmad__lower_to(lower_parser *p, lower_value v, lower_type to, const char *what);
lower_value clmad__lower_condition(lower_parser *p, lower_value v);
/* (lower/text.c) A full expression: its rewrite, if any, is recorded as
 * a replacement. */
void clmad__lower_commit(lower_parser *p, const lower_value *v);

/* Declarations and statements (lower/stmt.c): the whole source. */
void clmad__lower_source(lower_parser *p);

/* The call graph (lower/calls.c): a call of function f (of p->fns) at the
 * name token tok, inside p->fn_current; after the whole source, a failure
 * at a call that closes a cycle (OpenCL C forbids recursion, which
 * compilers may not report but crash on). */
void clmad__lower_record_call(lower_parser *p, const lower_function *f, int tok);
void clmad__lower_check_recursion(lower_parser *p);

/* The whole front end: the lowered source in *out (malloc'd), or
 * CLMAD_ERR_BUILD with "source:LINE:COL: error: ..." in msg. A source the
 * front end cannot parse is returned unchanged (the OpenCL compiler then
 * reports what is wrong), with a note in *note (malloc'd, or NULL). */
clmad_status clmad__lower(const char *src, char **out, char *msg, size_t msg_cap, char **note);

#endif
