/* SPDX-License-Identifier: Apache-2.0 */
/* The front end's declarations and statements: the types of the names in
 * scope, the contexts that convert a value (an initialiser, a return, a
 * condition, an argument), and the pass over a whole source. Preprocessor
 * lines are not seen (the lexer skips them), so code in both arms of an
 * #if is parsed as if both were there. */
#include "lower/lower.h"

#include <string.h>

static int word_is(const lower_parser *p, int i, const char *w)
{
    const lower_token *t = clmad__lower_tok(p, i);
    return t->kind == LTK_IDENT && t->len == strlen(w) && !strncmp(p->lx.src + t->start, w, t->len);
}

static int is_qualifier(const lower_parser *p, int i)
{
    static const char *const WORDS[] = {
        "const",     "volatile",  "restrict",    "static",     "inline",       "extern",
        "__kernel",  "kernel",    "__global",    "global",     "__local",      "local",
        "__constant", "constant", "__private",   "private",    "__read_only",  "read_only",
        "__write_only", "write_only", "auto",    "register",   "__inline",     "__inline__",
        "__restrict", "__attribute__", "typedef", "struct",    "union",        "enum",
        "__generic",  "generic"};
    for (size_t k = 0; k < sizeof WORDS / sizeof *WORDS; k++)
        if (word_is(p, i, WORDS[k]))
            return 1;
    return 0;
}

static int typedef_index(const lower_parser *p, int i)
{
    const lower_token *t = clmad__lower_tok(p, i);
    if (t->kind != LTK_IDENT)
        return -1;
    for (int k = p->n_typedefs - 1; k >= 0; k--)
        if (p->typedefs[k].name_len == t->len && !strncmp(p->lx.src + p->typedefs[k].name, p->lx.src + t->start, t->len))
            return k;
    return -1;
}

int clmad__lower_starts_type(lower_parser *p, int i)
{
    const lower_token *t = clmad__lower_tok(p, i);
    if (t->kind != LTK_IDENT)
        return 0;
    int found;
    clmad__lower_lookup(p, i, &found);
    if (found) /* a variable named like a type word */
        return 0;
    return clmad__lower_type_word(p->lx.src + t->start, t->len) >= 0 || is_qualifier(p, i) ||
           typedef_index(p, i) >= 0;
}

static void skip_balanced(lower_parser *p)
{
    const char *open = clmad__lower_is(p, p->pos, "(") ? "(" : clmad__lower_is(p, p->pos, "[") ? "[" : "{";
    const char *close = open[0] == '(' ? ")" : open[0] == '[' ? "]" : "}";
    int depth = 0;
    do {
        if (clmad__lower_tok(p, p->pos)->kind == LTK_EOF)
            clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "unbalanced '%s'", open);
        depth += clmad__lower_is(p, p->pos, open) - clmad__lower_is(p, p->pos, close);
        p->pos++;
    } while (depth > 0);
}

typedef struct {
    lower_type type;
    int is_typedef, any;
} specifiers;

static specifiers parse_specifiers(lower_parser *p)
{
    specifiers s = {{LT_OTHER, 0}, 0, 0};
    int base = -1;
    for (;; s.any = 1) {
        int i = p->pos;
        const lower_token *t = clmad__lower_tok(p, i);
        if (t->kind != LTK_IDENT)
            break;
        if (word_is(p, i, "__attribute__")) {
            p->pos++;
            skip_balanced(p);
        } else if (word_is(p, i, "struct") || word_is(p, i, "union") || word_is(p, i, "enum")) {
            p->pos++;
            if (clmad__lower_tok(p, p->pos)->kind == LTK_IDENT)
                p->pos++;
            if (clmad__lower_is(p, p->pos, "{"))
                skip_balanced(p);
            base = LT_OTHER;
        } else if (word_is(p, i, "typedef")) {
            s.is_typedef = 1;
            p->pos++;
        } else if (is_qualifier(p, i)) {
            p->pos++;
        } else {
            int w = clmad__lower_type_word(p->lx.src + t->start, t->len), td = typedef_index(p, i);
            if (w < 0 && td < 0)
                break;
            if (base >= 0 && td >= 0 && w < 0) /* `real x` where x was a typedef: a declarator */
                break;
            p->pos++;
            int b = w >= 0 ? w : p->typedefs[td].type.base;
            if (td >= 0 && w < 0)
                s.type.ptr = p->typedefs[td].type.ptr;
            /* long double is real; T and real win over int words */
            if (base < 0 || b == LT_T || (b == LT_REAL && base != LT_T) || b == LT_OTHER)
                base = b;
        }
    }
    s.type.base = (unsigned char)(base < 0 ? LT_INT : base); /* `unsigned`, `const x` */
    return s;
}

/* A declarator: pointers, an optional name, array or function suffixes.
 * *name: its token or -1; *params: the first token of a parameter list or -1. */
static lower_type parse_declarator(lower_parser *p, lower_type base, int *name, int *params)
{
    lower_type t = base;
    *name = -1;
    *params = -1;
    while (clmad__lower_accept(p, "*")) {
        t.ptr++;
        while (is_qualifier(p, p->pos))
            p->pos++;
    }
    if (clmad__lower_is(p, p->pos, "("))
        clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "parenthesised declarators are not parsed");
    if (clmad__lower_tok(p, p->pos)->kind == LTK_IDENT && !clmad__lower_starts_type(p, p->pos))
        *name = p->pos++;
    for (;;) {
        if (clmad__lower_is(p, p->pos, "[")) {
            skip_balanced(p);
            t.ptr++;
        } else if (clmad__lower_is(p, p->pos, "(") && *params < 0) {
            *params = p->pos + 1;
            skip_balanced(p);
        } else if (word_is(p, p->pos, "__attribute__")) {
            p->pos++;
            skip_balanced(p);
        } else {
            return t;
        }
    }
}

static lower_type type_name_after_specifiers(lower_parser *p, specifiers s)
{
    int name, params;
    return parse_declarator(p, s.type, &name, &params);
}

lower_type clmad__lower_type_name(lower_parser *p)
{
    specifiers s = parse_specifiers(p);
    return type_name_after_specifiers(p, s);
}

/* Parameters from the token after '(' (already skipped over): their types,
 * and with declare, their names in scope. */
static int parse_params(lower_parser *p, int at, lower_type *types, int declare)
{
    int saved = p->pos, n = 0;
    p->pos = at;
    if (clmad__lower_is(p, p->pos, ")") || (word_is(p, p->pos, "void") && clmad__lower_is(p, p->pos + 1, ")"))) {
        p->pos = saved;
        return 0;
    }
    do {
        if (clmad__lower_accept(p, "..."))
            break;
        specifiers s = parse_specifiers(p);
        int name, params;
        lower_type t = parse_declarator(p, s.type, &name, &params);
        if (n == LOWER_MAX_PARAMS)
            clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "too many parameters");
        types[n++] = t;
        if (declare && name >= 0)
            clmad__lower_declare(p, name, t);
    } while (clmad__lower_accept(p, ","));
    clmad__lower_expect(p, ")");
    p->pos = saved;
    return n;
}

/* ---- statements --------------------------------------------------------- */

static void statement(lower_parser *p);

static lower_value full_expression(lower_parser *p)
{
    lower_value v = clmad__lower_expression(p);
    clmad__lower_commit(p, &v);
    return v;
}

static void condition_in_parens(lower_parser *p)
{
    clmad__lower_expect(p, "(");
    lower_value c = clmad__lower_condition(p, clmad__lower_expression(p));
    clmad__lower_commit(p, &c);
    clmad__lower_expect(p, ")");
}

static void initializer(lower_parser *p, lower_type t)
{
    if (clmad__lower_accept(p, "{")) {
        clmad__lower_enter(p);
        lower_type element = t;
        if (element.ptr)
            element.ptr--;
        while (!clmad__lower_accept(p, "}")) {
            initializer(p, element);
            if (!clmad__lower_accept(p, ","))
                clmad__lower_expect(p, "}"), p->pos--;
        }
        clmad__lower_leave(p);
        return;
    }
    lower_value v = clmad__lower_to(p, clmad__lower_assignment(p), t, "the initial value");
    clmad__lower_commit(p, &v);
}

/* A declaration, from its specifiers to the ';'; at file scope, functions
 * are recorded and, with bodies, their bodies are parsed. */
static void declaration(lower_parser *p, int file_scope, int bodies)
{
    specifiers s = parse_specifiers(p);
    if (clmad__lower_accept(p, ";"))
        return;
    do {
        int name, params;
        lower_type t = parse_declarator(p, s.type, &name, &params);
        if (name < 0)
            clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "expected a name");
        if (s.is_typedef) {
            p->typedefs = clmad__lower_grow(p, p->typedefs, &p->cap_typedefs, p->n_typedefs + 1, sizeof *p->typedefs);
            lower_symbol *td = &p->typedefs[p->n_typedefs++];
            td->name = clmad__lower_tok(p, name)->start;
            td->name_len = clmad__lower_tok(p, name)->len;
            td->type = t;
            continue;
        }
        if (params >= 0 && file_scope) {
            if (!clmad__lower_function(p, name)) {
                p->fns = clmad__lower_grow(p, p->fns, &p->cap_fns, p->n_fns + 1, sizeof *p->fns);
                lower_function *f = &p->fns[p->n_fns++];
                f->name = clmad__lower_tok(p, name)->start;
                f->name_len = clmad__lower_tok(p, name)->len;
                f->ret = t;
                f->n_params = parse_params(p, params, f->params, 0);
            }
            if (clmad__lower_is(p, p->pos, "{")) {
                if (!bodies) {
                    skip_balanced(p);
                    return;
                }
                int scope = p->n_syms;
                lower_type unused[LOWER_MAX_PARAMS];
                parse_params(p, params, unused, 1);
                p->fn_ret = t;
                statement(p);
                p->n_syms = scope;
                return;
            }
            continue;
        }
        clmad__lower_declare(p, name, t);
        if (clmad__lower_accept(p, "=")) {
            if (file_scope) {
                while (!clmad__lower_is(p, p->pos, ",") && !clmad__lower_is(p, p->pos, ";")) {
                    if (clmad__lower_tok(p, p->pos)->kind == LTK_EOF)
                        clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "expected ';'");
                    if (clmad__lower_is(p, p->pos, "{") || clmad__lower_is(p, p->pos, "("))
                        skip_balanced(p);
                    else
                        p->pos++;
                }
            } else {
                initializer(p, t);
            }
        }
    } while (clmad__lower_accept(p, ","));
    clmad__lower_expect(p, ";");
}

static void statement_body(lower_parser *p);

static void statement(lower_parser *p)
{
    clmad__lower_enter(p);
    statement_body(p);
    clmad__lower_leave(p);
}

static void statement_body(lower_parser *p)
{
    int at = p->pos;
    if (clmad__lower_accept(p, "{")) {
        int scope = p->n_syms;
        while (!clmad__lower_accept(p, "}")) {
            if (clmad__lower_tok(p, p->pos)->kind == LTK_EOF)
                clmad__lower_fail(p, LOWER_PARSE_FAILED, at, "unbalanced '{'");
            statement(p);
        }
        p->n_syms = scope;
    } else if (clmad__lower_accept(p, ";")) {
    } else if (clmad__lower_accept(p, "if")) {
        condition_in_parens(p);
        statement(p);
        if (clmad__lower_accept(p, "else"))
            statement(p);
    } else if (clmad__lower_accept(p, "while")) {
        condition_in_parens(p);
        statement(p);
    } else if (clmad__lower_accept(p, "do")) {
        statement(p);
        if (!clmad__lower_accept(p, "while"))
            clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "expected 'while'");
        condition_in_parens(p);
        clmad__lower_expect(p, ";");
    } else if (clmad__lower_accept(p, "for")) {
        int scope = p->n_syms;
        clmad__lower_expect(p, "(");
        if (clmad__lower_starts_type(p, p->pos))
            declaration(p, 0, 1);
        else if (!clmad__lower_accept(p, ";"))
            full_expression(p), clmad__lower_expect(p, ";");
        if (!clmad__lower_is(p, p->pos, ";")) {
            lower_value c = clmad__lower_condition(p, clmad__lower_expression(p));
            clmad__lower_commit(p, &c);
        }
        clmad__lower_expect(p, ";");
        if (!clmad__lower_is(p, p->pos, ")"))
            full_expression(p);
        clmad__lower_expect(p, ")");
        statement(p);
        p->n_syms = scope;
    } else if (clmad__lower_accept(p, "switch")) {
        clmad__lower_expect(p, "(");
        lower_value v = full_expression(p);
        if (v.type.base == LT_T && v.type.ptr == 0)
            clmad__lower_fail(p, LOWER_TYPE_ERROR, v.first, "switch on T; compare ad_val(x) or branch with if");
        clmad__lower_expect(p, ")");
        statement(p);
    } else if (clmad__lower_accept(p, "case")) {
        clmad__lower_expression(p);
        clmad__lower_expect(p, ":");
    } else if (clmad__lower_accept(p, "default")) {
        clmad__lower_expect(p, ":");
    } else if (clmad__lower_accept(p, "return")) {
        if (!clmad__lower_accept(p, ";")) {
            lower_value v = clmad__lower_to(p, clmad__lower_expression(p), p->fn_ret, "the value returned");
            clmad__lower_commit(p, &v);
            clmad__lower_expect(p, ";");
        }
    } else if (clmad__lower_accept(p, "break") || clmad__lower_accept(p, "continue")) {
        clmad__lower_expect(p, ";");
    } else if (clmad__lower_accept(p, "goto")) {
        p->pos++;
        clmad__lower_expect(p, ";");
    } else if (clmad__lower_tok(p, at)->kind == LTK_IDENT && clmad__lower_is(p, at + 1, ":") &&
               !clmad__lower_starts_type(p, at)) {
        p->pos += 2; /* a label */
    } else if (word_is(p, at, "__attribute__") && !clmad__lower_starts_type(p, at + 1)) {
        p->pos++;
        skip_balanced(p); /* a statement attribute, e.g. opencl_unroll_hint */
    } else if (clmad__lower_starts_type(p, at)) {
        declaration(p, 0, 1);
    } else {
        full_expression(p);
        clmad__lower_expect(p, ";");
    }
}

void clmad__lower_source(lower_parser *p)
{
    /* Two passes: the first records the functions, so that a call before a
     * function's definition knows its parameter types; the second parses
     * the bodies. */
    for (int bodies = 0; bodies <= 1; bodies++) {
        p->pos = 0;
        p->n_syms = 0;
        p->n_typedefs = 0;
        while (clmad__lower_tok(p, p->pos)->kind != LTK_EOF) {
            if (clmad__lower_accept(p, ";"))
                continue;
            if (!clmad__lower_starts_type(p, p->pos))
                clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "expected a declaration or a function");
            declaration(p, 1, bodies);
        }
    }
}
