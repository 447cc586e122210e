/* SPDX-License-Identifier: Apache-2.0 */
#include "runtime/context.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where a message is looked for (clmad.h, clmad_last_error): every failure
 * takes a stamp from one process-wide counter, so that "newer" compares
 * failures across contexts. A thread keeps two messages: `loose`, its last
 * failure that had no context (a NULL or unowned argument), and `last`, a
 * copy of its last failure of any kind. clmad_last_error(ctx) is the newer
 * of ctx's message and this thread's loose one; clmad_last_error(NULL) is
 * this thread's last. */
typedef struct thread_messages {
    clmad_message loose, last;
} thread_messages;

static _Thread_local thread_messages thread_msgs;
static atomic_uint_fast64_t stamps;

/* A thread's message texts are on the heap: a key whose destructor frees
 * them when the thread exits (thread-local storage alone would leak them). */
static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;
static int thread_key_made;

static void message_free(clmad_message *m)
{
    free(m->text);
    *m = (clmad_message){0};
}

static void thread_messages_free(void *p)
{
    thread_messages *t = p;
    message_free(&t->loose);
    message_free(&t->last);
}

static void thread_key_create(void)
{
    thread_key_made = pthread_key_create(&thread_key, thread_messages_free) == 0;
}

#if defined(__GNUC__)
/* A shared clmad unloaded by dlclose leaves no destructor to call behind. */
__attribute__((destructor)) static void thread_key_delete(void)
{
    if (thread_key_made)
        pthread_key_delete(thread_key);
    thread_key_made = 0;
}
#endif

static void message_set(clmad_message *m, uint64_t stamp, const char *fmt, va_list ap)
{
    m->stamp = stamp;
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        n = 0;
    if ((size_t)n + 1 > m->cap) {
        char *grown = realloc(m->text, (size_t)n + 1);
        if (!grown) {
            /* Keep what fits in the old buffer rather than lose the message. */
            if (m->cap > 0)
                vsnprintf(m->text, m->cap, fmt, ap);
            return;
        }
        m->text = grown;
        m->cap = (size_t)n + 1;
        if (m == &thread_msgs.loose || m == &thread_msgs.last) {
            pthread_once(&thread_key_once, thread_key_create);
            if (thread_key_made)
                pthread_setspecific(thread_key, &thread_msgs);
        }
    }
    vsnprintf(m->text, m->cap, fmt, ap);
}

static void message_copy(clmad_message *to, const clmad_message *from, ...)
{
    va_list ap;
    va_start(ap, from);
    message_set(to, from->stamp, "%s", ap);
    va_end(ap);
}

/* Records a failure on ctx, or as this thread's loose message, and copies
 * it as this thread's last. The message is bookkeeping, not part of the
 * context's logical state: recording it is allowed through a const pointer. */
static void record(const clmad_context *ctx, const char *fmt, va_list ap)
{
    clmad_message *m = ctx ? (clmad_message *)&ctx->error : &thread_msgs.loose;
    message_set(m, atomic_fetch_add(&stamps, 1) + 1, fmt, ap);
    if (m->text)
        message_copy(&thread_msgs.last, m, m->text);
}

clmad_status clmad__fail(const clmad_context *ctx, clmad_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(ctx, fmt, ap);
    va_end(ap);
    return s;
}

clmad_status clmad_set_error(const clmad_context *ctx, clmad_status s, const char *fmt, ...)
{
    if (!fmt)
        return clmad__fail(ctx, s, "(no message)");
    va_list ap;
    va_start(ap, fmt);
    record(ctx, fmt, ap);
    va_end(ap);
    return s;
}

void clmad__clear_thread_error(void)
{
    thread_messages *t = &thread_msgs;
    clmad_message *ms[2] = {&t->loose, &t->last};
    for (int i = 0; i < 2; i++) {
        if (ms[i]->text)
            ms[i]->text[0] = '\0';
        ms[i]->stamp = 0;
    }
}

/* The context of this thread's last refused call (CLMAD_ERR_CONCURRENT_USE). */
static _Thread_local const clmad_context *refused_ctx;

clmad_status clmad__refuse_concurrent(const clmad_context *ctx, const char *call)
{
    refused_ctx = ctx;
    return clmad__fail(NULL, CLMAD_ERR_CONCURRENT_USE,
                       "%s: context used from two threads at once; use one context per thread or "
                       "your own lock",
                       call);
}

void clmad__forget_refusal(const clmad_context *ctx)
{
    if (refused_ctx == ctx)
        refused_ctx = NULL;
}

const char *clmad_last_error(const clmad_context *ctx)
{
    /* A refused thread reads its own message, not the context's slot, which
     * belongs to the thread inside the context (context_guard.h). */
    const clmad_message *m = &thread_msgs.last;
    if (ctx)
        m = ctx == refused_ctx || thread_msgs.loose.stamp > ctx->error.stamp ? &thread_msgs.loose
                                                                             : &ctx->error;
    return m->text ? m->text : "";
}

clmad_status clmad__fail_cl(const clmad_context *ctx, cl_int err, const char *what)
{
    clmad_status s = CLMAD_ERR_OPENCL;
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY ||
        err == CL_OUT_OF_RESOURCES || err == CL_INVALID_BUFFER_SIZE)
        s = CLMAD_ERR_OUT_OF_MEMORY;
    return clmad__fail(ctx, s, "%s failed: %s (%d) on device \"%s\"", what,
                       clmad__cl_error_name(err), (int)err,
                       ctx ? ctx->info.name : "(none)");
}

const char *clmad_status_string(clmad_status s)
{
    switch (s) {
#define CLMAD__STATUS_CASE(name, value, text) case name: return #name;
        CLMAD_STATUS_LIST(CLMAD__STATUS_CASE)
#undef CLMAD__STATUS_CASE
    }
    return "CLMAD_ERR_UNKNOWN";
}

#define CL_ERROR_LIST(X)                                                          \
    X(CL_SUCCESS) X(CL_DEVICE_NOT_FOUND) X(CL_DEVICE_NOT_AVAILABLE)               \
    X(CL_COMPILER_NOT_AVAILABLE) X(CL_MEM_OBJECT_ALLOCATION_FAILURE)              \
    X(CL_OUT_OF_RESOURCES) X(CL_OUT_OF_HOST_MEMORY)                               \
    X(CL_PROFILING_INFO_NOT_AVAILABLE) X(CL_MEM_COPY_OVERLAP)                     \
    X(CL_IMAGE_FORMAT_MISMATCH) X(CL_IMAGE_FORMAT_NOT_SUPPORTED)                  \
    X(CL_BUILD_PROGRAM_FAILURE) X(CL_MAP_FAILURE)                                 \
    X(CL_MISALIGNED_SUB_BUFFER_OFFSET)                                            \
    X(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) X(CL_COMPILE_PROGRAM_FAILURE) \
    X(CL_LINKER_NOT_AVAILABLE) X(CL_LINK_PROGRAM_FAILURE)                         \
    X(CL_DEVICE_PARTITION_FAILED) X(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)             \
    X(CL_INVALID_VALUE) X(CL_INVALID_DEVICE_TYPE) X(CL_INVALID_PLATFORM)          \
    X(CL_INVALID_DEVICE) X(CL_INVALID_CONTEXT) X(CL_INVALID_QUEUE_PROPERTIES)     \
    X(CL_INVALID_COMMAND_QUEUE) X(CL_INVALID_HOST_PTR) X(CL_INVALID_MEM_OBJECT)   \
    X(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) X(CL_INVALID_IMAGE_SIZE)                \
    X(CL_INVALID_SAMPLER) X(CL_INVALID_BINARY) X(CL_INVALID_BUILD_OPTIONS)        \
    X(CL_INVALID_PROGRAM) X(CL_INVALID_PROGRAM_EXECUTABLE)                        \
    X(CL_INVALID_KERNEL_NAME) X(CL_INVALID_KERNEL_DEFINITION)                     \
    X(CL_INVALID_KERNEL) X(CL_INVALID_ARG_INDEX) X(CL_INVALID_ARG_VALUE)          \
    X(CL_INVALID_ARG_SIZE) X(CL_INVALID_KERNEL_ARGS)                              \
    X(CL_INVALID_WORK_DIMENSION) X(CL_INVALID_WORK_GROUP_SIZE)                    \
    X(CL_INVALID_WORK_ITEM_SIZE) X(CL_INVALID_GLOBAL_OFFSET)                      \
    X(CL_INVALID_EVENT_WAIT_LIST) X(CL_INVALID_EVENT) X(CL_INVALID_OPERATION)     \
    X(CL_INVALID_GL_OBJECT) X(CL_INVALID_BUFFER_SIZE) X(CL_INVALID_MIP_LEVEL)     \
    X(CL_INVALID_GLOBAL_WORK_SIZE) X(CL_INVALID_PROPERTY)                         \
    X(CL_INVALID_IMAGE_DESCRIPTOR) X(CL_INVALID_COMPILER_OPTIONS)                 \
    X(CL_INVALID_LINKER_OPTIONS) X(CL_INVALID_DEVICE_PARTITION_COUNT)

const char *clmad__cl_error_name(cl_int err)
{
    switch (err) {
#define X(name) case name: return #name;
        CL_ERROR_LIST(X)
#undef X
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    }
    return "CL_UNKNOWN_ERROR";
}
