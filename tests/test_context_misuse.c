/* SPDX-License-Identifier: Apache-2.0 */
/* Misuse of contexts (issue 13, items 2 and 8):
 * - a tensor or kernel of another context handed to any call fails with
 *   CLMAD_ERR_INVALID_ARGUMENT and a message that names the call, the
 *   argument and "belongs to another context", records nothing and leaves
 *   both contexts working;
 * - a context released before its tensors and kernels lives on until the
 *   last of them goes (as OpenCL does): they can still be read, written and
 *   released, in any order, and new work on the released context is refused.
 * `make test-asan` and `make test-valgrind` check that nothing here touches
 * freed memory or leaks. */
#include "support.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

static const char *SQ_SRC = "T sq_plus(T a, T b) { return ad_add(ad_mul(a, a), b); }\n";

#define SENTINEL ((clmad_tensor *)(uintptr_t)0x5e17)

/* Asserts the status and that the message holds every needle (NULL-terminated). */
#define EXPECT_ERR(ctx, call, status, ...)                                                        \
    do {                                                                                          \
        clmad_status st_ = (call);                                                                \
        const char *msg_ = clmad_last_error(ctx);                                                 \
        cr_assert_eq(st_, (status), "%s -> %s (expected %s): %s", #call, clmad_status_string(st_), \
                     clmad_status_string(status), msg_);                                          \
        const char *needles_[] = {__VA_ARGS__, NULL};                                             \
        for (int n_ = 0; needles_[n_]; n_++)                                                      \
            cr_assert(test_contains(msg_, needles_[n_]), "%s: message lacks \"%s\": %s", #call,  \
                      needles_[n_], msg_);                                                        \
    } while (0)

#define FOREIGN(ctx, call, ...) \
    EXPECT_ERR(ctx, call, CLMAD_ERR_INVALID_ARGUMENT, "belongs to another context", __VA_ARGS__)

static clmad_tensor *filled(clmad_context *ctx, int ndim, const size_t *shape, double v)
{
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, ndim, shape, v, &t));
    return t;
}

static uint64_t tape_nodes(clmad_context *ctx)
{
    clmad_stats s;
    CHECK_OK(ctx, clmad_context_stats(ctx, &s));
    return s.tape_nodes;
}

/* ctx still computes: mine + mine read back. */
static void still_works(clmad_context *ctx, clmad_tensor *mine, float expect)
{
    clmad_tensor *y = NULL;
    CHECK_OK(ctx, clmad_add(ctx, mine, mine, &y));
    float v[4];
    CHECK_OK(ctx, clmad_tensor_read(y, v, sizeof v));
    for (int i = 0; i < 4; i++)
        cr_assert_eq(v[i], expect, "v[%d] = %g, expected %g", i, v[i], expect);
    clmad_tensor_release(y);
}

/* ---- item 2: objects of another context ------------------------------------- */

Test(context_misuse, every_call_refuses_a_tensor_of_another_context)
{
    clmad_context *ca = test_context(), *cb = test_context();
    size_t s[2] = {2, 2}, flat[1] = {4};
    clmad_tensor *a = filled(ca, 2, s, 1), *b = filled(cb, 2, s, 2);
    CHECK_OK(ca, clmad_tensor_set_requires_grad(a, 1));
    clmad_tensor *out = SENTINEL, *out2 = SENTINEL;

    FOREIGN(ca, clmad_add(ca, a, b, &out), "clmad_add", "input 1");
    FOREIGN(ca, clmad_sub(ca, b, a, &out), "clmad_sub", "input 0");
    FOREIGN(ca, clmad_mul(ca, a, b, &out), "clmad_mul");
    FOREIGN(ca, clmad_div(ca, a, b, &out), "clmad_div");
    FOREIGN(ca, clmad_pow(ca, a, b, &out), "clmad_pow");
    FOREIGN(ca, clmad_neg(ca, b, &out), "clmad_neg");
    FOREIGN(ca, clmad_exp(ca, b, &out), "clmad_exp");
    FOREIGN(ca, clmad_log(ca, b, &out), "clmad_log");
    FOREIGN(ca, clmad_tanh(ca, b, &out), "clmad_tanh");
    FOREIGN(ca, clmad_sigmoid(ca, b, &out), "clmad_sigmoid");
    FOREIGN(ca, clmad_relu(ca, b, &out), "clmad_relu");
    FOREIGN(ca, clmad_sqrt(ca, b, &out), "clmad_sqrt");
    FOREIGN(ca, clmad_where(ca, b, a, a, &out), "clmad_where", "input 0");
    FOREIGN(ca, clmad_compare(ca, CLMAD_LT, a, b, &out), "clmad_compare_lt", "input 1");
    FOREIGN(ca, clmad_sum(ca, b, 0, NULL, 0, &out), "clmad_sum", "x");
    FOREIGN(ca, clmad_mean(ca, b, 0, NULL, 0, &out), "clmad_mean", "x");
    FOREIGN(ca, clmad_dot(ca, a, b, &out), "clmad_dot", "b");
    FOREIGN(ca, clmad_matmul(ca, a, b, 0, 0, &out), "clmad_matmul", "b");
    FOREIGN(ca, clmad_matmul(ca, b, a, 0, 0, &out), "clmad_matmul", "a");
    FOREIGN(ca, clmad_slice(ca, b, 0, 0, 1, &out), "clmad_slice", "x");
    clmad_tensor *pair[2] = {a, b};
    FOREIGN(ca, clmad_concat(ca, 2, pair, 0, &out), "clmad_concat", "xs[1]");
    FOREIGN(ca, clmad_reshape(ca, b, 1, flat, &out), "clmad_reshape", "x");
    FOREIGN(ca, clmad_transpose(ca, b, NULL, &out), "clmad_transpose", "x");
    cr_assert_eq(out, SENTINEL, "a failing call wrote its out-parameter");

    /* Broadcast kernels: inputs, tangents, and the kernel itself. */
    clmad_kernel *ka = NULL, *kb = NULL;
    CHECK_OK(ca, clmad_kernel_create(ca, SQ_SRC, "sq_plus", 2, 1, &ka));
    CHECK_OK(cb, clmad_kernel_create(cb, SQ_SRC, "sq_plus", 2, 1, &kb));
    clmad_tensor *mixed[2] = {a, b}, *mine[2] = {a, a}, *parts[2] = {SENTINEL, SENTINEL};
    FOREIGN(ca, clmad_broadcast(ca, ka, mixed, &out), "clmad_broadcast(sq_plus)", "input 1");
    FOREIGN(ca, clmad_broadcast(ca, kb, mine, &out), "clmad_broadcast(sq_plus)", "kernel");
    FOREIGN(ca, clmad_broadcast_partials(ca, ka, mixed, NULL, &out, parts), "clmad_broadcast_partials",
            "input 1");
    clmad_tensor *tangents[2] = {NULL, b};
    FOREIGN(ca, clmad_broadcast_jvp(ca, ka, mine, tangents, &out, &out2), "clmad_broadcast_jvp(sq_plus)",
            "tangent 1");
    cr_assert_eq(out, SENTINEL);
    cr_assert_eq(out2, SENTINEL);
    cr_assert_eq(parts[0], SENTINEL);
    double point[2] = {0.5, 0.25}, worst[2] = {-1, -1};
    FOREIGN(ca, clmad_gradcheck(ca, kb, CLMAD_F32, 1, point, worst), "clmad_gradcheck", "kernel");
    cr_assert_eq(worst[0], -1);

    /* Backward: a loss or a seed of another context. */
    clmad_tensor *loss = NULL, *bloss = NULL, *bs = NULL;
    CHECK_OK(ca, clmad_sum(ca, a, 0, NULL, 0, &loss));
    CHECK_OK(cb, clmad_tensor_set_requires_grad(b, 1));
    CHECK_OK(cb, clmad_sum(cb, b, 0, NULL, 0, &bloss));
    CHECK_OK(cb, clmad_tensor_fill(cb, CLMAD_F32, 0, NULL, 1.0, &bs));
    FOREIGN(ca, clmad_backward(ca, bloss, NULL), "clmad_backward", "loss");
    FOREIGN(ca, clmad_backward(ca, loss, bs), "clmad_backward", "seed");

    /* Nothing was recorded on ca's tape but its own sum, and both contexts work. */
    cr_assert_eq(tape_nodes(ca), 1, "ca's tape has %llu nodes", (unsigned long long)tape_nodes(ca));
    cr_assert_eq(tape_nodes(cb), 1, "cb's tape has %llu nodes", (unsigned long long)tape_nodes(cb));
    CHECK_OK(ca, clmad_backward(ca, loss, NULL));
    clmad_tensor *g = NULL;
    CHECK_OK(ca, clmad_tensor_grad(a, &g));
    float gv[4];
    CHECK_OK(ca, clmad_tensor_read(g, gv, sizeof gv));
    cr_assert_eq(gv[3], 1.0f);
    still_works(ca, a, 2);
    still_works(cb, b, 4);

    clmad_tensor_release(g);
    clmad_tensor_release(loss);
    clmad_tensor_release(bloss);
    clmad_tensor_release(bs);
    clmad_kernel_release(ka);
    clmad_kernel_release(kb);
    clmad_tensor_release(a);
    clmad_tensor_release(b);
    clmad_context_release(ca);
    clmad_context_release(cb);
}

/* The scenario: an operation run on context B over a tensor of A
 * that requires a gradient. It used to succeed and record a node on B's
 * tape holding A's tensor; releasing in the natural order (tensors, A, B)
 * then freed that tensor through A after A was gone. Now each call fails
 * and the natural order is safe. */
Test(context_misuse, cross_context_ops_fail_and_natural_release_is_safe)
{
    clmad_context *ca = test_context(), *cb = test_context();
    size_t s[2] = {2, 2}, flat[1] = {4};
    clmad_tensor *a = filled(ca, 2, s, 1), *b = filled(cb, 2, s, 2);
    CHECK_OK(ca, clmad_tensor_set_requires_grad(a, 1));
    clmad_tensor *out = SENTINEL;
    clmad_tensor *pair[2] = {b, a};
    int perm[2] = {1, 0}, axis[1] = {0};
    FOREIGN(cb, clmad_matmul(cb, b, a, 0, 0, &out), "clmad_matmul", "b");
    FOREIGN(cb, clmad_slice(cb, a, 1, 0, 1, &out), "clmad_slice", "x");
    FOREIGN(cb, clmad_concat(cb, 2, pair, 1, &out), "clmad_concat", "xs[1]");
    FOREIGN(cb, clmad_transpose(cb, a, perm, &out), "clmad_transpose", "x");
    FOREIGN(cb, clmad_sum(cb, a, 1, axis, 0, &out), "clmad_sum", "x");
    FOREIGN(cb, clmad_mean(cb, a, 1, axis, 1, &out), "clmad_mean", "x");
    FOREIGN(cb, clmad_reshape(cb, a, 1, flat, &out), "clmad_reshape", "x");
    cr_assert_eq(out, SENTINEL);
    cr_assert_eq(tape_nodes(cb), 0, "b's tape holds %llu nodes", (unsigned long long)tape_nodes(cb));
    clmad_tensor_release(a);
    clmad_tensor_release(b);
    clmad_context_release(ca);
    clmad_context_release(cb);
}

/* ---- item 8: a context released before its objects ------------------------- */

/* Everything a user may still hold: a leaf with a gradient, the output of a
 * recorded broadcast (the tape holds the leaf and the kernel), a kernel.
 * The context goes first; the objects are then used and released. */
Test(context_misuse, objects_outlive_their_released_context)
{
    clmad_context *ctx = test_context();
    size_t s[1] = {4};
    float xv[4] = {1, 2, 3, 4};
    clmad_tensor *x = NULL, *c = NULL, *y = NULL, *loss = NULL, *g = NULL;
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, s, xv, &x));
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, s, 0.5, &c));
    CHECK_OK(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 2, 1, &k));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    clmad_tensor *in[2] = {x, c};
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_set_retain_tape(ctx, 1));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(x, &g));
    cr_assert_gt(tape_nodes(ctx), 0, "the tape should still hold nodes");

    clmad_context_release(ctx);

    /* The objects still work: read, write, gradients, flags. */
    float v[4];
    CHECK_OK(NULL, clmad_tensor_read(y, v, sizeof v));
    for (int i = 0; i < 4; i++)
        cr_assert_eq(v[i], xv[i] * xv[i] + 0.5f, "y[%d] = %g", i, v[i]);
    CHECK_OK(NULL, clmad_tensor_read(g, v, sizeof v));
    for (int i = 0; i < 4; i++)
        cr_assert_eq(v[i], 2 * xv[i], "grad[%d] = %g", i, v[i]);
    float w[4] = {9, 8, 7, 6};
    CHECK_OK(NULL, clmad_tensor_write(c, w, sizeof w));
    CHECK_OK(NULL, clmad_tensor_read(c, v, sizeof v));
    cr_assert_eq(v[3], 6.0f);
    cr_assert_eq(clmad_tensor_requires_grad(y), 0, "the tape went with the context's release");
    CHECK_OK(NULL, clmad_tensor_set_requires_grad(y, 0));
    clmad_tensor_zero_grad(x);
    clmad_tensor *none = SENTINEL;
    CHECK_OK(NULL, clmad_tensor_grad(x, &none));
    cr_assert_null(none);

    /* Released in an order unrelated to creation; the last one (a kernel)
     * takes the context with it. */
    clmad_tensor_release(loss);
    clmad_tensor_release(x);
    clmad_tensor_release(g);
    clmad_tensor_release(y);
    clmad_tensor_release(c);
    clmad_kernel_release(k);
}

/* A released context that its tensors keep alive takes no new work: that
 * work would keep it alive (tape nodes hold tensors) with nobody left to
 * release it. */
Test(context_misuse, released_context_refuses_new_work)
{
    clmad_context *ctx = test_context();
    size_t s[1] = {4};
    clmad_tensor *x = filled(ctx, 1, s, 3), *out = SENTINEL;
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(x, 1));
    clmad_context_release(ctx);

    EXPECT_ERR(ctx, clmad_add(ctx, x, x, &out), CLMAD_ERR_STATE, "clmad_add", "released");
    EXPECT_ERR(ctx, clmad_sum(ctx, x, 0, NULL, 0, &out), CLMAD_ERR_STATE, "clmad_sum", "released");
    EXPECT_ERR(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, s, 1.0, &out), CLMAD_ERR_STATE, "released");
    clmad_kernel *k = NULL;
    EXPECT_ERR(ctx, clmad_kernel_create(ctx, SQ_SRC, "sq_plus", 2, 1, &k), CLMAD_ERR_STATE, "released");
    cr_assert_null(k);
    cr_assert_eq(out, SENTINEL);
    float v[4];
    CHECK_OK(NULL, clmad_tensor_read(x, v, sizeof v));
    cr_assert_eq(v[0], 3.0f);
    clmad_tensor_release(x);
}

/* Issue 24 item 12: the message of the last failed call is where the user
 * looks, whatever its arguments. A call given NULL (or nothing that names a
 * context) records its message without a context; clmad_last_error(ctx)
 * gives it when it is newer than ctx's own (before: the previous,
 * unrelated message of ctx, or ""), and clmad_last_error(NULL) gives the
 * last failure of this thread, whatever its context. */
static void *fail_without_context(void *arg)
{
    (void)arg;
    clmad_scope_keep(NULL); /* "clmad_scope_keep: t is NULL", on this thread only */
    return NULL;
}

#define EXPECT_MESSAGE(ctx, needle) \
    cr_expect(test_contains(clmad_last_error(ctx), needle), "%s: \"%s\", not \"%s\"", #ctx, \
              clmad_last_error(ctx), needle)

Test(context_misuse, last_error_is_the_last_failed_call)
{
    clmad_context *a = test_context(), *b = test_context();
    clmad_tensor *t, *g = SENTINEL;
    size_t n = 2;
    float v[2];
    CHECK_OK(a, clmad_tensor_zeros(a, CLMAD_F32, 1, &n, &t));
    cr_assert_eq(clmad_last_error(a)[0], '\0', "a fresh context has no message");
    cr_assert_eq(clmad_tensor_read(NULL, v, sizeof v), CLMAD_ERR_INVALID_ARGUMENT);
    EXPECT_MESSAGE(a, "clmad_tensor_read: tensor is NULL");

    cr_assert_eq(clmad_tensor_read(t, v, 1), CLMAD_ERR_INVALID_ARGUMENT); /* on a */
    EXPECT_MESSAGE(a, "host buffer holds 1 bytes");
    EXPECT_MESSAGE(NULL, "host buffer holds 1 bytes");
    cr_assert_eq(clmad_tensor_grad(t, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    EXPECT_MESSAGE(a, "clmad_tensor_grad: NULL argument");
    cr_assert_eq(clmad_tensor_write(NULL, v, sizeof v), CLMAD_ERR_INVALID_ARGUMENT);
    EXPECT_MESSAGE(a, "clmad_tensor_write: tensor is NULL");
    cr_assert_eq(clmad_tensor_grad(NULL, &g), CLMAD_ERR_INVALID_ARGUMENT);
    EXPECT_MESSAGE(a, "clmad_tensor_grad: NULL argument");
    cr_assert_eq(g, SENTINEL, "out-parameter untouched");
    cr_assert_eq(clmad_add(NULL, t, t, &g), CLMAD_ERR_INVALID_ARGUMENT);
    EXPECT_MESSAGE(a, "ctx is NULL");
    EXPECT_MESSAGE(b, "ctx is NULL");

    /* A failure on b is b's: a keeps the newer of its own and the thread's
     * failures without a context; NULL gives the last of all. */
    clmad_tensor *u;
    cr_assert_eq(clmad_tensor_zeros(b, CLMAD_F32, -1, &n, &u), CLMAD_ERR_INVALID_ARGUMENT);
    EXPECT_MESSAGE(b, "rank -1");
    EXPECT_MESSAGE(NULL, "rank -1");
    EXPECT_MESSAGE(a, "ctx is NULL");

    /* Another thread's failures without a context stay its own. */
    pthread_t tid;
    cr_assert_eq(pthread_create(&tid, NULL, fail_without_context, NULL), 0);
    cr_assert_eq(pthread_join(tid, NULL), 0);
    EXPECT_MESSAGE(a, "ctx is NULL");
    EXPECT_MESSAGE(NULL, "rank -1");

    clmad_tensor_release(t);
    clmad_context_release(b);
    clmad_context_release(a);
}
