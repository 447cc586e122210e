/* SPDX-License-Identifier: Apache-2.0 */
/* The runner of the Criterion stand-in (criterion/criterion.h beside it):
 * runs every registered test in this process, in registration order. */
#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAX_TESTS = 256 };
static const clmad_nocr_test *tests[MAX_TESTS];
static int n_tests;
static const clmad_nocr_test *current;

void clmad_nocr_register(const clmad_nocr_test *t)
{
    if (n_tests == MAX_TESTS) {
        fprintf(stderr, "nocriterion: more than %d tests\n", MAX_TESTS);
        exit(2);
    }
    tests[n_tests++] = t;
}

void clmad_nocr_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    fprintf(stderr, "[FAIL] %s::%s: %s:%d: assertion failed: %s\n", current ? current->suite : "?",
            current ? current->name : "?", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv; /* Criterion's options (--jobs, --short-filename) are ignored */
    for (int i = 0; i < n_tests; i++) {
        current = tests[i];
        fprintf(stderr, "[RUN ] %s::%s\n", current->suite, current->name);
        current->fn();
        fprintf(stderr, "[PASS] %s::%s\n", current->suite, current->name);
    }
    fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: 0\n", n_tests, n_tests);
    return 0;
}
