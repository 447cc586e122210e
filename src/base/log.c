/* SPDX-License-Identifier: Apache-2.0 */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int clmad__log_info(void)
{
    const char *level = getenv("CLMAD_LOG");
    return level && strcmp(level, "info") == 0;
}

void clmad__log(const char *fmt, ...)
{
    if (!clmad__log_info())
        return;
    /* One fprintf per line, so that lines of threads do not interleave. */
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "clmad: %s\n", line);
}

double clmad__seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
