/* SPDX-License-Identifier: Apache-2.0 */
/* A small strict JSON parser for the headers of safetensors files: objects,
 * arrays, strings (with every escape, \uXXXX and surrogate pairs; UTF-8
 * checked) and non-negative integers. Anything else (numbers with a sign,
 * a fraction or an exponent, true, false, null) is refused: a safetensors
 * header holds none, and a parser that reads less has less to get wrong. */
#ifndef CLMAD_IO_JSON_H
#define CLMAD_IO_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum clmad_json_kind {
    CLMAD_JSON_OBJECT,
    CLMAD_JSON_ARRAY,
    CLMAD_JSON_STRING,
    CLMAD_JSON_INTEGER
} clmad_json_kind;

typedef struct clmad_json {
    clmad_json_kind kind;
    char *string;              /* STRING: NUL-terminated, may hold NULs (\u0000) */
    size_t length;             /* STRING: bytes before the final NUL */
    uint64_t integer;          /* INTEGER */
    size_t count;              /* OBJECT, ARRAY: members */
    char **keys;               /* OBJECT: count keys, in the text's order, distinct */
    size_t *key_lengths;       /* OBJECT: their lengths */
    struct clmad_json *items;  /* OBJECT, ARRAY: count values */
} clmad_json;

/* Nesting deeper than this is refused (bounds the recursion). */
#define CLMAD_JSON_MAX_DEPTH 32

/* Parses text[0..size) as one JSON value with optional whitespace around
 * it. On success *out is the caller's, freed with clmad__json_free, and 0 is
 * returned. On failure returns -1 with a message in error[0..error_size)
 * ("at byte 17: expected ':' after an object key"), or -2 when out of
 * memory; *out is untouched. Duplicate keys in an object are refused. */
int clmad__json_parse(const char *text, size_t size, clmad_json **out, char *error, size_t error_size);

/* Frees a parsed value; NULL is ignored. */
void clmad__json_free(clmad_json *v);

/* The member of an object named key (a NUL-terminated string), or NULL. */
const clmad_json *clmad__json_get(const clmad_json *object, const char *key);

#endif
