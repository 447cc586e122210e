/* SPDX-License-Identifier: Apache-2.0 */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(clmad_strbuf *sb, size_t extra)
{
    if (sb->failed)
        return 0;
    if (sb->len + extra + 1 <= sb->cap)
        return 1;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    char *grown = realloc(sb->data, cap);
    if (!grown) {
        sb->failed = 1;
        return 0;
    }
    sb->data = grown;
    sb->cap = cap;
    return 1;
}

void clmad__sb_append(clmad_strbuf *sb, const char *text)
{
    size_t n = strlen(text);
    if (!reserve(sb, n))
        return;
    memcpy(sb->data + sb->len, text, n + 1);
    sb->len += n;
}

void clmad__sb_printf(clmad_strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(sb, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

void clmad__sb_free(clmad_strbuf *sb)
{
    free(sb->data);
    memset(sb, 0, sizeof *sb);
}

void clmad__sb_shape(clmad_strbuf *sb, int ndim, const size_t *shape)
{
    clmad__sb_append(sb, "(");
    for (int i = 0; i < ndim; i++)
        clmad__sb_printf(sb, i ? ", %zu" : "%zu", shape[i]);
    clmad__sb_append(sb, ndim == 1 ? ",)" : ")");
}
