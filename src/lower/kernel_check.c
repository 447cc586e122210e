/* SPDX-License-Identifier: Apache-2.0 */
/* Checks of a source against clmad_kernel_create's arguments, on the
 * lexer's tokens alone (no parse, so that a source the front end does not
 * parse is checked too): what would otherwise fail inside the generated
 * code, or change it, is said here in the user's terms at the user's line. */
#include "lower/kernel_check.h"
#include "lower/lower.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const lower_lexed *lx;
    char *msg;
    size_t cap;
} checker;

static clmad_status refuse(checker *c, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static clmad_status refuse(checker *c, int line, int col, const char *fmt, ...)
{
    int n = line > 0 ? snprintf(c->msg, c->cap, "source:%d:%d: error: ", line, col)
                     : snprintf(c->msg, c->cap, "source: error: ");
    if (n < 0 || (size_t)n >= c->cap)
        return CLMAD_ERR_BUILD;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg + n, c->cap - (size_t)n, fmt, ap);
    va_end(ap);
    return CLMAD_ERR_BUILD;
}

static int ident_char(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

/* The line and column of byte `at` of the source. */
static void position(const char *src, size_t at, int *line, int *col)
{
    *line = 1, *col = 1;
    for (size_t i = 0; i < at && src[i]; i++) {
        if (src[i] == '\n')
            ++*line, *col = 1;
        else
            ++*col;
    }
}

static int is_reserved(const char *s, size_t n)
{
    return n >= 7 && (!strncmp(s, "clmad__", 7) || !strncmp(s, "CLMAD__", 7));
}

/* The first identifier in [from, from + len) of the source for which
 * match(word, n, arg) holds: its offset, or (size_t)-1. */
static size_t find_word(const char *src, size_t from, size_t len, int (*match)(const char *, size_t, const void *),
                        const void *arg)
{
    for (size_t i = from, end = from + len; i < end;) {
        if (!ident_char(src[i])) {
            i++;
            continue;
        }
        size_t w = i; /* a word, or a number with its suffix */
        while (i < end && ident_char(src[i]))
            i++;
        if (!isdigit((unsigned char)src[w]) && match(src + w, i - w, arg))
            return w;
    }
    return (size_t)-1;
}

static int reserved_word(const char *s, size_t n, const void *unused)
{
    (void)unused;
    return is_reserved(s, n);
}

/* Identifiers in clmad__ / CLMAD__, in code, #define and #undef names and
 * macro bodies: the generated code's names, which a user name would
 * collide with or redefine. */
static clmad_status check_reserved(checker *c)
{
    const lower_lexed *lx = c->lx;
    const char *reserved = "identifiers starting with clmad__ or CLMAD__ are reserved for the code that "
                           "clmad generates around your function";
    for (int i = 0; i < lx->n_toks; i++) {
        const lower_token *t = &lx->toks[i];
        if (t->kind == LTK_IDENT && is_reserved(lx->src + t->start, t->len))
            return refuse(c, t->line, t->col, "\"%.*s\": %s", (int)t->len, lx->src + t->start, reserved);
    }
    for (int m = 0; m < lx->n_macros; m++) {
        const lower_macro *mac = &lx->macros[m];
        size_t at = is_reserved(lx->src + mac->name, mac->name_len)
                        ? mac->name
                        : find_word(lx->src, mac->body, mac->body_len, reserved_word, NULL);
        if (at != (size_t)-1) {
            int line, col;
            position(lx->src, at, &line, &col);
            size_t n = 0;
            while (ident_char(lx->src[at + n]))
                n++;
            return refuse(c, line, col, "\"%.*s\": %s", (int)n, lx->src + at, reserved);
        }
    }
    return CLMAD_OK;
}

clmad_status clmad__lower_check_kernel(const char *src, const char *fn, int n_inputs, int n_outputs, char *msg,
                                       size_t msg_cap)
{
    (void)fn, (void)n_inputs, (void)n_outputs;
    lower_lexed lx;
    if (clmad__lower_lex(src, &lx)) {
        snprintf(msg, msg_cap, "out of host memory checking the source");
        return CLMAD_ERR_OUT_OF_MEMORY;
    }
    checker c = {&lx, msg, msg_cap};
    clmad_status st = check_reserved(&c);
    clmad__lower_lexed_free(&lx);
    return st;
}
