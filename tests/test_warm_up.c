/* SPDX-License-Identifier: Apache-2.0 */
/* Compile notices and the warm-up (issue 36, item 6): the first compile
 * from source of a context says so once, to the function set, and nothing
 * when its programs come from a cache; CLMAD_COMPILE_NOTICE silences or
 * prints them; clmad_context_warm_up builds the internal programs into the
 * disk cache, so that a later context's first run compiles none of them. */
#include "support.h"

#include <criterion/redirect.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct heard {
    int count;
    char text[8192];
} heard;

static void listen(void *user, const char *text)
{
    heard *h = user;
    h->count++;
    size_t used = strlen(h->text);
    snprintf(h->text + used, sizeof h->text - used, "%s\n", text);
}

static void redirect(void)
{
    cr_redirect_stderr();
    unsetenv("CLMAD_COMPILE_NOTICE");
}

static const char *stderr_text(void)
{
    static char text[16384];
    fflush(stderr);
    size_t n = fread(text, 1, sizeof text - 1, cr_get_redirected_stderr());
    text[n] = '\0';
    return text;
}

/* Work that uses internal kernels of two files (fill: ops.cl; sum along an
 * axis: axis.cl) and a broadcast builtin: several compiles on a fresh cache. */
static void some_work(clmad_context *ctx)
{
    size_t shape[2] = {3, 5};
    clmad_tensor *a = NULL, *b = NULL, *s = NULL;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 2, shape, 2.0, &a));
    CHECK_OK(ctx, clmad_add(ctx, a, a, &b));
    const int axis = 1;
    CHECK_OK(ctx, clmad_sum(ctx, b, 1, &axis, 0, &s));
    float got[3];
    CHECK_OK(ctx, clmad_tensor_read(s, got, sizeof got));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(got[i], 20.0f, "row %d: %g", i, got[i]);
    clmad_tensor_release(s);
    clmad_tensor_release(b);
    clmad_tensor_release(a);
}

Test(notice, said_once_per_context_and_only_when_compiling, .init = redirect)
{
    const char *dir = test_fresh_dir("notice");
    heard h = {0};
    clmad_context *ctx = test_context_with_cache(dir);
    CHECK_OK(ctx, clmad_context_set_notice(ctx, listen, &h));
    some_work(ctx);
    cr_assert_gt(test_stats(ctx).programs_compiled, 1, "the fresh cache should compile several programs");
    cr_assert_eq(h.count, 1, "one notice for %llu compiles, heard %d:\n%s",
                 (unsigned long long)test_stats(ctx).programs_compiled, h.count, h.text);
    cr_assert(test_contains(h.text, "compiling OpenCL programs for \""), "%s", h.text);
    cr_assert(test_contains(h.text, "first run only"), "%s", h.text);
    clmad_context_release(ctx);

    /* The same work on the now filled cache: nothing compiles, nothing is said. */
    heard again = {0};
    ctx = test_context_with_cache(dir);
    CHECK_OK(ctx, clmad_context_set_notice(ctx, listen, &again));
    some_work(ctx);
    cr_assert_eq(test_stats(ctx).programs_compiled, 0);
    cr_assert_gt(test_stats(ctx).programs_from_disk, 0);
    cr_assert_eq(again.count, 0, "%s", again.text);
    clmad_context_release(ctx);
    /* The default of a C program, no function and no CLMAD_COMPILE_NOTICE: silent. */
    cr_assert(!test_contains(stderr_text(), "clmad: "), "%s", stderr_text());
}

Test(notice, environment_silences_or_prints, .init = redirect)
{
    heard h = {0};
    setenv("CLMAD_COMPILE_NOTICE", "0", 1);
    clmad_context *ctx = test_context_with_cache(test_fresh_dir("notice-off"));
    CHECK_OK(ctx, clmad_context_set_notice(ctx, listen, &h));
    some_work(ctx);
    cr_assert_gt(test_stats(ctx).programs_compiled, 0);
    cr_assert_eq(h.count, 0, "CLMAD_COMPILE_NOTICE=0 should silence the function: %s", h.text);
    clmad_context_release(ctx);

    setenv("CLMAD_COMPILE_NOTICE", "1", 1);
    ctx = test_context_with_cache(test_fresh_dir("notice-on"));
    some_work(ctx);
    clmad_context_release(ctx);
    unsetenv("CLMAD_COMPILE_NOTICE");
    const char *text = stderr_text();
    cr_assert(test_contains(text, "clmad: compiling OpenCL programs for \""), "%s", text);
    cr_assert_null(strstr(strstr(text, "clmad: ") + 1, "clmad: "), "said more than once:\n%s", text);
}

Test(warm_up, builds_the_internal_programs_ahead, .init = redirect)
{
    const char *dir = test_fresh_dir("warm");
    heard h = {0};
    clmad_context *ctx = test_context_with_cache(dir);
    CHECK_OK(ctx, clmad_context_set_notice(ctx, listen, &h));
    CHECK_OK(ctx, clmad_context_warm_up(ctx, CLMAD_WARM_UP_PROGRAMS));
    /* ops, axis, train, index for f32 (and f64), ops and index for i32, i64, u8. */
    const int programs = test_device_fp64() ? 14 : 10;
    cr_assert_eq(test_stats(ctx).programs_compiled, (uint64_t)programs);
    cr_assert_eq(h.count, programs, "%s", h.text);
    char last[64];
    snprintf(last, sizeof last, ": %d of %d: index.cl for u8\n", programs, programs);
    cr_assert(test_contains(h.text, ": 1 of ") && test_contains(h.text, last), "%s", h.text);
    cr_assert(!test_contains(h.text, "first run only"), "the warm-up says its own steps:\n%s", h.text);
    /* Again in the same context: everything is in memory. */
    CHECK_OK(ctx, clmad_context_warm_up(ctx, CLMAD_WARM_UP_PROGRAMS));
    cr_assert_eq(test_stats(ctx).programs_compiled, (uint64_t)programs);
    clmad_context_release(ctx);

    /* A later context: its internal kernels come from the disk cache, and a
     * warm-up there compiles nothing and says nothing. */
    heard later = {0};
    ctx = test_context_with_cache(dir);
    CHECK_OK(ctx, clmad_context_set_notice(ctx, listen, &later));
    CHECK_OK(ctx, clmad_context_warm_up(ctx, CLMAD_WARM_UP_PROGRAMS));
    cr_assert_eq(test_stats(ctx).programs_compiled, 0);
    cr_assert_eq(test_stats(ctx).programs_from_disk, (uint64_t)programs);
    cr_assert_eq(later.count, 0, "%s", later.text);
    size_t shape[1] = {7};
    clmad_tensor *a = NULL, *s = NULL;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, shape, 1.5, &a));
    CHECK_OK(ctx, clmad_sum(ctx, a, 0, NULL, 0, &s));
    double total = 0;
    CHECK_OK(ctx, clmad_tensor_item(s, &total));
    cr_assert_eq(total, 10.5);
    cr_assert_eq(test_stats(ctx).programs_compiled, 0, "the fill and the sum compiled after a warm-up");
    clmad_tensor_release(s);
    clmad_tensor_release(a);
    clmad_context_release(ctx);
}

Test(warm_up, gemm_kernels_then_a_matmul, .init = redirect)
{
    /* f32 only (CLBlast's build of a precision costs seconds on POCL). */
    heard h = {0};
    clmad_options opt;
    clmad_options_init(&opt);
    opt.cache_dir = test_fresh_dir("warm-gemm");
    opt.disable_fp64 = 1;
    clmad_context *ctx = test_context_with(&opt);
    CHECK_OK(ctx, clmad_context_set_notice(ctx, listen, &h));
    CHECK_OK(ctx, clmad_context_warm_up(ctx, CLMAD_WARM_UP_GEMM));
    cr_assert_eq(h.count, 1, "%s", h.text);
    cr_assert(test_contains(h.text, ": 1 of 1: CLBlast's Sgemm kernels"), "%s", h.text);
    /* The scratch matrices are gone; the context works on. */
    cr_assert_eq(test_stats(ctx).live_tensor_bytes, 0);
    size_t shape[2] = {2, 2};
    clmad_tensor *a = NULL, *c = NULL;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 2, shape, 3.0, &a));
    CHECK_OK(ctx, clmad_matmul(ctx, a, a, 0, 1, &c));
    float got[4];
    CHECK_OK(ctx, clmad_tensor_read(c, got, sizeof got));
    for (int i = 0; i < 4; i++)
        cr_assert_eq(got[i], 18.0f);
    clmad_tensor_release(c);
    clmad_tensor_release(a);
    /* flags 0 does nothing. */
    const uint64_t compiled = test_stats(ctx).programs_compiled;
    CHECK_OK(ctx, clmad_context_warm_up(ctx, 0));
    cr_assert_eq(test_stats(ctx).programs_compiled, compiled);
    clmad_context_release(ctx);
}

Test(warm_up, bad_input)
{
    REFUSED(NULL, clmad_context_warm_up(NULL, CLMAD_WARM_UP_ALL), CLMAD_ERR_INVALID_ARGUMENT, "ctx is NULL");
    REFUSED(NULL, clmad_context_set_notice(NULL, listen, NULL), CLMAD_ERR_INVALID_ARGUMENT, "ctx is NULL");
    clmad_context *ctx = test_context();
    REFUSED(ctx, clmad_context_warm_up(ctx, 8u), CLMAD_ERR_INVALID_ARGUMENT, "outside CLMAD_WARM_UP_ALL");
    cr_assert_eq(test_stats(ctx).programs_compiled, 0, "a refused warm-up built something");
    /* Released, alive through a tensor: refused; the notice function can still be cleared. */
    size_t shape[1] = {2};
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, shape, &t));
    clmad_context_release(ctx);
    REFUSED(ctx, clmad_context_warm_up(ctx, CLMAD_WARM_UP_PROGRAMS), CLMAD_ERR_STATE, "clmad_context_warm_up");
    cr_assert_eq(clmad_context_set_notice(ctx, NULL, NULL), CLMAD_OK);
    clmad_tensor_release(t);
}

Test(warm_up, training_step_then_nothing_to_compile, .init = redirect)
{
    const char *dir = test_fresh_dir("warm-train");
    clmad_options opt;
    clmad_options_init(&opt);
    opt.cache_dir = dir;
    opt.disable_fp64 = 1;
    heard h = {0};
    clmad_context *ctx = test_context_with(&opt);
    CHECK_OK(ctx, clmad_context_set_notice(ctx, listen, &h));
    CHECK_OK(ctx, clmad_set_retain_tape(ctx, 1));
    CHECK_OK(ctx, clmad_context_warm_up(ctx, CLMAD_WARM_UP_TRAINING));
    cr_assert(test_contains(h.text, "1 of 1: a training step"), "%s", h.text);
    const clmad_stats s = test_stats(ctx);
    cr_assert_gt(s.programs_compiled, 4, "the step's broadcast variants and internal programs");
    cr_assert_eq(s.tape_nodes, 0);
    cr_assert_eq(s.live_tensor_bytes, 0, "the step's tensors are released");
    int64_t retain = 0, no_grad = 1;
    CHECK_OK(ctx, clmad_context_get_param(ctx, CLMAD_PARAM_RETAIN_TAPE, &retain));
    CHECK_OK(ctx, clmad_context_get_param(ctx, CLMAD_PARAM_DISABLE_GRAD, &no_grad));
    cr_assert(retain == 1 && no_grad == 0, "settings changed: retain %lld, disable_grad %lld", (long long)retain,
              (long long)no_grad);
    /* A tape with nodes: refused, the nodes kept. */
    size_t shape[1] = {3};
    clmad_tensor *w = NULL, *y = NULL;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, shape, 2.0, &w));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(w, 1));
    CHECK_OK(ctx, clmad_exp(ctx, w, &y));
    const uint64_t nodes = test_stats(ctx).tape_nodes;
    cr_assert_gt(nodes, 0);
    REFUSED(ctx, clmad_context_warm_up(ctx, CLMAD_WARM_UP_TRAINING), CLMAD_ERR_STATE, "the tape holds");
    cr_assert_eq(test_stats(ctx).tape_nodes, nodes);
    clmad_tensor_release(y);
    clmad_tensor_release(w);
    clmad_context_release(ctx);

    /* A later context on the same cache: the step compiles nothing. */
    ctx = test_context_with(&opt);
    CHECK_OK(ctx, clmad_context_warm_up(ctx, CLMAD_WARM_UP_TRAINING));
    cr_assert_eq(test_stats(ctx).programs_compiled, 0);
    cr_assert_gt(test_stats(ctx).programs_from_disk, 4);
    clmad_context_release(ctx);
}
