/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the tests. */
#ifndef CLMAD_TEST_SUPPORT_H
#define CLMAD_TEST_SUPPORT_H

#include <clmad.h>
#include <criterion/criterion.h>

/* Asserts that a clmad call succeeded, printing the context's message if not. */
#define CHECK_OK(ctx, call)                                                              \
    do {                                                                                 \
        clmad_status st_ = (call);                                                       \
        cr_assert_eq(st_, CLMAD_OK, "%s -> %s: %s", #call, clmad_status_string(st_),     \
                     clmad_last_error(ctx));                                             \
    } while (0)

/* A context on the test device (POCL; see tests/CMakeLists.txt). */
clmad_context *test_context(void);

/* A context with the given options; fails the test on error. */
clmad_context *test_context_with(const clmad_options *opt);

/* A context whose disk cache is dir (the cache_dir option). */
clmad_context *test_context_with_cache(const char *dir);

/* The context's statistics; fails the test on error. */
clmad_stats test_stats(clmad_context *ctx);

/* A fresh, empty folder under CLMAD_TEST_TMP, unique to this process; the
 * returned string is static and valid until the next call. */
const char *test_fresh_dir(const char *tag);

/* 1 if haystack contains needle. */
int test_contains(const char *haystack, const char *needle);

#endif
