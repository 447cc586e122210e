/* SPDX-License-Identifier: Apache-2.0 */
/* The parser's bookkeeping, shared by every part of the front end: memory,
 * failures, tokens, names in scope, and the replacements it records. */
#include "lower/lower.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lower_block {
    lower_block *next;
    _Alignas(16) unsigned char data[];
};

void clmad__lower_fail(lower_parser *p, int failure, int tok, const char *fmt, ...)
{
    p->failure = failure;
    const lower_token *t = clmad__lower_tok(p, tok);
    p->line = t->line;
    p->col = t->col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->message, sizeof p->message, fmt, ap);
    va_end(ap);
    longjmp(p->fail, 1);
}

void clmad__lower_enter(lower_parser *p)
{
    if (++p->depth > LOWER_MAX_DEPTH)
        clmad__lower_fail(p, LOWER_LIMIT, p->pos,
                          "nested more than %d levels deep (parentheses, operators, blocks), the front end's "
                          "limit", LOWER_MAX_DEPTH);
}

void *clmad__lower_alloc(lower_parser *p, size_t size)
{
    lower_block *b = malloc(sizeof *b + size);
    if (!b)
        clmad__lower_fail(p, LOWER_NO_MEMORY, p->pos, "out of host memory");
    b->next = p->arena;
    p->arena = b;
    return b->data;
}

char *clmad__lower_printf(lower_parser *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = clmad__lower_alloc(p, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

void *clmad__lower_grow(lower_parser *p, void *array, int *cap, int need, size_t elem)
{
    void *a = clmad__lower_grow_array(array, cap, need, elem, 32);
    if (!a)
        clmad__lower_fail(p, LOWER_NO_MEMORY, p->pos, "out of host memory");
    return a;
}

const lower_token *clmad__lower_tok(const lower_parser *p, int i)
{
    return &p->lx.toks[i < p->lx.n_toks ? i : p->lx.n_toks - 1];
}

int clmad__lower_is(const lower_parser *p, int i, const char *s)
{
    const lower_token *t = clmad__lower_tok(p, i);
    return t->kind != LTK_EOF && t->kind != LTK_NUMBER && t->kind != LTK_STRING && t->len == strlen(s) &&
           !strncmp(p->lx.src + t->start, s, t->len);
}

int clmad__lower_accept(lower_parser *p, const char *s)
{
    if (!clmad__lower_is(p, p->pos, s))
        return 0;
    p->pos++;
    return 1;
}

void clmad__lower_expect(lower_parser *p, const char *s)
{
    if (!clmad__lower_accept(p, s))
        clmad__lower_fail(p, LOWER_PARSE_FAILED, p->pos, "expected '%s'", s);
}

static int same_name(const lower_parser *p, size_t name, size_t len, const lower_token *t)
{
    return len == t->len && !strncmp(p->lx.src + name, p->lx.src + t->start, len);
}

void clmad__lower_declare(lower_parser *p, int name_tok, lower_type type)
{
    p->syms = clmad__lower_grow(p, p->syms, &p->cap_syms, p->n_syms + 1, sizeof *p->syms);
    lower_symbol *s = &p->syms[p->n_syms++];
    s->name = clmad__lower_tok(p, name_tok)->start;
    s->name_len = clmad__lower_tok(p, name_tok)->len;
    s->type = type;
}

/* The type of an object-like macro's body: a number, or a name of a real
 * constant, possibly signed or in parentheses; otherwise OTHER. */
static lower_type macro_type(const lower_parser *p, const lower_macro *m)
{
    lower_type t = {LT_OTHER, 0};
    const char *b = p->lx.src + m->body, *end = b + m->body_len;
    while (b < end && strchr(" \t(-+", *b))
        b++;
    while (end > b && strchr(" \t\r\n)\\", end[-1]))
        end--;
    if (b == end)
        return t;
    size_t n = (size_t)(end - b);
    if (clmad__lower_is_real_constant(b, n)) {
        t.base = LT_REAL;
        return t;
    }
    if (!(b[0] >= '0' && b[0] <= '9') && b[0] != '.')
        return t;
    int hex = n > 1 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X'), real = 0;
    for (size_t k = 0; k < n; k++) {
        if (strchr(" \t()+-*/", b[k]) && !(k > 0 && strchr("eEpP", b[k - 1]) && strchr("+-", b[k])))
            return t; /* an expression: left to the compiler */
        real |= b[k] == '.' || (hex ? b[k] == 'p' || b[k] == 'P' : strchr("eEfFhH", b[k]) != NULL);
    }
    t.base = real ? LT_REAL : LT_INT;
    return t;
}

lower_type clmad__lower_lookup(lower_parser *p, int name_tok, int *found)
{
    const lower_token *t = clmad__lower_tok(p, name_tok);
    lower_type other = {LT_OTHER, 0};
    *found = 0;
    /* A macro replaces the name before the compiler sees it. */
    for (int k = p->lx.n_macros - 1; k >= 0; k--) {
        const lower_macro *m = &p->lx.macros[k];
        if (m->tok <= name_tok && same_name(p, m->name, m->name_len, t)) {
            if (!m->is_define)
                break;
            return m->function_like ? other : macro_type(p, m);
        }
    }
    for (int k = p->n_syms - 1; k >= 0; k--)
        if (same_name(p, p->syms[k].name, p->syms[k].name_len, t)) {
            *found = 1;
            return p->syms[k].type;
        }
    if (clmad__lower_is_real_constant(p->lx.src + t->start, t->len)) {
        lower_type real = {LT_REAL, 0};
        return real;
    }
    return other;
}

const lower_function *clmad__lower_function(const lower_parser *p, int name_tok)
{
    const lower_token *t = clmad__lower_tok(p, name_tok);
    for (int k = 0; k < p->n_fns; k++)
        if (same_name(p, p->fns[k].name, p->fns[k].name_len, t))
            return &p->fns[k];
    return NULL;
}

void clmad__lower_parser_free(lower_parser *p)
{
    while (p->arena) {
        lower_block *b = p->arena;
        p->arena = b->next;
        free(b);
    }
    free(p->syms);
    free(p->typedefs);
    free(p->fns);
    free(p->calls);
    free(p->repl);
    clmad__lower_lexed_free(&p->lx);
}
