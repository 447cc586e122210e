/* SPDX-License-Identifier: Apache-2.0 */
/* Small string helpers that C11 lacks. */
#ifndef CLMAD_STRINGS_H
#define CLMAD_STRINGS_H

/* A malloc'd copy of s (free it with free), or NULL when out of memory:
 * strdup is POSIX, not C11. */
char *clmad__strdup(const char *s);

#endif
