/* SPDX-License-Identifier: Apache-2.0 */
/* The version of the library that runs (clmad.h: clmad_version). */
#include "clmad.h"

unsigned clmad_version(void)
{
    return CLMAD_VERSION_HEX;
}

const char *clmad_version_string(void)
{
    return CLMAD_VERSION_STRING;
}
