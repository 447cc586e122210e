/* SPDX-License-Identifier: Apache-2.0 */
/* The strict JSON parser of safetensors headers (json.h). */
#include "io/json_parser.h"

#include <stdlib.h>
#include <string.h>

typedef clmad_json_parser parser;

static void skip_space(parser *p)
{
    while (p->pos < p->size && (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' || p->text[p->pos] == '\n' ||
                                p->text[p->pos] == '\r'))
        p->pos++;
}

static int peek(const parser *p)
{
    return p->pos < p->size ? p->text[p->pos] : -1;
}

static int parse_integer(parser *p, uint64_t *out)
{
    uint64_t v = 0;
    size_t start = p->pos;
    while (p->pos < p->size && p->text[p->pos] >= '0' && p->text[p->pos] <= '9') {
        unsigned d = p->text[p->pos] - '0';
        if (v > (UINT64_MAX - d) / 10)
            return clmad__json_fail(p, "integer too large");
        v = v * 10 + d;
        p->pos++;
    }
    if (p->pos - start > 1 && p->text[start] == '0')
        return clmad__json_fail(p, "integer with a leading zero");
    int c = peek(p);
    if (c == '.' || c == 'e' || c == 'E')
        return clmad__json_fail(p, "only integers are allowed here");
    *out = v;
    return 0;
}

static int parse_value(parser *p, clmad_json *v);

/* The members of an object or array whose opening bracket is at p->pos. */
static int parse_members(parser *p, clmad_json *v, int object)
{
    const int close = object ? '}' : ']';
    size_t cap = 0;
    if (++p->depth > CLMAD_JSON_MAX_DEPTH)
        return clmad__json_fail(p, "nesting deeper than %d levels", CLMAD_JSON_MAX_DEPTH);
    p->pos++;
    skip_space(p);
    if (peek(p) == close) {
        p->pos++;
        p->depth--;
        return 0;
    }
    for (;;) {
        if (v->count == cap) {
            cap = cap ? 2 * cap : 4;
            clmad_json *items = realloc(v->items, cap * sizeof *items);
            if (items)
                v->items = items;
            char **keys = object && items ? realloc(v->keys, cap * sizeof *keys) : NULL;
            if (keys)
                v->keys = keys;
            size_t *lengths = keys ? realloc(v->key_lengths, cap * sizeof *lengths) : NULL;
            if (lengths)
                v->key_lengths = lengths;
            if (!items || (object && !lengths))
                return clmad__json_out_of_memory(p);
        }
        skip_space(p);
        if (object) {
            if (peek(p) != '"')
                return clmad__json_fail(p, "expected a string key");
            char *key;
            size_t key_length;
            if (clmad__json_string(p, &key, &key_length) != 0)
                return -1;
            for (size_t i = 0; i < v->count; i++)
                if (v->key_lengths[i] == key_length && memcmp(v->keys[i], key, key_length) == 0) {
                    clmad__json_fail(p, "duplicate key \"%s\"", key);
                    free(key);
                    return -1;
                }
            v->keys[v->count] = key;
            v->key_lengths[v->count] = key_length;
            skip_space(p);
            if (peek(p) != ':') {
                v->items[v->count++] = (clmad_json){.kind = CLMAD_JSON_INTEGER};
                return clmad__json_fail(p, "expected ':' after an object key");
            }
            p->pos++;
        }
        clmad_json *item = &v->items[v->count++];
        memset(item, 0, sizeof *item);
        item->kind = CLMAD_JSON_INTEGER;
        if (parse_value(p, item) != 0)
            return -1;
        skip_space(p);
        int c = peek(p);
        if (c == close) {
            p->pos++;
            p->depth--;
            return 0;
        }
        if (c != ',')
            return clmad__json_fail(p, "expected ',' or '%c'", close);
        p->pos++;
    }
}

static int parse_value(parser *p, clmad_json *v)
{
    skip_space(p);
    int c = peek(p);
    if (c == '{' || c == '[') {
        v->kind = c == '{' ? CLMAD_JSON_OBJECT : CLMAD_JSON_ARRAY;
        return parse_members(p, v, c == '{');
    }
    if (c == '"') {
        v->kind = CLMAD_JSON_STRING;
        return clmad__json_string(p, &v->string, &v->length);
    }
    if (c >= '0' && c <= '9') {
        v->kind = CLMAD_JSON_INTEGER;
        return parse_integer(p, &v->integer);
    }
    if (c < 0)
        return clmad__json_fail(p, "unexpected end of the text");
    return clmad__json_fail(p, c == '-' ? "negative numbers are not allowed here" : "unexpected character '%c'", c);
}

static void free_members(clmad_json *v)
{
    for (size_t i = 0; i < v->count; i++) {
        if (v->keys)
            free(v->keys[i]);
        free_members(&v->items[i]);
    }
    free(v->keys);
    free(v->key_lengths);
    free(v->items);
    free(v->string);
}

void clmad__json_free(clmad_json *v)
{
    if (v) {
        free_members(v);
        free(v);
    }
}

int clmad__json_parse(const char *text, size_t size, clmad_json **out, char *error, size_t error_size)
{
    parser p = {.text = (const unsigned char *)text, .size = size, .error = error, .error_size = error_size};
    clmad_json *v = calloc(1, sizeof *v);
    if (!v) {
        clmad__json_out_of_memory(&p);
        return p.status;
    }
    v->kind = CLMAD_JSON_INTEGER;
    if (parse_value(&p, v) == 0) {
        skip_space(&p);
        if (p.pos != p.size)
            clmad__json_fail(&p, "text after the end of the value");
    }
    if (p.status != 0) {
        clmad__json_free(v);
        return p.status;
    }
    *out = v;
    return 0;
}

const clmad_json *clmad__json_get(const clmad_json *object, const char *key)
{
    if (!object || object->kind != CLMAD_JSON_OBJECT)
        return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < object->count; i++)
        if (object->key_lengths[i] == n && memcmp(object->keys[i], key, n) == 0)
            return &object->items[i];
    return NULL;
}
