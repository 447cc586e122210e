/* The context: one device, its queue, program cache, buffer pool, errors. */
#ifndef CLMAD_CONTEXT_H
#define CLMAD_CONTEXT_H

#include "buffer_pool.h"
#include "error.h"
#include "program.h"

/* A growable message buffer (the last error of a context or a thread). */
typedef struct clmad_message {
    char *text;
    size_t cap;
} clmad_message;

struct clmad_context {
    cl_platform_id platform;
    cl_device_id device;
    cl_context cl;
    cl_command_queue queue;
    clmad_device_info info;
    int fp64;                       /* fp64 usable: device has it and not disabled */
    char *cache_dir;                /* on-disk program cache folder, NULL if off */
    clmad_program_cache programs;
    clmad_buffer_pool pool;
    clmad_stats stats;
    clmad_message error;
};

/* The message slot of ctx, or of this thread when ctx is NULL. */
clmad_message *clmad__message_slot(const clmad_context *ctx);

/* CLMAD_ERR_UNSUPPORTED unless the context can compute in dtype. */
clmad_status clmad__check_dtype(const clmad_context *ctx, clmad_dtype dtype);

#endif
