/* SPDX-License-Identifier: Apache-2.0 */
/* The front end's expressions: each is parsed with its type, and one that
 * applies an operator or a math name to T is rewritten to the ad_
 * vocabulary by the canonical rules (README, "Plain syntax"):
 *   a + b -> ad_add(a, b)   a + r, r + a -> ad_addr(a, r)   r - a -> ad_rsub(r, a)
 *   a * r, r * a -> ad_mulr(a, r)   r / a -> ad_rdiv(r, a)   -a -> ad_neg(a)
 *   exp(a) -> ad_exp(a)   a < b -> ad_val(a) < ad_val(b)   T from r: ad_const(r)
 * Everything else keeps its source text. */
#include "lower/value.h"

#include <string.h>

static int is_punct(const lower_parser *p, int i, const char *s)
{
    const lower_token *t = clmad__lower_tok(p, i);
    return t->kind == LTK_PUNCT && t->len == strlen(s) && !strncmp(p->lx.src + t->start, s, t->len);
}

static int precedence(const lower_parser *p, int i)
{
    static const struct {
        const char *op;
        int prec;
    } OPS[] = {{"||", 1}, {"&&", 2}, {"|", 3},  {"^", 4},  {"&", 5},  {"==", 6}, {"!=", 6},
               {"<", 7},  {">", 7},  {"<=", 7}, {">=", 7}, {"<<", 8}, {">>", 8}, {"+", 9},
               {"-", 9},  {"*", 10}, {"/", 10}, {"%", 10}};
    for (size_t k = 0; k < sizeof OPS / sizeof *OPS; k++)
        if (is_punct(p, i, OPS[k].op))
            return OPS[k].prec;
    return 0;
}

/* ---- calls -------------------------------------------------------------- */

#define MAX_ARGS LOWER_MAX_PARAMS

/* Lists of values (arguments, operands of the comma operator) live in the
 * parser's memory, grown by doubling, not in arrays on the C stack: the
 * frames of the recursive descent, times the depth limit, are its stack. */
static lower_value *push(lower_parser *p, lower_value *list, int n, lower_value v)
{
    if (n == 0 || (n >= 4 && !(n & (n - 1)))) {
        lower_value *grown = clmad__lower_alloc(p, (size_t)(n < 4 ? 4 : 2 * n) * sizeof *list);
        if (n)
            memcpy(grown, list, (size_t)n * sizeof *list);
        list = grown;
    }
    list[n] = v;
    return list;
}

/* The arguments after '(', after `head` (if any) in the list. */
static lower_value *parse_args(lower_parser *p, const lower_value *head, int *count)
{
    lower_value *args = NULL;
    int n = 0;
    if (head)
        args = push(p, args, n++, *head);
    if (!clmad__lower_accept(p, ")")) {
        do {
            if (n == MAX_ARGS + (head != NULL))
                clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "too many arguments");
            args = push(p, args, n, clmad__lower_assignment(p));
            n++;
        } while (clmad__lower_accept(p, ","));
        clmad__lower_expect(p, ")");
    }
    *count = n;
    return args;
}

/* A call by name: a function of the source, an ad_ function, a math name. */
static lower_value call(lower_parser *p, int name)
{
    int n;
    lower_value *a = parse_args(p, NULL, &n);
    int last = p->pos - 1;
    const lower_token *t = clmad__lower_tok(p, name);
    const char *s = p->lx.src + t->start;
    const lower_function *f = clmad__lower_function(p, name);
    if (f) {
        clmad__lower_record_call(p, f, name);
        for (int k = 0; k < n && k < f->n_params; k++)
            a[k] = clmad__lower_to(p, a[k], f->params[k], clmad__lower_printf(p, "argument %d of %.*s", k + 1,
                                                                               (int)t->len, s));
        return clmad__lower_composed(p, name, last, f->ret, a, n);
    }
    const char *sig = clmad__lower_ad_signature(s, t->len);
    if (sig) {
        for (int k = 0; k < n && sig[k + 1]; k++) {
            char c = sig[k + 1];
            a[k] = clmad__lower_to(p, a[k], lower_type_of(c == 'T' ? LT_T : c == 'r' ? LT_REAL : LT_INT, 0),
                                   clmad__lower_printf(p, "argument %d of %.*s", k + 1, (int)t->len, s));
        }
        lower_type ret = lower_type_of(sig[0] == 'T' ? LT_T : sig[0] == 'r' ? LT_REAL : LT_INT, 0);
        return clmad__lower_composed(p, name, last, ret, a, n);
    }
    const lower_rule *r = clmad__lower_rule(s, t->len);
    if (r)
        return clmad__lower_apply_rule(p, r, name, last, a, n);
    /* A function-like macro, or a function the front end does not see: a
     * T argument most likely makes a T (SQ(x)), which the compiler checks. */
    int any_T = 0;
    for (int k = 0; k < n; k++)
        any_T |= lower_is_T(&a[k]);
    return clmad__lower_composed(p, name, last, lower_type_of(any_T ? LT_T : LT_OTHER, 0), a, n);
}

/* ---- unary, postfix, primary -------------------------------------------- */

static lower_value unary(lower_parser *p);

static lower_value identifier(lower_parser *p, int tok)
{
    int found;
    lower_type t = clmad__lower_lookup(p, tok, &found);
    return lower_verbatim(tok, tok, t);
}

static lower_value primary(lower_parser *p)
{
    int at = p->pos;
    const lower_token *t = clmad__lower_tok(p, at);
    if (t->kind == LTK_IDENT) {
        p->pos++;
        return identifier(p, at);
    }
    if (t->kind == LTK_NUMBER) {
        p->pos++;
        const char *s = p->lx.src + t->start;
        int hex = t->len > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
        int real = 0;
        for (size_t k = 0; k < t->len; k++)
            real |= s[k] == '.' || (hex ? s[k] == 'p' || s[k] == 'P'
                                        : s[k] == 'e' || s[k] == 'E' || s[k] == 'f' || s[k] == 'F' ||
                                              s[k] == 'h' || s[k] == 'H');
        return lower_verbatim(at, at, lower_type_of(real ? LT_REAL : LT_INT, 0));
    }
    if (t->kind == LTK_STRING) {
        p->pos++;
        return lower_verbatim(at, at, lower_type_of(LT_OTHER, 0));
    }
    if (clmad__lower_accept(p, "(")) {
        lower_value e = clmad__lower_expression(p);
        clmad__lower_expect(p, ")");
        if (e.text && e.call)
            return lower_rewritten(at, p->pos - 1, e.type, 1, e.text);
        return clmad__lower_composed(p, at, p->pos - 1, e.type, &e, 1);
    }
    clmad__lower_fail(p, LOWER_PARSE_FAILED, at, "expected an expression");
}

static lower_value postfix(lower_parser *p)
{
    lower_value v = primary(p);
    for (;;) {
        int at = p->pos;
        if (clmad__lower_accept(p, "(")) {
            if (v.first == v.last && !v.text && clmad__lower_tok(p, v.first)->kind == LTK_IDENT) {
                v = call(p, v.first);
            } else {
                int n;
                lower_value *a = parse_args(p, &v, &n);
                v = clmad__lower_composed(p, v.first, p->pos - 1, lower_type_of(LT_OTHER, 0), a, n);
            }
        } else if (clmad__lower_accept(p, "[")) {
            lower_value kids[2] = {v, clmad__lower_expression(p)};
            clmad__lower_expect(p, "]");
            if (lower_is_T(&kids[1]))
                clmad__lower_fail(p, LOWER_TYPE_ERROR, kids[1].first, "T used as an index; an index is an integer");
            lower_type t = v.type.ptr ? lower_type_of(v.type.base, v.type.ptr - 1) : lower_type_of(LT_OTHER, 0);
            v = clmad__lower_composed(p, v.first, p->pos - 1, t, kids, 2);
        } else if (clmad__lower_accept(p, ".") || clmad__lower_accept(p, "->")) {
            if (clmad__lower_tok(p, p->pos)->kind != LTK_IDENT)
                clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "expected a member name");
            p->pos++;
            v = clmad__lower_composed(p, v.first, p->pos - 1, lower_type_of(LT_OTHER, 0), &v, 1);
        } else if (is_punct(p, at, "++") || is_punct(p, at, "--")) {
            if (lower_is_T(&v))
                clmad__lower_fail(p, LOWER_TYPE_ERROR, at, "'%s' on T: write x += 1 (or x -= 1)",
                                  is_punct(p, at, "++") ? "++" : "--");
            p->pos++;
            v = clmad__lower_composed(p, v.first, at, v.type, &v, 1);
        } else {
            return v;
        }
    }
}

static lower_value unary_body(lower_parser *p);

static lower_value unary(lower_parser *p)
{
    clmad__lower_enter(p);
    lower_value v = unary_body(p);
    clmad__lower_leave(p);
    return v;
}

static lower_value unary_body(lower_parser *p)
{
    int at = p->pos;
    if (is_punct(p, at, "(") && clmad__lower_starts_type(p, at + 1)) {
        p->pos++;
        lower_type to = clmad__lower_type_name(p);
        clmad__lower_expect(p, ")");
        if (is_punct(p, p->pos, "{"))
            clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "compound literals are not parsed");
        return clmad__lower_cast(p, at, to, unary(p));
    }
    if (clmad__lower_accept(p, "sizeof")) {
        if (is_punct(p, p->pos, "(") && clmad__lower_starts_type(p, p->pos + 1)) {
            p->pos++;
            clmad__lower_type_name(p);
            clmad__lower_expect(p, ")");
        } else {
            unary(p);
        }
        return lower_verbatim(at, p->pos - 1, lower_type_of(LT_INT, 0));
    }
    static const char *const OPS[] = {"++", "--", "-", "+", "!", "~", "*", "&"};
    size_t k = 0;
    while (k < sizeof OPS / sizeof *OPS && !is_punct(p, at, OPS[k]))
        k++;
    if (k == sizeof OPS / sizeof *OPS)
        return postfix(p);
    p->pos++;
    lower_value v = unary(p);
    const char *op = OPS[k];
    if (lower_is_T(&v)) {
        if (!strcmp(op, "-"))
            return clmad__lower_call_of(p, at, v.last, v.type, "ad_neg(%t)", clmad__lower_piece(p, &v));
        if (!strcmp(op, "+"))
            return lower_rewritten(at, v.last, v.type, v.call || !v.text, clmad__lower_piece(p, &v));
        if (!strcmp(op, "!"))
            v = clmad__lower_condition(p, v);
        else if (strcmp(op, "&"))
            clmad__lower_fail(p, LOWER_TYPE_ERROR, at,
                              strcmp(op, "~") ? "'%s' on T: write x += 1 (or x -= 1)"
                                              : "operator '%s' on T: T is a real number with derivatives, it "
                                                "has no integer or bit operations",
                              op);
    }
    lower_type t = v.type;
    if (!strcmp(op, "!"))
        t = lower_type_of(LT_INT, 0);
    else if (!strcmp(op, "*"))
        t = v.type.ptr ? lower_type_of(v.type.base, v.type.ptr - 1) : lower_type_of(LT_OTHER, 0);
    else if (!strcmp(op, "&"))
        t = lower_type_of(v.type.base, v.type.ptr + 1);
    return clmad__lower_composed(p, at, v.last, t, &v, 1);
}

/* ---- binary, conditional, assignment, comma ----------------------------- */

static lower_value binary_from(lower_parser *p, int min_prec)
{
    lower_value a = unary(p);
    for (;;) {
        int op = p->pos, prec = precedence(p, op);
        if (prec < min_prec || prec == 0)
            return a;
        p->pos++;
        lower_value b = binary_from(p, prec + 1);
        a = clmad__lower_binary(p, a, op, b);
    }
}

static lower_value conditional(lower_parser *p)
{
    lower_value c = binary_from(p, 1);
    if (!clmad__lower_accept(p, "?"))
        return c;
    lower_value kids[3] = {clmad__lower_condition(p, c), clmad__lower_expression(p), {0}};
    clmad__lower_expect(p, ":");
    clmad__lower_enter(p); /* a ? b : c ? d : ... nests to the right */
    kids[2] = conditional(p);
    clmad__lower_leave(p);
    lower_type t = clmad__lower_join(&kids[1], &kids[2]);
    if (lower_is_T(&kids[1]) || lower_is_T(&kids[2])) {
        kids[1] = clmad__lower_to_T(p, kids[1]);
        kids[2] = clmad__lower_to_T(p, kids[2]);
        t = lower_type_of(LT_T, 0);
    } else if (kids[1].type.ptr || kids[1].type.base == LT_VOID) {
        t = kids[1].type;
    }
    return clmad__lower_composed(p, c.first, kids[2].last, t, kids, 3);
}

lower_value clmad__lower_assignment(lower_parser *p)
{
    lower_value lhs = conditional(p);
    static const char *const OPS[] = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
    int op = p->pos;
    size_t k = 0;
    while (k < sizeof OPS / sizeof *OPS && !is_punct(p, op, OPS[k]))
        k++;
    if (k == sizeof OPS / sizeof *OPS)
        return lhs;
    p->pos++;
    clmad__lower_enter(p); /* a = b = ... nests to the right */
    lower_value rhs = clmad__lower_assignment(p);
    clmad__lower_leave(p);
    if (k == 0) {
        lower_value kids[2] = {lhs, clmad__lower_to(p, rhs, lhs.type, "the value assigned")};
        return clmad__lower_composed(p, lhs.first, rhs.last, lhs.type, kids, 2);
    }
    if (!lower_is_T(&lhs) && lower_is_T(&rhs) && lhs.type.ptr == 0 && lhs.type.base != LT_OTHER)
        clmad__lower_fail(p, LOWER_TYPE_ERROR, rhs.first,
                          "the value is T but the variable is not, which would drop its derivative; declare "
                          "it T, or write ad_val(...) if that is meant");
    if (lower_is_T(&lhs) && k <= 4) {
        lower_value r = clmad__lower_arithmetic(p, OPS[k][0], &lhs, &rhs);
        lower_text *text = clmad__lower_textf(p, lhs.first, "%t = %t", clmad__lower_piece(p, &lhs), r.text);
        return lower_rewritten(lhs.first, rhs.last, lhs.type, 0, text);
    }
    if (lower_is_T(&lhs) || lower_is_T(&rhs))
        clmad__lower_fail(p, LOWER_TYPE_ERROR, op,
                          "operator '%s' on T: T is a real number with derivatives, it has no integer or "
                          "bit operations", OPS[k]);
    lower_value kids[2] = {lhs, rhs};
    return clmad__lower_composed(p, lhs.first, rhs.last, lhs.type, kids, 2);
}

lower_value clmad__lower_expression(lower_parser *p)
{
    lower_value first = clmad__lower_assignment(p), *kids = NULL;
    if (!clmad__lower_is(p, p->pos, ","))
        return first;
    int n = 0;
    kids = push(p, kids, n++, first);
    while (clmad__lower_accept(p, ",")) {
        lower_value v = clmad__lower_assignment(p);
        if (n == MAX_ARGS)
            clmad__lower_fail(p, LOWER_PARSE_FAILED, v.first, "too long a comma expression");
        kids = push(p, kids, n++, v);
    }
    return clmad__lower_composed(p, kids[0].first, kids[n - 1].last, kids[n - 1].type, kids, n);
}
