/* SPDX-License-Identifier: Apache-2.0 */
/* The tuning of a device (clmad_tuning): from the table, from a file that
 * clmad_tuning_save stored in the cache folder, from the environment; bad
 * files and bad values; and results that do not depend on it. */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(tuning, a_context_reports_its_tuning)
{
    clmad_context *ctx = test_context_with_cache(test_fresh_dir("tuning-plain"));
    clmad_tuning t;
    CHECK_OK(ctx, clmad_context_tuning(ctx, &t));
    cr_assert(t.items_per_work_item >= 1 && t.items_per_work_item <= 1024, "%d", t.items_per_work_item);
    cr_assert(t.chunk_cap >= 1 && t.chunk_cap <= 64, "%d", t.chunk_cap);
    cr_assert_eq(clmad_chunk_cap(ctx), t.chunk_cap, "the default chunk cap is the tuning's");
    cr_assert(t.origin[0] != '\0');
    cr_assert(!test_contains(t.origin, "tuned:"), "a fresh cache folder holds no tuning: %s", t.origin);
    cr_assert_eq(clmad_context_tuning(NULL, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_context_tuning(ctx, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    clmad_context_release(ctx);
}

/* y = x * x + 1 over n elements; its bytes into out. */
static void square_plus_one(clmad_context *ctx, size_t n, float *out)
{
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T f(T x) { return ad_addr(ad_mul(ad_tanh(x), x), 1); }", "f", 1, 1,
                                      &k));
    float *host = malloc(n * sizeof *host);
    for (size_t i = 0; i < n; i++)
        host[i] = (float)i / (float)n - 0.5f;
    clmad_tensor *x, *y;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, host, &x));
    CHECK_OK(ctx, clmad_broadcast(ctx, k, &x, &y));
    CHECK_OK(ctx, clmad_tensor_read(y, out, n * sizeof *out));
    clmad_tensor_release(x);
    clmad_tensor_release(y);
    clmad_kernel_release(k);
    free(host);
}

Test(tuning, a_saved_tuning_is_taken_by_later_contexts_of_the_device)
{
    const char *dir = test_fresh_dir("tuning-saved");
    char cache[1200];
    snprintf(cache, sizeof cache, "%s", dir);
    clmad_context *a = test_context_with_cache(cache);
    clmad_tuning before;
    CHECK_OK(a, clmad_context_tuning(a, &before));
    clmad_tuning want = before;
    want.items_per_work_item = before.items_per_work_item == 7 ? 5 : 7; /* neither 1 nor 32 */
    want.chunk_cap = before.chunk_cap == 3 ? 4 : 3;
    CHECK_OK(a, clmad_tuning_save(a, &want));
    clmad_tuning still;
    CHECK_OK(a, clmad_context_tuning(a, &still));
    cr_assert_eq(still.items_per_work_item, before.items_per_work_item, "the saving context keeps its tuning");

    clmad_context *b = test_context_with_cache(cache);
    clmad_tuning got;
    CHECK_OK(b, clmad_context_tuning(b, &got));
    cr_assert_eq(got.items_per_work_item, want.items_per_work_item);
    cr_assert_eq(got.chunk_cap, want.chunk_cap);
    cr_assert_eq(clmad_chunk_cap(b), want.chunk_cap);
    cr_assert(test_contains(got.origin, "tuned:") && test_contains(got.origin, cache), "%s", got.origin);

    /* The same values either way (runs of 7 against the table's form): the
     * tuning changes speed, not results. */
    enum { N = 1000 };
    static float ya[N], yb[N];
    square_plus_one(a, N, ya);
    square_plus_one(b, N, yb);
    cr_assert(memcmp(ya, yb, sizeof ya) == 0, "results differ between the tunings");
    clmad_context_release(a);
    clmad_context_release(b);
}

Test(tuning, a_bad_file_is_ignored)
{
    const char *dir = test_fresh_dir("tuning-bad");
    char cache[1200];
    snprintf(cache, sizeof cache, "%s", dir);
    clmad_context *a = test_context_with_cache(cache);
    clmad_tuning t;
    CHECK_OK(a, clmad_context_tuning(a, &t));
    t.items_per_work_item = 9;
    CHECK_OK(a, clmad_tuning_save(a, &t));
    clmad_context_release(a);
    /* Overwrite the file that was written with an out-of-bounds value. */
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "for f in '%s'/tuning-*.txt; do echo 'items_per_work_item 0' > \"$f\"; done", cache);
    cr_assert_eq(system(cmd), 0);
    clmad_context *b = test_context_with_cache(cache);
    clmad_tuning got;
    CHECK_OK(b, clmad_context_tuning(b, &got));
    cr_assert(!test_contains(got.origin, "tuned:"), "%s", got.origin);
    cr_assert_neq(got.items_per_work_item, 0);
    clmad_context_release(b);
}

Test(tuning, bad_values_and_no_cache_folder_are_refused)
{
    clmad_context *ctx = test_context_with_cache(test_fresh_dir("tuning-values"));
    clmad_tuning t;
    CHECK_OK(ctx, clmad_context_tuning(ctx, &t));
    clmad_tuning bad = t;
    bad.items_per_work_item = 0;
    cr_assert_eq(clmad_tuning_save(ctx, &bad), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "items_per_work_item 0"), "%s", clmad_last_error(ctx));
    bad = t;
    bad.chunk_cap = 65;
    cr_assert_eq(clmad_tuning_save(ctx, &bad), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tuning_save(ctx, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tuning_save(NULL, &t), CLMAD_ERR_INVALID_ARGUMENT);
    clmad_context_release(ctx);

    clmad_context *none = test_context_with_cache("");
    cr_assert_eq(clmad_tuning_save(none, &t), CLMAD_ERR_STATE);
    cr_assert(test_contains(clmad_last_error(none), "no cache folder"), "%s", clmad_last_error(none));
    clmad_context_release(none);
}

Test(tuning, the_environment_overrides)
{
    setenv("CLMAD_ITEMS_PER_WORK_ITEM", "3", 1);
    clmad_context *ctx = test_context_with_cache(test_fresh_dir("tuning-env"));
    unsetenv("CLMAD_ITEMS_PER_WORK_ITEM");
    clmad_tuning t;
    CHECK_OK(ctx, clmad_context_tuning(ctx, &t));
    cr_assert_eq(t.items_per_work_item, 3);
    cr_assert(test_contains(t.origin, "CLMAD_ITEMS_PER_WORK_ITEM"), "%s", t.origin);
    clmad_context_release(ctx);
}

Test(tuning, a_file_may_set_the_loss_lanes)
{
    /* Lanes serve GPUs' interleaved loss sums (a CPU's sums by ranges take
     * none; test_fusion checks the lanes form's bits through a hook): the
     * file's value is taken, kept by clmad_tuning_save, and bounded. */
    char cache[1200];
    snprintf(cache, sizeof cache, "%s", test_fresh_dir("tuning-lanes"));
    test_tuning_file_with(cache, "loss_lanes 4");
    clmad_tuning t;
    clmad_context *b = test_context_with_cache(cache);
    CHECK_OK(b, clmad_context_tuning(b, &t));
    cr_assert(test_contains(t.origin, "tuned:") && test_contains(t.origin, "with loss lanes"), "%s", t.origin);
    CHECK_OK(b, clmad_tuning_save(b, &t));
    cr_assert(test_tuning_file_has(cache, "loss_lanes 4"), "clmad_tuning_save dropped the loss_lanes line");
    clmad_context_release(b);
    test_append_to_tuning_file(cache, "loss_lanes 33");
    const char *origin = test_tuning_origin(cache);
    cr_assert(!test_contains(origin, "tuned:"), "33 lanes (groups of 1056 work-items) were taken: %s", origin);
}
