/* SPDX-License-Identifier: Apache-2.0 */
/* The context: one device, its queue, program cache, buffer pool, errors. */
#ifndef CLMAD_CONTEXT_H
#define CLMAD_CONTEXT_H

#include "runtime/buffer_pool.h"
#include "runtime/clblast_tuning.h"
#include "runtime/error.h"
#include "runtime/kernel_ids.h"
#include "runtime/program.h"

#include <stdatomic.h>

/* A growable message buffer (the last error of a context or a thread). */
typedef struct clmad_message {
    char *text;
    size_t cap;
    uint64_t stamp; /* when it was set: error.c's process-wide count of failures */
} clmad_message;

struct clmad_tape;
struct clmad_builtins;

/* The tape's settings (clmad_set_grad_enabled, clmad_set_retain_tape,
 * clmad_set_partials_policy). The nodes are the tape layer's
 * (tape/state.h), made on the first record: NULL reads as an empty tape. */
typedef struct clmad_tape_settings {
    int grad_enabled;        /* recording on (the default) */
    int retain;              /* keep the nodes after backward */
    clmad_partials_policy policy;
    struct clmad_tape *state;
} clmad_tape_settings;

/* How many clmad_dtype values there are (the enum of clmad.h). */
#define CLMAD__DTYPE_COUNT 7

struct clmad_context {
    cl_platform_id platform;
    cl_device_id device;
    cl_context cl;
    cl_command_queue queue;
    clmad_device_info info;
    int fp64;                       /* fp64 usable: device has it and not disabled */
    clmad_tuning tuning;            /* runtime/tuning.c: elements per work-item, default chunk
                                       cap, inline pragma */
    int driver_caches_by_source;    /* the driver's own binary cache ignores what an
                                       #include reads (tuning.c; program.c works around) */
    char *cache_dir;                /* on-disk program cache folder, NULL if off */
    int cache_fd;                   /* that folder, open (when cache_dir is not NULL) */
    char *compiler_env;             /* the environment that changes binaries (program.c),
                                       read at the first program; NULL before */
    clmad_program_cache programs;
    clmad_buffer_pool pool;
    clmad_stats stats;
    int chunk_cap;                  /* 0: the device default */
    int fusion_disabled;            /* CLMAD_PARAM_DISABLE_FUSION (held.h) */
    struct clmad_tensor *held_first; /* tensors whose writing is held back, oldest first */
    int inject_build_failure;       /* tests: broadcast variants of this clmad_mode fail to build
                                       (clmad__inject_build_failure); 0: none */
    int variant_cap;                /* tests: variants a kernel keeps (broadcast/variants.c);
                                       0: CLMAD_MAX_VARIANTS */
    int loss_lanes;                 /* work-items per partial sum of an interleaved loss kernel
                                       (tuning.c; 0: by the device's size, loss_lanes.c) */
    int loss_terms;                 /* a loss kernel summing ranges writes each element's term
                                       for the range pass (tuning.c, codegen_loss.c) */
    int sums_interleaved;           /* tests: no sum by ranges, as on GPUs (reduce.c) */
    int vector_width;               /* elements per work-item of the flat internal kernels
                                       (tuning.c; CLMAD_VW of cl/real.clh) */
    const clmad_clblast_tuning *clblast_f32; /* CLBlast's parameters for F32 GEMMs on the
                                       device (tuning.c); NULL: its own database's */
    clmad_tuned_extras tuned;       /* the device's tuning file's lines beyond clmad_tuning */
    int clblast_checked;            /* gemm.c has set them (or found them set) for the device */
    clmad_message error;
    clmad_tape_settings tape;
    cl_kernel kernels[CLMAD__DTYPE_COUNT][CLMAD_KERNEL_COUNT]; /* [dtype][id], kernels.c */
    size_t reduce_tail_group[CLMAD__DTYPE_COUNT]; /* work-items of clmad_reduce_sum_tail's one group
                                                     (reduce.c); 0 until asked */
    struct clmad_builtins *builtins;          /* the ops layer's (ops/builtins.h), NULL until used */
    /* Scopes (scope.c): every tensor made while one is open, by position;
     * an entry is NULL once the tensor is freed or kept. marks[i] is where
     * open scope i began. paused > 0 while clmad makes tensors it keeps
     * itself (gradients in backward, stored partials, optimizer state). */
    struct {
        struct clmad_tensor **list;
        size_t count, cap;
        size_t *marks;
        size_t depth, marks_cap;
        int paused;
    } scope;
    struct clmad_staging *staging;  /* clmad_context_staging's area, or NULL */
    /* The user's reference (until clmad_context_release) plus one per live
     * tensor and kernel, builtins included: the context is destroyed with
     * the last. A plain int: a context and its objects are used by one
     * thread at a time. Tape nodes and builtins, which the context owns
     * itself, are dropped by clmad_context_release, so they never keep it. */
    int refcount;
    int released;                   /* clmad_context_release was called */
    int device_retained;            /* the caller's device, retained (clmad_context_create_cl) */
    _Atomic(void *) busy_owner;     /* the thread inside a public call on ctx, or NULL
                                       (context_guard.c) */
    clmad_notice_fn notice_fn;      /* clmad_context_set_notice (notice.c); NULL: none */
    void *notice_user;
    int compile_noticed;            /* the first-run compile notice was given (or a
                                       warm-up is saying its own) */
    char warm_up_step[160];         /* the notice of the warm-up's step (ops/warm_up.c),
                                       said if the step compiles; "" outside one */
};

struct clmad_device_entry;

/* Makes a context on dev with the options opt (checked): on the caller's
 * cl context and queue when cl is not NULL (retained; a NULL queue is made
 * on cl), else on new ones. Errors go to clmad_last_error(NULL). */
clmad_status clmad__context_new(const clmad_options *opt, const struct clmad_device_entry *dev,
                                cl_context cl, cl_command_queue queue, clmad_context **out);

/* A tensor or kernel of ctx was made (retain) or has gone (unref; the last
 * reference destroys the context). */
void clmad__context_retain(clmad_context *ctx);
void clmad__context_unref(clmad_context *ctx);

/* Frees the context's own staging area (staging.c). */
void clmad__staging_drop_owned(clmad_context *ctx);

/* clmad_context_release (ops/context_release.c) in two halves around what
 * the layers above drop (the tape, the builtins): begin marks ctx released
 * and waits for its queue; end frees the pooled buffers and drops the
 * user's reference. */
void clmad__context_release_begin(clmad_context *ctx);
void clmad__context_release_end(clmad_context *ctx);

/* CLMAD_ERR_STATE, naming `call`, once the user has released ctx: work
 * that would make objects or record on the tape of a context that only
 * its remaining objects keep alive is refused. */
clmad_status clmad__check_open(const clmad_context *ctx, const char *call);


/* CLMAD_ERR_UNSUPPORTED unless the context can compute in dtype
 * (CLMAD_ERR_INVALID_ARGUMENT for a value outside the enum). */
clmad_status clmad__check_dtype(const clmad_context *ctx, clmad_dtype dtype);

/* 1 for f32 and f64, the dtypes that arithmetic and gradients take. */
int clmad__dtype_is_float(clmad_dtype dtype);
/* CLMAD_F16 or CLMAD_BF16: storage, converted by clmad_cast. */
int clmad__dtype_is_16bit(clmad_dtype dtype);

/* CLMAD_ERR_DTYPE, naming `call` and the argument `what`, when t is an
 * integer tensor: every float-only operation (arithmetic, products,
 * reductions, losses, optimizers) checks its tensors with it, so that an
 * integer tensor is refused rather than read as floats. NULL passes. */
clmad_status clmad__require_float(const clmad_context *ctx, const clmad_tensor *t, const char *call,
                                  const char *what);

/* The dtype a kernel computes dtype's elements in: f32 for a 16-bit float
 * (cl/real.clh), else dtype itself. */
static inline clmad_dtype clmad__compute_dtype(clmad_dtype dtype)
{
    return dtype == CLMAD_F16 || dtype == CLMAD_BF16 ? CLMAD_F32 : dtype;
}

/* The same, letting 16-bit floats through too: the operations that compute
 * on them (broadcasts, sums), in f32. */
clmad_status clmad__require_any_float(const clmad_context *ctx, const clmad_tensor *t, const char *call,
                                      const char *what);

/* CLMAD_ERR_INVALID_ARGUMENT, naming `call` and the field, when a context
 * parameter of opt is out of its bounds (context_params.c). */
clmad_status clmad__check_options(const clmad_options *opt, const char *call);

/* Gives a new ctx the context parameters of opt (checked already). */
void clmad__apply_options(clmad_context *ctx, const clmad_options *opt);

/* clmad_context_set_param for the named setters (clmad_set_chunk_cap,
 * ...): the one checked way to change a parameter, messages naming `call`. */
clmad_status clmad__set_param(clmad_context *ctx, const char *call, clmad_context_param param, int64_t value);

#endif
