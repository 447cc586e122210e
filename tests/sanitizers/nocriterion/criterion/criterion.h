/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in for <criterion/criterion.h> used by `make test-tsan` only.
 *
 * Criterion cannot run under ThreadSanitizer: its runner (boxfort) maps its
 * shared arenas at addresses that TSan reserves for its shadow memory, and
 * every test program aborts before its first test ("Could not initialize
 * inheritable arena: Resource temporarily unavailable", or a TSan SEGV in
 * libcriterion; Snaipe/Criterion issue #274, open). In the TSan build the
 * test programs that matter for threads (tests/test_threads.c) are compiled
 * against this header instead: the same test bodies, run one after the
 * other in the program's own process (no fork, no worker), with the subset
 * of Criterion's assertions they use. A failed assertion prints its message
 * and exits with status 1; the program exits 0 when every test passed.
 * See tests/CMakeLists.txt (CLMAD_SANITIZE=thread). */
#ifndef CLMAD_NOCRITERION_H
#define CLMAD_NOCRITERION_H

#include <stdio.h>
#include <stdlib.h>

typedef struct clmad_nocr_test {
    const char *suite, *name;
    void (*fn)(void);
} clmad_nocr_test;

void clmad_nocr_register(const clmad_nocr_test *t);
void clmad_nocr_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((noreturn));

/* Options after the name (.timeout = ...) are accepted and ignored. */
#define Test(suite, name, ...)                                                                     \
    static void suite##_##name##_impl(void);                                                       \
    __attribute__((constructor)) static void suite##_##name##_register(void)                       \
    {                                                                                              \
        static const clmad_nocr_test t_ = {#suite, #name, suite##_##name##_impl};                 \
        clmad_nocr_register(&t_);                                                                  \
    }                                                                                              \
    static void suite##_##name##_impl(void)

#define CLMAD_NOCR_MSG(cond, ...) clmad_nocr_fail(__FILE__, __LINE__, cond, "" __VA_ARGS__)
#define cr_assert(cond, ...) ((cond) ? (void)0 : CLMAD_NOCR_MSG(#cond, __VA_ARGS__))
#define cr_assert_eq(a, b, ...) ((a) == (b) ? (void)0 : CLMAD_NOCR_MSG(#a " == " #b, __VA_ARGS__))
#define cr_assert_not_null(p, ...) ((p) != NULL ? (void)0 : CLMAD_NOCR_MSG(#p " != NULL", __VA_ARGS__))
#define cr_assert_null(p, ...) ((p) == NULL ? (void)0 : CLMAD_NOCR_MSG(#p " == NULL", __VA_ARGS__))
#define cr_assert_fail(...) CLMAD_NOCR_MSG("fail", __VA_ARGS__)
/* No skipped tests here: the TSan run needs a device with what they need. */
#define cr_skip_test(...) CLMAD_NOCR_MSG("skip", __VA_ARGS__)
#define cr_log_info(...) (fprintf(stderr, "[----] " __VA_ARGS__), fputc('\n', stderr))

#endif
