/* SPDX-License-Identifier: Apache-2.0 */
/* Threads: separate contexts on separate threads are independent. Two
 * threads, each with its own context, run broadcasts and a forward + backward
 * pass (matrix product, broadcast kernel with a branch, sum) at the same
 * time; every result is checked against host formulas, and the gradients of
 * the two threads and of a later single-threaded run must agree bitwise
 * (determinism). Both threads start cold, so they also compile the same
 * programs and write the same on-disk cache entries concurrently.
 * `make test-tsan` runs this file under ThreadSanitizer. */
#include "support.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { R = 24, K = 16, C = 20, ITERS = 4, THREADS = 2 };

static const char *CELL_SRC =
    "T cell(T h, T b, T m)\n"
    "{\n"
    "    T z = ad_add(h, b);\n"
    "    if (ad_val(m) > 0)\n"
    "        return ad_tanh(z);\n"
    "    return ad_mul(ad_sigmoid(z), z);\n"
    "}\n";

/* The host reference of cell and of d cell / d z. */
static double cell_ref(double z, double m, double *dz)
{
    if (m > 0) {
        double t = tanh(z);
        *dz = 1 - t * t;
        return t;
    }
    double s = 1 / (1 + exp(-z));
    *dz = s + z * s * (1 - s);
    return s * z;
}

/* Inputs, the same for every run. */
typedef struct inputs {
    double x[R * K], w[K * C], b[C], m[C];
} inputs;

static void make_inputs(inputs *in)
{
    unsigned s = 12345;
#define RND(lo, hi) (s = s * 1103515245u + 12345u, (lo) + ((hi) - (lo)) * ((s >> 8) & 0xFFFFFF) / 16777216.0)
    for (int i = 0; i < R * K; i++)
        in->x[i] = RND(-1, 1);
    for (int i = 0; i < K * C; i++)
        in->w[i] = RND(-0.5, 0.5);
    for (int j = 0; j < C; j++) {
        in->b[j] = RND(-0.3, 0.3);
        in->m[j] = j % 3 == 0; /* both branches */
    }
#undef RND
}

/* What one run produces. */
typedef struct results {
    double y[R * C];                 /* broadcast of cell over h = x w */
    double gx[R * K], gw[K * C], gb[C];
    double loss;
} results;

typedef struct job {
    const inputs *in;
    clmad_context *ctx; /* created by the caller, or NULL: run() creates its own */
    results out;
    int failed;
    char err[1024];
} job;

static int fail(job *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->err, sizeof j->err, fmt, ap);
    va_end(ap);
    j->failed = 1;
    return 0;
}

#define TRY(call)                                                                                      \
    do {                                                                                               \
        clmad_status st_ = (call);                                                                     \
        if (st_ != CLMAD_OK) {                                                                         \
            fail(j, "%s:%d: %s -> %s: %s", __FILE__, __LINE__, #call, clmad_status_string(st_),       \
                 clmad_last_error(ctx));                                                               \
            goto done;                                                                                 \
        }                                                                                              \
    } while (0)

static int read_f64(clmad_context *ctx, job *j, clmad_tensor *t, double *dst, size_t n)
{
    if (!t || clmad_tensor_numel(t) != n)
        return fail(j, "tensor %p has %zu elements, expected %zu", (void *)t, clmad_tensor_numel(t), n);
    clmad_status st = clmad_tensor_read(t, dst, n * sizeof(double));
    if (st != CLMAD_OK)
        return fail(j, "read: %s: %s", clmad_status_string(st), clmad_last_error(ctx));
    return 1;
}

/* One full run on a context of its own: ITERS times a plain broadcast and a
 * forward + backward pass; the results of every iteration must be the same
 * bits, and are left in j->out. */
static void *run(void *arg)
{
    job *j = arg;
    const inputs *in = j->in;
    clmad_context *ctx = NULL;
    clmad_kernel *k = NULL;
    clmad_tensor *x = NULL, *w = NULL, *b = NULL, *m = NULL;
    results *first = malloc(sizeof *first);
    if (!first) {
        fail(j, "out of memory");
        return NULL;
    }
    clmad_status cst = j->ctx ? CLMAD_OK : clmad_context_create(NULL, &j->ctx);
    ctx = j->ctx;
    if (cst != CLMAD_OK) {
        fail(j, "context: %s: %s", clmad_status_string(cst), clmad_last_error(NULL));
        free(first);
        return NULL;
    }
    size_t sx[2] = {R, K}, sw[2] = {K, C}, sb[1] = {C};
    TRY(clmad_kernel_create(ctx, CELL_SRC, "cell", 3, 1, &k));
    TRY(clmad_tensor_create(ctx, CLMAD_F64, 2, sx, in->x, &x));
    TRY(clmad_tensor_create(ctx, CLMAD_F64, 2, sw, in->w, &w));
    TRY(clmad_tensor_create(ctx, CLMAD_F64, 1, sb, in->b, &b));
    TRY(clmad_tensor_create(ctx, CLMAD_F64, 1, sb, in->m, &m));
    for (int it = 0; it < ITERS; it++) {
        results *r = it == 0 ? first : &j->out;
        clmad_tensor *h = NULL, *y = NULL, *y2 = NULL, *loss = NULL, *g[3] = {NULL, NULL, NULL};
        clmad_tensor *leaves[3] = {x, w, b};
        int ok = 1;
        /* A plain broadcast, no gradient: h computed without the tape. */
        TRY(clmad_set_grad_enabled(ctx, 0));
        TRY(clmad_matmul(ctx, x, w, 0, 0, &h));
        clmad_tensor *bin[3] = {h, b, m};
        TRY(clmad_broadcast(ctx, k, bin, &y));
        TRY(clmad_set_grad_enabled(ctx, 1));
        ok = read_f64(ctx, j, y, r->y, R * C);
        clmad_tensor_release(h);
        clmad_tensor_release(y);
        h = y = NULL;
        if (!ok)
            goto done;
        /* Forward + backward: loss = sum(cell(x w + b, m)). */
        for (int l = 0; l < 3; l++) {
            clmad_tensor_zero_grad(leaves[l]);
            TRY(clmad_tensor_set_requires_grad(leaves[l], 1));
        }
        TRY(clmad_matmul(ctx, x, w, 0, 0, &h));
        clmad_tensor *fin[3] = {h, b, m};
        TRY(clmad_broadcast(ctx, k, fin, &y2));
        TRY(clmad_sum(ctx, y2, 0, NULL, 0, &loss));
        TRY(clmad_backward(ctx, loss, NULL));
        ok = read_f64(ctx, j, loss, &r->loss, 1);
        for (int l = 0; l < 3 && ok; l++) {
            TRY(clmad_tensor_grad(leaves[l], &g[l]));
            ok = read_f64(ctx, j, g[l], l == 0 ? r->gx : l == 1 ? r->gw : r->gb,
                          l == 0 ? R * K : l == 1 ? K * C : C);
        }
        clmad_tensor_release(h);
        clmad_tensor_release(y2);
        clmad_tensor_release(loss);
        for (int l = 0; l < 3; l++)
            clmad_tensor_release(g[l]);
        if (!ok)
            goto done;
        if (it > 0 && memcmp(first, r, sizeof *r) != 0) {
            fail(j, "iteration %d differs from iteration 0", it);
            goto done;
        }
    }
done:
    free(first);
    clmad_tensor_release(x);
    clmad_tensor_release(w);
    clmad_tensor_release(b);
    clmad_tensor_release(m);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
    j->ctx = NULL;
    return NULL;
}

/* The results against host formulas in double precision. */
static void check_against_host(const inputs *in, const results *r, const char *who)
{
    double dz[R * C], loss = 0;
    for (int i = 0; i < R; i++)
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int q = 0; q < K; q++)
                s += in->x[i * K + q] * in->w[q * C + c];
            double y = cell_ref(s + in->b[c], in->m[c], &dz[i * C + c]);
            cr_assert(fabs(r->y[i * C + c] - y) <= 1e-12, "%s: y[%d][%d] = %.17g, expected %.17g", who, i, c,
                      r->y[i * C + c], y);
            loss += y;
        }
    cr_assert(fabs(r->loss - loss) <= 1e-10, "%s: loss %.17g, expected %.17g", who, r->loss, loss);
    for (int c = 0; c < C; c++) {
        double gb = 0;
        for (int i = 0; i < R; i++)
            gb += dz[i * C + c];
        cr_assert(fabs(r->gb[c] - gb) <= 1e-10, "%s: gb[%d] = %.17g, expected %.17g", who, c, r->gb[c], gb);
    }
    for (int q = 0; q < K; q++)
        for (int c = 0; c < C; c++) {
            double gw = 0;
            for (int i = 0; i < R; i++)
                gw += in->x[i * K + q] * dz[i * C + c];
            cr_assert(fabs(r->gw[q * C + c] - gw) <= 1e-10, "%s: gw[%d][%d] = %.17g, expected %.17g", who, q, c,
                      r->gw[q * C + c], gw);
        }
    for (int i = 0; i < R; i++)
        for (int q = 0; q < K; q++) {
            double gx = 0;
            for (int c = 0; c < C; c++)
                gx += dz[i * C + c] * in->w[q * C + c];
            cr_assert(fabs(r->gx[i * K + q] - gx) <= 1e-10, "%s: gx[%d][%d] = %.17g, expected %.17g", who, i, q,
                      r->gx[i * K + q], gx);
        }
}

Test(threads, two_contexts_on_two_threads, .timeout = 600)
{
    if (!test_device_fp64())
        cr_skip_test("the test device has no fp64, which this test computes in");
    static inputs in;
    make_inputs(&in);
    static job jobs[THREADS + 1];
    pthread_t tid[THREADS];
    for (int t = 0; t <= THREADS; t++) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t].in = &in;
    }
    /* The contexts are created here, one after the other (see
     * contexts_created_concurrently), and each is then used by one thread
     * only: creation, compilation, broadcasts, the tape and release run
     * concurrently. */
    for (int t = 0; t < THREADS; t++)
        jobs[t].ctx = test_context();
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_create(&tid[t], NULL, run, &jobs[t]), 0);
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_join(tid[t], NULL), 0);
    for (int t = 0; t < THREADS; t++)
        cr_assert(!jobs[t].failed, "thread %d: %s", t, jobs[t].err);
    /* The same run again, alone on this thread, after both. */
    run(&jobs[THREADS]);
    cr_assert(!jobs[THREADS].failed, "single thread: %s", jobs[THREADS].err);
    for (int t = 0; t <= THREADS; t++) {
        char who[32];
        snprintf(who, sizeof who, t < THREADS ? "thread %d" : "single thread", t);
        check_against_host(&in, &jobs[t].out, who);
    }
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(memcmp(&jobs[t].out, &jobs[THREADS].out, sizeof(results)), 0,
                     "thread %d: results differ bitwise from the single-threaded run", t);
}

/* Two threads create their first contexts at the same moment. POCL 3.1's
 * clGetDeviceIDs is not safe while another thread's first call initialises
 * the devices (the second caller crashes or gets CL_DEVICE_NOT_FOUND);
 * clmad serialises its device enumeration to hide the driver's race. */
static void *create_one(void *arg)
{
    job *j = arg;
    clmad_status st = clmad_context_create(NULL, &j->ctx);
    if (st != CLMAD_OK)
        fail(j, "%s: %s", clmad_status_string(st), clmad_last_error(NULL));
    return NULL;
}

Test(threads, contexts_created_concurrently)
{
    static job jobs[THREADS];
    pthread_t tid[THREADS];
    memset(jobs, 0, sizeof jobs);
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_create(&tid[t], NULL, create_one, &jobs[t]), 0);
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_join(tid[t], NULL), 0);
    int failed = -1;
    for (int t = 0; t < THREADS; t++) {
        if (jobs[t].failed)
            failed = t;
        clmad_context_release(jobs[t].ctx);
    }
    if (failed >= 0)
        cr_assert_fail("thread %d: %s", failed, jobs[failed].err);
}

/* Two threads on ONE context, which the API forbids: every call either
 * does its work right or fails with CLMAD_ERR_CONCURRENT_USE (the context
 * is in a call on the other thread), never a wrong sum or a crash. Without
 * the check, 10-19 sums of 300 per thread were wrong and POCL once freed a
 * buffer twice. Each thread adds its own tensors and reads the sum back. */
enum { SHARED_N = 4096, SHARED_SUMS = 300, SHARED_MAX_SUMS = 100000, SHARED_MAX_REFUSALS = 1000000 };

/* Both threads start together, and go on past SHARED_SUMS until a call was
 * refused on either (up to SHARED_MAX_SUMS): on a loaded 2-core machine one
 * thread could otherwise finish its sums within one time slice, before the
 * other began, and no overlap happen at all. */
static pthread_barrier_t shared_start;
static atomic_int shared_refusals;

typedef struct shared_job {
    clmad_context *ctx;
    int id;
    int iters, done, refused, wrong;
    char err[512];
} shared_job;

/* Counts a refusal; anything else that fails is the test's failure. */
static int shared_status(shared_job *j, clmad_status st, const char *what)
{
    if (st == CLMAD_OK)
        return 1;
    if (st == CLMAD_ERR_CONCURRENT_USE) {
        const char *msg = clmad_last_error(j->ctx);
        if (!strstr(msg, "context used from two threads at once") || !strstr(msg, "clmad_"))
            snprintf(j->err, sizeof j->err, "%s: refusal without the expected message: \"%s\"", what, msg);
        j->refused++;
        atomic_fetch_add(&shared_refusals, 1);
        sched_yield(); /* let the other thread's call end */
        return 0;
    }
    snprintf(j->err, sizeof j->err, "%s: %s: %s", what, clmad_status_string(st), clmad_last_error(j->ctx));
    return 0;
}

static void *hammer(void *arg)
{
    shared_job *j = arg;
    static _Thread_local float a[SHARED_N], b[SHARED_N], c[SHARED_N];
    size_t shape[1] = {SHARED_N};
    /* Until SHARED_SUMS sums were made and a call was refused; a refused
     * iteration is tried again. */
    pthread_barrier_wait(&shared_start);
    for (int it = 0; (j->done < SHARED_SUMS || (!atomic_load(&shared_refusals) && j->done < SHARED_MAX_SUMS)) &&
                     j->refused < SHARED_MAX_REFUSALS && !j->err[0];
         it++) {
        j->iters++;
        for (int i = 0; i < SHARED_N; i++) {
            a[i] = (float)(j->id * 100000 + it);
            b[i] = (float)i;
        }
        clmad_tensor *ta = NULL, *tb = NULL, *tc = NULL;
        if (shared_status(j, clmad_tensor_create(j->ctx, CLMAD_F32, 1, shape, a, &ta), "create a") &&
            shared_status(j, clmad_tensor_create(j->ctx, CLMAD_F32, 1, shape, b, &tb), "create b") &&
            shared_status(j, clmad_add(j->ctx, ta, tb, &tc), "add") &&
            shared_status(j, clmad_tensor_read(tc, c, sizeof c), "read")) {
            j->done++;
            for (int i = 0; i < SHARED_N; i++)
                if (c[i] != a[i] + b[i]) {
                    j->wrong++;
                    break;
                }
        }
        clmad_tensor_release(ta);
        clmad_tensor_release(tb);
        clmad_tensor_release(tc);
    }
    return NULL;
}

Test(threads, one_context_on_two_threads_is_refused, .timeout = 600)
{
    clmad_context *ctx = test_context();
    /* Warm: the add's program is built before the threads start. */
    clmad_tensor *x = NULL, *y = NULL;
    size_t one[1] = {1};
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, one, 1.0, &x));
    CHECK_OK(ctx, clmad_add(ctx, x, x, &y));
    clmad_tensor_release(x);
    clmad_tensor_release(y);
    static shared_job jobs[THREADS];
    pthread_t tid[THREADS];
    for (int t = 0; t < THREADS; t++) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t].ctx = ctx;
        jobs[t].id = t + 1;
    }
    atomic_store(&shared_refusals, 0);
    cr_assert_eq(pthread_barrier_init(&shared_start, NULL, THREADS), 0);
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_create(&tid[t], NULL, hammer, &jobs[t]), 0);
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_join(tid[t], NULL), 0);
    pthread_barrier_destroy(&shared_start);
    int refused = 0;
    for (int t = 0; t < THREADS; t++) {
        fprintf(stderr, "shared context, thread %d: %d iterations, %d sums right, %d wrong, %d calls refused\n", t,
                jobs[t].iters, jobs[t].done - jobs[t].wrong, jobs[t].wrong, jobs[t].refused);
        cr_assert(!jobs[t].err[0], "thread %d: %s", t, jobs[t].err);
        cr_assert_eq(jobs[t].wrong, 0, "thread %d: %d wrong sums of %d", t, jobs[t].wrong, jobs[t].done);
        cr_assert(jobs[t].done >= SHARED_SUMS, "thread %d: %d sums made", t, jobs[t].done);
        refused += jobs[t].refused;
    }
    cr_assert(refused > 0, "no call was refused in %d + %d iterations: the overlap was not detected", jobs[0].iters,
              jobs[1].iters);
    /* The context is whole afterwards, on this thread. */
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, one, 2.0, &x));
    CHECK_OK(ctx, clmad_add(ctx, x, x, &y));
    float v = 0;
    CHECK_OK(ctx, clmad_tensor_read(y, &v, sizeof v));
    cr_assert_eq(v, 4.0f);
    clmad_tensor_release(x);
    clmad_tensor_release(y);
    clmad_context_release(ctx);
}
