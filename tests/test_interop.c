/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_cl.h: a context on the caller's OpenCL context, device and queue,
 * the caller's buffers as tensors, reference counts, offsets, errors.
 * The cases are functions run by one Criterion test (end of file): a test
 * is a process, and a process per case cost seconds each under valgrind.
 * Each case opens OpenCL objects of its own and counts references relative
 * to what they hold when it starts, so cases before it change nothing. */
#include "support.h"

#include <clmad_cl.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* What an OpenCL program has before it meets clmad. */
typedef struct app {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
} app;

/* The queue of the last app opened: settled() drains it. */
static cl_command_queue last_queue;

static app app_open(void)
{
    app a;
    memset(&a, 0, sizeof a);
    cr_assert_eq(clGetPlatformIDs(1, &a.platform, NULL), CL_SUCCESS, "%sclGetPlatformIDs", test_case());
    cr_assert_eq(clGetDeviceIDs(a.platform, CL_DEVICE_TYPE_ALL, 1, &a.device, NULL), CL_SUCCESS,
                 "%sclGetDeviceIDs", test_case());
    cl_int err;
    a.context = clCreateContext(NULL, 1, &a.device, NULL, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS, "%sclCreateContext: %d", test_case(), (int)err);
    a.queue = clCreateCommandQueue(a.context, a.device, 0, &err);
    cr_assert_eq(err, CL_SUCCESS, "%sclCreateCommandQueue: %d", test_case(), (int)err);
    last_queue = a.queue;
    return a;
}

static void app_close(app *a)
{
    cr_assert_eq(clReleaseCommandQueue(a->queue), CL_SUCCESS, "%sclReleaseCommandQueue", test_case());
    cr_assert_eq(clReleaseContext(a->context), CL_SUCCESS, "%sclReleaseContext", test_case());
}

static cl_uint context_refs(cl_context c)
{
    cl_uint n = 0;
    cr_assert_eq(clGetContextInfo(c, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, NULL), CL_SUCCESS,
                 "%sclGetContextInfo", test_case());
    return n;
}

static cl_uint queue_refs(cl_command_queue q)
{
    cl_uint n = 0;
    cr_assert_eq(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, NULL), CL_SUCCESS,
                 "%sclGetCommandQueueInfo", test_case());
    return n;
}

static cl_uint mem_refs(cl_mem m)
{
    cl_uint n = 0;
    cr_assert_eq(clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof n, &n, NULL), CL_SUCCESS,
                 "%sclGetMemObjectInfo", test_case());
    return n;
}

/* The count of `refs(obj)` once it is `want`, or after 5 s: an
 * implementation may hold references while it retires the commands that
 * used an object (rusticl does, on a thread of its own, under load), so
 * the app's queue is drained between looks. */
static cl_uint settled(cl_uint (*refs)(void *), void *obj, cl_uint want)
{
    cl_uint n = refs(obj);
    for (int i = 0; n != want && i < 1000; i++) {
        if (last_queue)
            clFinish(last_queue);
        struct timespec ms = {0, 5000000};
        nanosleep(&ms, NULL);
        n = refs(obj);
    }
    return n;
}
static cl_uint context_refs_v(void *c) { return context_refs(c); }
static cl_uint queue_refs_v(void *q) { return queue_refs(q); }
static cl_uint mem_refs_v(void *m) { return mem_refs(m); }

/* ". " and the optional message of SETTLED_EQ, or "" without one. */
static const char *settled_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *settled_note(const char *fmt, ...)
{
    static char note[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof note, fmt, ap);
    va_end(ap);
    return strcmp(note, ". ") ? note : "";
}

/* Asserts that kind's reference count of obj settles at want; the message
 * names the case, the object and the count, then the optional printf-style
 * message. */
#define SETTLED_EQ(kind, obj, want, ...)                                                                       \
    do {                                                                                                       \
        cl_uint settled_ = settled(kind##_refs_v, (obj), (want));                                              \
        cr_assert_eq(settled_, (want), "%s" #kind " references of " #obj ": %u, expected %u%s", test_case(),   \
                     settled_, (cl_uint)(want), settled_note(". " __VA_ARGS__));                              \
    } while (0)

static cl_mem app_buffer(app *a, cl_mem_flags flags, size_t bytes, const void *host)
{
    cl_int err;
    cl_mem m = clCreateBuffer(a->context, flags | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                              (void *)host, &err);
    cr_assert_eq(err, CL_SUCCESS, "%sclCreateBuffer of %zu bytes: %d", test_case(), bytes, (int)err);
    return m;
}

static clmad_context *app_clmad(app *a)
{
    clmad_context *ctx = NULL;
    clmad_status st = clmad_context_create_cl(a->context, a->device, a->queue, NULL, &ctx);
    cr_assert_eq(st, CLMAD_OK, "%s%s: %s", test_case(), clmad_status_string(st), clmad_last_error(NULL));
    return ctx;
}

/* The device's sub-buffer alignment in bytes. */
static size_t base_align(cl_device_id d)
{
    cl_uint bits = 0;
    cr_assert_eq(clGetDeviceInfo(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL), CL_SUCCESS,
                 "%sclGetDeviceInfo", test_case());
    return bits / 8;
}

static void context_on_the_callers_objects_holds_and_drops_only_its_references(void)
{
    app a = app_open();
    cl_mem buf = app_buffer(&a, CL_MEM_READ_WRITE, 4 * sizeof(float), NULL);
    /* An OpenCL implementation may count references of its own: POCL's
     * buffers, programs and kernels hold their context, and a queue that
     * ran a command is held once more (by its last event). So the counts
     * are taken once the caller has used its queue. */
    float zeros[4] = {0};
    cr_assert_eq(clEnqueueWriteBuffer(a.queue, buf, CL_TRUE, 0, sizeof zeros, zeros, 0, NULL, NULL),
                 CL_SUCCESS);
    cl_uint c0 = context_refs(a.context), q0 = queue_refs(a.queue), m0 = mem_refs(buf);

    clmad_context *ctx = app_clmad(&a);
    SETTLED_EQ(context, a.context, c0 + 1);
    SETTLED_EQ(queue, a.queue, q0 + 1);
    cl_context gc = NULL;
    cl_device_id gd = NULL;
    cl_command_queue gq = NULL;
    CHECK_OK(ctx, clmad_context_get_cl(ctx, &gc, &gd, &gq));
    cr_assert(gc == a.context && gd == a.device && gq == a.queue);
    CHECK_OK(ctx, clmad_context_get_cl(ctx, NULL, NULL, NULL));
    clmad_device_info info;
    CHECK_OK(ctx, clmad_context_device(ctx, &info));
    cr_assert_eq(info.platform_index, 0);
    cr_assert_eq(info.device_index, 0);

    size_t n = 4;
    clmad_tensor *t = NULL, *own = NULL, *sum = NULL;
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, buf, 0, CLMAD_F32, 1, &n, &t));
    cr_assert_geq(mem_refs(buf), m0 + 1);
    /* clmad's own objects come and go without touching the caller's (but
     * for the references an implementation's kernels may keep to their
     * last arguments until the kernels go: rusticl's do). */
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 1, &n, 2.0, &own));
    CHECK_OK(ctx, clmad_tensor_copy(t, own));
    CHECK_OK(ctx, clmad_sum(ctx, t, 0, NULL, 0, &sum));
    float s = 0;
    CHECK_OK(ctx, clmad_tensor_read(sum, &s, sizeof s));
    cr_assert_eq(s, 8.0f);
    clmad_tensor_release(own);
    clmad_tensor_release(sum);
    cr_assert_geq(settled(mem_refs_v, buf, m0 + 1), m0 + 1);

    /* The context released first: its tensor keeps it, and the OpenCL
     * objects, until the tensor goes. */
    clmad_context_release(ctx);
    cr_assert_geq(context_refs(a.context), c0 + 1);
    cr_assert_geq(queue_refs(a.queue), q0 + 1);
    clmad_tensor_release(t);
    /* Once the queue is idle: rusticl holds a reference to a queue while
     * work it ran is being retired (3 for 2 right after the release). */
    cr_assert_eq(clFinish(a.queue), CL_SUCCESS);
    SETTLED_EQ(mem, buf, m0);
    SETTLED_EQ(context, a.context, c0);
    SETTLED_EQ(queue, a.queue, q0, "%u %u", queue_refs(a.queue), q0);

    /* The caller's objects still work. */
    float back[4];
    cr_assert_eq(clEnqueueReadBuffer(a.queue, buf, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL),
                 CL_SUCCESS);
    cr_assert_eq(back[3], 2.0f);
    clReleaseMemObject(buf);
    app_close(&a);
}

static void the_caller_may_drop_its_references_first(void)
{
    app a = app_open();
    clmad_context *ctx = app_clmad(&a);
    size_t n = 3;
    const float v[] = {1, 2, 3};
    cl_mem buf = app_buffer(&a, CL_MEM_READ_WRITE, sizeof v, v);
    clmad_tensor *t = NULL, *y = NULL;
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, buf, 0, CLMAD_F32, 1, &n, &t));
    /* The caller is done with its objects; clmad's references keep them. */
    clReleaseMemObject(buf);
    app_close(&a);
    SETTLED_EQ(mem, buf, 1);
    CHECK_OK(ctx, clmad_mul(ctx, t, t, &y));
    float out[3];
    CHECK_OK(ctx, clmad_tensor_read(y, out, sizeof out));
    cr_assert(out[0] == 1 && out[1] == 4 && out[2] == 9);
    clmad_tensor_release(y);
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

static void a_queue_of_clmads_own_on_the_callers_context(void)
{
    app a = app_open();
    cl_uint c0 = context_refs(a.context), q0 = queue_refs(a.queue);
    clmad_context *ctx = NULL;
    CHECK_OK(NULL, clmad_context_create_cl(a.context, a.device, NULL, NULL, &ctx));
    cl_command_queue q = NULL;
    CHECK_OK(ctx, clmad_context_get_cl(ctx, NULL, NULL, &q));
    cr_assert(q && q != a.queue);
    cl_context qc = NULL;
    clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof qc, &qc, NULL);
    cr_assert_eq(qc, a.context);
    SETTLED_EQ(queue, a.queue, q0);
    clmad_context_release(ctx);
    SETTLED_EQ(context, a.context, c0);
    app_close(&a);
}

static void bad_context_arguments_take_no_reference(void)
{
    app a = app_open(), b = app_open();
    cl_uint c0 = context_refs(a.context), q0 = queue_refs(a.queue), qb = queue_refs(b.queue);
    clmad_context *ctx = NULL;
    cr_assert_eq(clmad_context_create_cl(NULL, a.device, a.queue, NULL, &ctx), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(NULL), "context is NULL"), "%s%s", test_case(),
              clmad_last_error(NULL));
    cr_assert_eq(clmad_context_create_cl(a.context, NULL, a.queue, NULL, &ctx), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_context_create_cl(a.context, a.device, a.queue, NULL, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    /* A queue of another OpenCL context. */
    cr_assert_eq(clmad_context_create_cl(a.context, a.device, b.queue, NULL, &ctx), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(NULL), "queue belongs to another context"), "%s%s", test_case(),
              clmad_last_error(NULL));
    clmad_options opt;
    clmad_options_init(&opt);
    opt.device = "cpu";
    cr_assert_eq(clmad_context_create_cl(a.context, a.device, a.queue, &opt, &ctx), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(NULL), "opt->device must be NULL"), "%s%s", test_case(),
              clmad_last_error(NULL));
    opt.device = NULL;
    opt.chunk_cap = 65;
    cr_assert_eq(clmad_context_create_cl(a.context, a.device, a.queue, &opt, &ctx), CLMAD_ERR_INVALID_ARGUMENT);
    /* An out-of-order queue, where the device makes one. */
    cl_int err;
    cl_command_queue ooo = clCreateCommandQueue(a.context, a.device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
    if (err == CL_SUCCESS) {
        cr_assert_eq(clmad_context_create_cl(a.context, a.device, ooo, NULL, &ctx), CLMAD_ERR_UNSUPPORTED);
        cr_assert(test_contains(clmad_last_error(NULL), "in-order queue"), "%s%s", test_case(),
                  clmad_last_error(NULL));
        SETTLED_EQ(queue, ooo, 1);
        clReleaseCommandQueue(ooo);
    }
    cr_assert_null(ctx);
    SETTLED_EQ(context, a.context, c0);
    SETTLED_EQ(queue, a.queue, q0);
    SETTLED_EQ(queue, b.queue, qb);
    app_close(&a);
    app_close(&b);
}

static void wrap_at_an_offset_reads_and_writes_only_its_elements(void)
{
    app a = app_open();
    clmad_context *ctx = app_clmad(&a);
    size_t align = base_align(a.device), first = align / sizeof(float), total = 2 * first + 8;
    float host[1024];
    cr_assert(total <= 1024);
    for (size_t i = 0; i < total; i++)
        host[i] = (float)i;
    cl_mem buf = app_buffer(&a, CL_MEM_READ_WRITE, total * sizeof(float), host);
    cl_uint m0 = mem_refs(buf);

    /* Elements [first, first + 6) as a 2 x 3 tensor. */
    size_t shape[] = {2, 3};
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, buf, align, CLMAD_F32, 2, shape, &t));
    cr_assert_geq(mem_refs(buf), m0 + 1);
    cl_mem got = NULL;
    size_t off = 1;
    CHECK_OK(ctx, clmad_tensor_get_cl(t, &got, &off));
    cr_assert(got == buf && off == align);
    float v[6];
    CHECK_OK(ctx, clmad_tensor_read(t, v, sizeof v));
    for (int i = 0; i < 6; i++)
        cr_assert_eq(v[i], (float)(first + (size_t)i));

    /* Writes through the tensor land at the offset, and nowhere else. */
    clmad_tensor *minus = NULL;
    CHECK_OK(ctx, clmad_tensor_fill(ctx, CLMAD_F32, 2, shape, -1.0, &minus));
    CHECK_OK(ctx, clmad_tensor_copy(t, minus));
    float back[1024];
    cr_assert_eq(clEnqueueReadBuffer(a.queue, buf, CL_TRUE, 0, total * sizeof(float), back, 0, NULL, NULL),
                 CL_SUCCESS);
    for (size_t i = 0; i < total; i++)
        cr_assert_eq(back[i], i >= first && i < first + 6 ? -1.0f : (float)i, "%selement %zu", test_case(), i);

    /* A sub-buffer of the caller's (from element `first` on), wrapped at
     * an offset: made from its parent, at the sum of the offsets. */
    cl_buffer_region region = {align, align + 8 * sizeof(float)};
    cl_int err;
    cl_mem sub = clCreateSubBuffer(buf, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    cr_assert_eq(err, CL_SUCCESS);
    size_t two = 2;
    clmad_tensor *u = NULL;
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, sub, align, CLMAD_F32, 1, &two, &u));
    CHECK_OK(ctx, clmad_tensor_get_cl(u, &got, &off));
    cr_assert(got == sub && off == align);
    float w[8];
    CHECK_OK(ctx, clmad_tensor_read(u, w, sizeof w));
    cr_assert(w[0] == (float)(2 * first) && w[1] == (float)(2 * first + 1));
    clmad_tensor_release(u);
    u = NULL;
    cr_assert_eq(clmad_tensor_wrap_cl(ctx, sub, sizeof(float), CLMAD_F32, 1, &two, &u),
                 CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "in mem's parent buffer"), "%s%s", test_case(),
              clmad_last_error(ctx));
    cr_assert_null(u);
    /* At offset 0 a sub-buffer is used as it is. */
    size_t eight = 8;
    clmad_tensor *s = NULL;
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, sub, 0, CLMAD_F32, 1, &eight, &s));
    CHECK_OK(ctx, clmad_tensor_read(s, w, sizeof w));
    cr_assert(w[0] == -1.0f && w[6] == (float)(first + 6));
    clmad_tensor_release(s);
    SETTLED_EQ(mem, sub, 1);
    clReleaseMemObject(sub);

    /* The same buffer wrapped twice at offset 0: the tensors share their
     * elements, and a copy between them changes nothing. */
    size_t four = 4;
    clmad_tensor *p = NULL, *q = NULL;
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, buf, 0, CLMAD_F32, 1, &four, &p));
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, buf, 0, CLMAD_F32, 1, &four, &q));
    CHECK_OK(ctx, clmad_tensor_copy(p, q));

    clmad_tensor_release(p);
    clmad_tensor_release(q);
    clmad_tensor_release(minus);
    clmad_tensor_release(t);
    SETTLED_EQ(mem, buf, m0);
    clmad_context_release(ctx);
    clReleaseMemObject(buf);
    app_close(&a);
}

static void get_cl_of_clmads_own_tensors(void)
{
    app a = app_open();
    clmad_context *ctx = app_clmad(&a);
    const float v[] = {5, 6, 7};
    size_t n = 3, zero = 0;
    clmad_tensor *t = NULL, *e = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, v, &t));
    cl_mem m = NULL;
    size_t off = 99;
    CHECK_OK(ctx, clmad_tensor_get_cl(t, &m, &off));
    cr_assert(m != NULL && off == 0);
    /* The caller reads it on the shared queue, in order after the write. */
    float back[3];
    cr_assert_eq(clEnqueueReadBuffer(a.queue, m, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL), CL_SUCCESS);
    cr_assert(back[0] == 5 && back[2] == 7);
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, &zero, &e));
    CHECK_OK(ctx, clmad_tensor_get_cl(e, &m, &off));
    cr_assert(m == NULL && off == 0);
    CHECK_OK(ctx, clmad_tensor_get_cl(t, NULL, NULL));
    cr_assert_eq(clmad_tensor_get_cl(NULL, &m, &off), CLMAD_ERR_INVALID_ARGUMENT);
    clmad_tensor_release(t);
    clmad_tensor_release(e);
    clmad_context_release(ctx);
    app_close(&a);
}

static void bad_buffers_are_refused_with_their_reason(void)
{
    app a = app_open(), b = app_open();
    clmad_context *ctx = app_clmad(&a);
    size_t n = 4, align = base_align(a.device);
    cl_mem buf = app_buffer(&a, CL_MEM_READ_WRITE, 2 * align + 64, NULL);
    cl_mem far = app_buffer(&b, CL_MEM_READ_WRITE, 64, NULL);
    cl_mem wo = app_buffer(&a, CL_MEM_WRITE_ONLY, 64, NULL);
    cl_uint m0 = mem_refs(buf);
    clmad_tensor *t = NULL;
    const char *msg = clmad_last_error(ctx);

    cr_assert_eq(clmad_tensor_wrap_cl(ctx, NULL, 0, CLMAD_F32, 1, &n, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tensor_wrap_cl(NULL, buf, 0, CLMAD_F32, 1, &n, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tensor_wrap_cl(ctx, buf, 0, CLMAD_F32, 1, &n, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tensor_wrap_cl(ctx, far, 0, CLMAD_F32, 1, &n, &t), CLMAD_ERR_INVALID_ARGUMENT);
    msg = clmad_last_error(ctx);
    cr_assert(test_contains(msg, "another OpenCL context"), "%s%s", test_case(), msg);
    cr_assert_eq(clmad_tensor_wrap_cl(ctx, wo, 0, CLMAD_F32, 1, &n, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "CL_MEM_WRITE_ONLY"), "%s%s", test_case(),
              clmad_last_error(ctx));
    /* Past the end: by size, and by offset. */
    size_t big = (2 * align + 64) / sizeof(float) + 1;
    cr_assert_eq(clmad_tensor_wrap_cl(ctx, buf, 0, CLMAD_F32, 1, &big, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "run past the end"), "%s%s", test_case(),
              clmad_last_error(ctx));
    cr_assert_eq(clmad_tensor_wrap_cl(ctx, buf, 2 * align + 64, CLMAD_F32, 1, &n, &t),
                 CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tensor_wrap_cl(ctx, buf, SIZE_MAX, CLMAD_F32, 1, &n, &t), CLMAD_ERR_INVALID_ARGUMENT);
    /* An offset the device cannot make a sub-buffer at. */
    if (align > sizeof(float)) {
        cr_assert_eq(clmad_tensor_wrap_cl(ctx, buf, sizeof(float), CLMAD_F32, 1, &n, &t),
                     CLMAD_ERR_INVALID_ARGUMENT);
        msg = clmad_last_error(ctx);
        cr_assert(test_contains(msg, "CL_DEVICE_MEM_BASE_ADDR_ALIGN"), "%s%s", test_case(), msg);
        cr_assert(test_contains(msg, "offset 4 is not a multiple of"), "%s%s", test_case(), msg);
    }
    /* Rank and shape as for clmad_tensor_create. */
    cr_assert_eq(clmad_tensor_wrap_cl(ctx, buf, 0, CLMAD_F32, CLMAD_MAX_DIMS + 1, &n, &t),
                 CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_tensor_wrap_cl(ctx, buf, 0, CLMAD_F32, 1, NULL, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_null(t);
    SETTLED_EQ(mem, buf, m0);

    /* An empty tensor needs no bytes, even at the end of the buffer. */
    size_t zero = 0;
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, buf, 2 * align + 64, CLMAD_F32, 1, &zero, &t));
    cl_mem got = NULL;
    size_t off = 0;
    CHECK_OK(ctx, clmad_tensor_get_cl(t, &got, &off));
    cr_assert(got == buf && off == 2 * align + 64);
    clmad_tensor_release(t);
    t = NULL;

    /* A released context makes no new tensors (a tensor keeps it here). */
    clmad_tensor *keep = NULL;
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, &n, &keep));
    clmad_context_release(ctx);
    cr_assert_eq(clmad_tensor_wrap_cl(ctx, buf, 0, CLMAD_F32, 1, &n, &t), CLMAD_ERR_STATE);
    cr_assert_null(t);
    clmad_tensor_release(keep);
    SETTLED_EQ(mem, buf, m0);
    clReleaseMemObject(buf);
    clReleaseMemObject(far);
    clReleaseMemObject(wo);
    app_close(&a);
    app_close(&b);
}

/* Issue 24 item 9: a CL_MEM_READ_ONLY buffer (or a sub-buffer that
 * inherits that access) gives a read-only tensor. Every call that would
 * write into it is refused, naming the argument, and its bytes stay as
 * they were (before: clmad_tensor_copy and clmad_tensor_axpby wrote it,
 * undefined in OpenCL, and the new values showed). Reading it, and using
 * it as an input with a gradient, work. */
static void read_only_buffers_are_never_written(void)
{
    app a = app_open();
    clmad_context *ctx = app_clmad(&a);
    const float init[4] = {1, 2, 3, 4}, other[4] = {-5, -6, -7, -8};
    size_t n = 4, align = base_align(a.device);
    cl_mem ro = app_buffer(&a, CL_MEM_READ_ONLY, 4 * sizeof(float), init);
    cl_mem ro_big = app_buffer(&a, CL_MEM_READ_ONLY, align + 4 * sizeof(float), NULL);
    cl_buffer_region region = {0, 4 * sizeof(float)};
    cl_int err;
    cl_mem sub = clCreateSubBuffer(ro_big, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    cr_assert_eq(err, CL_SUCCESS);
    clmad_tensor *t[2], *src, *p;
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, ro, 0, CLMAD_F32, 1, &n, &t[0]));
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, sub, 0, CLMAD_F32, 1, &n, &t[1]));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, other, &src));
    clmad_staging *stage;
    CHECK_OK(ctx, clmad_staging_create(ctx, 4 * sizeof(float), &stage));
    for (int k = 0; k < 2; k++) {
        const char *what = k ? "a sub-buffer of a read-only buffer" : "a read-only buffer";
        struct {
            clmad_status st;
            const char *needle;
        } refused[4];
        refused[0].st = clmad_tensor_copy(t[k], src);
        refused[0].needle = "clmad_tensor_copy: dst is read-only";
        refused[1].st = clmad_tensor_axpby(t[k], 2.0, NULL, 0.0);
        refused[1].needle = "clmad_tensor_axpby: y is read-only";
        refused[2].st = clmad_tensor_write(t[k], other, sizeof other);
        refused[2].needle = "clmad_tensor_write: the tensor is read-only";
        refused[3].st = clmad_staging_scatter(stage, &t[k], 1);
        refused[3].needle = "clmad_staging_scatter: ts[0] is read-only";
        for (int c = 0; c < 4; c++) {
            cr_expect_eq(refused[c].st, CLMAD_ERR_INVALID_ARGUMENT, "%s%s, \"%s\": %s", test_case(), what,
                         refused[c].needle, clmad_status_string(refused[c].st));
            if (c == 3) /* the message of the last call, with the reason */
                cr_expect(test_contains(clmad_last_error(ctx), refused[c].needle) &&
                              test_contains(clmad_last_error(ctx), "CL_MEM_READ_ONLY"),
                          "%s%s", test_case(), clmad_last_error(ctx));
        }
        clmad_optimizer *o = NULL;
        cr_assert_eq(clmad_optimizer_sgd(ctx, &t[k], 1, 0.1, 0.0, &o), CLMAD_ERR_INVALID_ARGUMENT);
        cr_expect(test_contains(clmad_last_error(ctx), "clmad_optimizer_create: params[0] is read-only"), "%s%s",
                  test_case(), clmad_last_error(ctx));
        cr_assert_null(o);
    }
    float got[4];
    CHECK_OK(ctx, clmad_tensor_read(t[0], got, sizeof got));
    for (int e = 0; e < 4; e++)
        cr_expect_eq(got[e], init[e], "%sro[%d] = %g, written", test_case(), e, got[e]);
    /* Read-only is no obstacle to reading: an input with a gradient. */
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(t[0], 1));
    clmad_tensor *loss, *g;
    CHECK_OK(ctx, clmad_dot(ctx, t[0], t[0], &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(t[0], &g));
    CHECK_OK(ctx, clmad_tensor_read(g, got, sizeof got));
    for (int e = 0; e < 4; e++)
        cr_expect_eq(got[e], 2 * init[e]);
    /* A read-write tensor is still written, and copy from a read-only one works. */
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, &n, &p));
    CHECK_OK(ctx, clmad_tensor_copy(p, t[0]));
    CHECK_OK(ctx, clmad_tensor_read(p, got, sizeof got));
    cr_expect_eq(got[3], 4.0f);
    clmad_tensor *all[] = {loss, g, p, src, t[0], t[1]};
    for (int i = 0; i < 6; i++)
        clmad_tensor_release(all[i]);
    clmad_staging_release(stage);
    clmad_context_release(ctx);
    clReleaseMemObject(sub);
    clReleaseMemObject(ro_big);
    clReleaseMemObject(ro);
    app_close(&a);
}

static void f64_needs_the_device_fp64(void)
{
    app a = app_open();
    clmad_options opt;
    clmad_options_init(&opt);
    opt.disable_fp64 = 1;
    clmad_context *ctx = NULL;
    CHECK_OK(NULL, clmad_context_create_cl(a.context, a.device, a.queue, &opt, &ctx));
    cl_mem buf = app_buffer(&a, CL_MEM_READ_WRITE, 64, NULL);
    size_t n = 2;
    clmad_tensor *t = NULL;
    cr_assert_eq(clmad_tensor_wrap_cl(ctx, buf, 0, CLMAD_F64, 1, &n, &t), CLMAD_ERR_UNSUPPORTED);
    SETTLED_EQ(mem, buf, 1);
    clmad_context_release(ctx);
    clReleaseMemObject(buf);
    app_close(&a);
}

/* loss = sum(tanh(x * w) * y) with x, w and y in the caller's buffers (w at
 * an aligned offset); the gradients of x and w copied into the caller's
 * buffers. The same with clmad's own context and tensors gives the same. */
static void gradients_plain(const float *x, const float *w, const float *y, size_t n, float *gx,
                            float *gw)
{
    clmad_context *ctx = test_context();
    clmad_tensor *tx = NULL, *tw = NULL, *ty = NULL, *p = NULL, *h = NULL, *loss = NULL, *g = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, x, &tx));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, w, &tw));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, &n, y, &ty));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(tx, 1));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(tw, 1));
    CHECK_OK(ctx, clmad_mul(ctx, tx, tw, &p));
    CHECK_OK(ctx, clmad_tanh(ctx, p, &h));
    CHECK_OK(ctx, clmad_dot(ctx, h, ty, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(tx, &g));
    CHECK_OK(ctx, clmad_tensor_read(g, gx, n * sizeof *gx));
    clmad_tensor_release(g);
    CHECK_OK(ctx, clmad_tensor_grad(tw, &g));
    CHECK_OK(ctx, clmad_tensor_read(g, gw, n * sizeof *gw));
    clmad_tensor *all[] = {g, tx, tw, ty, p, h, loss};
    for (int i = 0; i < 7; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
}

static void gradients_into_the_callers_buffers_equal_the_plain_apis(void)
{
    enum { N = 1000 };
    static float x[N], w[N], y[N], gx[N], gw[N], px[N], pw[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)sin(0.1 * i);
        w[i] = (float)cos(0.07 * i);
        y[i] = (float)(i % 7) - 3.0f;
    }
    gradients_plain(x, w, y, N, px, pw);

    app a = app_open();
    size_t align = base_align(a.device), n = N;
    cl_mem bx = app_buffer(&a, CL_MEM_READ_ONLY, sizeof x, NULL);
    cl_mem bw = app_buffer(&a, CL_MEM_READ_WRITE, align + sizeof w, NULL);
    cl_mem by = app_buffer(&a, CL_MEM_READ_WRITE, sizeof y, NULL);
    /* One buffer for both gradients: gx, then gw at the next aligned offset. */
    size_t gw_off = (sizeof gx + align - 1) / align * align;
    cl_mem bg = app_buffer(&a, CL_MEM_READ_WRITE, gw_off + sizeof gw, NULL);
    /* Non-blocking writes: clmad's commands come after them on the queue. */
    cr_assert_eq(clEnqueueWriteBuffer(a.queue, bx, CL_FALSE, 0, sizeof x, x, 0, NULL, NULL), CL_SUCCESS);
    cr_assert_eq(clEnqueueWriteBuffer(a.queue, bw, CL_FALSE, align, sizeof w, w, 0, NULL, NULL), CL_SUCCESS);
    cr_assert_eq(clEnqueueWriteBuffer(a.queue, by, CL_FALSE, 0, sizeof y, y, 0, NULL, NULL), CL_SUCCESS);

    clmad_context *ctx = app_clmad(&a);
    clmad_tensor *tx = NULL, *tw = NULL, *ty = NULL, *tgx = NULL, *tgw = NULL;
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, bx, 0, CLMAD_F32, 1, &n, &tx));
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, bw, align, CLMAD_F32, 1, &n, &tw));
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, by, 0, CLMAD_F32, 1, &n, &ty));
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, bg, 0, CLMAD_F32, 1, &n, &tgx));
    CHECK_OK(ctx, clmad_tensor_wrap_cl(ctx, bg, gw_off, CLMAD_F32, 1, &n, &tgw));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(tx, 1));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(tw, 1));
    clmad_tensor *p = NULL, *h = NULL, *loss = NULL, *g = NULL;
    CHECK_OK(ctx, clmad_mul(ctx, tx, tw, &p));
    CHECK_OK(ctx, clmad_tanh(ctx, p, &h));
    CHECK_OK(ctx, clmad_dot(ctx, h, ty, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(tx, &g));
    CHECK_OK(ctx, clmad_tensor_copy(tgx, g));
    clmad_tensor_release(g);
    CHECK_OK(ctx, clmad_tensor_grad(tw, &g));
    CHECK_OK(ctx, clmad_tensor_copy(tgw, g));
    clmad_tensor_release(g);
    /* The caller reads its own buffers on its queue, after clmad's copies. */
    cr_assert_eq(clEnqueueReadBuffer(a.queue, bg, CL_FALSE, 0, sizeof gx, gx, 0, NULL, NULL), CL_SUCCESS);
    cr_assert_eq(clEnqueueReadBuffer(a.queue, bg, CL_FALSE, gw_off, sizeof gw, gw, 0, NULL, NULL), CL_SUCCESS);
    cr_assert_eq(clFinish(a.queue), CL_SUCCESS);
    for (int i = 0; i < N; i++) {
        cr_assert_float_eq(gx[i], px[i], 1e-6f * (1 + fabsf(px[i])), "%sgx[%d] %g, plain %g", test_case(), i, gx[i],
                           px[i]);
        cr_assert_float_eq(gw[i], pw[i], 1e-6f * (1 + fabsf(pw[i])), "%sgw[%d] %g, plain %g", test_case(), i, gw[i],
                           pw[i]);
    }
    clmad_tensor *all[] = {tx, tw, ty, tgx, tgw, p, h, loss};
    for (int i = 0; i < 8; i++)
        clmad_tensor_release(all[i]);
    clmad_context_release(ctx);
    cl_mem bufs[] = {bx, bw, by, bg};
    for (int i = 0; i < 4; i++) {
        SETTLED_EQ(mem, bufs[i], 1, "buffer %d", i);
        clReleaseMemObject(bufs[i]);
    }
    app_close(&a);
}

/* ---- the test ------------------------------------------------------------- */

/* Every case is f32: no order for a device without fp64. */
Test(interop, all_cases)
{
    RUN_CASE(context_on_the_callers_objects_holds_and_drops_only_its_references);
    RUN_CASE(the_caller_may_drop_its_references_first);
    RUN_CASE(a_queue_of_clmads_own_on_the_callers_context);
    RUN_CASE(bad_context_arguments_take_no_reference);
    RUN_CASE(wrap_at_an_offset_reads_and_writes_only_its_elements);
    RUN_CASE(get_cl_of_clmads_own_tensors);
    RUN_CASE(bad_buffers_are_refused_with_their_reason);
    RUN_CASE(read_only_buffers_are_never_written);
    RUN_CASE(f64_needs_the_device_fp64);
    RUN_CASE(gradients_into_the_callers_buffers_equal_the_plain_apis);
}
