/* SPDX-License-Identifier: Apache-2.0 */
/* The front end's type names: specifiers, declarators and parameter lists,
 * the words that start a type, and the spans it skips without parsing. */
#include "lower/lower.h"

#include <string.h>

int clmad__lower_word_is(const lower_parser *p, int i, const char *w)
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
        if (clmad__lower_word_is(p, i, WORDS[k]))
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

void clmad__lower_skip_balanced(lower_parser *p)
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

lower_specifiers clmad__lower_specifiers(lower_parser *p)
{
    lower_specifiers s = {{LT_OTHER, 0}, 0, 0};
    int base = -1;
    for (;; s.any = 1) {
        int i = p->pos;
        const lower_token *t = clmad__lower_tok(p, i);
        if (t->kind != LTK_IDENT)
            break;
        if (clmad__lower_word_is(p, i, "__attribute__")) {
            p->pos++;
            clmad__lower_skip_balanced(p);
        } else if (clmad__lower_word_is(p, i, "struct") || clmad__lower_word_is(p, i, "union") ||
                   clmad__lower_word_is(p, i, "enum")) {
            p->pos++;
            if (clmad__lower_tok(p, p->pos)->kind == LTK_IDENT)
                p->pos++;
            if (clmad__lower_is(p, p->pos, "{"))
                clmad__lower_skip_balanced(p);
            base = LT_OTHER;
        } else if (clmad__lower_word_is(p, i, "typedef")) {
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
lower_type clmad__lower_declarator(lower_parser *p, lower_type base, int *name, int *params)
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
            clmad__lower_skip_balanced(p);
            t.ptr++;
        } else if (clmad__lower_is(p, p->pos, "(") && *params < 0) {
            *params = p->pos + 1;
            clmad__lower_skip_balanced(p);
        } else if (clmad__lower_word_is(p, p->pos, "__attribute__")) {
            p->pos++;
            clmad__lower_skip_balanced(p);
        } else {
            return t;
        }
    }
}

static lower_type type_name_after_specifiers(lower_parser *p, lower_specifiers s)
{
    int name, params;
    return clmad__lower_declarator(p, s.type, &name, &params);
}

lower_type clmad__lower_type_name(lower_parser *p)
{
    lower_specifiers s = clmad__lower_specifiers(p);
    return type_name_after_specifiers(p, s);
}

/* Parameters from the token after '(' (already skipped over): their types,
 * and with declare, their names in scope. */
int clmad__lower_params(lower_parser *p, int at, lower_type *types, int declare)
{
    int saved = p->pos, n = 0;
    p->pos = at;
    if (clmad__lower_is(p, p->pos, ")") ||
        (clmad__lower_word_is(p, p->pos, "void") && clmad__lower_is(p, p->pos + 1, ")"))) {
        p->pos = saved;
        return 0;
    }
    do {
        if (clmad__lower_accept(p, "..."))
            break;
        lower_specifiers s = clmad__lower_specifiers(p);
        int name, params;
        lower_type t = clmad__lower_declarator(p, s.type, &name, &params);
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
