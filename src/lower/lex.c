/* SPDX-License-Identifier: Apache-2.0 */
/* The front end's lexer: OpenCL C tokens with their lines and columns.
 * Comments and preprocessor lines are skipped as space; #define and #undef
 * are kept as macro events, so that an object-like macro's type can be
 * known where it is used. */
#include "lower/lower.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *src;
    size_t i;
    int line, col;
    int line_start; /* only space since the last newline */
} cursor;

static void advance(cursor *c, size_t n)
{
    while (n-- && c->src[c->i]) {
        if (c->src[c->i] == '\n') {
            c->line++;
            c->col = 1;
            c->line_start = 1;
        } else {
            c->col++;
        }
        c->i++;
    }
}

static int ident_char(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

void *clmad__lower_grow_array(void *array, int *cap, int need, size_t elem, int first)
{
    if (need <= *cap)
        return array;
    int cap2 = *cap ? *cap * 2 : first;
    while (cap2 < need)
        cap2 *= 2;
    void *a = realloc(array, (size_t)cap2 * elem);
    if (a)
        *cap = cap2;
    return a;
}

/* A directive from '#' to its end of line (continuations included); a
 * #define or #undef becomes an event. */
static int directive(cursor *c, lower_lexed *lx, int *cap)
{
    size_t end = c->i;
    while (c->src[end] && !(c->src[end] == '\n' && c->src[end - 1] != '\\'))
        end++;
    size_t w = c->i + 1;
    while (w < end && (c->src[w] == ' ' || c->src[w] == '\t'))
        w++;
    int is_define = !strncmp(c->src + w, "define", 6) && !ident_char(c->src[w + 6]);
    int is_undef = !strncmp(c->src + w, "undef", 5) && !ident_char(c->src[w + 5]);
    if (is_define || is_undef) {
        size_t n = w + (is_define ? 6 : 5);
        while (n < end && (c->src[n] == ' ' || c->src[n] == '\t'))
            n++;
        size_t name = n;
        while (n < end && ident_char(c->src[n]))
            n++;
        if (n > name) {
            lower_macro *m = clmad__lower_grow_array(lx->macros, cap, lx->n_macros + 1, sizeof *m, 256);
            if (!m)
                return -1;
            lx->macros = m;
            m += lx->n_macros++;
            m->is_define = is_define;
            m->function_like = c->src[n] == '(';
            m->name = name;
            m->name_len = n - name;
            m->body = n;
            m->body_len = end - n;
            m->tok = lx->n_toks;
        }
    }
    advance(c, end - c->i);
    return 0;
}

/* The length of a number: digits, letters (suffixes, hex, exponents), '.',
 * and a sign right after an exponent letter. */
static size_t number_length(const char *s)
{
    size_t n = 0;
    int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    for (;;) {
        char ch = s[n];
        if (ident_char(ch) || ch == '.') {
            n++;
        } else if ((ch == '+' || ch == '-') && n > 0 &&
                   (hex ? (s[n - 1] == 'p' || s[n - 1] == 'P') : (s[n - 1] == 'e' || s[n - 1] == 'E'))) {
            n++;
        } else {
            return n;
        }
    }
}

static const char *const PUNCTS[] = {
    "<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "*=", "/=", "%=", "+=", "-=", "&=", "^=", "|=", "##",
};

static size_t punct_length(const char *s)
{
    for (size_t k = 0; k < sizeof PUNCTS / sizeof *PUNCTS; k++) {
        size_t n = strlen(PUNCTS[k]);
        if (!strncmp(s, PUNCTS[k], n))
            return n;
    }
    return 1;
}

int clmad__lower_lex(const char *src, lower_lexed *lx)
{
    memset(lx, 0, sizeof *lx);
    lx->src = src;
    int cap = 0, cap_macros = 0;
    cursor c = {src, 0, 1, 1, 1};
    for (;;) {
        char ch = src[c.i];
        if (ch == '\\' && src[c.i + 1] == '\n') {
            advance(&c, 2);
            continue;
        }
        if (isspace((unsigned char)ch)) {
            int keep = c.line_start;
            advance(&c, 1);
            c.line_start = keep || ch == '\n';
            continue;
        }
        if (ch == '/' && src[c.i + 1] == '/') {
            while (src[c.i] && src[c.i] != '\n')
                advance(&c, src[c.i] == '\\' && src[c.i + 1] == '\n' ? 2 : 1);
            continue;
        }
        if (ch == '/' && src[c.i + 1] == '*') {
            const char *end = strstr(src + c.i + 2, "*/");
            int keep = c.line_start;
            advance(&c, end ? (size_t)(end + 2 - (src + c.i)) : strlen(src + c.i));
            c.line_start = keep; /* a comment is a space */
            continue;
        }
        if (ch == '#' && c.line_start) {
            if (directive(&c, lx, &cap_macros))
                goto oom;
            continue;
        }
        lower_token *t = clmad__lower_grow_array(lx->toks, &cap, lx->n_toks + 1, sizeof *t, 256);
        if (!t)
            goto oom;
        lx->toks = t;
        t += lx->n_toks++;
        t->start = c.i;
        t->line = c.line;
        t->col = c.col;
        c.line_start = 0;
        if (!ch) {
            t->kind = LTK_EOF;
            t->len = 0;
            return 0;
        }
        size_t n;
        if (ident_char(ch) && !isdigit((unsigned char)ch)) {
            t->kind = LTK_IDENT;
            for (n = 1; ident_char(src[c.i + n]); n++)
                ;
        } else if (isdigit((unsigned char)ch) || (ch == '.' && isdigit((unsigned char)src[c.i + 1]))) {
            t->kind = LTK_NUMBER;
            n = number_length(src + c.i);
        } else if (ch == '"' || ch == '\'') {
            t->kind = LTK_STRING;
            for (n = 1; src[c.i + n] && src[c.i + n] != ch && src[c.i + n] != '\n'; n++)
                if (src[c.i + n] == '\\' && src[c.i + n + 1])
                    n++;
            if (src[c.i + n] == ch)
                n++;
        } else {
            t->kind = LTK_PUNCT;
            n = punct_length(src + c.i);
        }
        t->len = n;
        advance(&c, n);
    }
oom:
    clmad__lower_lexed_free(lx);
    return -1;
}

void clmad__lower_lexed_free(lower_lexed *lx)
{
    free(lx->toks);
    free(lx->macros);
    memset(lx, 0, sizeof *lx);
}
