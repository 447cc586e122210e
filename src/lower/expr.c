/* SPDX-License-Identifier: Apache-2.0 */
/* The front end's expressions: each is parsed with its type, and one that
 * applies an operator or a math name to T is rewritten to the ad_
 * vocabulary by the canonical rules (README, "Plain syntax"):
 *   a + b -> ad_add(a, b)   a + r, r + a -> ad_addr(a, r)   r - a -> ad_rsub(r, a)
 *   a * r, r * a -> ad_mulr(a, r)   r / a -> ad_rdiv(r, a)   -a -> ad_neg(a)
 *   exp(a) -> ad_exp(a)   a < b -> ad_val(a) < ad_val(b)   T from r: ad_const(r)
 * Everything else keeps its source text. */
#include "lower/lower.h"
#include "base/strbuf.h"

#include <string.h>

static lower_type type_of(int base, int ptr)
{
    lower_type t = {(unsigned char)base, (unsigned char)ptr};
    return t;
}

static int is_T(const lower_value *v) { return v->type.base == LT_T && v->type.ptr == 0; }
static int is_pointer(const lower_value *v) { return v->type.ptr > 0; }

static lower_value verbatim(int first, int last, lower_type type)
{
    lower_value v = {NULL, type, first, last, 0};
    return v;
}

static lower_value rewritten(int first, int last, lower_type type, int call, char *text)
{
    lower_value v = {text, type, first, last, call};
    return v;
}

static size_t tok_end(const lower_parser *p, int i)
{
    const lower_token *t = clmad__lower_tok(p, i);
    return t->start + t->len;
}

/* Tokens first..last as written, with the spans of the kids (in order,
 * inside) replaced by their texts; NULL when no kid was rewritten. */
static char *splice(lower_parser *p, int first, int last, const lower_value *kids, int n)
{
    int any = 0;
    for (int k = 0; k < n; k++)
        any |= kids[k].text != NULL;
    if (!any)
        return NULL;
    const char *src = p->lx.src;
    clmad_strbuf sb = {0};
    size_t at = clmad__lower_tok(p, first)->start;
    for (int k = 0; k < n; k++) {
        size_t from = clmad__lower_tok(p, kids[k].first)->start;
        clmad__sb_printf(&sb, "%.*s%s", (int)(from - at), src + at, clmad__lower_piece(p, &kids[k]));
        at = tok_end(p, kids[k].last);
    }
    size_t end = tok_end(p, last);
    clmad__sb_printf(&sb, "%.*s", (int)(end - at), src + at);
    char *text = sb.failed ? NULL : clmad__lower_printf(p, "%s", sb.data);
    clmad__sb_free(&sb);
    if (!text)
        clmad__lower_fail(p, LOWER_NO_MEMORY, first, "out of host memory");
    return text;
}

static lower_value composed(lower_parser *p, int first, int last, lower_type type, const lower_value *kids,
                            int n)
{
    lower_value v = verbatim(first, last, type);
    v.text = splice(p, first, last, kids, n);
    return v;
}

static lower_value call_of(lower_parser *p, int first, int last, lower_type type, const char *fmt,
                           const char *a, const char *b, const char *c)
{
    return rewritten(first, last, type, 1, clmad__lower_printf(p, fmt, a, b ? b : "", c ? c : ""));
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
        if (is_T(&v) || is_pointer(&v))
            return v;
        return call_of(p, v.first, v.last, to, "ad_const(%s)", clmad__lower_piece(p, &v), NULL, NULL);
    }
    if (to.ptr == 0 && (to.base == LT_REAL || to.base == LT_INT) && is_T(&v))
        clmad__lower_fail(p, LOWER_TYPE_ERROR, v.first,
                          "%s is T but a %s is needed here, which would drop its derivative; write "
                          "ad_val(...) if that is meant",
                          what, to.base == LT_REAL ? "real" : "integer");
    return v;
}

lower_value clmad__lower_condition(lower_parser *p, lower_value v)
{
    if (!is_T(&v))
        return v;
    return call_of(p, v.first, v.last, type_of(LT_REAL, 0), "ad_val(%s)", clmad__lower_piece(p, &v), NULL, NULL);
}

static lower_value to_T(lower_parser *p, lower_value v) { return clmad__lower_to(p, v, type_of(LT_T, 0), "this"); }

/* ---- operators ---------------------------------------------------------- */

static lower_type join(const lower_value *a, const lower_value *b)
{
    if (is_pointer(a) || is_pointer(b) || a->type.base == LT_OTHER || b->type.base == LT_OTHER)
        return type_of(LT_OTHER, 0);
    if (a->type.base == LT_REAL || b->type.base == LT_REAL)
        return type_of(LT_REAL, 0);
    return type_of(LT_INT, 0);
}

/* a op b for op in + - * / with a T operand. */
static lower_value arithmetic(lower_parser *p, char op, const lower_value *a, const lower_value *b)
{
    const char *x = clmad__lower_piece(p, a), *y = clmad__lower_piece(p, b);
    lower_type T = type_of(LT_T, 0);
    int first = a->first, last = b->last;
    static const char *const BOTH[] = {"ad_add(%s, %s)", "ad_sub(%s, %s)", "ad_mul(%s, %s)", "ad_div(%s, %s)"};
    static const char *const LEFT[] = {"ad_addr(%s, %s)", "ad_subr(%s, %s)", "ad_mulr(%s, %s)", "ad_divr(%s, %s)"};
    int k = op == '+' ? 0 : op == '-' ? 1 : op == '*' ? 2 : 3;
    if (is_T(a) && is_T(b))
        return call_of(p, first, last, T, BOTH[k], x, y, NULL);
    if (is_T(a))
        return call_of(p, first, last, T, LEFT[k], x, y, NULL);
    /* r op a */
    if (op == '+')
        return call_of(p, first, last, T, "ad_addr(%s, %s)", y, x, NULL);
    if (op == '*')
        return call_of(p, first, last, T, "ad_mulr(%s, %s)", y, x, NULL);
    return call_of(p, first, last, T, op == '-' ? "ad_rsub(%s, %s)" : "ad_rdiv(%s, %s)", x, y, NULL);
}

static int is_punct(const lower_parser *p, int i, const char *s)
{
    const lower_token *t = clmad__lower_tok(p, i);
    return t->kind == LTK_PUNCT && t->len == strlen(s) && !strncmp(p->lx.src + t->start, s, t->len);
}

static lower_value binary(lower_parser *p, lower_value a, int op, lower_value b)
{
    const lower_token *t = clmad__lower_tok(p, op);
    const char *s = p->lx.src + t->start;
    lower_value kids[2] = {a, b};
    int arith = t->len == 1 && strchr("+-*/", s[0]);
    if (arith && (is_T(&a) || is_T(&b)) && !is_pointer(&a) && !is_pointer(&b))
        return arithmetic(p, s[0], &a, &b);
    int compare = strchr("<>", s[0]) ? t->len == 1 || s[1] == '=' : t->len == 2 && s[1] == '=';
    int logical = t->len == 2 && (s[0] == '&' || s[0] == '|') && s[1] == s[0];
    if (compare || logical) {
        kids[0] = clmad__lower_condition(p, a);
        kids[1] = clmad__lower_condition(p, b);
        return composed(p, a.first, b.last, type_of(LT_INT, 0), kids, 2);
    }
    if (!arith && (is_T(&a) || is_T(&b)))
        clmad__lower_fail(p, LOWER_TYPE_ERROR, op,
                          "operator '%.*s' on T: T is a real number with derivatives, it has no "
                          "integer or bit operations", (int)t->len, s);
    return composed(p, a.first, b.last, join(&a, &b), kids, 2);
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

static int parse_args(lower_parser *p, lower_value *args)
{
    int n = 0;
    if (clmad__lower_accept(p, ")"))
        return 0;
    do {
        if (n == MAX_ARGS)
            clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "too many arguments");
        args[n++] = clmad__lower_assignment(p);
    } while (clmad__lower_accept(p, ","));
    clmad__lower_expect(p, ")");
    return n;
}

static lower_value apply_rule(lower_parser *p, const lower_rule *r, int name, int last, lower_value *a, int n)
{
    const char *fn = name_of(p, name);
    int any_T = 0;
    for (int k = 0; k < n; k++)
        any_T |= is_T(&a[k]);
    lower_type T = type_of(LT_T, 0), REAL = type_of(LT_REAL, 0);
    if (!any_T && r->kind != LR_CLMAD_UNARY)
        return composed(p, name, last, r->kind == LR_PREDICATE ? type_of(LT_INT, 0) : REAL, a, n);
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
    const char *x = clmad__lower_piece(p, &a[0]);
    switch (r->kind) {
    case LR_UNARY:
        return call_of(p, name, last, T, "%s(%s)", r->ad_name, x, NULL);
    case LR_CLMAD_UNARY:
        if (is_T(&a[0]))
            return call_of(p, name, last, T, "%s(%s)", r->ad_name, x, NULL);
        return call_of(p, name, last, REAL, "ad_val(%s(ad_const(%s)))", r->ad_name, x, NULL);
    case LR_BINARY:
        a[0] = to_T(p, a[0]), a[1] = to_T(p, a[1]);
        return call_of(p, name, last, T, "%s(%s, %s)", r->ad_name, clmad__lower_piece(p, &a[0]),
                       clmad__lower_piece(p, &a[1]));
    case LR_POW:
        if (is_T(&a[0]) && is_T(&a[1]))
            return call_of(p, name, last, T, "ad_pow(%s, %s)%s", x, clmad__lower_piece(p, &a[1]), NULL);
        if (is_T(&a[0]))
            return call_of(p, name, last, T, "ad_powr(%s, %s)%s", x, clmad__lower_piece(p, &a[1]), NULL);
        return call_of(p, name, last, T, "ad_rpow(%s, %s)%s", x, clmad__lower_piece(p, &a[1]), NULL);
    case LR_POWN:
        clmad__lower_to(p, a[1], type_of(LT_INT, 0), "the exponent of pown");
        if (!is_T(&a[0]))
            break;
        return call_of(p, name, last, T, "ad_pown(%s, %s)%s", x, clmad__lower_piece(p, &a[1]), NULL);
    case LR_FMA:
        for (int k = 0; k < 3; k++)
            a[k] = to_T(p, a[k]);
        return call_of(p, name, last, T, "ad_fma(%s, %s, %s)", clmad__lower_piece(p, &a[0]),
                       clmad__lower_piece(p, &a[1]), clmad__lower_piece(p, &a[2]));
    case LR_CLAMP:
        if (!is_T(&a[0]) || is_T(&a[1]) || is_T(&a[2]))
            break;
        return call_of(p, name, last, T, "ad_clamp(%s, %s, %s)", x, clmad__lower_piece(p, &a[1]),
                       clmad__lower_piece(p, &a[2]));
    case LR_PREDICATE:
        return call_of(p, name, last, type_of(LT_INT, 0), "%s(ad_val(%s))%s", fn, x, NULL);
    case LR_STEP:
        return call_of(p, name, last, T, "ad_const(%s(ad_val(%s)))%s", fn, x, NULL);
    case LR_NO_RULE:
        break;
    }
    clmad__lower_fail(p, LOWER_TYPE_ERROR, name,
                      r->kind == LR_CLAMP ? "clamp applies to T with real bounds only; write fmin(fmax(x, lo), hi) "
                                            "for bounds that are T"
                                          : "pown's base must be T and its exponent an integer");
}

/* A call by name: a function of the source, an ad_ function, a math name. */
static lower_value call(lower_parser *p, int name)
{
    lower_value a[MAX_ARGS];
    int n = parse_args(p, a);
    int last = p->pos - 1;
    const lower_token *t = clmad__lower_tok(p, name);
    const char *s = p->lx.src + t->start;
    const lower_function *f = clmad__lower_function(p, name);
    if (f) {
        for (int k = 0; k < n && k < f->n_params; k++)
            a[k] = clmad__lower_to(p, a[k], f->params[k], clmad__lower_printf(p, "argument %d of %.*s", k + 1,
                                                                               (int)t->len, s));
        return composed(p, name, last, f->ret, a, n);
    }
    const char *sig = clmad__lower_ad_signature(s, t->len);
    if (sig) {
        for (int k = 0; k < n && sig[k + 1]; k++) {
            char c = sig[k + 1];
            a[k] = clmad__lower_to(p, a[k], type_of(c == 'T' ? LT_T : c == 'r' ? LT_REAL : LT_INT, 0),
                                   clmad__lower_printf(p, "argument %d of %.*s", k + 1, (int)t->len, s));
        }
        return composed(p, name, last, type_of(sig[0] == 'T' ? LT_T : sig[0] == 'r' ? LT_REAL : LT_INT, 0), a, n);
    }
    const lower_rule *r = clmad__lower_rule(s, t->len);
    if (r)
        return apply_rule(p, r, name, last, a, n);
    /* A function-like macro, or a function the front end does not see: a
     * T argument most likely makes a T (SQ(x)), which the compiler checks. */
    int any_T = 0;
    for (int k = 0; k < n; k++)
        any_T |= is_T(&a[k]);
    return composed(p, name, last, type_of(any_T ? LT_T : LT_OTHER, 0), a, n);
}

/* ---- unary, postfix, primary -------------------------------------------- */

static lower_value unary(lower_parser *p);

static lower_value identifier(lower_parser *p, int tok)
{
    int found;
    lower_type t = clmad__lower_lookup(p, tok, &found);
    return verbatim(tok, tok, t);
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
        return verbatim(at, at, type_of(real ? LT_REAL : LT_INT, 0));
    }
    if (t->kind == LTK_STRING) {
        p->pos++;
        return verbatim(at, at, type_of(LT_OTHER, 0));
    }
    if (clmad__lower_accept(p, "(")) {
        lower_value e = clmad__lower_expression(p);
        clmad__lower_expect(p, ")");
        if (e.text && e.call)
            return rewritten(at, p->pos - 1, e.type, 1, e.text);
        return composed(p, at, p->pos - 1, e.type, &e, 1);
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
                lower_value a[MAX_ARGS + 1];
                a[0] = v;
                int n = parse_args(p, a + 1);
                v = composed(p, v.first, p->pos - 1, type_of(LT_OTHER, 0), a, n + 1);
            }
        } else if (clmad__lower_accept(p, "[")) {
            lower_value kids[2] = {v, clmad__lower_expression(p)};
            clmad__lower_expect(p, "]");
            if (is_T(&kids[1]))
                clmad__lower_fail(p, LOWER_TYPE_ERROR, kids[1].first, "T used as an index; an index is an integer");
            lower_type t = v.type.ptr ? type_of(v.type.base, v.type.ptr - 1) : type_of(LT_OTHER, 0);
            v = composed(p, v.first, p->pos - 1, t, kids, 2);
        } else if (clmad__lower_accept(p, ".") || clmad__lower_accept(p, "->")) {
            if (clmad__lower_tok(p, p->pos)->kind != LTK_IDENT)
                clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "expected a member name");
            p->pos++;
            v = composed(p, v.first, p->pos - 1, type_of(LT_OTHER, 0), &v, 1);
        } else if (is_punct(p, at, "++") || is_punct(p, at, "--")) {
            if (is_T(&v))
                clmad__lower_fail(p, LOWER_TYPE_ERROR, at, "'%s' on T: write x += 1 (or x -= 1)",
                                  is_punct(p, at, "++") ? "++" : "--");
            p->pos++;
            v = composed(p, v.first, at, v.type, &v, 1);
        } else {
            return v;
        }
    }
}

static lower_value cast(lower_parser *p, int at, lower_type to, lower_value v)
{
    if (to.ptr == 0 && to.base == LT_T) {
        if (is_T(&v))
            return composed(p, at, v.last, to, &v, 1);
        return call_of(p, at, v.last, to, "ad_const(%s)", clmad__lower_piece(p, &v), NULL, NULL);
    }
    if (to.ptr == 0 && (to.base == LT_REAL || to.base == LT_INT) && is_T(&v))
        clmad__lower_fail(p, LOWER_TYPE_ERROR, at,
                          "a cast of T to %s drops its derivative; write ad_val(...) if that is meant",
                          to.base == LT_REAL ? "a real" : "an integer");
    return composed(p, at, v.last, to, &v, 1);
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
        return cast(p, at, to, unary(p));
    }
    if (clmad__lower_accept(p, "sizeof")) {
        if (is_punct(p, p->pos, "(") && clmad__lower_starts_type(p, p->pos + 1)) {
            p->pos++;
            clmad__lower_type_name(p);
            clmad__lower_expect(p, ")");
        } else {
            unary(p);
        }
        return verbatim(at, p->pos - 1, type_of(LT_INT, 0));
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
    if (is_T(&v)) {
        if (!strcmp(op, "-"))
            return call_of(p, at, v.last, v.type, "ad_neg(%s)", clmad__lower_piece(p, &v), NULL, NULL);
        if (!strcmp(op, "+"))
            return rewritten(at, v.last, v.type, v.call || !v.text, (char *)clmad__lower_piece(p, &v));
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
        t = type_of(LT_INT, 0);
    else if (!strcmp(op, "*"))
        t = v.type.ptr ? type_of(v.type.base, v.type.ptr - 1) : type_of(LT_OTHER, 0);
    else if (!strcmp(op, "&"))
        t = type_of(v.type.base, v.type.ptr + 1);
    return composed(p, at, v.last, t, &v, 1);
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
        a = binary(p, a, op, b);
    }
}

static lower_value conditional(lower_parser *p)
{
    lower_value c = binary_from(p, 1);
    if (!clmad__lower_accept(p, "?"))
        return c;
    lower_value kids[3] = {clmad__lower_condition(p, c), clmad__lower_expression(p), {0}};
    clmad__lower_expect(p, ":");
    kids[2] = conditional(p);
    lower_type t = join(&kids[1], &kids[2]);
    if (is_T(&kids[1]) || is_T(&kids[2])) {
        kids[1] = to_T(p, kids[1]);
        kids[2] = to_T(p, kids[2]);
        t = type_of(LT_T, 0);
    } else if (kids[1].type.ptr || kids[1].type.base == LT_VOID) {
        t = kids[1].type;
    }
    return composed(p, c.first, kids[2].last, t, kids, 3);
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
    lower_value rhs = clmad__lower_assignment(p);
    if (k == 0) {
        lower_value kids[2] = {lhs, clmad__lower_to(p, rhs, lhs.type, "the value assigned")};
        return composed(p, lhs.first, rhs.last, lhs.type, kids, 2);
    }
    if (!is_T(&lhs) && is_T(&rhs) && lhs.type.ptr == 0 && lhs.type.base != LT_OTHER)
        clmad__lower_fail(p, LOWER_TYPE_ERROR, rhs.first,
                          "the value is T but the variable is not, which would drop its derivative; declare "
                          "it T, or write ad_val(...) if that is meant");
    if (is_T(&lhs) && k <= 4) {
        lower_value r = arithmetic(p, OPS[k][0], &lhs, &rhs);
        char *text = clmad__lower_printf(p, "%s = %s", clmad__lower_piece(p, &lhs), r.text);
        return rewritten(lhs.first, rhs.last, lhs.type, 0, text);
    }
    if (is_T(&lhs) || is_T(&rhs))
        clmad__lower_fail(p, LOWER_TYPE_ERROR, op,
                          "operator '%s' on T: T is a real number with derivatives, it has no integer or "
                          "bit operations", OPS[k]);
    lower_value kids[2] = {lhs, rhs};
    return composed(p, lhs.first, rhs.last, lhs.type, kids, 2);
}

lower_value clmad__lower_expression(lower_parser *p)
{
    lower_value kids[MAX_ARGS];
    int n = 0;
    do {
        lower_value v = clmad__lower_assignment(p);
        if (n == MAX_ARGS)
            clmad__lower_fail(p, LOWER_PARSE_FAILED, v.first, "too long a comma expression");
        kids[n++] = v;
    } while (clmad__lower_accept(p, ","));
    if (n == 1)
        return kids[0];
    return composed(p, kids[0].first, kids[n - 1].last, kids[n - 1].type, kids, n);
}
