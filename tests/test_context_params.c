/* SPDX-License-Identifier: Apache-2.0 */
/* Context parameters (CLMAD_CONTEXT_PARAMS): every value a setter takes
 * reads back through the getter, the clmad_options fields give the values
 * at creation, the named setters set the same values, and values out of
 * bounds are refused with a message naming the parameter and its bounds.
 * Also: the status list gives clmad_status_string its names. */
#include "support.h"

#include <inttypes.h>
#include <string.h>

static int64_t get(clmad_context *ctx, clmad_context_param p)
{
    int64_t v = -12345;
    clmad_status st = clmad_context_get_param(ctx, p, &v);
    cr_assert_eq(st, CLMAD_OK, "get %d: %s", (int)p, clmad_last_error(ctx));
    return v;
}

static void expect_refused(clmad_context *ctx, clmad_context_param p, int64_t v, const char *needle)
{
    int64_t before = get(ctx, p);
    clmad_status st = clmad_context_set_param(ctx, p, v);
    const char *msg = clmad_last_error(ctx);
    cr_assert_eq(st, CLMAD_ERR_INVALID_ARGUMENT, "param %d = %" PRId64 " was accepted", (int)p, v);
    cr_assert(test_contains(msg, needle), "message lacks \"%s\": %s", needle, msg);
    cr_assert_eq(get(ctx, p), before, "a refused value changed param %d", (int)p);
}

Test(context_params, every_value_in_bounds_reads_back)
{
    clmad_context *ctx = test_context();
    static const struct {
        clmad_context_param p;
        int64_t lowest, highest;
    } params[] = {
#define ROW(id, value, field, lowest, highest) {id, lowest, highest},
        CLMAD_CONTEXT_PARAMS(ROW)
#undef ROW
    };
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        int64_t lo = params[i].lowest, hi = params[i].highest;
        /* The highest, a middle value and the lowest, but for
         * POOL_LIMIT_BYTES, whose 0 selects the default limit. */
        int64_t values[] = {hi, lo + (hi - lo) / 2, lo == 0 && hi > 64 ? 4096 : lo};
        for (size_t k = 0; k < 3; k++) {
            cr_assert_eq(clmad_context_set_param(ctx, params[i].p, values[k]), CLMAD_OK, "%s",
                         clmad_last_error(ctx));
            /* CLMAD_FUSE=0 (make test-unfused) keeps fusion off whatever
             * the parameter says, and the parameter reads what is in force. */
            const char *fuse = getenv("CLMAD_FUSE");
            const int64_t expect =
                params[i].p == CLMAD_PARAM_DISABLE_FUSION && fuse && !strcmp(fuse, "0") ? 1 : values[k];
            cr_assert_eq(get(ctx, params[i].p), expect, "param %d", (int)params[i].p);
        }
    }
    clmad_context_release(ctx);
}

Test(context_params, out_of_bounds_and_unknown_are_refused)
{
    clmad_context *ctx = test_context();
    expect_refused(ctx, CLMAD_PARAM_CHUNK_CAP, -1, "chunk_cap -1 is outside 0..64");
    expect_refused(ctx, CLMAD_PARAM_CHUNK_CAP, 65, "chunk_cap 65 is outside 0..64");
    expect_refused(ctx, CLMAD_PARAM_POOL_LIMIT_BYTES, -1, "pool_limit_bytes -1 is outside 0..");
    expect_refused(ctx, CLMAD_PARAM_RETAIN_TAPE, 2, "retain_tape 2 is outside 0..1");
    expect_refused(ctx, CLMAD_PARAM_DISABLE_GRAD, -1, "disable_grad -1 is outside 0..1");
    expect_refused(ctx, CLMAD_PARAM_PARTIALS_POLICY, 3, "partials_policy 3 is outside 0..2");

    int64_t v = 0;
    cr_assert_eq(clmad_context_set_param(ctx, (clmad_context_param)99, 1), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "unknown parameter 99"), "%s", clmad_last_error(ctx));
    cr_assert_eq(clmad_context_get_param(ctx, (clmad_context_param)-1, &v), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_context_get_param(ctx, CLMAD_PARAM_CHUNK_CAP, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_context_get_param(NULL, CLMAD_PARAM_CHUNK_CAP, &v), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_context_set_param(NULL, CLMAD_PARAM_CHUNK_CAP, 1), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(NULL), "ctx is NULL"), "%s", clmad_last_error(NULL));
    clmad_context_release(ctx);
}

Test(context_params, options_give_the_values_at_creation)
{
    clmad_options opt;
    clmad_options_init(&opt);
    opt.chunk_cap = 4;
    opt.pool_limit_bytes = 1 << 20;
    opt.retain_tape = 1;
    opt.disable_grad = 1;
    opt.partials_policy = CLMAD_PARTIALS_STORE;
    clmad_context *ctx = test_context_with(&opt);
    cr_assert_eq(get(ctx, CLMAD_PARAM_CHUNK_CAP), 4);
    cr_assert_eq(get(ctx, CLMAD_PARAM_POOL_LIMIT_BYTES), 1 << 20);
    cr_assert_eq(get(ctx, CLMAD_PARAM_RETAIN_TAPE), 1);
    cr_assert_eq(get(ctx, CLMAD_PARAM_DISABLE_GRAD), 1);
    cr_assert_eq(get(ctx, CLMAD_PARAM_PARTIALS_POLICY), CLMAD_PARTIALS_STORE);
    cr_assert_eq(clmad_chunk_cap(ctx), 4);
    clmad_context_release(ctx);

    /* The defaults: pool limit in force > 0, recording on, AUTO. */
    ctx = test_context();
    cr_assert_eq(get(ctx, CLMAD_PARAM_CHUNK_CAP), 0);
    cr_assert_gt(get(ctx, CLMAD_PARAM_POOL_LIMIT_BYTES), 0);
    cr_assert_eq(get(ctx, CLMAD_PARAM_RETAIN_TAPE), 0);
    cr_assert_eq(get(ctx, CLMAD_PARAM_DISABLE_GRAD), 0);
    cr_assert_eq(get(ctx, CLMAD_PARAM_PARTIALS_POLICY), CLMAD_PARTIALS_AUTO);
    clmad_context_release(ctx);
}

Test(context_params, bad_options_are_refused_at_creation)
{
    static const char *const needles[] = {
        "chunk_cap 65 is outside 0..64",
        "retain_tape 2 is outside 0..1",
        "disable_grad 3 is outside 0..1",
        "partials_policy 7 is outside 0..2",
    };
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++) {
        clmad_options opt;
        clmad_options_init(&opt);
        switch (i) {
        case 0: opt.chunk_cap = 65; break;
        case 1: opt.retain_tape = 2; break;
        case 2: opt.disable_grad = 3; break;
        default: opt.partials_policy = (clmad_partials_policy)7; break;
        }
        clmad_context *ctx = NULL;
        cr_assert_eq(clmad_context_create(&opt, &ctx), CLMAD_ERR_INVALID_ARGUMENT, "case %zu", i);
        cr_assert_null(ctx);
        const char *msg = clmad_last_error(NULL);
        cr_assert(test_contains(msg, "clmad_context_create") && test_contains(msg, needles[i]),
                  "case %zu: %s", i, msg);
    }
}

Test(context_params, named_setters_set_the_same_values)
{
    clmad_context *ctx = test_context();
    cr_assert_eq(clmad_set_chunk_cap(ctx, 7), CLMAD_OK);
    cr_assert_eq(get(ctx, CLMAD_PARAM_CHUNK_CAP), 7);
    cr_assert_eq(clmad_set_retain_tape(ctx, 1), CLMAD_OK);
    cr_assert_eq(get(ctx, CLMAD_PARAM_RETAIN_TAPE), 1);
    cr_assert_eq(clmad_set_grad_enabled(ctx, 0), CLMAD_OK);
    cr_assert_eq(get(ctx, CLMAD_PARAM_DISABLE_GRAD), 1);
    cr_assert_eq(clmad_set_grad_enabled(ctx, 1), CLMAD_OK);
    cr_assert_eq(get(ctx, CLMAD_PARAM_DISABLE_GRAD), 0);
    cr_assert_eq(clmad_set_partials_policy(ctx, CLMAD_PARTIALS_RECOMPUTE), CLMAD_OK);
    cr_assert_eq(get(ctx, CLMAD_PARAM_PARTIALS_POLICY), CLMAD_PARTIALS_RECOMPUTE);
    /* and the generic setter is what the named getter reads */
    cr_assert_eq(clmad_context_set_param(ctx, CLMAD_PARAM_CHUNK_CAP, 5), CLMAD_OK);
    cr_assert_eq(clmad_chunk_cap(ctx), 5);
    clmad_context_release(ctx);
}

Test(context_params, a_lower_pool_limit_empties_the_pool)
{
    clmad_context *ctx = test_context();
    size_t shape[1] = {4096};
    clmad_tensor *t = NULL;
    cr_assert_eq(clmad_tensor_zeros(ctx, CLMAD_F32, 1, shape, &t), CLMAD_OK, "%s", clmad_last_error(ctx));
    clmad_tensor_release(t);
    cr_assert_gt(test_stats(ctx).pool_bytes, 0);
    cr_assert_eq(clmad_context_set_param(ctx, CLMAD_PARAM_POOL_LIMIT_BYTES, 1), CLMAD_OK);
    cr_assert_eq(test_stats(ctx).pool_bytes, 0);
    clmad_context_release(ctx);
}

Test(status_list, names_come_from_the_list)
{
#define CHECK_NAME(name, value, text)                                  \
    cr_assert_eq((int)name, value);                                    \
    cr_assert_str_eq(clmad_status_string(name), #name);                \
    cr_assert_gt(strlen(text), 0);
    CLMAD_STATUS_LIST(CHECK_NAME)
#undef CHECK_NAME
    cr_assert_str_eq(clmad_status_string((clmad_status)12345), "CLMAD_ERR_UNKNOWN");
}
