/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the tests. */
#ifndef CLMAD_TEST_SUPPORT_H
#define CLMAD_TEST_SUPPORT_H

#include <clmad.h>
#include <criterion/criterion.h>

/* Several cases in one Criterion test (a test is a process, and each costs
 * seconds under valgrind): the case under way, "name: " (test_set_case), or
 * "" outside one; CHECK_OK and REFUSED start their messages with it, and so
 * should other messages of helpers the cases share. */
const char *test_case(void);

/* Names the case under way (printf-style; NULL for none). */
void test_set_case(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs one case of a grouped test under its name: the function c(), or the
 * expression `call` under `name`. */
#define RUN_CASE(c) RUN_CASE_AS(#c, c())
#define RUN_CASE_AS(name, call) (test_set_case("%s", name), call, test_set_case(NULL))

/* Asserts that a clmad call succeeded, printing the context's message if not.
 * CLMAD_ERR_UNSUPPORTED on a test device without fp64 skips the rest of the
 * test instead (test_skip_unsupported): what ran before (an f32 half) has
 * been checked, what needs f64 cannot run there. */
#define CHECK_OK(ctx, call)                                                              \
    do {                                                                                 \
        clmad_status st_ = (call);                                                       \
        test_skip_unsupported(st_, clmad_last_error(ctx));                               \
        cr_assert_eq(st_, CLMAD_OK, "%s%s -> %s: %s", test_case(), #call,                \
                     clmad_status_string(st_), clmad_last_error(ctx));                   \
    } while (0)

/* Asserts that a clmad call failed with `status` and that the message
 * clmad_last_error(ctx) holds `needle`. */
#define REFUSED(ctx, call, status, needle)                                                           \
    do {                                                                                             \
        clmad_status st_ = (call);                                                                   \
        cr_assert_eq(st_, status, "%s%s -> %s: %s", test_case(), #call, clmad_status_string(st_),    \
                     clmad_last_error(ctx));                                                         \
        cr_assert(test_contains(clmad_last_error(ctx), needle), "%s%s: message \"%s\" lacks \"%s\"", \
                  test_case(), #call, clmad_last_error(ctx), needle);                                \
    } while (0)

/* 1 if the test device has fp64: the device clmad_context_create picks
 * (CLMAD_DEVICE), unless CLMAD_TEST_NO_FP64=1, which makes every test
 * context pretend it has none (the disable_fp64 option), so that the skips
 * are exercised on devices with fp64 too. */
int test_device_fp64(void);

/* Skips the current test, saying why, when `st` is CLMAD_ERR_UNSUPPORTED
 * and the test device has no fp64; otherwise returns. */
void test_skip_unsupported(clmad_status st, const char *message);

/* 1 if the test device gives a function's value the same bits in a
 * broadcast's primal program as in its dual one (probed once, on sin over
 * 4096 points). Where it does not (Intel's CPU runtime turns the dual's
 * sin and cos into one sincos, 2 ulps from the primal's sin), results that
 * one path computes in another program than the other compare within
 * TEST_PROGRAM_ULPS: the OpenCL spec leaves that rounding open. */
int test_programs_round_alike(void);
#define TEST_PROGRAM_ULPS 16

/* 1 if x and y (f32 or f64 bits, `size` bytes each) are equal: bitwise,
 * signs of zero included, a NaN equal to any NaN; within ulps units in the
 * last place (relative to max(1, |x|, |y|)) when ulps > 0. */
int test_elements_equal(const void *x, const void *y, size_t size, double ulps);

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

/* Writes the device's tuning file in the cache folder cache with the
 * values in force (clmad_tuning_save), then appends line to it. */
void test_tuning_file_with(const char *cache, const char *line);

/* Appends line to the device's tuning file in cache. */
void test_append_to_tuning_file(const char *cache, const char *line);

/* 1 if the device's tuning file in cache holds line as a whole line. */
int test_tuning_file_has(const char *cache, const char *line);

/* The tuning origin of a new context on the cache folder cache (static,
 * valid until the next call). */
const char *test_tuning_origin(const char *cache);

/* 1 if haystack contains needle. */
int test_contains(const char *haystack, const char *needle);

/* 1 under CLMAD_TEST_SMALL=1: the checkers' runs (Oclgrind, memcheck) at
 * small sizes. */
int test_small(void);

/* A new f32 or f64 tensor whose element e is value(e, arg), asked in order
 * e = 0, 1, ... (a value function may keep a state in arg). */
clmad_tensor *test_tensor_of(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                             double (*value)(size_t e, void *arg), void *arg);

/* Reads the n doubles of the f64 tensor t into h (asserting its size). */
void test_read_f64(clmad_context *ctx, clmad_tensor *t, double *h, size_t n);

/* Runs k (two T inputs, one output) on the f64 vectors xs and ys of n
 * elements: its values into v, and the gradients of their sum in xs and
 * ys into dx and dy. */
void test_run2(clmad_context *ctx, clmad_kernel *k, const double *xs, const double *ys, size_t n, double *v,
               double *dx, double *dy);

/* Bytes read back from tensors in order, and the context's counters: what
 * two runs of one program (fusion on and off) compare. */
typedef struct test_results {
    unsigned char *bytes;
    size_t len, cap;
    clmad_stats stats;
} test_results;

/* Appends t's bytes to r; test_keep_grad those of x's gradient, which
 * must exist. */
void test_keep(clmad_context *ctx, test_results *r, clmad_tensor *t);
void test_keep_grad(clmad_context *ctx, test_results *r, clmad_tensor *x);

#endif
