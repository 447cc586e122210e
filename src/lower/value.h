/* SPDX-License-Identifier: Apache-2.0 */
/* The values of the front end's expressions (lower/value.c): what the
 * recursive descent of lower/expr.c builds, converts and rewrites. */
#ifndef CLMAD_LOWER_VALUE_H
#define CLMAD_LOWER_VALUE_H

#include "lower/lower.h"

static inline lower_type lower_type_of(int base, int ptr)
{
    lower_type t = {(unsigned char)base, (unsigned char)ptr};
    return t;
}

static inline int lower_is_T(const lower_value *v) { return v->type.base == LT_T && v->type.ptr == 0; }
static inline int lower_is_pointer(const lower_value *v) { return v->type.ptr > 0; }

/* Tokens first..last, kept as written. */
static inline lower_value lower_verbatim(int first, int last, lower_type type)
{
    lower_value v = {NULL, type, first, last, 0};
    return v;
}

/* Tokens first..last, replaced by text. */
static inline lower_value lower_rewritten(int first, int last, lower_type type, int call, const lower_text *text)
{
    lower_value v = {text, type, first, last, call};
    return v;
}

/* Tokens first..last with the kids (in order, inside) in their texts. */
lower_value clmad__lower_composed(lower_parser *p, int first, int last, lower_type type, const lower_value *kids,
                                  int n);
/* One call: its text from fmt (%t a text, %s a C string). */
lower_value clmad__lower_call_of(lower_parser *p, int first, int last, lower_type type, const char *fmt, ...);

static inline lower_value clmad__lower_to_T(lower_parser *p, lower_value v)
{
    return clmad__lower_to(p, v, lower_type_of(LT_T, 0), "this");
}

/* The type of a op b when neither is T. */
lower_type clmad__lower_join(const lower_value *a, const lower_value *b);
/* a op b for op in + - * / with a T operand. */
lower_value clmad__lower_arithmetic(lower_parser *p, char op, const lower_value *a, const lower_value *b);
/* a op b, op the token of a binary operator. */
lower_value clmad__lower_binary(lower_parser *p, lower_value a, int op, lower_value b);
/* A math name's rule applied to its n arguments a (name..last: the call). */
lower_value clmad__lower_apply_rule(lower_parser *p, const lower_rule *r, int name, int last, lower_value *a, int n);
/* (to)v, the cast starting at token at. */
lower_value clmad__lower_cast(lower_parser *p, int at, lower_type to, lower_value v);

#endif
