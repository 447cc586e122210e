/* SPDX-License-Identifier: Apache-2.0 */
/* JSON strings (escapes, surrogate pairs, UTF-8 checking) and the parser's
 * failure messages (json.h). */
#include "io/json_parser.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef clmad_json_parser parser;

int clmad__json_fail(parser *p, const char *fmt, ...)
{
    if (p->status == 0) {
        p->status = -1;
        if (p->error_size) {
            int n = snprintf(p->error, p->error_size, "at byte %zu: ", p->pos);
            if (n >= 0 && (size_t)n < p->error_size) {
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(p->error + n, p->error_size - (size_t)n, fmt, ap);
                va_end(ap);
            }
        }
    }
    return -1;
}

int clmad__json_out_of_memory(parser *p)
{
    if (p->status == 0) {
        p->status = -2;
        if (p->error_size)
            snprintf(p->error, p->error_size, "out of host memory");
    }
    return -1;
}

/* Appends code point c as UTF-8 to buf (room for 4 bytes assured). */
static size_t put_utf8(unsigned char *buf, unsigned long c)
{
    if (c < 0x80) {
        buf[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        buf[0] = (unsigned char)(0xC0 | (c >> 6));
        buf[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        buf[0] = (unsigned char)(0xE0 | (c >> 12));
        buf[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        buf[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    buf[0] = (unsigned char)(0xF0 | (c >> 18));
    buf[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    buf[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    buf[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

/* Length of the well-formed UTF-8 sequence at s[0..n) (no overlongs, no
 * surrogates, at most U+10FFFF), or 0. */
static size_t utf8_length(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned long cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0)
        len = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
        len = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
        len = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

static int hex4(parser *p, unsigned long *value)
{
    if (p->size - p->pos < 4)
        return clmad__json_fail(p, "\\u needs four hex digits");
    unsigned long v = 0;
    for (int i = 0; i < 4; i++) {
        int c = p->text[p->pos + (size_t)i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return clmad__json_fail(p, "\\u needs four hex digits");
        v = v * 16 + (unsigned long)d;
    }
    p->pos += 4;
    *value = v;
    return 0;
}

static int parse_escape(parser *p, unsigned char *buf, size_t *len)
{
    int c = p->pos < p->size ? p->text[p->pos] : -1;
    static const char plain[] = "\"\\/bfnrt", meaning[] = "\"\\/\b\f\n\r\t";
    const char *hit = c > 0 ? strchr(plain, c) : NULL;
    if (hit) {
        p->pos++;
        buf[(*len)++] = (unsigned char)meaning[hit - plain];
        return 0;
    }
    if (c != 'u')
        return clmad__json_fail(p, "unknown escape");
    p->pos++;
    unsigned long cp;
    if (hex4(p, &cp) != 0)
        return -1;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return clmad__json_fail(p, "a low surrogate \\u%04lX without a high one", cp);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        unsigned long low;
        if (p->size - p->pos < 2 || p->text[p->pos] != '\\' || p->text[p->pos + 1] != 'u')
            return clmad__json_fail(p, "a high surrogate \\u%04lX without a low one", cp);
        p->pos += 2;
        if (hex4(p, &low) != 0)
            return -1;
        if (low < 0xDC00 || low > 0xDFFF)
            return clmad__json_fail(p, "a high surrogate \\u%04lX without a low one", cp);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    *len += put_utf8(buf + *len, cp);
    return 0;
}

/* A string at p->pos (its opening quote): its bytes in a new buffer. Every
 * escape decodes to no more bytes than it takes, so the raw length bounds it. */
int clmad__json_string(parser *p, char **out, size_t *out_length)
{
    p->pos++; /* the quote */
    size_t end = p->pos;
    while (end < p->size && p->text[end] != '"')
        end += p->text[end] == '\\' ? 2 : 1;
    if (end >= p->size)
        return clmad__json_fail(p, "unterminated string");
    unsigned char *buf = malloc(end - p->pos + 1);
    if (!buf)
        return clmad__json_out_of_memory(p);
    size_t len = 0;
    while (p->pos < end) {
        unsigned c = p->text[p->pos];
        if (c == '\\') {
            p->pos++;
            if (parse_escape(p, buf, &len) != 0) {
                free(buf);
                return -1;
            }
        } else if (c < 0x20) {
            free(buf);
            return clmad__json_fail(p, "control character 0x%02X in a string (must be escaped)", c);
        } else {
            size_t n = utf8_length(p->text + p->pos, end - p->pos);
            if (n == 0) {
                free(buf);
                return clmad__json_fail(p, "invalid UTF-8 in a string");
            }
            memcpy(buf + len, p->text + p->pos, n);
            len += n;
            p->pos += n;
        }
    }
    p->pos = end + 1;
    buf[len] = 0;
    *out = (char *)buf;
    *out_length = len;
    return 0;
}

