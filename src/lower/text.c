/* SPDX-License-Identifier: Apache-2.0 */
/* The texts of rewritten expressions, as ropes: a node lists its parts,
 * each a span of bytes (of the source, of a rule's format, of a name) or a
 * smaller text, which is shared, never copied. Building a node costs the
 * number of its parts, whatever the size of what it holds, so an
 * expression of n terms lowers in O(n) time and memory; a full expression's
 * bytes are written once, when it is committed. (Flat strings, copied into
 * every enclosing node, made a 20,000-term expression quadratic: 39 s and
 * 4.2 GB, issue 24.) */
#include "lower/lower.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *bytes; /* when sub is NULL */
    size_t len;
    const lower_text *sub;
} lower_part;

struct lower_text {
    size_t len; /* of the whole text */
    int n;
    lower_part parts[];
};

/* A node of n parts; the caller fills them and the length is summed when
 * it is closed. */
static lower_text *open_node(lower_parser *p, int n)
{
    lower_text *t = clmad__lower_alloc(p, sizeof *t + (size_t)n * sizeof(lower_part));
    t->len = 0;
    t->n = 0;
    return t;
}

static void add_bytes(lower_text *t, const char *bytes, size_t len)
{
    if (len)
        t->parts[t->n++] = (lower_part){bytes, len, NULL};
}

static void add_text(lower_text *t, const lower_text *sub)
{
    if (sub->len)
        t->parts[t->n++] = (lower_part){NULL, sub->len, sub};
}

/* Each part is at most LOWER_MAX_TEXT bytes and a node has few parts, so
 * the sum cannot overflow before it is checked. */
static lower_text *close_node(lower_parser *p, lower_text *t, int tok)
{
    for (int k = 0; k < t->n; k++)
        t->len += t->parts[k].len;
    if (t->len > LOWER_MAX_TEXT)
        clmad__lower_fail(p, LOWER_LIMIT, tok,
                          "the lowered expression grows past %d MiB, the front end's limit; split it with "
                          "variables", LOWER_MAX_TEXT >> 20);
    return t;
}

const lower_text *clmad__lower_piece(lower_parser *p, const lower_value *v)
{
    if (v->text)
        return v->text;
    size_t start = clmad__lower_tok(p, v->first)->start;
    const lower_token *last = clmad__lower_tok(p, v->last);
    lower_text *t = open_node(p, 1);
    add_bytes(t, p->lx.src + start, last->start + last->len - start);
    return close_node(p, t, v->first);
}

const lower_text *clmad__lower_splice(lower_parser *p, int first, int last, const lower_value *kids, int n)
{
    int any = 0;
    for (int k = 0; k < n; k++)
        any |= kids[k].text != NULL;
    if (!any)
        return NULL;
    lower_text *t = open_node(p, 2 * n + 1);
    const char *src = p->lx.src;
    size_t at = clmad__lower_tok(p, first)->start;
    for (int k = 0; k < n; k++) {
        size_t from = clmad__lower_tok(p, kids[k].first)->start;
        add_bytes(t, src + at, from - at);
        add_text(t, clmad__lower_piece(p, &kids[k]));
        const lower_token *end = clmad__lower_tok(p, kids[k].last);
        at = end->start + end->len;
    }
    const lower_token *end = clmad__lower_tok(p, last);
    add_bytes(t, src + at, end->start + end->len - at);
    return close_node(p, t, first);
}

lower_text *clmad__lower_vtextf(lower_parser *p, int tok, const char *fmt, va_list ap)
{
    int n = 1;
    for (const char *f = fmt; *f; f++)
        n += *f == '%';
    lower_text *t = open_node(p, 2 * n);
    const char *run = fmt;
    for (const char *f = fmt; *f; f++) {
        if (*f != '%')
            continue;
        add_bytes(t, run, (size_t)(f - run));
        f++;
        if (*f == 't') {
            add_text(t, va_arg(ap, const lower_text *));
        } else { /* 's' */
            const char *s = va_arg(ap, const char *);
            add_bytes(t, s, strlen(s));
        }
        run = f + 1;
    }
    add_bytes(t, run, strlen(run));
    return close_node(p, t, tok);
}

lower_text *clmad__lower_textf(lower_parser *p, int tok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lower_text *t = clmad__lower_vtextf(p, tok, fmt, ap);
    va_end(ap);
    return t;
}

/* The bytes, written by a walk with a stack of its own: a rope is as deep
 * as its expression is long (a + b + c + ... nests to the left), deeper
 * than the C stack should go. */
char *clmad__lower_render(lower_parser *p, const lower_text *t)
{
    char *out = clmad__lower_alloc(p, t->len + 1), *o = out;
    typedef struct {
        const lower_text *t;
        int next;
    } frame;
    frame *stack = NULL;
    int depth = 0, cap = 0;
    stack = clmad__lower_grow_array(stack, &cap, 1, sizeof *stack, 64);
    if (!stack)
        clmad__lower_fail(p, LOWER_NO_MEMORY, p->pos, "out of host memory");
    stack[depth++] = (frame){t, 0};
    while (depth) {
        frame *f = &stack[depth - 1];
        if (f->next == f->t->n) {
            depth--;
            continue;
        }
        const lower_part *part = &f->t->parts[f->next++];
        if (!part->sub) {
            memcpy(o, part->bytes, part->len);
            o += part->len;
            continue;
        }
        frame *grown = clmad__lower_grow_array(stack, &cap, depth + 1, sizeof *stack, 64);
        if (!grown) {
            free(stack);
            clmad__lower_fail(p, LOWER_NO_MEMORY, p->pos, "out of host memory");
        }
        stack = grown;
        stack[depth++] = (frame){part->sub, 0};
    }
    free(stack);
    *o = 0;
    return out;
}

/* A full expression: its rewrite, if any, becomes a replacement. */
void clmad__lower_commit(lower_parser *p, const lower_value *v)
{
    if (!v->text)
        return;
    p->repl = clmad__lower_grow(p, p->repl, &p->cap_repl, p->n_repl + 1, sizeof *p->repl);
    lower_replacement *r = &p->repl[p->n_repl++];
    r->start = clmad__lower_tok(p, v->first)->start;
    const lower_token *last = clmad__lower_tok(p, v->last);
    r->end = last->start + last->len;
    r->text = clmad__lower_render(p, v->text);
}
