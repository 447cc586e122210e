/* SPDX-License-Identifier: Apache-2.0 */
#include "base/embedded.h"

#include <string.h>

const char *clmad__embedded_source(const char *name)
{
    for (const clmad_embedded_file *f = clmad_embedded_files; f->name; f++)
        if (strcmp(f->name, name) == 0)
            return f->text;
    return NULL;
}
