/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_optimizer_save and clmad_optimizer_load: training stopped after 3
 * steps, saved, loaded into a fresh model and optimizer and continued gives
 * the same bits as training without a stop; and the refusals. */
#include "st_files.h"

#include <math.h>

/* One step on loss = sum(tanh(w)^2) + (with_b ? sum(b^4) : 0): b has no
 * gradient at the steps without it, so the two parameters' step counts
 * differ (Adam's bias correction depends on them). */
static void train_step(clmad_context *ctx, clmad_optimizer *o, clmad_tensor *w, clmad_tensor *b, int with_b)
{
    clmad_tensor *t, *tt, *l1, *bb, *b4, *l2, *loss;
    CHECK_OK(ctx, clmad_scope_begin(ctx));
    CHECK_OK(ctx, clmad_tanh(ctx, w, &t));
    CHECK_OK(ctx, clmad_mul(ctx, t, t, &tt));
    CHECK_OK(ctx, clmad_sum(ctx, tt, 0, NULL, 0, &l1));
    loss = l1;
    if (with_b) {
        CHECK_OK(ctx, clmad_mul(ctx, b, b, &bb));
        CHECK_OK(ctx, clmad_mul(ctx, bb, bb, &b4));
        CHECK_OK(ctx, clmad_sum(ctx, b4, 0, NULL, 0, &l2));
        CHECK_OK(ctx, clmad_add(ctx, l1, l2, &loss));
    }
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_optimizer_step(o));
    clmad_optimizer_zero_grad(o);
    CHECK_OK(ctx, clmad_scope_end(ctx));
}

static void make_params(clmad_context *ctx, clmad_tensor **w, clmad_tensor **b)
{
    size_t sw[] = {3, 4}, sb[] = {4};
    CHECK_OK(ctx, clmad_tensor_rand_normal(ctx, CLMAD_F32, 2, sw, 0, 1, 5, w));
    CHECK_OK(ctx, clmad_tensor_rand_uniform(ctx, CLMAD_F32, 1, sb, -1, 1, 6, b));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(*w, 1));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(*b, 1));
}

static clmad_optimizer *make_optimizer(clmad_context *ctx, clmad_optimizer_kind kind, clmad_tensor **p)
{
    clmad_optimizer_options opt;
    clmad_optimizer_options_init(&opt, kind);
    opt.lr = 0.05;
    if (kind == CLMAD_OPTIM_SGD)
        opt.momentum = 0.9;
    clmad_optimizer *o = NULL;
    CHECK_OK(ctx, clmad_optimizer_create(ctx, &opt, p, 2, &o));
    return o;
}

/* The first step has no b: w takes 6 steps, b 5. */
#define WITH_B(step) ((step) > 0)

static void resume_gives_the_same_bits(clmad_optimizer_kind kind)
{
    clmad_context *ctx = test_context();
    const char *dir = test_fresh_dir("optim-state");
    char params_path[1200], state_path[1200];
    snprintf(params_path, sizeof params_path, "%s/params.safetensors", dir);
    snprintf(state_path, sizeof state_path, "%s/optim.safetensors", dir);
    const char *names[] = {"w", "b"};

    /* Uninterrupted: 6 steps. */
    clmad_tensor *p[2];
    make_params(ctx, &p[0], &p[1]);
    clmad_optimizer *o = make_optimizer(ctx, kind, p);
    for (int s = 0; s < 6; s++)
        train_step(ctx, o, p[0], p[1], WITH_B(s));
    float want_w[12], want_b[4];
    CHECK_OK(ctx, clmad_tensor_read(p[0], want_w, sizeof want_w));
    CHECK_OK(ctx, clmad_tensor_read(p[1], want_b, sizeof want_b));
    clmad_optimizer_release(o);
    clmad_tensor_release(p[0]);
    clmad_tensor_release(p[1]);

    /* 3 steps, saved, everything released. */
    make_params(ctx, &p[0], &p[1]);
    o = make_optimizer(ctx, kind, p);
    for (int s = 0; s < 3; s++)
        train_step(ctx, o, p[0], p[1], WITH_B(s));
    CHECK_OK(ctx, clmad_save(params_path, names, p, 2, NULL));
    CHECK_OK(ctx, clmad_optimizer_save(o, state_path));
    clmad_optimizer_release(o);
    clmad_tensor_release(p[0]);
    clmad_tensor_release(p[1]);

    /* A fresh model and optimizer, loaded, 3 more steps. */
    size_t sw[] = {3, 4}, sb[] = {4};
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 2, sw, &p[0]));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, sb, &p[1]));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(p[0], 1));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(p[1], 1));
    CHECK_OK(ctx, clmad_load(ctx, params_path, names, p, 2));
    o = make_optimizer(ctx, kind, p);
    CHECK_OK(ctx, clmad_optimizer_load(o, state_path));
    cr_assert_eq(clmad_optimizer_steps(o), 3);
    for (int s = 3; s < 6; s++)
        train_step(ctx, o, p[0], p[1], WITH_B(s));
    cr_assert_eq(clmad_optimizer_steps(o), 6);
    float got_w[12], got_b[4];
    CHECK_OK(ctx, clmad_tensor_read(p[0], got_w, sizeof got_w));
    CHECK_OK(ctx, clmad_tensor_read(p[1], got_b, sizeof got_b));
    cr_assert_eq(memcmp(got_w, want_w, sizeof want_w), 0, "w differs from uninterrupted training");
    cr_assert_eq(memcmp(got_b, want_b, sizeof want_b), 0, "b differs from uninterrupted training");

    /* The file itself: PyTorch's names, the counts in the metadata. */
    clmad_safetensors *f = NULL;
    CHECK_OK(NULL, clmad_safetensors_open(state_path, &f));
    const char *kinds[] = {"sgd", "adam", "adamw"};
    cr_assert_str_eq(clmad_safetensors_metadata(f, "clmad.optimizer"), kinds[kind]);
    cr_assert_str_eq(clmad_safetensors_metadata(f, "clmad.params"), "2");
    cr_assert_str_eq(clmad_safetensors_metadata(f, "clmad.steps"), "3");
    cr_assert_str_eq(clmad_safetensors_metadata(f, "param.0.step"), "3");
    cr_assert_str_eq(clmad_safetensors_metadata(f, "param.1.step"), "2");
    cr_assert_str_eq(clmad_safetensors_metadata(f, "lr"), "0.050000000000000003");
    clmad_safetensors_entry e;
    CHECK_OK(NULL, clmad_safetensors_entry_at(f, 0, &e));
    cr_assert_str_eq(e.name, kind == CLMAD_OPTIM_SGD ? "param.0.momentum_buffer" : "param.0.exp_avg");
    cr_assert_eq(clmad_safetensors_count(f), kind == CLMAD_OPTIM_SGD ? 2 : 4);
    clmad_safetensors_close(f);
    clmad_optimizer_release(o);
    clmad_tensor_release(p[0]);
    clmad_tensor_release(p[1]);
    clmad_context_release(ctx);
}

Test(optimizer_state, adam_resumes_with_the_same_bits) { resume_gives_the_same_bits(CLMAD_OPTIM_ADAM); }
Test(optimizer_state, adamw_resumes_with_the_same_bits) { resume_gives_the_same_bits(CLMAD_OPTIM_ADAMW); }
Test(optimizer_state, sgd_momentum_resumes_with_the_same_bits) { resume_gives_the_same_bits(CLMAD_OPTIM_SGD); }

Test(optimizer_state, refuses_another_optimizer_and_changes_nothing)
{
    clmad_context *ctx = test_context();
    const char *dir = test_fresh_dir("optim-bad");
    char path[1200], plain[1200];
    snprintf(path, sizeof path, "%s/adam.safetensors", dir);
    snprintf(plain, sizeof plain, "%s/plain.safetensors", dir);
    clmad_tensor *p[2];
    make_params(ctx, &p[0], &p[1]);
    clmad_optimizer *adam = make_optimizer(ctx, CLMAD_OPTIM_ADAM, p);
    for (int s = 0; s < 2; s++)
        train_step(ctx, adam, p[0], p[1], 1);
    CHECK_OK(ctx, clmad_optimizer_save(adam, path));
    clmad_optimizer *sgd = make_optimizer(ctx, CLMAD_OPTIM_SGD, p);
    cr_assert_eq(clmad_optimizer_load(sgd, path), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "the state of a adam optimizer, the optimizer is sgd"), "%s",
              clmad_last_error(ctx));
    /* One parameter instead of two. */
    clmad_optimizer *one = NULL;
    CHECK_OK(ctx, clmad_optimizer_adam(ctx, p, 1, 0.1, &one));
    cr_assert_eq(clmad_optimizer_load(one, path), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "the state of 2 parameters, the optimizer has 1"), "%s",
              clmad_last_error(ctx));
    /* Another shape: the parameters swapped. */
    clmad_tensor *swapped[2] = {p[1], p[0]};
    clmad_optimizer *other = NULL;
    CHECK_OK(ctx, clmad_optimizer_adam(ctx, swapped, 2, 0.1, &other));
    cr_assert_eq(clmad_optimizer_load(other, path), CLMAD_ERR_SHAPE);
    cr_assert_eq(clmad_optimizer_steps(other), 0, "a failed load changed the steps");
    /* A file without clmad's metadata, and a bad step count. */
    const char *names[] = {"w"};
    CHECK_OK(ctx, clmad_save(plain, names, p, 1, NULL));
    cr_assert_eq(clmad_optimizer_load(adam, plain), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "not a file of clmad_optimizer_save"), "%s", clmad_last_error(ctx));
    const char *meta[] = {"clmad.optimizer", "adam", "clmad.params", "2", "clmad.steps", "-1", NULL};
    CHECK_OK(ctx, clmad_save(plain, names, p, 1, meta));
    cr_assert_eq(clmad_optimizer_load(adam, plain), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "metadata \"clmad.steps\" is \"-1\""), "%s", clmad_last_error(ctx));
    cr_assert_eq(clmad_optimizer_steps(adam), 2);
    cr_assert_eq(clmad_optimizer_save(NULL, path), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_optimizer_load(adam, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    clmad_optimizer_release(adam);
    clmad_optimizer_release(sgd);
    clmad_optimizer_release(one);
    clmad_optimizer_release(other);
    clmad_tensor_release(p[0]);
    clmad_tensor_release(p[1]);
    clmad_context_release(ctx);
}
