/* SPDX-License-Identifier: Apache-2.0 */
/* The state of one parse, shared by json.c and json_string.c. */
#ifndef CLMAD_IO_JSON_PARSER_H
#define CLMAD_IO_JSON_PARSER_H

#include "base/attributes.h"
#include "io/json.h"

typedef struct clmad_json_parser {
    const unsigned char *text;
    size_t size, pos;
    int depth;
    int status; /* 0, -1 (bad text) or -2 (out of memory) */
    char *error;
    size_t error_size;
} clmad_json_parser;

/* Records the first failure (its byte position and message); returns -1. */
int clmad__json_fail(clmad_json_parser *p, const char *fmt, ...) CLMAD_PRINTF(2, 3);
int clmad__json_out_of_memory(clmad_json_parser *p);

/* The string whose opening quote is at p->pos: its decoded bytes in a new
 * NUL-terminated buffer (*out, *length); p->pos moves past the closing quote. */
int clmad__json_string(clmad_json_parser *p, char **out, size_t *length);

#endif
