/* SPDX-License-Identifier: Apache-2.0 */
/* Small string helpers that C11 lacks. */
#include "base/strings.h"

#include <stdlib.h>
#include <string.h>

char *clmad__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}
