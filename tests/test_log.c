/* SPDX-License-Identifier: Apache-2.0 */
/* CLMAD_LOG=info (issue 14, item 5): a compile from source and CLBlast's
 * first GEMM are announced on stderr with their duration; without it
 * clmad prints nothing. */
#include "support.h"

#include <criterion/redirect.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void redirect(void)
{
    cr_redirect_stderr();
}

/* Everything written to stderr so far (static buffer). */
static const char *stderr_text(void)
{
    static char text[16384];
    fflush(stderr);
    FILE *f = cr_get_redirected_stderr();
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    return text;
}

/* A kernel compiled from source (no disk cache) and a matmul. */
static void compile_and_matmul(void)
{
    clmad_options opt;
    clmad_options_init(&opt);
    opt.cache_dir = "";
    clmad_context *ctx = test_context_with(&opt);
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T log_probe(T x) { return x * x + 0.25f; }\n", "log_probe", 1, 1, &k));
    size_t shape[2] = {4, 4};
    clmad_tensor *a = NULL, *c = NULL;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 2, shape, 1.0, &a));
    CHECK_OK(ctx, clmad_matmul(ctx, a, a, 0, 0, &c));
    CHECK_OK(ctx, clmad_finish(ctx));
    clmad_tensor_release(c);
    clmad_tensor_release(a);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

Test(log, info_announces_compiles_and_clblast, .init = redirect)
{
    setenv("CLMAD_LOG", "info", 1);
    setenv("CLMAD_SMALL_GEMM", "0", 1); /* a 4 x 4 product goes to CLBlast, not clmad's small kernel */
    compile_and_matmul();
    const char *text = stderr_text();
    cr_assert(test_contains(text, "clmad: compiling OpenCL program clmad__bcast_primal on "), "%s", text);
    cr_assert(test_contains(text, "clmad: compiled "), "%s", text);
    cr_assert(test_contains(text, "clmad: first CLBlast Sgemm on "), "%s", text);
    cr_assert(test_contains(text, "clmad: first CLBlast Sgemm done in "), "%s", text);
    cr_assert(test_contains(text, " s\n"), "%s", text);
}

Test(log, silent_without_clmad_log, .init = redirect)
{
    unsetenv("CLMAD_LOG");
    compile_and_matmul();
    const char *text = stderr_text();
    cr_assert(!test_contains(text, "clmad: "), "%s", text);
}
