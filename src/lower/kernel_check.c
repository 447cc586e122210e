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

/* ---- fn's definition --------------------------------------------------- */

static int is_punct(const lower_lexed *lx, int i, const char *p)
{
    const lower_token *t = &lx->toks[i];
    return t->kind == LTK_PUNCT && t->len == strlen(p) && !strncmp(lx->src + t->start, p, t->len);
}

static int is_word(const lower_lexed *lx, int i, const char *w, size_t n)
{
    const lower_token *t = &lx->toks[i];
    return t->kind == LTK_IDENT && t->len == n && !strncmp(lx->src + t->start, w, n);
}

/* The token after the ( ... ) opened at token i. */
static int after_parens(const lower_lexed *lx, int i)
{
    for (int depth = 0; lx->toks[i].kind != LTK_EOF; i++) {
        depth += is_punct(lx, i, "(") - is_punct(lx, i, ")");
        if (depth == 0)
            return i + 1;
    }
    return i;
}

/* A type as the tokens first..last-1 spell it: the base of its last type
 * word (-1 when it has none the front end knows, such as a user typedef)
 * and its pointer levels. */
typedef struct {
    int base, ptr;
} spelled_type;

static spelled_type spelled(const lower_lexed *lx, int first, int last)
{
    spelled_type t = {-1, 0};
    for (int i = first; i < last; i++) {
        const lower_token *k = &lx->toks[i];
        if (k->kind == LTK_IDENT) {
            int base = clmad__lower_type_word(lx->src + k->start, k->len);
            t.base = base >= 0 ? base : t.base;
        }
        t.ptr += is_punct(lx, i, "*") || is_punct(lx, i, "[");
    }
    return t;
}

typedef struct {
    int name, open, close; /* tokens: fn's name, its ( and ) */
    int decl;              /* the first token of the declaration */
} definition;

static int word_is_fn(const char *s, size_t n, const void *fn)
{
    return strlen(fn) == n && !strncmp(s, fn, n);
}

/* fn's definitions at file scope (their count; the first in *d), and in
 * names (of cap bytes) the functions the source defines. *mentioned: fn
 * appears as a token or in a macro. */
static int find_definitions(const lower_lexed *lx, const char *fn, definition *d, int *mentioned, char *names,
                            size_t cap)
{
    int count = 0, braces = 0, decl = 0;
    size_t used = 0;
    names[0] = '\0';
    *mentioned = 0;
    for (int i = 0; lx->toks[i].kind != LTK_EOF; i++) {
        const lower_token *t = &lx->toks[i];
        *mentioned |= is_word(lx, i, fn, strlen(fn));
        if (is_punct(lx, i, "{") || is_punct(lx, i, "}")) {
            braces += is_punct(lx, i, "{") ? 1 : -1;
            decl = braces == 0 ? i + 1 : decl;
        } else if (braces == 0 && is_punct(lx, i, ";")) {
            decl = i + 1;
        } else if (braces == 0 && t->kind == LTK_IDENT && is_punct(lx, i + 1, "(")) {
            const int close = after_parens(lx, i + 1) - 1;
            if (lx->toks[close].kind == LTK_EOF || !is_punct(lx, close + 1, "{"))
                continue;
            if (is_word(lx, i, fn, strlen(fn)) && count++ == 0)
                *d = (definition){i, i + 1, close, decl};
            int n = snprintf(names + used, cap - used, "%s%.*s", used ? ", " : "", (int)t->len, lx->src + t->start);
            if (n > 0 && used + (size_t)n < cap)
                used += (size_t)n;
            names[used] = '\0'; /* a name that did not fit is left out */
            i = close;
        }
    }
    for (int m = 0; m < lx->n_macros && !*mentioned; m++) {
        const lower_macro *mac = &lx->macros[m];
        *mentioned = word_is_fn(lx->src + mac->name, mac->name_len, fn) ||
                     find_word(lx->src, mac->body, mac->body_len, word_is_fn, fn) != (size_t)-1;
    }
    return count;
}

/* The text of tokens first..last-1, for a message. */
#define SPAN(lx, first, last)                                                                              \
    (int)((lx)->toks[(last)-1].start + (lx)->toks[(last)-1].len - (lx)->toks[first].start),                \
        (lx)->src + (lx)->toks[first].start

static int is_qualifier(const lower_lexed *lx, int i)
{
    static const char *const words[] = {"const", "volatile", "__private", "private"};
    for (size_t w = 0; w < sizeof words / sizeof *words; w++)
        if (is_word(lx, i, words[w], strlen(words[w])))
            return 1;
    return 0;
}

/* The type an input parameter (tokens first..last-1, p as spelled) binds:
 * LOWER_PARAM_T for T (or a type the check does not know: the compiler's),
 * an integer dtype for exactly int, long, uchar or unsigned char (besides
 * qualifiers), or -2 for anything else; its name into param. */
static int input_dtype(const lower_lexed *lx, int first, int last, spelled_type p, lower_param *param)
{
    int words[4], n_words = 0, name = -1;
    for (int i = first; i < last; i++) {
        const lower_token *t = &lx->toks[i];
        if (t->kind != LTK_IDENT || is_qualifier(lx, i))
            continue;
        if (clmad__lower_type_word(lx->src + t->start, t->len) < 0)
            name = i;
        else if (n_words < 4)
            words[n_words++] = i;
        else
            return -2;
    }
    if (name >= 0)
        snprintf(param->name, sizeof param->name, "%.*s", (int)lx->toks[name].len, lx->src + lx->toks[name].start);
    if (p.ptr)
        return -2;
    if (p.base < 0 || p.base == LT_T)
        return LOWER_PARAM_T;
    if (p.base != LT_INT)
        return -2;
    if (n_words == 1 && is_word(lx, words[0], "int", 3))
        return CLMAD_I32;
    if (n_words == 1 && is_word(lx, words[0], "long", 4))
        return CLMAD_I64;
    if ((n_words == 1 && is_word(lx, words[0], "uchar", 5)) ||
        (n_words == 2 && is_word(lx, words[0], "unsigned", 8) && is_word(lx, words[1], "char", 4)))
        return CLMAD_U8;
    return -2;
}

static clmad_status check_definition(checker *c, const char *fn, int n_in, int n_out, lower_param *params)
{
    const lower_lexed *lx = c->lx;
    definition d;
    int mentioned;
    char names[160];
    const int count = find_definitions(lx, fn, &d, &mentioned, names, sizeof names);
    if (!mentioned)
        return refuse(c, 0, 0, "no function %s in the source%s%s%s", fn, names[0] ? " (it defines " : "", names,
                      names[0] ? ")" : "");
    if (count != 1) /* made by a macro, or several (#if): the compiler's */
        return CLMAD_OK;
    const lower_token *at = &lx->toks[d.name];
    /* Parameters: the commas at depth 0 between ( and ). */
    int starts[LOWER_MAX_PARAMS], n_params = 0, depth = 0;
    const int empty = d.close == d.open + 1 || (d.close == d.open + 2 && is_word(lx, d.open + 1, "void", 4));
    for (int i = d.open + 1; !empty && i <= d.close; i++) {
        if (n_params == 0 || (depth == 0 && is_punct(lx, i - 1, ",")))
            if (n_params < (int)(sizeof starts / sizeof *starts))
                starts[n_params++] = i;
        depth += is_punct(lx, i, "(") + is_punct(lx, i, "[") - is_punct(lx, i, ")") - is_punct(lx, i, "]");
    }
    const spelled_type ret = spelled(lx, d.decl, d.name);
    const int returns_void = ret.base == LT_VOID && ret.ptr == 0;
    if (n_out == 1 && returns_void)
        return refuse(c, at->line, at->col,
                      "%s returns void, the form of a function of several outputs (void %s(T inputs..., "
                      "T *outputs...)), but n_outputs is 1: a function of one output returns it as T", fn, fn);
    const int want = n_out == 1 ? n_in : n_in + n_out;
    if (n_params != want) {
        if (n_out == 1)
            return refuse(c, at->line, at->col, "%s takes %d parameter%s, n_inputs is %d", fn, n_params,
                          n_params == 1 ? "" : "s", n_in);
        return refuse(c, at->line, at->col,
                      "%s takes %d parameter%s; with n_inputs %d and n_outputs %d it takes %d: the inputs as "
                      "T, then a T * per output", fn, n_params, n_params == 1 ? "" : "s", n_in, n_out, want);
    }
    if (n_out == 1 && ret.base >= 0 && (ret.base != LT_T || ret.ptr))
        return refuse(c, at->line, at->col, "%s returns %.*s: its one output must be T", fn,
                      SPAN(lx, d.decl, d.name));
    for (int j = 0; j < n_params; j++) {
        const int end = j + 1 < n_params ? starts[j + 1] - 1 : d.close;
        const spelled_type p = spelled(lx, starts[j], end);
        const lower_token *pt = &lx->toks[starts[j]];
        if (end <= starts[j]) /* an empty parameter: the compiler's */
            continue;
        if (j < n_in && (params[j].dtype = input_dtype(lx, starts[j], end, p, &params[j])) == -2)
            return refuse(c, pt->line, pt->col, "every input of %s must be T, or an integer parameter int, "
                          "long or uchar: parameter %d is \"%.*s\"", fn, j + 1, SPAN(lx, starts[j], end));
        if (j >= n_in && (p.ptr != 1 || (p.base >= 0 && p.base != LT_T)))
            return refuse(c, pt->line, pt->col, "every output of %s must be T * (n_outputs is %d): parameter %d "
                          "is \"%.*s\"", fn, n_out, j + 1, SPAN(lx, starts[j], end));
    }
    int any_T = 0;
    for (int j = 0; j < n_in; j++)
        any_T |= params[j].dtype == LOWER_PARAM_T;
    if (!any_T)
        return refuse(c, at->line, at->col, "%s has no T input: its T inputs set the dtype of its outputs", fn);
    return CLMAD_OK;
}

clmad_status clmad__lower_check_kernel(const char *src, const char *fn, int n_inputs, int n_outputs,
                                       lower_param *params, char *msg, size_t msg_cap)
{
    for (int j = 0; j < n_inputs; j++)
        params[j] = (lower_param){LOWER_PARAM_T, ""};
    lower_lexed lx;
    if (clmad__lower_lex(src, &lx)) {
        snprintf(msg, msg_cap, "out of host memory checking the source");
        return CLMAD_ERR_OUT_OF_MEMORY;
    }
    checker c = {&lx, msg, msg_cap};
    clmad_status st = check_reserved(&c);
    if (st == CLMAD_OK)
        st = check_definition(&c, fn, n_inputs, n_outputs, params);
    clmad__lower_lexed_free(&lx);
    return st;
}
