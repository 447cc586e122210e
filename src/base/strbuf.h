/* SPDX-License-Identifier: Apache-2.0 */
/* A growable string for generated source and messages. */
#ifndef CLMAD_STRBUF_H
#define CLMAD_STRBUF_H

#include <stddef.h>

#include "base/attributes.h"

typedef struct clmad_strbuf {
    char *data;   /* NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;
    int failed;   /* an allocation failed: the contents are incomplete */
} clmad_strbuf;

void clmad__sb_append(clmad_strbuf *sb, const char *text);
void clmad__sb_printf(clmad_strbuf *sb, const char *fmt, ...) CLMAD_PRINTF(2, 3);
void clmad__sb_free(clmad_strbuf *sb);

/* Appends "(3, 4)" for a shape; "()" for rank 0. */
void clmad__sb_shape(clmad_strbuf *sb, int ndim, const size_t *shape);

#endif
