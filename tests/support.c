/* SPDX-License-Identifier: Apache-2.0 */
#include "support.h"

#include <execinfo.h>
#include <math.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A test that crashes prints its call stack on stderr (Criterion only says
 * "CRASH"), so that a rare crash in CI can be traced from the log. Not in
 * sanitizer builds: the sanitizers report crashes themselves. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
static void report_crash(int sig)
{
    static const char head[] = "\n*** clmad test: fatal signal, call stack:\n";
    void *frames[64];
    ssize_t ignored = write(STDERR_FILENO, head, sizeof head - 1);
    (void)ignored;
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install_crash_report(void)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], report_crash);
}
#endif

static char case_name[256];

const char *test_case(void)
{
    return case_name;
}

void test_set_case(const char *fmt, ...)
{
    case_name[0] = '\0';
    if (!fmt)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(case_name, sizeof case_name - 2, fmt, ap);
    va_end(ap);
    if (n >= 0)
        strcat(case_name, ": ");
}

static int no_fp64_requested(void)
{
    const char *v = getenv("CLMAD_TEST_NO_FP64");
    return v && v[0] == '1';
}

int test_device_fp64(void)
{
    static int known = -1;
    if (known < 0) {
        known = 1;
        clmad_device_info *list = NULL;
        size_t count = 0, index = 0;
        if (clmad_device_list(&list, &count) == CLMAD_OK) {
            if (clmad_device_choose(list, count, getenv("CLMAD_DEVICE"), &index) == CLMAD_OK)
                known = list[index].fp64;
            clmad_device_list_free(list);
        }
        if (no_fp64_requested())
            known = 0;
    }
    return known;
}

int test_programs_round_alike(void)
{
    static int known = -1;
    if (known >= 0)
        return known;
    enum { N = 4096 };
    static float xs[N], primal[N], dual[N];
    for (int i = 0; i < N; i++)
        xs[i] = (float)(i - N / 2) * 0.00731f;
    clmad_context *ctx = test_context();
    size_t n = N;
    clmad_kernel *k;
    clmad_tensor *x, *y;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T f(T a) { return ad_sin(a); }", "f", 1, 1, &k));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, xs, &x));
    for (int pass = 0; pass < 2; pass++) {
        /* no gradient: the primal program; one needed, stored: the dual's values */
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, pass));
        CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_STORE));
        CHECK_OK(ctx, clmad_broadcast(ctx, k, &x, &y));
        CHECK_OK(ctx, clmad_tensor_read(y, pass ? dual : primal, sizeof primal));
        clmad_tensor_release(y);
        clmad_tape_clear(ctx);
    }
    known = memcmp(primal, dual, sizeof primal) == 0;
    clmad_tensor_release(x);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
    return known;
}

int test_elements_equal(const void *x, const void *y, size_t size, double ulps)
{
    if (memcmp(x, y, size) == 0)
        return 1;
    double a, b;
    if (size == 8) {
        memcpy(&a, x, 8);
        memcpy(&b, y, 8);
    } else {
        float fa, fb;
        memcpy(&fa, x, 4);
        memcpy(&fb, y, 4);
        a = fa, b = fb;
    }
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    const double eps = size == 8 ? 0x1p-52 : 0x1p-23;
    return ulps > 0 && !isinf(a) && !isinf(b) && fabs(a - b) <= ulps * eps * fmax(1.0, fmax(fabs(a), fabs(b)));
}

void test_skip_unsupported(clmad_status st, const char *message)
{
    if (st == CLMAD_ERR_UNSUPPORTED && !test_device_fp64())
        cr_skip_test("%sthe test device has no fp64: %s", case_name, message ? message : "");
}

clmad_context *test_context_with(const clmad_options *opt)
{
    clmad_options no_fp64;
    if (no_fp64_requested()) {
        if (opt)
            no_fp64 = *opt;
        else
            clmad_options_init(&no_fp64);
        no_fp64.disable_fp64 = 1;
        opt = &no_fp64;
    }
    clmad_context *ctx = NULL;
    clmad_status st = clmad_context_create(opt, &ctx);
    cr_assert_eq(st, CLMAD_OK, "context: %s: %s", clmad_status_string(st), clmad_last_error(NULL));
    return ctx;
}

clmad_context *test_context_with_cache(const char *dir)
{
    clmad_options opt;
    clmad_options_init(&opt);
    opt.cache_dir = dir;
    return test_context_with(&opt);
}

clmad_stats test_stats(clmad_context *ctx)
{
    clmad_stats s;
    CHECK_OK(ctx, clmad_context_stats(ctx, &s));
    return s;
}

clmad_context *test_context(void)
{
    return test_context_with(NULL);
}

const char *test_fresh_dir(const char *tag)
{
    static char path[1024];
    static unsigned serial;
    const char *root = getenv("CLMAD_TEST_TMP");
    if (!root || !root[0])
        root = "/tmp";
    snprintf(path, sizeof path, "%s/%s-%ld-%u", root, tag, (long)getpid(), serial++);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(mkdir(path, 0755), 0, "mkdir %s", path);
    return path;
}

void test_append_to_tuning_file(const char *cache, const char *line)
{
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "for f in '%s'/tuning-*.txt; do echo '%s' >> \"$f\"; done", cache, line);
    cr_assert_eq(system(cmd), 0);
}

int test_tuning_file_has(const char *cache, const char *line)
{
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "grep -qx '%s' '%s'/tuning-*.txt", line, cache);
    return system(cmd) == 0;
}

const char *test_tuning_origin(const char *cache)
{
    static clmad_tuning t;
    clmad_context *ctx = test_context_with_cache(cache);
    CHECK_OK(ctx, clmad_context_tuning(ctx, &t));
    clmad_context_release(ctx);
    return t.origin;
}

void test_tuning_file_with(const char *cache, const char *line)
{
    clmad_context *ctx = test_context_with_cache(cache);
    clmad_tuning t;
    CHECK_OK(ctx, clmad_context_tuning(ctx, &t));
    CHECK_OK(ctx, clmad_tuning_save(ctx, &t));
    clmad_context_release(ctx);
    test_append_to_tuning_file(cache, line);
}

int test_contains(const char *haystack, const char *needle)
{
    return haystack && needle && strstr(haystack, needle) != NULL;
}

int test_small(void)
{
    const char *small = getenv("CLMAD_TEST_SMALL");
    return small && *small == '1';
}

clmad_tensor *test_tensor_of(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                             double (*value)(size_t e, void *arg), void *arg)
{
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    void *h = malloc(n * 8 + 8);
    cr_assert(h);
    for (size_t e = 0; e < n; e++) {
        double v = value(e, arg);
        if (dtype == CLMAD_F64)
            ((double *)h)[e] = v;
        else
            ((float *)h)[e] = (float)v;
    }
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, dtype, ndim, shape, h, &t));
    free(h);
    return t;
}

void test_read_f64(clmad_context *ctx, clmad_tensor *t, double *h, size_t n)
{
    cr_assert_eq(clmad_tensor_numel(t), n);
    CHECK_OK(ctx, clmad_tensor_read(t, h, n * sizeof *h));
}

void test_run2(clmad_context *ctx, clmad_kernel *k, const double *xs, const double *ys, size_t n, double *v,
               double *dx, double *dy)
{
    size_t shape[1] = {n};
    clmad_tensor *in[2], *y = NULL, *loss = NULL, *gx = NULL, *gy = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, shape, xs, &in[0]));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, shape, ys, &in[1]));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(in[0], 1));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(in[1], 1));
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(in[0], &gx));
    CHECK_OK(ctx, clmad_tensor_grad(in[1], &gy));
    CHECK_OK(ctx, clmad_tensor_read(y, v, n * sizeof *v));
    CHECK_OK(ctx, clmad_tensor_read(gx, dx, n * sizeof *dx));
    CHECK_OK(ctx, clmad_tensor_read(gy, dy, n * sizeof *dy));
    clmad_tensor *all[] = {in[0], in[1], y, loss, gx, gy};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++)
        clmad_tensor_release(all[j]);
}

void test_keep(clmad_context *ctx, test_results *r, clmad_tensor *t)
{
    size_t n = clmad_tensor_numel(t) * clmad_dtype_size(clmad_tensor_dtype(t));
    if (r->len + n > r->cap) {
        r->cap = 2 * (r->len + n);
        r->bytes = realloc(r->bytes, r->cap);
        cr_assert(r->bytes);
    }
    CHECK_OK(ctx, clmad_tensor_read(t, r->bytes + r->len, n));
    r->len += n;
}

void test_keep_grad(clmad_context *ctx, test_results *r, clmad_tensor *x)
{
    clmad_tensor *g = NULL;
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    cr_assert(g, "%sno gradient", test_case());
    test_keep(ctx, r, g);
    clmad_tensor_release(g);
}
