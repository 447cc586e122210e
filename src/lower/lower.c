/* SPDX-License-Identifier: Apache-2.0 */
/* The front end's driver: a parse of the whole source, the replacements
 * applied to it, its failures described, and the public call. */
#include "lower/lower.h"
#include "runtime/error.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The source with the replacements, each followed by the newlines it took
 * away, so that every line keeps its number. */
static char *apply(const lower_parser *p)
{
    const char *src = p->lx.src;
    size_t len = strlen(src), size = len + 1;
    for (int k = 0; k < p->n_repl; k++)
        size += strlen(p->repl[k].text) + (p->repl[k].end - p->repl[k].start);
    char *out = malloc(size), *o = out;
    if (!out)
        return NULL;
    size_t at = 0;
    for (int k = 0; k < p->n_repl; k++) {
        const lower_replacement *r = &p->repl[k];
        memcpy(o, src + at, r->start - at);
        o += r->start - at;
        size_t n = strlen(r->text);
        memcpy(o, r->text, n);
        o += n;
        long lost = 0;
        for (size_t i = r->start; i < r->end; i++)
            lost += src[i] == '\n';
        for (size_t i = 0; i < n; i++)
            lost -= r->text[i] == '\n';
        while (lost-- > 0)
            *o++ = '\n';
        at = r->end;
    }
    memcpy(o, src + at, len - at + 1);
    return out;
}

/* "source:L:C: error: message", the line, and a caret under the column. */
static void describe(const lower_parser *p, const char *kind, char *msg, size_t cap)
{
    const char *line = p->lx.src;
    for (int l = 1; l < p->line && line; l++) {
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    int width = 0;
    if (line)
        while (line[width] && line[width] != '\n')
            width++;
    int col = p->col - 1 < width ? p->col - 1 : width;
    snprintf(msg, cap, "source:%d:%d: %s: %s\n%.*s\n%*s^", p->line, p->col, kind, p->message, width,
             line ? line : "", col, "");
}


/* The parse (and its longjmp) of a source within the limits. */
static clmad_status parse(const char *src, char **out, char *msg, size_t msg_cap, char **note)
{
    lower_parser *p = calloc(1, sizeof *p);
    if (!p || clmad__lower_lex(src, &p->lx)) {
        free(p);
        snprintf(msg, msg_cap, "out of host memory lowering a kernel");
        return CLMAD_ERR_OUT_OF_MEMORY;
    }
    clmad_status st = CLMAD_OK;
    if (setjmp(p->fail) == 0) {
        clmad__lower_source(p);
        *out = apply(p);
        if (!*out) {
            snprintf(msg, msg_cap, "out of host memory lowering a kernel");
            st = CLMAD_ERR_OUT_OF_MEMORY;
        }
    } else if (p->failure == LOWER_TYPE_ERROR || p->failure == LOWER_LIMIT) {
        describe(p, "error", msg, msg_cap);
        st = CLMAD_ERR_BUILD;
    } else if (p->failure == LOWER_PARSE_FAILED) {
        /* Not this front end's subset of OpenCL C: the compiler decides. */
        *out = strdup(src);
        describe(p, "note", msg, msg_cap);
        *note = strdup(msg);
        if (!*out) {
            snprintf(msg, msg_cap, "out of host memory lowering a kernel");
            st = CLMAD_ERR_OUT_OF_MEMORY;
        }
    } else {
        snprintf(msg, msg_cap, "out of host memory lowering a kernel");
        st = CLMAD_ERR_OUT_OF_MEMORY;
    }
    clmad__lower_parser_free(p);
    free(p);
    return st;
}

clmad_status clmad__lower(const char *src, char **out, char *msg, size_t msg_cap, char **note)
{
    *out = NULL;
    *note = NULL;
    msg[0] = 0;
    /* A UTF-8 byte order mark, which editors write and hide: skipped, and
     * left out of the lowered source (the library's prelude goes before
     * the user's source, where a compiler would not skip it); lines and
     * columns count from after it, as the editor shows them. */
    if (!strncmp(src, "\xEF\xBB\xBF", 3))
        src += 3;
    size_t size = strlen(src);
    if (size > LOWER_MAX_SOURCE) {
        snprintf(msg, msg_cap, "source: error: the source is %zu bytes, more than the %d MiB the plain-syntax "
                 "front end reads", size, LOWER_MAX_SOURCE >> 20);
        return CLMAD_ERR_BUILD;
    }
    return parse(src, out, msg, msg_cap, note);
}

clmad_status clmad_lower_source(const char *source, char **lowered)
{
    if (!source || !lowered)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_lower_source: source and lowered must not be NULL");
    *lowered = NULL;
    char msg[1024], *note = NULL, *out = NULL;
    clmad_status st = clmad__lower(source, &out, msg, sizeof msg, &note);
    if (st == CLMAD_OK && note) {
        free(out);
        st = clmad__fail(NULL, CLMAD_ERR_BUILD,
                         "clmad_lower_source: the plain-syntax front end does not parse this source "
                         "(clmad_kernel_create compiles such a source as written):\n%s", note);
        free(note);
        return st;
    }
    if (st != CLMAD_OK)
        return clmad__fail(NULL, st, "clmad_lower_source: %s", msg);
    *lowered = out;
    return CLMAD_OK;
}

void clmad_string_free(char *s) { free(s); }
