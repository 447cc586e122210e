/* SPDX-License-Identifier: Apache-2.0 */
/* The values of the front end's expressions: their text spliced from the
 * tokens and the rewritten parts, the conversions a context asks for, and
 * the rewrite of operators, math names and casts applied to T (the rules
 * are listed in lower/expr.c). */
#include "lower/value.h"

#include <stdarg.h>
#include <string.h>

lower_value clmad__lower_composed(lower_parser *p, int first, int last, lower_type type, const lower_value *kids,
                                  int n)
{
    lower_value v = lower_verbatim(first, last, type);
    v.text = clmad__lower_splice(p, first, last, kids, n);
    return v;
}

lower_value clmad__lower_call_of(lower_parser *p, int first, int last, lower_type type, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lower_text *text = clmad__lower_vtextf(p, first, fmt, ap);
    va_end(ap);
    return lower_rewritten(first, last, type, 1, text);
}

static const char *name_of(lower_parser *p, int tok)
{
    const lower_token *t = clmad__lower_tok(p, tok);
    return clmad__lower_printf(p, "%.*s", (int)t->len, p->lx.src + t->start);
}

/* ---- conversions -------------------------------------------------------- */

lower_value clmad__lower_to(lower_parser *p, lower_value v, lower_type to, const char *what)
{
    if (to.ptr == 0 && to.base == LT_T) {
        if (lower_is_T(&v) || lower_is_pointer(&v))
            return v;
        return clmad__lower_call_of(p, v.first, v.last, to, "ad_const(%t)", clmad__lower_piece(p, &v));
    }
    if (to.ptr == 0 && (to.base == LT_REAL || to.base == LT_INT) && lower_is_T(&v))
        clmad__lower_fail(p, LOWER_TYPE_ERROR, v.first,
                          "%s is T but a %s is needed here, which would drop its derivative; write "
                          "ad_val(...) if that is meant",
                          what, to.base == LT_REAL ? "real" : "integer");
    return v;
}

lower_value clmad__lower_condition(lower_parser *p, lower_value v)
{
    if (!lower_is_T(&v))
        return v;
    return clmad__lower_call_of(p, v.first, v.last, lower_type_of(LT_REAL, 0), "ad_val(%t)", clmad__lower_piece(p, &v));
}

/* ---- operators ---------------------------------------------------------- */

lower_type clmad__lower_join(const lower_value *a, const lower_value *b)
{
    if (lower_is_pointer(a) || lower_is_pointer(b) || a->type.base == LT_OTHER || b->type.base == LT_OTHER)
        return lower_type_of(LT_OTHER, 0);
    if (a->type.base == LT_REAL || b->type.base == LT_REAL)
        return lower_type_of(LT_REAL, 0);
    return lower_type_of(LT_INT, 0);
}

/* a op b for op in + - * / with a T operand. */
lower_value clmad__lower_arithmetic(lower_parser *p, char op, const lower_value *a, const lower_value *b)
{
    const lower_text *x = clmad__lower_piece(p, a), *y = clmad__lower_piece(p, b);
    lower_type T = lower_type_of(LT_T, 0);
    int first = a->first, last = b->last;
    static const char *const BOTH[] = {"ad_add(%t, %t)", "ad_sub(%t, %t)", "ad_mul(%t, %t)", "ad_div(%t, %t)"};
    static const char *const LEFT[] = {"ad_addr(%t, %t)", "ad_subr(%t, %t)", "ad_mulr(%t, %t)", "ad_divr(%t, %t)"};
    int k = op == '+' ? 0 : op == '-' ? 1 : op == '*' ? 2 : 3;
    if (lower_is_T(a) && lower_is_T(b))
        return clmad__lower_call_of(p, first, last, T, BOTH[k], x, y);
    if (lower_is_T(a))
        return clmad__lower_call_of(p, first, last, T, LEFT[k], x, y);
    /* r op a */
    if (op == '+')
        return clmad__lower_call_of(p, first, last, T, "ad_addr(%t, %t)", y, x);
    if (op == '*')
        return clmad__lower_call_of(p, first, last, T, "ad_mulr(%t, %t)", y, x);
    return clmad__lower_call_of(p, first, last, T, op == '-' ? "ad_rsub(%t, %t)" : "ad_rdiv(%t, %t)", x, y);
}


lower_value clmad__lower_binary(lower_parser *p, lower_value a, int op, lower_value b)
{
    const lower_token *t = clmad__lower_tok(p, op);
    const char *s = p->lx.src + t->start;
    lower_value kids[2] = {a, b};
    int arith = t->len == 1 && strchr("+-*/", s[0]);
    if (arith && (lower_is_T(&a) || lower_is_T(&b)) && !lower_is_pointer(&a) && !lower_is_pointer(&b))
        return clmad__lower_arithmetic(p, s[0], &a, &b);
    int compare = strchr("<>", s[0]) ? t->len == 1 || s[1] == '=' : t->len == 2 && s[1] == '=';
    int logical = t->len == 2 && (s[0] == '&' || s[0] == '|') && s[1] == s[0];
    if (compare || logical) {
        kids[0] = clmad__lower_condition(p, a);
        kids[1] = clmad__lower_condition(p, b);
        return clmad__lower_composed(p, a.first, b.last, lower_type_of(LT_INT, 0), kids, 2);
    }
    if (!arith && (lower_is_T(&a) || lower_is_T(&b)))
        clmad__lower_fail(p, LOWER_TYPE_ERROR, op,
                          "operator '%.*s' on T: T is a real number with derivatives, it has no "
                          "integer or bit operations", (int)t->len, s);
    return clmad__lower_composed(p, a.first, b.last, clmad__lower_join(&a, &b), kids, 2);
}


lower_value clmad__lower_apply_rule(lower_parser *p, const lower_rule *r, int name, int last, lower_value *a, int n)
{
    const char *fn = name_of(p, name);
    int any_T = 0;
    for (int k = 0; k < n; k++)
        any_T |= lower_is_T(&a[k]);
    lower_type T = lower_type_of(LT_T, 0), REAL = lower_type_of(LT_REAL, 0);
    if (!any_T && r->kind != LR_CLMAD_UNARY)
        return clmad__lower_composed(p, name, last, r->kind == LR_PREDICATE ? lower_type_of(LT_INT, 0) : REAL, a, n);
    if (r->kind == LR_NO_RULE)
        clmad__lower_fail(p, LOWER_TYPE_ERROR, name,
                          "%s has no derivative rule for T (the vocabulary's math functions are listed in "
                          "the README); apply it to ad_val(x) if a constant is meant", fn);
    static const int ARITY[] = {[LR_UNARY] = 1, [LR_CLMAD_UNARY] = 1, [LR_BINARY] = 2, [LR_POW] = 2,
                                [LR_POWN] = 2,  [LR_FMA] = 3,         [LR_CLAMP] = 3,  [LR_PREDICATE] = 1,
                                [LR_STEP] = 1};
    if (n != ARITY[r->kind])
        clmad__lower_fail(p, LOWER_TYPE_ERROR, name, "%s takes %d argument%s, not %d", fn, ARITY[r->kind],
                          ARITY[r->kind] == 1 ? "" : "s", n);
    const lower_text *x = clmad__lower_piece(p, &a[0]);
    switch (r->kind) {
    case LR_UNARY:
        return clmad__lower_call_of(p, name, last, T, "%s(%t)", r->ad_name, x);
    case LR_CLMAD_UNARY:
        if (lower_is_T(&a[0]))
            return clmad__lower_call_of(p, name, last, T, "%s(%t)", r->ad_name, x);
        return clmad__lower_call_of(p, name, last, REAL, "ad_val(%s(ad_const(%t)))", r->ad_name, x);
    case LR_BINARY:
        a[0] = clmad__lower_to_T(p, a[0]), a[1] = clmad__lower_to_T(p, a[1]);
        return clmad__lower_call_of(p, name, last, T, "%s(%t, %t)", r->ad_name, clmad__lower_piece(p, &a[0]),
                       clmad__lower_piece(p, &a[1]));
    case LR_POW:
        if (lower_is_T(&a[0]) && lower_is_T(&a[1]))
            return clmad__lower_call_of(p, name, last, T, "ad_pow(%t, %t)", x, clmad__lower_piece(p, &a[1]));
        if (lower_is_T(&a[0]))
            return clmad__lower_call_of(p, name, last, T, "ad_powr(%t, %t)", x, clmad__lower_piece(p, &a[1]));
        return clmad__lower_call_of(p, name, last, T, "ad_rpow(%t, %t)", x, clmad__lower_piece(p, &a[1]));
    case LR_POWN:
        clmad__lower_to(p, a[1], lower_type_of(LT_INT, 0), "the exponent of pown");
        if (!lower_is_T(&a[0]))
            break;
        return clmad__lower_call_of(p, name, last, T, "ad_pown(%t, %t)", x, clmad__lower_piece(p, &a[1]));
    case LR_FMA:
        for (int k = 0; k < 3; k++)
            a[k] = clmad__lower_to_T(p, a[k]);
        return clmad__lower_call_of(p, name, last, T, "ad_fma(%t, %t, %t)", clmad__lower_piece(p, &a[0]),
                       clmad__lower_piece(p, &a[1]), clmad__lower_piece(p, &a[2]));
    case LR_CLAMP:
        if (!lower_is_T(&a[0]) || lower_is_T(&a[1]) || lower_is_T(&a[2]))
            break;
        return clmad__lower_call_of(p, name, last, T, "ad_clamp(%t, %t, %t)", x, clmad__lower_piece(p, &a[1]),
                       clmad__lower_piece(p, &a[2]));
    case LR_PREDICATE:
        return clmad__lower_call_of(p, name, last, lower_type_of(LT_INT, 0), "%s(ad_val(%t))", fn, x);
    case LR_STEP:
        return clmad__lower_call_of(p, name, last, T, "ad_const(%s(ad_val(%t)))", fn, x);
    case LR_NO_RULE:
        break;
    }
    clmad__lower_fail(p, LOWER_TYPE_ERROR, name,
                      r->kind == LR_CLAMP ? "clamp applies to T with real bounds only; write fmin(fmax(x, lo), hi) "
                                            "for bounds that are T"
                                          : "pown's base must be T and its exponent an integer");
}

lower_value clmad__lower_cast(lower_parser *p, int at, lower_type to, lower_value v)
{
    if (to.ptr == 0 && to.base == LT_T) {
        if (lower_is_T(&v))
            return clmad__lower_composed(p, at, v.last, to, &v, 1);
        return clmad__lower_call_of(p, at, v.last, to, "ad_const(%t)", clmad__lower_piece(p, &v));
    }
    if (to.ptr == 0 && (to.base == LT_REAL || to.base == LT_INT) && lower_is_T(&v))
        clmad__lower_fail(p, LOWER_TYPE_ERROR, at,
                          "a cast of T to %s drops its derivative; write ad_val(...) if that is meant",
                          to.base == LT_REAL ? "a real" : "an integer");
    return clmad__lower_composed(p, at, v.last, to, &v, 1);
}

