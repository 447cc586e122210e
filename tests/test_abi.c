/* SPDX-License-Identifier: Apache-2.0 */
/* The public ABI (issue 14, item 4): clmad_set_error, through which
 * components built on clmad (clmad_mpi) report their failures without
 * clmad's internals, and the version at run time. tests/abi_exports.sh
 * checks what the shared libraries export. */
#include "support.h"

#include <stdio.h>
#include <string.h>

Test(abi, set_error_on_a_context)
{
    clmad_context *ctx = test_context();
    cr_assert_eq(clmad_set_error(ctx, CLMAD_ERR_SHAPE, "mylib_step: %d of %s", 3, "x"), CLMAD_ERR_SHAPE);
    cr_assert_str_eq(clmad_last_error(ctx), "mylib_step: 3 of x");
    /* The next failure, clmad's own or another component's, replaces it. */
    size_t shape[1] = {2};
    clmad_tensor *t = NULL;
    cr_assert_eq(clmad_tensor_create(ctx, (clmad_dtype)7, 1, shape, NULL, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_null(t);
    cr_assert(!test_contains(clmad_last_error(ctx), "mylib_step"), "%s", clmad_last_error(ctx));
    cr_assert_eq(clmad_set_error(ctx, CLMAD_ERR_IO, "%s", "again"), CLMAD_ERR_IO);
    cr_assert_str_eq(clmad_last_error(ctx), "again");
    cr_assert_eq(clmad_set_error(ctx, CLMAD_ERR_IO, NULL), CLMAD_ERR_IO);
    cr_assert_str_eq(clmad_last_error(ctx), "(no message)");
    clmad_context_release(ctx);
}

Test(abi, set_error_on_the_thread)
{
    clmad_context *ctx = test_context();
    clmad_set_error(ctx, CLMAD_ERR_STATE, "on the context");
    /* A message longer than any before it is kept whole. */
    char long_text[4000];
    memset(long_text, 'y', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    cr_assert_eq(clmad_set_error(NULL, CLMAD_ERR_NO_DEVICE, "thread: %s", long_text), CLMAD_ERR_NO_DEVICE);
    cr_assert_eq(strlen(clmad_last_error(NULL)), strlen("thread: ") + sizeof long_text - 1);
    /* The newer failure is the one clmad_last_error(ctx) gives (issue 24):
     * a message without a context, until ctx fails again. */
    cr_assert_str_eq(clmad_last_error(ctx), clmad_last_error(NULL));
    clmad_set_error(ctx, CLMAD_ERR_STATE, "on the context");
    cr_assert_str_eq(clmad_last_error(ctx), "on the context");
    cr_assert_str_eq(clmad_last_error(NULL), "on the context");
    clmad_context_release(ctx);
}

Test(abi, version_at_run_time)
{
    cr_assert_eq(clmad_version(), (unsigned)CLMAD_VERSION_HEX);
    cr_assert_eq(clmad_version(), (CLMAD_VERSION_MAJOR << 16u) | (CLMAD_VERSION_MINOR << 8u) | CLMAD_VERSION_PATCH);
    char text[64];
    snprintf(text, sizeof text, "%d.%d.%d", CLMAD_VERSION_MAJOR, CLMAD_VERSION_MINOR, CLMAD_VERSION_PATCH);
    cr_assert_str_eq(clmad_version_string(), text);
    cr_assert_str_eq(CLMAD_VERSION_STRING, text);
}
