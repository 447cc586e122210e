/* SPDX-License-Identifier: Apache-2.0 */
/* Build logs: positions in the generated program mapped back to the user's
 * source for compilers that ignore #line, and what a log blames. */
#include "broadcast/codegen.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

char *clmad__map_build_log(const char *log, int first_line, int n_lines)
{
    clmad_strbuf sb = {0};
    const char *p = log;
    while (*p) {
        /* "<name>:LINE:" with name made of letters, digits, '_' and '.'. */
        const char *open = strchr(p, '<');
        if (!open)
            break;
        const char *q = open + 1;
        while (isalnum((unsigned char)*q) || *q == '_' || *q == '.')
            q++;
        long line = 0;
        const char *digits = q + 2, *end = digits;
        int match = q > open + 1 && q[0] == '>' && q[1] == ':' && isdigit((unsigned char)*digits);
        if (match) {
            line = strtol(digits, (char **)&end, 10);
            match = *end == ':' && line >= first_line && line < (long)first_line + n_lines;
        }
        /* Up to and excluding '<', then either the mapped position or '<'. */
        char *chunk = strndup(p, (size_t)(open - p));
        if (!chunk) {
            clmad__sb_free(&sb);
            return NULL;
        }
        clmad__sb_append(&sb, chunk);
        free(chunk);
        if (match) {
            clmad__sb_printf(&sb, "source:%ld", line - first_line + 1);
            p = end;
        } else {
            clmad__sb_append(&sb, "<");
            p = open + 1;
        }
    }
    clmad__sb_append(&sb, p);
    if (sb.failed) {
        clmad__sb_free(&sb);
        return NULL;
    }
    return sb.data;
}

int clmad__log_blames_T(const char *log)
{
    /* clang quotes types with their address space: 'T', '__private T',
     * 'const T' (POCL: "invalid operands to binary expression ('__private
     * T' and 'int')", "invalid argument type 'T' to unary expression"). */
    return strstr(log, "'T'") != NULL || strstr(log, " T'") != NULL;
}
