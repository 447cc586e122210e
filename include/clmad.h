/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clmad: mixed-mode automatic differentiation on OpenCL.
 *
 * This header is the whole public API and its documentation.
 *
 * Conventions
 * - Every fallible call returns a clmad_status; CLMAD_OK is 0. Results come
 *   back through out-parameters, which are left untouched on failure.
 * - After a failure, clmad_last_error(ctx) describes it: which argument,
 *   which device, the OpenCL error name and code, the compiler's log, also
 *   when the failed call was given a NULL where its context would come
 *   from. clmad_last_error(NULL) is this thread's last failure, whatever
 *   its context (calls that have no context yet, clmad_context_create and
 *   device listing, are read there).
 * - Ownership is stated per call. Objects are released by their _release
 *   call; releasing NULL is a no-op.
 * - Tensors and kernels belong to the context that made them. A call given
 *   a tensor or kernel of another context than its ctx fails with
 *   CLMAD_ERR_INVALID_ARGUMENT, the message naming the call and the
 *   argument ("clmad_concat: xs[1] belongs to another context").
 * - A context is used by one thread at a time, and so are its tensors and
 *   kernels (their reference counts are plain integers); separate contexts
 *   on separate threads are independent. Misuse is detected: a call on a
 *   context (or on one of its tensors, kernels, staging areas, optimizers)
 *   made while another thread is inside a call on the same context fails
 *   with CLMAD_ERR_CONCURRENT_USE and changes nothing; on the refused
 *   thread clmad_last_error(ctx) then reads "CALL: context used from two
 *   threads at once; use one context per thread or your own lock". The
 *   calls that return no status (the _release calls, clmad_tensor_retain,
 *   clmad_tensor_zero_grad, clmad_tape_clear, clmad_optimizer_zero_grad,
 *   clmad_chunk_cap, clmad_scope_depth) wait for the other thread's call to
 *   end instead. The check is a hint, not a lock: with your own lock
 *   around every call, threads may share a context. It costs about 20 ns
 *   per call (an atomic compare-and-swap). Not checked: the getters of one
 *   field (clmad_tensor_ndim, _dim, _numel, _dtype, _requires_grad,
 *   clmad_tensor_get_cl, clmad_context_get_cl, clmad_optimizer_steps),
 *   clmad_last_error and clmad_set_error.
 * - Enum values are only ever appended, never renumbered.
 */
#ifndef CLMAD_H
#define CLMAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLMAD_VERSION_MAJOR 0
#define CLMAD_VERSION_MINOR 1
#define CLMAD_VERSION_PATCH 0
/* The version as one number, (major << 16) | (minor << 8) | patch, and as text. */
#define CLMAD_VERSION_HEX ((CLMAD_VERSION_MAJOR << 16) | (CLMAD_VERSION_MINOR << 8) | CLMAD_VERSION_PATCH)
#define CLMAD_VERSION_TEXT_(a, b, c) #a "." #b "." #c
#define CLMAD_VERSION_TEXT(a, b, c) CLMAD_VERSION_TEXT_(a, b, c)
#define CLMAD_VERSION_STRING CLMAD_VERSION_TEXT(CLMAD_VERSION_MAJOR, CLMAD_VERSION_MINOR, CLMAD_VERSION_PATCH)

/*
 * CLMAD_API marks the functions that libclmad exports; the library is
 * built with -fvisibility=hidden, so everything else stays internal.
 */
#if defined(__GNUC__) && __GNUC__ >= 4
#define CLMAD_API __attribute__((visibility("default")))
#else
#define CLMAD_API
#endif

/* printf-style format checking for clmad_set_error, where the compiler has it. */
#if defined(__GNUC__)
#define CLMAD_FORMAT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLMAD_FORMAT_PRINTF(f, a)
#endif

/** Maximum tensor rank. */
#define CLMAD_MAX_DIMS 8

/* ------------------------------------------------------------------------ */
/* Status                                                                    */
/* ------------------------------------------------------------------------ */

/**
 * Every status, once: X(name, value, description). The enum below and
 * clmad_status_string are made from this list; a program may expand it
 * too, e.g. for its own table of descriptions:
 *
 *     #define ROW(name, value, text) [value] = text,
 *     static const char *const texts[] = {CLMAD_STATUS_LIST(ROW)};
 *
 * Values never change; new statuses are added at the end.
 */
#define CLMAD_STATUS_LIST(X)                                                                    \
    X(CLMAD_OK, 0, "success")                                                                   \
    X(CLMAD_ERR_INVALID_ARGUMENT, 1, "NULL pointer, bad rank, bad value")                       \
    X(CLMAD_ERR_NO_DEVICE, 2, "no OpenCL device, or none matches the request")                  \
    X(CLMAD_ERR_OPENCL, 3, "an OpenCL call failed; the message has its name and code")          \
    X(CLMAD_ERR_OUT_OF_MEMORY, 4, "host or device allocation failed, or too large")             \
    X(CLMAD_ERR_BUILD, 5, "an OpenCL C program failed to compile; the message has the log")     \
    X(CLMAD_ERR_UNSUPPORTED, 6, "not supported here, e.g. f64 on a device without fp64")        \
    X(CLMAD_ERR_SHAPE, 7, "shapes that do not match or broadcast")                              \
    X(CLMAD_ERR_DTYPE, 8, "dtypes that do not match")                                           \
    X(CLMAD_ERR_IO, 9, "a file could not be read or written")                                   \
    X(CLMAD_ERR_STATE, 10, "call not valid in the object's state")                             \
    X(CLMAD_ERR_CONCURRENT_USE, 11, "the context is in a call on another thread")

typedef enum clmad_status {
#define CLMAD_STATUS_ENUMERATOR_(name, value, text) name = value,
    CLMAD_STATUS_LIST(CLMAD_STATUS_ENUMERATOR_)
#undef CLMAD_STATUS_ENUMERATOR_
} clmad_status;

/* ------------------------------------------------------------------------ */
/* Version                                                                   */
/* ------------------------------------------------------------------------ */

/**
 * The version of the library that runs, as CLMAD_VERSION_HEX was when it
 * was built: differs from the header's CLMAD_VERSION_HEX when a program
 * loads another libclmad.so than the one it was compiled against.
 */
CLMAD_API unsigned clmad_version(void);

/** The same as text, e.g. "0.1.0" (CLMAD_VERSION_STRING). Static string. */
CLMAD_API const char *clmad_version_string(void);

/** Name of a status, e.g. "CLMAD_ERR_SHAPE". Static string; never NULL. */
CLMAD_API const char *clmad_status_string(clmad_status s);

/**
 * The layout of this header's structs and the values of its constants as
 * the library that runs was built with them, for bindings that copy them
 * by hand (the Python package compares its copies with these when it
 * loads the library, and refuses one that differs). Names are spelled as
 * in this header:
 *   clmad_abi_struct_size("clmad_stats", &size)         sizeof(clmad_stats)
 *   clmad_abi_field("clmad_stats", "pool_bytes", &offset, &size)
 *                                                       its offsetof and sizeof
 *   clmad_abi_constant("CLMAD_ERR_SHAPE", &value)       7
 * The structs: clmad_device_info, clmad_options, clmad_tuning, clmad_stats,
 * clmad_optimizer_options, clmad_safetensors_entry, each with every field.
 * The constants: every enumerator of this header, CLMAD_MAX_DIMS and
 * CLMAD_VERSION_HEX. Needs no context.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, a name this library does not
 * know: the message, clmad_last_error(NULL), names it).
 */
CLMAD_API clmad_status clmad_abi_struct_size(const char *struct_name, size_t *size);
CLMAD_API clmad_status clmad_abi_field(const char *struct_name, const char *field, size_t *offset, size_t *size);
CLMAD_API clmad_status clmad_abi_constant(const char *name, int64_t *value);

/* ------------------------------------------------------------------------ */
/* Devices                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum clmad_device_type {
    CLMAD_DEVICE_OTHER = 0,
    CLMAD_DEVICE_CPU = 1,
    CLMAD_DEVICE_GPU = 2,
    CLMAD_DEVICE_ACCELERATOR = 3
} clmad_device_type;

/* A device that reports more than one of CPU, GPU and accelerator (Oclgrind,
 * a simulator, reports all three) is CLMAD_DEVICE_OTHER. */

/** The name of a device type: "cpu", "gpu", "accelerator" or "other" (also
 * for a value outside the enum). A static string. */
CLMAD_API const char *clmad_device_type_name(clmad_device_type type);

/** Facts about one OpenCL device, as the driver reports them. */
typedef struct clmad_device_info {
    int platform_index;          /* P in "P:D" */
    int device_index;            /* D in "P:D" (index within its platform) */
    char platform_name[128];
    char name[256];
    char vendor[128];
    char version[128];           /* CL_DEVICE_VERSION, e.g. "OpenCL 3.0 PoCL ..." */
    char driver_version[128];
    clmad_device_type type;
    unsigned compute_units;
    uint64_t global_mem_bytes;
    uint64_t max_alloc_bytes;
    size_t max_work_group_size;
    int fp64;                    /* 1 if the device supports double precision */
    int host_unified_memory;     /* 1 if the device's memory is the host's
                                    (CL_DEVICE_HOST_UNIFIED_MEMORY: CPU devices,
                                    integrated GPUs): a mapped buffer is then the
                                    buffer itself, with no copy */
} clmad_device_info;

/**
 * Lists every device of every platform the OpenCL ICD loader reports.
 * On success *list is a malloc'ed array of *count entries that the caller
 * frees with clmad_device_list_free. Zero devices is a success with
 * *count = 0 and *list = NULL.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT, CLMAD_ERR_OPENCL, CLMAD_ERR_OUT_OF_MEMORY.
 */
CLMAD_API clmad_status clmad_device_list(clmad_device_info **list, size_t *count);

/** Frees a list returned by clmad_device_list. */
CLMAD_API void clmad_device_list_free(clmad_device_info *list);

/**
 * Which entry of `list` clmad would choose for a device request `spec`
 * (the same forms as CLMAD_DEVICE, below). spec NULL or "" means the
 * default: the first GPU, else the first device.
 * Errors: CLMAD_ERR_NO_DEVICE (message lists the devices),
 * CLMAD_ERR_INVALID_ARGUMENT.
 */
CLMAD_API clmad_status clmad_device_choose(const clmad_device_info *list, size_t count,
                                 const char *spec, size_t *index);

/* ------------------------------------------------------------------------ */
/* Context                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct clmad_context clmad_context;

/** Options for clmad_context_create. Initialise with clmad_options_init. */
/* When a broadcast node evaluates the partials (paper section 2.2.3). */
typedef enum clmad_partials_policy {
    /* RECOMPUTE on GPUs (memory-bound: storing partials adds traffic);
     * elsewhere STORE when the stored partials (output elements x active
     * inputs) fit in 1/4 of the device's global memory, else RECOMPUTE. */
    CLMAD_PARTIALS_AUTO = 0,
    /* Dual kernel in the forward pass; the partials are kept until backward.
     * When the loss sums the output (clmad_sum to one value, then
     * clmad_backward without a seed), the stored partials of full-shape
     * inputs become their gradients as they are, with no backward kernel
     * (unless the input already holds a gradient or the tape is retained):
     * put a loss weight inside the kernel, sum(f(x, w)), rather than
     * clmad_dot(f(x), w). */
    CLMAD_PARTIALS_STORE = 1,
    /* Primal kernel forward; in backward one dual kernel fused with the
     * multiply by the output adjoints and the accumulation: nothing kept. */
    CLMAD_PARTIALS_RECOMPUTE = 2
} clmad_partials_policy;

typedef struct clmad_options {
    /* Device request; NULL means: the CLMAD_DEVICE environment variable if
     * set and not empty, else the first GPU, else the first device. Forms:
     * "P:D" (platform and device index, as clmad-info shows), "gpu", "cpu",
     * or a case-insensitive substring of the device name. */
    const char *device;
    /* Folder of the on-disk program cache; NULL means CLMAD_CACHE_DIR, else
     * $XDG_CACHE_HOME/clmad, else $HOME/.cache/clmad. "" disables it.
     * The folder is trusted: its files are loaded as program binaries. A
     * missing folder is made with mode 0700; one not owned by the user or
     * writable by group or others is not used (the disk cache is off and
     * clmad_stats.disk_cache_problem says why). */
    const char *cache_dir;
    /* Pretend the device lacks fp64 (to test the error path). */
    int disable_fp64;
    /* Upper bound of the bytes the buffer pool keeps for reuse;
     * 0 means the default (1/4 of the device's global memory, at most 8 GiB). */
    uint64_t pool_limit_bytes;
    /* Most partials one dual kernel carries (see clmad_set_chunk_cap);
     * 0 means the device default. */
    int chunk_cap;
    /* 1: keep the tape after backward (clmad_set_retain_tape). */
    int retain_tape;
    /* 1: record nothing, the no-grad mode (clmad_set_grad_enabled(ctx, 0)). */
    int disable_grad;
    /* When broadcasts evaluate their partials (clmad_set_partials_policy). */
    clmad_partials_policy partials_policy;
    /* 1: run every call eagerly, holding nothing back for fusion (see
     * CLMAD_PARAM_DISABLE_FUSION). */
    int disable_fusion;
} clmad_options;

/**
 * The context parameters, X(id, value, field, lowest, highest): each is the
 * clmad_options field of the same name (its value when the context is
 * made) and can be read and changed later with clmad_context_get_param and
 * clmad_context_set_param. Values outside lowest..highest are refused
 * (CLMAD_ERR_INVALID_ARGUMENT), at creation and by clmad_context_set_param.
 *   CHUNK_CAP          0 (the device default, see clmad_chunk_cap) or 1..64
 *   POOL_LIMIT_BYTES   0 sets the default (1/4 of the device's global
 *                      memory, at most 8 GiB); the getter reports the
 *                      limit in force. A limit below what the pool keeps
 *                      empties the pool.
 *   RETAIN_TAPE        0 or 1
 *   DISABLE_GRAD       0 (recording on, the default) or 1
 *   PARTIALS_POLICY    a clmad_partials_policy
 *   DISABLE_FUSION     0 (fusion on, the default) or 1. With fusion on, a
 *                      broadcast with one output whose inputs need
 *                      gradients is held back until its consumer is known:
 *                      a loss clmad_dot(y, w) or clmad_sum(y) over it then
 *                      runs as one kernel that never writes y, and backward
 *                      installs the gradients that kernel wrote. Results are
 *                      bitwise those of fusion off; any other call that
 *                      could read y writes it first. The environment
 *                      variable CLMAD_FUSE=0 turns fusion off for every
 *                      context, whatever this parameter says (debugging);
 *                      the getter then reports 1.
 * The named calls (clmad_set_chunk_cap, clmad_set_retain_tape,
 * clmad_set_grad_enabled, clmad_set_partials_policy) set the same values.
 */
#define CLMAD_CONTEXT_PARAMS(X)                                                        \
    X(CLMAD_PARAM_CHUNK_CAP, 0, chunk_cap, 0, 64)                                      \
    X(CLMAD_PARAM_POOL_LIMIT_BYTES, 1, pool_limit_bytes, 0, INT64_MAX)                 \
    X(CLMAD_PARAM_RETAIN_TAPE, 2, retain_tape, 0, 1)                                   \
    X(CLMAD_PARAM_DISABLE_GRAD, 3, disable_grad, 0, 1)                                 \
    X(CLMAD_PARAM_PARTIALS_POLICY, 4, partials_policy, 0, CLMAD_PARTIALS_RECOMPUTE) \
    X(CLMAD_PARAM_DISABLE_FUSION, 5, disable_fusion, 0, 1)

typedef enum clmad_context_param {
#define CLMAD_CONTEXT_PARAM_ENUMERATOR_(id, value, field, lowest, highest) id = value,
    CLMAD_CONTEXT_PARAMS(CLMAD_CONTEXT_PARAM_ENUMERATOR_)
#undef CLMAD_CONTEXT_PARAM_ENUMERATOR_
} clmad_context_param;

/*
 * The environment variable CLMAD_LOG=info makes clmad say on stderr, one
 * "clmad: " line each, when a slow first step starts and how long it took:
 * an OpenCL program compiled from source (in no cache), and the first
 * CLBlast GEMM of a precision in the process, which builds CLBlast's
 * kernels (tens of seconds on POCL). Unset or another value: silent.
 */

/*
 * Compile notices. A first run on a device compiles clmad's OpenCL programs
 * and CLBlast's GEMM kernels: seconds to tens of seconds on POCL, after
 * which the caches (clmad's disk cache, the driver's own) let later runs
 * start at once. So that such a pause does not look like a hang, a context
 * says, once, when it first compiles one of its programs from source (a
 * program found in a cache says nothing):
 *   compiling OpenCL programs for "<device>", first run only (later runs
 *   read them from the caches; clmad-info --warm-up builds them ahead)
 * and clmad_context_warm_up says each step it compiles, "N of M". A
 * run's own count is not known ahead (broadcast kernels build their
 * variants as they are first used), so the first-run notice gives none.
 * Notices go to the function set here; NULL, the default, says nothing: a
 * C library should not write on its host program's stderr unasked.
 * clmad_notice_stderr prints each as one "clmad: <text>" line on stderr;
 * the Python package passes one that writes to sys.stderr (on unless
 * Context(quiet=True)). The environment variable CLMAD_COMPILE_NOTICE, for
 * every context, whatever was set: "0" silences the notices, "1" prints
 * them on stderr where no function is set. fn runs inside the call that
 * compiles, on its thread, and must not call clmad on ctx. The function
 * may be set (or cleared) after clmad_context_release too, while ctx lives.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (ctx NULL).
 */
typedef void (*clmad_notice_fn)(void *user, const char *text);
CLMAD_API clmad_status clmad_context_set_notice(clmad_context *ctx, clmad_notice_fn fn, void *user);
/** A clmad_notice_fn: "clmad: <text>\n" on stderr, in one write (user unused). */
CLMAD_API void clmad_notice_stderr(void *user, const char *text);

/**
 * Builds ahead what a first run on ctx's device compiles on first use,
 * into the caches (the context's, clmad's disk cache, the driver's own),
 * so that a later first run, in this process or (through the disk caches)
 * another one, compiles little:
 *   CLMAD_WARM_UP_PROGRAMS  the programs of clmad's internal kernels
 *     (the files of cl/: fills, copies, reductions, operations along an axis,
 *     index operations, random initialisation, optimizer steps), for each
 *     dtype the device takes (f64 only with fp64; the integer dtypes only
 *     for copies and indexing);
 *   CLMAD_WARM_UP_GEMM  CLBlast's GEMM kernels: one small GEMM per
 *     precision and transposition (CLBlast keeps its programs in the
 *     process's memory; a driver with a cache of its own, such as POCL,
 *     keeps them for later processes). Large GEMMs, which CLBlast runs
 *     through other kernels, are not covered;
 *   CLMAD_WARM_UP_TRAINING  one training step of a small multi-layer
 *     perceptron in f32 (matmul, bias add, relu, the softmax cross-entropy
 *     against int64 labels, backward, an Adam step, a forward pass without
 *     gradients), which builds the broadcast variants such a step uses
 *     under ctx's partials policy and fusion setting. It needs an empty
 *     tape (else CLMAD_ERR_STATE), leaves none, and keeps ctx's settings.
 * flags 0 does nothing. Not built: the other variants of broadcast kernels
 * (the builtins' and the user's), which depend on the operations, modes
 * and broadcasting they meet. The steps are the programs (one per file of
 * cl/ and dtype), CLBlast's kernels of each precision and the training
 * step; a step that compiles says
 * "warm-up on "<device>": N of M: <what>" to the notice function
 * (clmad_context_set_notice; a program found in a cache says nothing, a
 * CLBlast step and the training step always speak: whether CLBlast
 * compiles is not seen).
 * clmad_context_stats counts the programs compiled and those loaded from
 * the disk cache.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (ctx NULL, a flag outside
 * CLMAD_WARM_UP_ALL), CLMAD_ERR_STATE (ctx released; TRAINING with a
 * tape that holds nodes), CLMAD_ERR_BUILD,
 * CLMAD_ERR_OPENCL, CLMAD_ERR_OUT_OF_MEMORY.
 */
typedef enum clmad_warm_up_flags {
    CLMAD_WARM_UP_PROGRAMS = 1,
    CLMAD_WARM_UP_GEMM = 2,
    CLMAD_WARM_UP_TRAINING = 4,
    CLMAD_WARM_UP_ALL = 7
} clmad_warm_up_flags;
CLMAD_API clmad_status clmad_context_warm_up(clmad_context *ctx, unsigned flags);

/** Fills *opt with the defaults described in clmad_options. */
CLMAD_API void clmad_options_init(clmad_options *opt);

/**
 * Creates a context on one device: a queue, a program cache and a buffer
 * pool. opt may be NULL for the defaults. The caller owns *ctx and releases
 * it with clmad_context_release.
 * Errors: CLMAD_ERR_NO_DEVICE (the message lists the devices),
 * CLMAD_ERR_OPENCL, CLMAD_ERR_OUT_OF_MEMORY, CLMAD_ERR_INVALID_ARGUMENT.
 * The message of a failure is in clmad_last_error(NULL).
 */
CLMAD_API clmad_status clmad_context_create(const clmad_options *opt, clmad_context **ctx);

/**
 * Drops the caller's reference to a context. Its tape is cleared at once;
 * the context itself (queue, program cache, pool) lives on until its last
 * tensor and kernel are released, as in OpenCL: they may be released
 * before or after it, in any order, and read and written meanwhile. After
 * this call ctx may be given only to clmad_last_error (while one of its
 * objects lives). Calls that would make new objects on it or record on its
 * tape fail with CLMAD_ERR_STATE while its objects keep it; once they are
 * gone, ctx is freed and any use of it is undefined.
 */
CLMAD_API void clmad_context_release(clmad_context *ctx);

/**
 * Sets a parameter of ctx (CLMAD_CONTEXT_PARAMS) for what runs from now on.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (ctx NULL, an unknown param, a value
 * outside the param's bounds: the message names both).
 */
CLMAD_API clmad_status clmad_context_set_param(clmad_context *ctx, clmad_context_param param, int64_t value);

/**
 * The value of a parameter of ctx in *value: as set, or as the options
 * gave it (POOL_LIMIT_BYTES: the limit in force).
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, an unknown param).
 */
CLMAD_API clmad_status clmad_context_get_param(const clmad_context *ctx, clmad_context_param param,
                                               int64_t *value);

/** The facts of the context's device. */
CLMAD_API clmad_status clmad_context_device(const clmad_context *ctx, clmad_device_info *info);

/**
 * The tuning of a device: the parameters of the kernels clmad generates
 * for it. A context takes them, in this order, from: one table keyed by
 * the platform's vendor, the device type, the driver version and, for
 * CLBlast's parameters of GPUs its database lacks, the device's name
 * (POCL on a CPU: runs of 32 elements per work-item; rusticl, Intel's CPU
 * runtime and GPUs: one element), else a default per device type; then
 * the values `clmad-info --tune` measured for this device and stored in
 * the cache folder (clmad_tuning_save); then the environment
 * (CLMAD_ITEMS_PER_WORK_ITEM). Results do not depend on the tuning beyond
 * the OpenCL spec's rounding; speed does.
 * The table and that file also hold CLBlast's F32 GEMM parameters for
 * devices its database lacks: a line "clblast_xgemm_f32" followed by the 16
 * values clblast_tuner_xgemm prints (GEMMK MWG NWG KWG MDIMC NDIMC MDIMA
 * NDIMB KWI VWM VWN STRM STRN SA SB KREG) and the size from which the tiled
 * kernel runs (XGEMM_MIN_INDIRECT_SIZE), added by hand to the file; and
 * "loss_lanes N" (1..32): work-items per partial sum of a GPU's fused loss
 * kernel (1 by default). clmad_tuning_save keeps both lines. origin then
 * says ", with loss lanes" and ", with CLBlast's F32 GEMM parameters".
 */
typedef struct clmad_tuning {
    int items_per_work_item; /* consecutive elements one work-item computes, 1..1024 */
    int chunk_cap;           /* default of clmad_chunk_cap (most partials per dual kernel), 1..64 */
    int inline_pragma;       /* 1: generated programs force-inline the user's functions through
                                `#pragma clang attribute` (compilers known to take it) */
    char origin[256];        /* where the values came from, e.g. "table: POCL on a CPU" or
                                "tuned: <file>", with ", CLMAD_ITEMS_PER_WORK_ITEM" when the
                                environment overrode */
} clmad_tuning;

/** The tuning in force on ctx (fixed at its creation).
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL). */
CLMAD_API clmad_status clmad_context_tuning(const clmad_context *ctx, clmad_tuning *tuning);

/**
 * Stores items_per_work_item and chunk_cap of *tuning as the measured
 * tuning of ctx's device (its platform vendor, name and driver version) in
 * ctx's cache folder: contexts created afterwards on that device start from
 * them. ctx itself keeps its tuning. Written whole or not at all.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, a value outside its bounds),
 * CLMAD_ERR_STATE (ctx has no cache folder: cache_dir ""), CLMAD_ERR_IO.
 */
CLMAD_API clmad_status clmad_tuning_save(clmad_context *ctx, const clmad_tuning *tuning);

/**
 * The message of the last failed call, where the caller looks, whatever
 * that call's arguments:
 * - a failure is recorded on the context the call was given (or, for calls
 *   taking only tensors or kernels, the context they belong to); a call
 *   that has no context to record on (a NULL ctx or tensor, device listing,
 *   clmad_context_create) records it as this thread's message without a
 *   context;
 * - clmad_last_error(ctx) is the newer of ctx's last failure (on whichever
 *   thread it was used) and this thread's last failure without a context,
 *   so that a check of any call on ctx, e.g. clmad_tensor_read(NULL, ...)
 *   reached from a NULL gradient, prints that call's message. Failures on
 *   another context, or another thread's without a context, never show
 *   here;
 * - clmad_last_error(NULL) is this thread's last failure of any call, on
 *   any context.
 * The string is owned by clmad and valid until the next failure on the
 * same context (ctx's message) or on this thread (the thread's: a failure
 * without a context, for both forms; any failure, for NULL); a thread's
 * messages are freed when the thread exits. clmad_context_create empties
 * this thread's messages. Empty if nothing failed. After a call refused
 * with CLMAD_ERR_CONCURRENT_USE, clmad_last_error(ctx) on the refused
 * thread gives the refusal (kept as that thread's message: the context's
 * belongs to the thread inside it) until that thread's next call on ctx
 * enters.
 */
CLMAD_API const char *clmad_last_error(const clmad_context *ctx);

/**
 * Records a message as the last error of ctx (as this thread's failure
 * without a context for ctx NULL: see clmad_last_error) and returns s: for components built on clmad (clmad_mpi is one), so that
 * their failures reach clmad_last_error as clmad's own do:
 *     return clmad_set_error(ctx, CLMAD_ERR_INVALID_ARGUMENT, "mylib_step: n %d < 0", n);
 * fmt is a printf format (NULL records "(no message)"). The message
 * replaces the previous one; a message that cannot be stored (out of
 * memory) is cut to the space already held.
 */
CLMAD_API clmad_status clmad_set_error(const clmad_context *ctx, clmad_status s, const char *fmt, ...)
    CLMAD_FORMAT_PRINTF(3, 4);

/** Counters of a context, for introspection and tests. */
typedef struct clmad_stats {
    uint64_t programs_compiled;    /* builds from OpenCL C source (the compiler ran) */
    uint64_t programs_from_disk;   /* programs loaded from the on-disk cache */
    uint64_t program_memory_hits;  /* requests served by the in-memory cache */
    uint64_t disk_cache_rejected;  /* corrupt, truncated, stale or unusable files rebuilt */
    uint64_t live_tensor_bytes;    /* device bytes held by live tensors */
    uint64_t pool_bytes;           /* device bytes kept by the pool for reuse */
    uint64_t pool_hits;            /* allocations served by the pool */
    uint64_t pool_misses;          /* allocations that went to the device */
    uint64_t tape_nodes;           /* nodes on the tape now */
    uint64_t tape_saved_bytes;     /* device bytes the tape keeps for backward (stored partials) */
    uint64_t kernels_launched;     /* kernels clmad enqueued (its own; CLBlast's GEMMs not counted) */
    uint64_t bytes_moved;          /* device bytes those kernels read and wrote, as planned: each
                                      array element a kernel reads or writes counts once */
    uint64_t disk_cache_write_failures; /* programs the on-disk cache could not store */
    char disk_cache_problem[256];  /* "" or the first problem the on-disk cache met on this
                                      context: a refused or unusable folder (the disk cache
                                      is then off), a rejected file, a failed write. The
                                      calls go on, compiling from source. */
    uint64_t programs_live;        /* OpenCL programs the context holds now: the library's own
                                      (kept while the context lives) and those of live user
                                      kernels (a kernel's go when it is released and no tape
                                      node holds it) */
    uint64_t fused_losses;         /* losses computed by a fused loss kernel (clmad_dot,
                                      clmad_sum or clmad_mean over a held broadcast, or over
                                      one builtin of it: docs/fusion.md; never writing it) */
    uint64_t fusion_fallbacks;     /* fused losses (and lazy regions) whose gradients backward
                                      could not use (the adjoint was not exactly 1, the
                                      broadcast had other consumers, ...): it ran the eager
                                      backward */
    uint64_t fused_regions;        /* lazy regions: chains of held elementwise calls (a
                                      broadcast and builtins or kernels over it) whose
                                      intermediates nobody held any more, run as one kernel
                                      that writes only the last value (docs/fusion.md) */
} clmad_stats;

/** Reads the counters of ctx. */
CLMAD_API clmad_status clmad_context_stats(const clmad_context *ctx, clmad_stats *stats);

/** Waits for all work queued on the context's device to finish. */
CLMAD_API clmad_status clmad_finish(clmad_context *ctx);

/* ------------------------------------------------------------------------ */
/* Tensors                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum clmad_dtype {
    CLMAD_F32 = 0,
    CLMAD_F64 = 1,
    /* Integer tensors (class labels, indices, masks): created, filled,
     * read, written, copied, sliced, concatenated, reshaped and transposed
     * like the others, and taken by the index operations ("Integer tensors
     * and index operations" below). Never differentiable. */
    CLMAD_I32 = 2, /* int32_t */
    CLMAD_I64 = 3, /* int64_t: what clmad_argmax gives and index operations take */
    CLMAD_U8 = 4,  /* uint8_t: masks */
    /* 16-bit floats, stored in half the bytes and computed in f32
     * ("16-bit tensors" below): each element is its uint16_t bit pattern on
     * the host and on the device. */
    CLMAD_F16 = 5, /* IEEE 754 binary16 (NumPy's float16) */
    CLMAD_BF16 = 6 /* bfloat16: the upper 16 bits of a binary32 (ml_dtypes, PyTorch) */
} clmad_dtype;

/** Size in bytes of one element of dtype; 0 for an unknown dtype. */
CLMAD_API size_t clmad_dtype_size(clmad_dtype dtype);

/*
 * 16-bit tensors (CLMAD_F16, CLMAD_BF16) store floats in half the bytes:
 * checkpoints in bf16 or f16 load, convert and save without a detour
 * through the host. They are created, filled (the value rounded as
 * below), read and written (as uint16_t bit patterns), copied, sliced,
 * concatenated, reshaped, transposed, gathered and index-selected like
 * the others, printed, saved and loaded (the safetensors types "F16" and
 * "BF16", bit for bit), and converted by clmad_cast to and from every
 * other dtype.
 *
 * Computing: broadcasts (a kernel over T runs unchanged), the builtins
 * (clmad_add ... clmad_sqrt, clmad_where, clmad_compare), clmad_sum and
 * clmad_mean take them. A kernel loads each element widened to f32
 * (exactly), computes in f32 with f32 duals, and rounds each value,
 * partial and gradient it stores once; sums accumulate in f32 and round
 * the result once. The output has the inputs' dtype. Promotion: the
 * builtins over inputs of several float dtypes cast them to the widest
 * (PyTorch's and JAX's rule: 16-bit to f32, f32 to f64, f16 with bf16 to
 * f32, which holds both; recorded casts, so each input's gradient comes
 * back in its own dtype); a broadcast of a user kernel, the products and
 * the losses refuse mixed dtypes (clmad_cast one of them). 16-bit
 * tensors differentiate like f32 ones (clmad_tensor_set_requires_grad):
 * a gradient has its tensor's dtype, each contribution rounded once and
 * each accumulation added in f32 and rounded; clmad_cast carries the
 * gradient across dtypes (f32 master weights cast to bf16 for the forward
 * get their gradient widened). They run eagerly: a broadcast over 16-bit
 * tensors is never held for fusion. argmax, argmin and clmad_accuracy read
 * them as they are. The products (clmad_matmul, clmad_bmm, clmad_dot), the
 * axis operations (clmad_max, clmad_logsumexp, clmad_softmax,
 * clmad_log_softmax) and the losses (clmad_mse_loss, clmad_cross_entropy,
 * clmad_cross_entropy_index) widen their 16-bit operands to f32 (recorded
 * casts: gradients flow through them), compute in f32 and round the result
 * once to the operands' dtype: a pass over each operand and one over the
 * result more than in f32 (no HGEMM yet; a 1024^3 product in bf16 took
 * 1.04x f32's time on POCL). The optimizers refuse 16-bit
 * parameters (keep f32 master weights and cast them for the forward), as
 * do clmad_tensor_axpby and the MPI collectives: CLMAD_ERR_DTYPE, the
 * message naming the call and the argument and saying what to do.
 *
 * Rounding: a value converted to f16 or bf16 (by clmad_cast, a fill or
 * the functions below) rounds to the nearest, ties to even; a value too
 * large becomes an infinity of its sign, a NaN stays a NaN (of its sign,
 * quiet), and the sign of zero is kept. f16 has subnormals (down to
 * 2^-24) and bf16 keeps f32's range. f64 converts to f16 directly (one
 * rounding, as NumPy) and to bf16 through f32 (as PyTorch). Widening to
 * f32 or f64 is exact. The device kernels and these host functions give
 * the same bits.
 */
/** value rounded to f16: its bit pattern. */
CLMAD_API uint16_t clmad_f16_from_float(float value);
/** The f16 bit pattern bits as a float (exact). */
CLMAD_API float clmad_f16_to_float(uint16_t bits);
/** value rounded to bf16: its bit pattern. */
CLMAD_API uint16_t clmad_bf16_from_float(float value);
/** The bf16 bit pattern bits as a float (exact). */
CLMAD_API float clmad_bf16_to_float(uint16_t bits);

typedef struct clmad_tensor clmad_tensor;

/**
 * Creates a contiguous row-major tensor of rank ndim (0..CLMAD_MAX_DIMS)
 * and copies its contents from host (numel elements of dtype), or leaves
 * it uninitialised when host is NULL. Dimensions may be 0 (an empty
 * tensor). The caller owns one reference to *out.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (rank, NULL shape with ndim > 0),
 * CLMAD_ERR_UNSUPPORTED (f64 without device fp64), CLMAD_ERR_OUT_OF_MEMORY
 * (including above the device's maximum allocation, and a shape too big to
 * describe: the product of its nonzero sizes times the element size
 * overflows size_t, empty or not, as in NumPy), CLMAD_ERR_OPENCL.
 */
CLMAD_API clmad_status clmad_tensor_create(clmad_context *ctx, clmad_dtype dtype, int ndim,
                                 const size_t *shape, const void *host,
                                 clmad_tensor **out);

/** As clmad_tensor_create, every element set to zero. */
CLMAD_API clmad_status clmad_tensor_zeros(clmad_context *ctx, clmad_dtype dtype, int ndim,
                                const size_t *shape, clmad_tensor **out);

/** As clmad_tensor_create, every element set to value (rounded to dtype). */
CLMAD_API clmad_status clmad_tensor_fill(clmad_context *ctx, clmad_dtype dtype, int ndim,
                               const size_t *shape, double value, clmad_tensor **out);

/**
 * Copies the tensor's elements into host, which holds capacity_bytes; waits
 * for the copy. Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, capacity below
 * the tensor's size in bytes), CLMAD_ERR_OPENCL.
 */
CLMAD_API clmad_status clmad_tensor_read(clmad_tensor *t, void *host, size_t capacity_bytes);

/** Copies numel elements from host into the tensor; size_bytes must equal
 * the tensor's size in bytes. Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL,
 * another size, a read-only wrapped buffer: clmad_cl.h), CLMAD_ERR_OPENCL. */
CLMAD_API clmad_status clmad_tensor_write(clmad_tensor *t, const void *host, size_t size_bytes);

/**
 * Copies the elements of src into dst, an existing tensor of the same
 * shape and dtype, on the device (no host round trip), outside the tape:
 * nothing is recorded, and dst keeps its identity (its references,
 * requires_grad flag and accumulated gradient). The copy is enqueued on
 * the context's queue; later calls see the new values. Tensors that share
 * one buffer (the same cl_mem wrapped twice, clmad_cl.h) are left as they
 * are. src may be anything, the tape's tensors included.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, tensors of two contexts, dst a
 * read-only wrapped buffer: clmad_cl.h), CLMAD_ERR_SHAPE, CLMAD_ERR_DTYPE,
 * CLMAD_ERR_STATE (the tape still holds
 * dst: it is an input or an output of an operation recorded on the current
 * tape, whose backward would go wrong; copy after clmad_backward or
 * clmad_tape_clear), CLMAD_ERR_OPENCL (e.g. two overlapping sub-buffers of
 * one caller's buffer).
 */
CLMAD_API clmad_status clmad_tensor_copy(clmad_tensor *dst, clmad_tensor *src);

/*
 * Staging: many tensors' values between the device and the host in one go
 * (packing gradients for a reduction across processes, checkpoints). A
 * staging area is a buffer of host-visible memory (CL_MEM_ALLOC_HOST_PTR:
 * pinned on GPUs, so transfers run at full speed) mapped into the host's
 * address space between calls; the copies between it and the tensors run
 * on the device. Layout: tensors back to back in the order given, tensor k
 * at the sum of the sizes in bytes of those before it.
 */
typedef struct clmad_staging clmad_staging;

/**
 * Creates a staging area of `bytes` bytes on ctx (bytes may be 0). The
 * caller owns *s and releases it with clmad_staging_release.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL), CLMAD_ERR_OUT_OF_MEMORY,
 * CLMAD_ERR_OPENCL, CLMAD_ERR_STATE when ctx was released.
 */
CLMAD_API clmad_status clmad_staging_create(clmad_context *ctx, size_t bytes, clmad_staging **s);

/**
 * Copies the values of ts[0..n) into the area, waits, and sets *host to its
 * first byte: readable and writable until the next call on s.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, n < 0, a tensor of another
 * context, more bytes than the area holds), CLMAD_ERR_OPENCL.
 */
CLMAD_API clmad_status clmad_staging_gather(clmad_staging *s, clmad_tensor *const *ts, int n, void **host);

/** Sets *host to the area's first byte, to be written before a scatter;
 * valid until the next call on s. Errors: CLMAD_ERR_INVALID_ARGUMENT,
 * CLMAD_ERR_OPENCL. */
CLMAD_API clmad_status clmad_staging_map(clmad_staging *s, void **host);

/**
 * Copies the area's bytes into ts[0..n) (the layout of a gather) and
 * waits. The tensors are written in place (use it for values that the
 * tape does not hold, or for gradients after backward).
 * Errors: as clmad_staging_gather, and CLMAD_ERR_INVALID_ARGUMENT for a
 * read-only wrapped tensor (clmad_cl.h), before anything is written.
 */
CLMAD_API clmad_status clmad_staging_scatter(clmad_staging *s, clmad_tensor *const *ts, int n);

/** Frees a staging area; NULL, or the context's own area, is a no-op. */
CLMAD_API void clmad_staging_release(clmad_staging *s);

/**
 * The context's own staging area, of at least `bytes` bytes: made on the
 * first call and grown (to twice its size, or more) when a call needs
 * more, so that a training loop that stages every step allocates pinned
 * memory once. The context owns it: do not release it. Valid until the
 * next call of this function on ctx, or clmad_context_release.
 * Errors: as clmad_staging_create.
 */
CLMAD_API clmad_status clmad_context_staging(clmad_context *ctx, size_t bytes, clmad_staging **s);

/** Adds a reference; returns t. */
CLMAD_API clmad_tensor *clmad_tensor_retain(clmad_tensor *t);

/** Drops a reference (inside a scope, the caller's first: see "scopes");
 * the last one returns the device buffer to the pool,
 * and frees the context too when it was released and t was its last
 * object (see clmad_context_release). */
CLMAD_API void clmad_tensor_release(clmad_tensor *t);

/** Shape queries; never fail on a valid tensor. */
CLMAD_API int clmad_tensor_ndim(const clmad_tensor *t);
CLMAD_API size_t clmad_tensor_dim(const clmad_tensor *t, int axis);   /* 0 if axis is out of range */
CLMAD_API size_t clmad_tensor_numel(const clmad_tensor *t);
CLMAD_API clmad_dtype clmad_tensor_dtype(const clmad_tensor *t);

/* ------------------------------------------------------------------------ */
/* Broadcast kernels                                                         */
/* ------------------------------------------------------------------------ */

/*
 * A broadcast kernel is a scalar function written in OpenCL C over the type
 * T, applied elementwise with NumPy broadcasting. The library defines, before
 * the user's source, `real` (float or double: the tensors' dtype) and `T`
 * (real for values; a dual number with K partials for derivatives).
 *
 * Plain syntax: C operators (+ - * / unary -, += -= *= /=, comparisons,
 * ?:) and math names (exp, tanh, pow, fmax, ..., and clmad's sigmoid,
 * softplus, relu, square, recip) apply to T, mixed with real and integer
 * values. A front end rewrites every expression that involves T to the
 * vocabulary of cl/clmad_ad.clh (ad_mul, ad_exp, ad_val, ...), which may
 * also be written directly; the two forms mix. Control flow on T values is
 * allowed: the derivative follows the branch taken at each element. See the
 * README for the rules and the conventions at non-differentiable points.
 *
 * One output:      T   fn(T x0, T x1, ...);
 * Several outputs: void fn(T x0, T x1, ..., T *y0, T *y1, ...);
 *
 * Integer parameters: among the inputs, a parameter declared `int`, `long`
 * or `uchar` (or `unsigned char`; `const` allowed) takes an integer tensor
 * of dtype CLMAD_I32, CLMAD_I64 or CLMAD_U8 respectively, so that the
 * function can branch on a label or a mask:
 *     T f(T x, int label) { if (label == 2) return x * x; return x + 1; }
 * It broadcasts with the other inputs like any input (same shape rules),
 * and the function receives its element as is, with its integer type, in
 * every variant (never a dual number). It has no partials, no gradient and
 * no tangent: the tape never differentiates it, clmad_broadcast_partials
 * gives NULL for it (and refuses active[j] set on it), clmad_broadcast_jvp
 * refuses a tangent for it, and clmad_gradcheck refuses a kernel that has
 * one (CLMAD_ERR_INVALID_ARGUMENT). At least one input must be T: the T
 * inputs share one float dtype, which the outputs take. Other parameter
 * types (float, double, uint, short, pointers, ...) are refused at
 * creation, and so is an output that is not T (T * for several outputs).
 * At a call, a tensor of another dtype than its parameter declares (a
 * float tensor for an int, an i32 tensor for a long, an integer tensor for
 * a T) fails with CLMAD_ERR_DTYPE naming the parameter: "clmad_broadcast(f):
 * parameter 2 (\"label\") is int, so input 1 must be of dtype i32; it is f64".
 * The source may hold helper functions over T; as OpenCL C requires, none
 * may call itself, directly or through others: the front end refuses
 * recursion with an error at the call that closes the cycle ("function f
 * calls itself (recursion is not allowed in OpenCL C)"). A UTF-8 byte
 * order mark at the start of the source is skipped (lines and columns
 * count from after it).
 *
 * Limits of the front end: its time and memory grow linearly with the
 * source (a 20,000-term expression lowers in well under a second).
 * It refuses, with CLMAD_ERR_BUILD and "source:LINE:COLUMN: error: ...",
 *   - a source larger than 16 MiB;
 *   - nesting deeper than 200 levels, counting parentheses, unary
 *     operators, calls, blocks and statements, a ? b : c ? ... and
 *     a = b = ... chains (which bounds the front end's use of the C
 *     stack: 256 KiB sufficed in a release build);
 *   - one expression whose lowered text grows past 64 MiB (a compound
 *     assignment repeats its left side: x += y becomes x = ad_add(x, y)).
 * The OpenCL compiler has limits of its own: clang-based ones accept 256
 * levels of brackets, and each operator on T becomes a call around its
 * operands, so one expression of more than about 250 operators on T in a
 * chain (a + b + c + ...) fails to compile; split it into statements
 * (T s = a + b; s += c; ...).
 *
 * Names: identifiers starting with clmad__ or CLMAD__ are reserved for the
 * code clmad generates around the function (its kernels are named
 * clmad__bcast_*), and a source that uses one, in code or in a macro, is
 * refused at creation with its line. Every other name is the user's: the
 * generated kernel is compiled before the user's source, so that user
 * macros and functions named like OpenCL builtins, types or qualifiers
 * (get_global_id, ulong, __kernel, __global, min, ...) do not change it.
 * The library's own names before the source (real, T, AD_INLINE, the ad_
 * vocabulary, CLMAD_K, CLMAD_REAL_DOUBLE, CLMAD_FOR_EACH_PARTIAL) must not
 * be redefined.
 */
typedef struct clmad_kernel clmad_kernel;

/**
 * Creates a kernel from OpenCL C source holding function fn_name with
 * n_inputs inputs (1..64: T, or integer parameters int, long, uchar; see
 * "Integer parameters" above) and n_outputs outputs (1..16). The source is
 * lowered (clmad_lower_source) and compiled at once, with T = float
 * (values) and with T a dual number (derivatives, f32), so that mistakes
 * surface here: what the front end cannot see through (an operator on T
 * inside a function-like macro) compiles only in the first, and fails with
 * a hint at the vocabulary. On POCL the second compile adds a few tenths of
 * a second here; it is often the variant that the first derivative over
 * f32 inputs needs anyway.
 * The caller owns *k and releases it with clmad_kernel_release (before or
 * after the context). The source is copied.
 * Errors: CLMAD_ERR_BUILD when the front end rejects the source (an
 * operator with no rule for T, such as x % y; a T where a real is needed;
 * a reserved clmad__ name, see above) or it does not compile or fn_name
 * does not have the expected signature. The signature is checked before
 * anything compiles and said in the source's terms, at the line of fn's
 * definition: "no function g in the source (it defines f)", "f takes 3
 * parameters, n_inputs is 2", "every input of f must be T, or an integer
 * parameter int, long or uchar: parameter 2 is \"float y\"", "f has no T
 * input: ...", "f returns void, the form of a function of several
 * outputs ...", "every output of f must be T * ..." (a definition made by
 * a macro, or through a type name of the source's own, is left to the
 * compiler);
 * the message carries "source:LINE:COLUMN" positions in the user's own
 * source (the compiler's columns count in the lowered line);
 * CLMAD_ERR_INVALID_ARGUMENT (NULL, counts, fn_name not an identifier);
 * CLMAD_ERR_STATE when ctx was released.
 */
CLMAD_API clmad_status clmad_kernel_create(clmad_context *ctx, const char *source, const char *fn_name,
                                 int n_inputs, int n_outputs, clmad_kernel **k);

/**
 * Lowers a broadcast function's source from plain syntax to the ad_
 * vocabulary, as clmad_kernel_create does before it compiles: only the
 * expressions that involve T change (x * y + 0.5 becomes
 * ad_addr(ad_mul(x, y), 0.5)), every other byte and every line number stay
 * as written, and a source written with ad_ calls alone comes back
 * unchanged. Needs no context or device.
 * On success *lowered is a new NUL-terminated string that the caller frees
 * with clmad_string_free.
 * Errors: CLMAD_ERR_BUILD with "source:LINE:COLUMN: error: ..." when the
 * front end rejects the source, or when it cannot parse it (outside its
 * subset of OpenCL C, e.g. a parenthesised declarator;
 * clmad_kernel_create then compiles such a source as written);
 * CLMAD_ERR_INVALID_ARGUMENT (NULL); CLMAD_ERR_OUT_OF_MEMORY. The message
 * is clmad_last_error(NULL).
 */
CLMAD_API clmad_status clmad_lower_source(const char *source, char **lowered);

/** Frees a string returned by clmad (clmad_lower_source); NULL is a no-op. */
CLMAD_API void clmad_string_free(char *s);

/** Drops the caller's reference to a kernel; its compiled variants go with
 * the last reference (tape nodes that use the kernel hold one each), and
 * the context too when it was released and k was its last object. */
CLMAD_API void clmad_kernel_release(clmad_kernel *k);

/**
 * Evaluates the kernel elementwise over the broadcast of its inputs
 * (NumPy rules, up to CLMAD_MAX_DIMS dimensions; 0-d tensors are scalars).
 * inputs holds n_inputs tensors: the T ones of one float dtype, which the
 * outputs take, and each integer parameter's of the dtype it declares
 * (CLMAD_ERR_DTYPE otherwise, naming the parameter). outputs receives n_outputs new
 * tensors of the broadcast shape, owned by the caller. When an input
 * requires a gradient (and recording is on), the call records a node on the
 * tape (see "Reverse mode"); the tape then holds references to the inputs
 * and to k, so both may be released by the caller at once.
 * Errors: CLMAD_ERR_SHAPE (names the inputs and their shapes),
 * CLMAD_ERR_DTYPE, CLMAD_ERR_INVALID_ARGUMENT (NULL, an input or k of
 * another context), CLMAD_ERR_BUILD,
 * CLMAD_ERR_UNSUPPORTED, CLMAD_ERR_OUT_OF_MEMORY, CLMAD_ERR_OPENCL.
 */
CLMAD_API clmad_status clmad_broadcast(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                             clmad_tensor **outputs);

/**
 * Forward mode: the outputs and the elementwise partials of the broadcast.
 * active[j] != 0 marks input j as differentiated (active may be NULL: all).
 * partials receives n_outputs * n_inputs entries: partials[o * n_inputs + j]
 * is a new tensor of the output shape holding d out_o / d in_j at every
 * element (f32 for 16-bit inputs, unrounded) for an active input, and NULL for an inactive one or an integer
 * parameter (active NULL means every T input; active[j] set on an integer
 * parameter fails with CLMAD_ERR_INVALID_ARGUMENT). Only active
 * inputs take partial slots (dual arity K = number of active inputs); above
 * the chunk cap the dual kernel runs once per chunk. All new tensors are
 * owned by the caller. Records nothing on the tape. Errors as clmad_broadcast.
 */
CLMAD_API clmad_status clmad_broadcast_partials(clmad_context *ctx, clmad_kernel *k,
                                      clmad_tensor *const *inputs, const int *active,
                                      clmad_tensor **outputs, clmad_tensor **partials);

/**
 * Forward mode: a Jacobian-vector product. tangents[j] has the shape of
 * inputs[j] (it is broadcast the same way), or is NULL for a zero tangent
 * (always NULL for an integer parameter: CLMAD_ERR_INVALID_ARGUMENT
 * otherwise).
 * outputs and out_tangents each receive n_outputs new tensors of the output
 * shape, owned by the caller: out_tangents[o] = sum_j d out_o/d in_j * t_j.
 * One dual kernel with a single partial, whatever the number of inputs.
 * Records nothing on the tape. Errors as clmad_broadcast, and CLMAD_ERR_SHAPE / CLMAD_ERR_DTYPE for a
 * tangent that does not match its input (CLMAD_ERR_INVALID_ARGUMENT for one of another context).
 */
CLMAD_API clmad_status clmad_broadcast_jvp(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                 clmad_tensor *const *tangents, clmad_tensor **outputs,
                                 clmad_tensor **out_tangents);

/* ---- Second order ---------------------------------------------------- */

/**
 * Forward mode to second order along one direction: the broadcast runs once
 * on nested dual numbers (T is a dual whose value and partials are dual
 * numbers over the tangent direction), from the same source as every other
 * variant. active[j] != 0 marks input j as differentiated (active may be
 * NULL: all); tangents[j] has the shape of inputs[j] and is the direction's
 * component on input j: NULL is zero, and must be NULL for an inactive
 * input. Writes new tensors of the output shape, all owned by the caller:
 *   outputs[o]                         out_o
 *   out_tangents[o]                    sum_j d out_o/d in_j * t_j
 *   partials[o * n_inputs + j]         d out_o / d in_j (as clmad_broadcast_partials)
 *   partial_tangents[o * n_inputs + j] sum_i d2 out_o / d in_j d in_i * t_i,
 * the last two NULL for an inactive input. Every vocabulary function
 * carries its second derivative (cl/clmad_ad.clh); branches and loops on
 * ad_val() differentiate the path each element takes, and at the kinks of
 * the non-smooth functions (relu, fabs, fmin, fmax, clamp, copysign) the
 * second derivative is 0. Above the chunk cap the kernel runs once per
 * chunk of partials, each carrying every tangent. Records nothing on the
 * tape. An integer parameter is never active and takes no tangent (its
 * partials and partial tangents are NULL). Errors as clmad_broadcast_jvp,
 * and CLMAD_ERR_INVALID_ARGUMENT for a tangent given to an inactive input
 * or active[j] set on an integer parameter.
 */
CLMAD_API clmad_status clmad_broadcast_second(clmad_context *ctx, clmad_kernel *k, clmad_tensor *const *inputs,
                                              clmad_tensor *const *tangents, const int *active,
                                              clmad_tensor **outputs, clmad_tensor **out_tangents,
                                              clmad_tensor **partials, clmad_tensor **partial_tangents);

/**
 * Hessian-vector product: hv[k] = sum_i d2 loss / d params[k] d params[i] . v[i],
 * for the one-element loss on the current tape, by forward over reverse: a
 * forward walk of the tape gives each recorded output its tangent along v,
 * then a reverse walk carries each adjoint's tangent (the forward-mode rule
 * of each operation's backward; broadcasts through one nested-dual kernel,
 * see clmad_broadcast_second). params are n distinct leaves that require a
 * gradient; v[k] has the shape and dtype of params[k]; hv receives n new
 * tensors owned by the caller. Parameters the loss does not depend on get
 * zeros. The tape is read, not consumed: call clmad_hvp as often as needed
 * (conjugate gradient), then clmad_backward or clmad_tape_clear. Gradients
 * of leaves are left alone; nothing is recorded.
 * Supported operations: broadcasts (user kernels, the elementwise builtins
 * and the scalar forms), matmul (batches and 1-d operands too), bmm, dot,
 * sum, mean, slice, concat, reshape, transpose, the axis operations
 * (clmad_max, clmad_logsumexp, clmad_softmax, clmad_log_softmax; max is
 * taken as linear in the element its gradient picks, second derivative
 * 0), index_select, embedding, gather, scatter_add, cast (f32/f64), and
 * what is made of them (clmad_mse_loss, clmad_cross_entropy and
 * clmad_cross_entropy_index, clmad_where with an integer mask): every
 * operation that records on the tape. A tape holding an operation without
 * a second-order rule, or one over 16-bit tensors (second order runs in
 * f32 and f64), is refused with CLMAD_ERR_UNSUPPORTED naming it, before
 * anything runs.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, n <= 0, a parameter that is not
 * a leaf requiring a gradient, a repeated parameter, another context),
 * CLMAD_ERR_SHAPE (a loss of more than one element, v[k] not shaped like
 * params[k]), CLMAD_ERR_STATE (no tape behind the loss: consumed by
 * clmad_backward without clmad_set_retain_tape), CLMAD_ERR_UNSUPPORTED, and
 * the errors of the operations it runs.
 */
CLMAD_API clmad_status clmad_hvp(clmad_context *ctx, clmad_tensor *loss, clmad_tensor *const *params, int n,
                                 clmad_tensor *const *v, clmad_tensor **hv);

/* ---- end of second order ----------------------------------------------- */

/**
 * Gradient check for a kernel: compares its forward-mode partials with
 * central finite differences of its primal at n_points points, in dtype
 * (CLMAD_F64 where the device has it; f32 differences are good to about
 * 1e-3 only). points holds n_points * n_inputs values, point p's input j
 * at points[p * n_inputs + j]. worst receives n_inputs values: for input
 * j, the largest over points and outputs of |partial - fd| / max(1, |fd|),
 * with the step h = cbrt(eps) * max(1, |x|) (+inf where either is NaN).
 * A point on a branch boundary or a kink gives a large error by nature
 * (the difference straddles it): choose points away from them.
 * The caller owns points and worst; the check records nothing on the tape
 * and leaves worst untouched on failure.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, n_points = 0, n_points so
 * large that its buffers' sizes overflow size_t, a kernel of another
 * context, a kernel with an integer parameter: check those through the
 * tape), CLMAD_ERR_OUT_OF_MEMORY (n_points values above the device's
 * maximum allocation), CLMAD_ERR_UNSUPPORTED (f64 without device fp64), and
 * the errors of clmad_broadcast.
 */
CLMAD_API clmad_status clmad_gradcheck(clmad_context *ctx, clmad_kernel *k, clmad_dtype dtype, size_t n_points,
                             const double *points, double *worst);

/**
 * Sets the chunk cap of ctx: the most partials one dual kernel carries.
 * cap 0 restores the device default (clmad_chunk_cap reports it). Results do
 * not depend on the cap. The same as CLMAD_PARAM_CHUNK_CAP (which reads back
 * 0 for the default). Errors: CLMAD_ERR_INVALID_ARGUMENT (ctx NULL, cap < 0
 * or > 64).
 */
CLMAD_API clmad_status clmad_set_chunk_cap(clmad_context *ctx, int cap);

/** The chunk cap in force on ctx (0 for a NULL ctx). The device default is
 * 16 on CPUs and GPUs and 8 on other devices: bench_arity found one chunk
 * fastest up to 16 partials on POCL, rusticl and an H100 (README). */
CLMAD_API int clmad_chunk_cap(const clmad_context *ctx);

/* ------------------------------------------------------------------------ */
/* Reverse mode: the tape                                                    */
/* ------------------------------------------------------------------------ */

/*
 * The tape is eager and define-by-run: every operation runs at once and,
 * when one of its inputs requires a gradient (and recording is enabled),
 * appends a node. clmad_backward walks the nodes in reverse and accumulates
 * gradients into the leaf tensors that require them. A tensor produced by a
 * recorded operation requires a gradient itself; the tape keeps a reference
 * to what each node needs for its backward until the tape is cleared.
 */

/**
 * Marks a leaf tensor as requiring a gradient (on != 0) or not: an f32,
 * f64, f16 or bf16 tensor. Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL),
 * CLMAD_ERR_DTYPE (an integer tensor), CLMAD_ERR_STATE (t is the output of
 * a recorded operation: only leaves can be changed).
 */
CLMAD_API clmad_status clmad_tensor_set_requires_grad(clmad_tensor *t, int on);

/** 1 if gradients flow to or through t. */
CLMAD_API int clmad_tensor_requires_grad(const clmad_tensor *t);

/**
 * The gradient accumulated in leaf t by clmad_backward, as a new reference
 * (release it), or NULL in *grad when nothing has been accumulated yet.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT.
 */
CLMAD_API clmad_status clmad_tensor_grad(clmad_tensor *t, clmad_tensor **grad);

/** Drops the accumulated gradient of t (the next backward starts from zero). */
CLMAD_API void clmad_tensor_zero_grad(clmad_tensor *t);

/**
 * Runs the backward pass from loss. A loss with one element needs no seed
 * (seed NULL means d loss = 1); otherwise seed must have loss's shape and
 * dtype. Gradients accumulate into every leaf that requires one. The tape
 * is cleared afterwards unless clmad_set_retain_tape(ctx, 1).
 * Errors: CLMAD_ERR_STATE (loss was not computed on the current tape, or
 * the tape was consumed by an earlier backward), CLMAD_ERR_SHAPE (a
 * non-scalar loss without seed, or a seed of another shape), CLMAD_ERR_DTYPE
 * (a seed of another dtype), CLMAD_ERR_INVALID_ARGUMENT (NULL, a loss or
 * seed of another context), and the errors of the kernels it runs. After a
 * failure part way through, the tape is cleared even when retained (its
 * gradients would be partial) and leaf gradients may be partly accumulated.
 */
CLMAD_API clmad_status clmad_backward(clmad_context *ctx, clmad_tensor *loss, clmad_tensor *seed);

/** Keep the tape after backward (on != 0), so that backward can run again:
 * CLMAD_PARAM_RETAIN_TAPE, read back with clmad_context_get_param.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (ctx NULL). */
CLMAD_API clmad_status clmad_set_retain_tape(clmad_context *ctx, int on);

/** Turns recording on (on != 0, the default) or off (0: the no-grad mode):
 * CLMAD_PARAM_DISABLE_GRAD, read back with clmad_context_get_param.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (ctx NULL). */
CLMAD_API clmad_status clmad_set_grad_enabled(clmad_context *ctx, int on);

/** Drops every node of the tape and what they keep alive. */
CLMAD_API void clmad_tape_clear(clmad_context *ctx);

/** Sets the partials policy of ctx for the broadcasts recorded from now on:
 * CLMAD_PARAM_PARTIALS_POLICY, read back with clmad_context_get_param.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (ctx NULL, not a clmad_partials_policy). */
CLMAD_API clmad_status clmad_set_partials_policy(clmad_context *ctx, clmad_partials_policy policy);

/* ------------------------------------------------------------------------ */
/* Builtin operations (each records its adjoint on the tape)                 */
/* ------------------------------------------------------------------------ */

/* Every builtin creates its output (*out), owned by the caller. Elementwise
 * builtins broadcast like clmad_broadcast and are one-operation broadcasts,
 * so a chain of them is plain ("unfused") reverse mode. Errors as
 * clmad_broadcast. */
CLMAD_API clmad_status clmad_add(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, clmad_tensor **out);
CLMAD_API clmad_status clmad_sub(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, clmad_tensor **out);
CLMAD_API clmad_status clmad_mul(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, clmad_tensor **out);
CLMAD_API clmad_status clmad_div(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, clmad_tensor **out);
CLMAD_API clmad_status clmad_pow(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, clmad_tensor **out);
CLMAD_API clmad_status clmad_neg(clmad_context *ctx, clmad_tensor *x, clmad_tensor **out);
CLMAD_API clmad_status clmad_exp(clmad_context *ctx, clmad_tensor *x, clmad_tensor **out);
CLMAD_API clmad_status clmad_log(clmad_context *ctx, clmad_tensor *x, clmad_tensor **out);
CLMAD_API clmad_status clmad_tanh(clmad_context *ctx, clmad_tensor *x, clmad_tensor **out);
CLMAD_API clmad_status clmad_sigmoid(clmad_context *ctx, clmad_tensor *x, clmad_tensor **out);
CLMAD_API clmad_status clmad_relu(clmad_context *ctx, clmad_tensor *x, clmad_tensor **out);
CLMAD_API clmad_status clmad_sqrt(clmad_context *ctx, clmad_tensor *x, clmad_tensor **out);
/** where(cond, a, b): a where cond != 0, else b; no gradient flows to cond. */
CLMAD_API clmad_status clmad_where(clmad_context *ctx, clmad_tensor *cond, clmad_tensor *a, clmad_tensor *b,
                         clmad_tensor **out);

typedef enum clmad_compare_op {
    CLMAD_LT = 0, CLMAD_LE = 1, CLMAD_GT = 2, CLMAD_GE = 3, CLMAD_EQ = 4, CLMAD_NE = 5
} clmad_compare_op;
/** A mask of 1 and 0 (dtype of the inputs); records nothing (no gradient). */
CLMAD_API clmad_status clmad_compare(clmad_context *ctx, clmad_compare_op op, clmad_tensor *a, clmad_tensor *b,
                           clmad_tensor **out);

/**
 * Sum over the axes listed in axes[0..naxes) (negative counts from the end);
 * naxes 0 (axes NULL) sums over every axis. keepdims keeps the summed axes
 * with size 1. The reduction order is fixed: results are bitwise
 * reproducible on one device. Errors: CLMAD_ERR_INVALID_ARGUMENT (bad or
 * repeated axis).
 */
CLMAD_API clmad_status clmad_sum(clmad_context *ctx, clmad_tensor *x, int naxes, const int *axes, int keepdims,
                       clmad_tensor **out);
/**
 * The sum over every element of a * b, as a 0-d tensor: the loss sum(y * w)
 * without the product as a full-size temporary, and with a backward that
 * passes s * w and s * y on lazily (a broadcast kernel reads w and the
 * scalar s directly; nothing of a's or b's size is written). Bitwise equal
 * to clmad_sum(clmad_mul(a, b)) (same rounding and order of additions).
 * a and b must have the same shape and dtype. Recorded when either needs a
 * gradient. Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, another context),
 * CLMAD_ERR_SHAPE (shapes differ), CLMAD_ERR_DTYPE (dtypes differ),
 * CLMAD_ERR_UNSUPPORTED (f64 on a device without it).
 */
CLMAD_API clmad_status clmad_dot(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, clmad_tensor **out);
/** Mean over axes, as clmad_sum. Over an empty axis it is NaN (0/0), as in
 * NumPy and PyTorch; its gradient is then empty. */
CLMAD_API clmad_status clmad_mean(clmad_context *ctx, clmad_tensor *x, int naxes, const int *axes, int keepdims,
                        clmad_tensor **out);

/**
 * Matrix product: out = op(a) op(b), where op transposes
 * the last two axes when trans_a / trans_b is non-zero; *out is new, owned
 * by the caller. dA = dC op(b)^T and dB = op(a)^T dC in backward.
 * Two 2-d operands: one GEMM. Other ranks follow NumPy's np.matmul:
 *   - a 1-d a is a row vector (1, k) and a 1-d b a column vector (k, 1);
 *     the result drops that axis ((k,) @ (k,) is 0-d); trans_a / trans_b
 *     are ignored for a 1-d operand (a vector is its own transpose);
 *   - the axes before the last two are batch axes, aligned from the right
 *     and broadcast (sizes equal or 1; a missing axis is of size 1), so
 *     (B, 1, m, k) @ (C, k, n) is (B, C, m, n) and (B, m, k) @ (k, n) is
 *     (B, m, n);
 *   - gradients come back in each operand's shape: a broadcast operand's
 *     is the sum over the batch of its products.
 * One GEMM per matrix of the result (the GEMM kernels of the 2-d case); a
 * batch against one matrix b with a not transposed is one GEMM of a's
 * stacked rows, forward and backward. A GEMM of at most 2^21
 * multiply-adds with k at most 256 (128 x 128 x 128) runs clmad's own
 * kernel (runs of 8 elements of a row of the result per work-item, the
 * order of its sums fixed by the shapes; on POCL as fast as CLBlast's or
 * faster at those sizes); larger ones run CLBlast's, whose first GEMM of a precision in a process builds its
 * GEMM program (4 s of CPU on POCL: a first run of a small network spent
 * 40% of its first epoch there). The environment variable
 * CLMAD_SMALL_GEMM=0 sends every GEMM to CLBlast. Errors: CLMAD_ERR_SHAPE (inner sizes
 * that differ, batch axes that do not broadcast, a 0-d operand: the message
 * gives both shapes), CLMAD_ERR_DTYPE (dtypes that differ, or not f32/f64),
 * CLMAD_ERR_INVALID_ARGUMENT (NULL, another context), CLMAD_ERR_OPENCL
 * (CLBlast's status is in the message).
 */
CLMAD_API clmad_status clmad_matmul(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, int trans_a,
                          int trans_b, clmad_tensor **out);

/** Elements [start, stop) of x along axis (a copy). Errors: CLMAD_ERR_SHAPE. */
CLMAD_API clmad_status clmad_slice(clmad_context *ctx, clmad_tensor *x, int axis, size_t start, size_t stop,
                         clmad_tensor **out);
/** Concatenation of n tensors along axis; other dimensions must match.
 * Errors: CLMAD_ERR_SHAPE, CLMAD_ERR_DTYPE, CLMAD_ERR_OUT_OF_MEMORY (also
 * when the sizes along axis sum past size_t). */
CLMAD_API clmad_status clmad_concat(clmad_context *ctx, int n, clmad_tensor *const *xs, int axis,
                          clmad_tensor **out);
/** The elements of x with another shape of the same element count (a copy). */
CLMAD_API clmad_status clmad_reshape(clmad_context *ctx, clmad_tensor *x, int ndim, const size_t *shape,
                           clmad_tensor **out);
/** Permutes the axes of x: out axis i is x axis perm[i]; perm NULL reverses them. */
CLMAD_API clmad_status clmad_transpose(clmad_context *ctx, clmad_tensor *x, const int *perm, clmad_tensor **out);

/* ------------------------------------------------------------------------ */
/* Along an axis, losses, batched matmul (each records its adjoint)          */
/* ------------------------------------------------------------------------ */

/*
 * These take one axis (negative counts from the end) of a tensor of rank 1
 * or more, and create their output (*out), owned by the caller; the tape
 * keeps a reference to it while it needs it for backward. One work-item
 * walks one row along the axis in a fixed order: results are bitwise
 * reproducible on one device. Errors of all: CLMAD_ERR_INVALID_ARGUMENT
 * (NULL, an axis out of range, a tensor of another context),
 * CLMAD_ERR_STATE (ctx released), CLMAD_ERR_OUT_OF_MEMORY, CLMAD_ERR_OPENCL,
 * CLMAD_ERR_BUILD.
 */

/**
 * The max of x along axis; keepdims keeps the axis with size 1. A NaN in a
 * row makes its max NaN. The gradient goes to the first maximal element of
 * each row (the first NaN where the max is NaN), none to the others.
 * Errors also: CLMAD_ERR_SHAPE (an empty axis: no max).
 */
CLMAD_API clmad_status clmad_max(clmad_context *ctx, clmad_tensor *x, int axis, int keepdims, clmad_tensor **out);

/**
 * log(sum(exp(x))) along axis, computed as m + log(sum(exp(x - m))) with m
 * the row's max, so that large values do not overflow; -inf over an empty
 * axis or a row of -inf. keepdims as clmad_max. Gradient: the softmax.
 */
CLMAD_API clmad_status clmad_logsumexp(clmad_context *ctx, clmad_tensor *x, int axis, int keepdims,
                             clmad_tensor **out);

/** exp(x - logsumexp(x)) along axis: the softmax, of x's shape. A row
 * (for log_softmax too) holding +inf or NaN is NaN throughout, as in
 * PyTorch; the other rows, and their gradients, are untouched by it. */
CLMAD_API clmad_status clmad_softmax(clmad_context *ctx, clmad_tensor *x, int axis, clmad_tensor **out);

/** x - logsumexp(x) along axis: the log of the softmax, without its
 * underflow to log(0) for very negative logits. */
CLMAD_API clmad_status clmad_log_softmax(clmad_context *ctx, clmad_tensor *x, int axis, clmad_tensor **out);

/**
 * The mean squared error mean((pred - target)^2) over every element, as a
 * 0-d tensor (*out, owned by the caller): NaN for empty tensors (0/0, as
 * clmad_mean). Gradients flow to both operands (2 (pred - target) / numel
 * and its negative) when they require them; a NaN or inf element spoils
 * only its own gradient (and the loss). Built from recorded builtins
 * (clmad_sub, clmad_mul, clmad_dot), whose temporaries the tape holds until
 * backward. Errors: CLMAD_ERR_SHAPE (shapes differ: no broadcasting, which
 * would hide a mistake), CLMAD_ERR_DTYPE, and those of the builtins.
 */
CLMAD_API clmad_status clmad_mse_loss(clmad_context *ctx, clmad_tensor *pred, clmad_tensor *target,
                            clmad_tensor **out);

/**
 * Softmax cross-entropy, as PyTorch's cross_entropy: logits (..., C) hold
 * unnormalised scores of C classes along the last axis; the loss is the
 * mean over the rows (every position of the leading axes) of
 * -sum_c target_c log_softmax(logits)_c, a 0-d tensor (*out, owned by the
 * caller). target is either
 *   - of logits' shape: probabilities per class (one-hot or soft labels;
 *     gradients flow to it as well when it requires them), or
 *   - of logits' shape without the last axis: class indices stored as
 *     values of the dtype (exact up to 2^24 in f32); no gradient flows to
 *     them. An index that is not an integer in [0, C) makes the loss NaN.
 *     An integer tensor (i64, i32, u8) of that shape is taken too, as
 *     clmad_cross_entropy_index does (a label out of range is then an error).
 * The gradient of the logits is (softmax - target) / rows. A bad row (a
 * +inf or NaN logit) has a NaN gradient and makes the loss NaN, as in
 * PyTorch, and leaves the other rows' gradients as they are; a -inf logit
 * gives a finite gradient, and the loss PyTorch gives: finite with class
 * indices when not at the target (the loss takes the target's term only),
 * +inf at the target, NaN with probabilities (0 * -inf). Built from
 * recorded operations (clmad_log_softmax, clmad_mul, clmad_where,
 * clmad_dot); NaN over zero rows. Errors: CLMAD_ERR_SHAPE (logits of rank 0 or with no classes,
 * a target of another shape), CLMAD_ERR_DTYPE, and those of the operations.
 */
CLMAD_API clmad_status clmad_cross_entropy(clmad_context *ctx, clmad_tensor *logits, clmad_tensor *target,
                                 clmad_tensor **out);

/**
 * Batched matrix product: out[i] = op(a[i]) op(b[i]) for each of the
 * `batch` matrices of 3-d tensors a and b (batch, rows, cols), op
 * transposing a matrix when trans_a / trans_b is non-zero; *out is new
 * (batch, m, n), owned by the caller. Backward gives, per matrix, the
 * gradients of clmad_matmul. Runs one CLBlast GEMM per matrix (the kernels
 * of clmad_matmul; no broadcasting of the batch: clmad_matmul broadcasts
 * batches, a matrix shared by the whole batch among them).
 * Errors: CLMAD_ERR_SHAPE (ranks other than 3, batches or inner sizes that
 * differ), CLMAD_ERR_DTYPE, CLMAD_ERR_INVALID_ARGUMENT (NULL, another
 * context), CLMAD_ERR_OPENCL (CLBlast's status is in the message).
 */
CLMAD_API clmad_status clmad_bmm(clmad_context *ctx, clmad_tensor *a, clmad_tensor *b, int trans_a, int trans_b,
                       clmad_tensor **out);

/* ------------------------------------------------------------------------ */
/* Integer tensors and index operations                                      */
/* ------------------------------------------------------------------------ */

/*
 * Integer tensors (CLMAD_I32, CLMAD_I64, CLMAD_U8) hold class labels,
 * indices and masks. They are created, filled (clmad_tensor_fill refuses,
 * with CLMAD_ERR_INVALID_ARGUMENT, a value that is not an integer in the
 * dtype's range), read, written, copied (clmad_tensor_copy, staging),
 * sliced, concatenated, reshaped and transposed like float tensors, and
 * clmad_tensor_item reads them (i64 exactly up to 2^53). They never carry
 * a gradient: clmad_tensor_set_requires_grad(t, 1) on one fails with
 * CLMAD_ERR_DTYPE. Every float-only operation (the elementwise builtins
 * and broadcasts, products, sums and means, the axis operations, losses
 * over float targets, random initialisation, axpby, optimizers) refuses
 * them with CLMAD_ERR_DTYPE, the message naming the call and the argument
 * ("clmad_sum: x is an integer tensor (i64) ..."); clmad_cast converts.
 *
 * Index tensors are CLMAD_I64. Every index is checked at the call: a
 * kernel flags any index outside [0, size) on the device and the call
 * waits for that flag (one small read, so an index operation synchronises
 * with the device once); a bad index fails the call with
 * CLMAD_ERR_INVALID_ARGUMENT naming the first bad position and its value
 * ("clmad_gather: index[3] = 7 is outside [0, 5)"), before anything is
 * computed or recorded. Negative indices are out of range (no wrap-around).
 * The gradients of the index operations are sums of the output's adjoint
 * over the positions that took each element, each summed by one
 * work-item in the order of the positions (no atomics): bitwise
 * reproducible on one device. Each call creates its output (*out), owned
 * by the caller. Errors of all, besides those named: CLMAD_ERR_INVALID_ARGUMENT
 * (NULL, a tensor of another context, an axis outside the rank),
 * CLMAD_ERR_DTYPE (an index tensor that is not i64), CLMAD_ERR_STATE (ctx
 * released), CLMAD_ERR_OUT_OF_MEMORY, CLMAD_ERR_OPENCL, CLMAD_ERR_BUILD.
 */

/**
 * The index (i64) of the largest (argmax) or smallest (argmin) element
 * along axis of x, any dtype; keepdims keeps the axis with size 1. Ties
 * give the first index, and a NaN counts as the extreme (the first NaN
 * wins), as in NumPy. Records nothing (no gradient).
 * Errors also: CLMAD_ERR_SHAPE (an empty axis).
 */
CLMAD_API clmad_status clmad_argmax(clmad_context *ctx, clmad_tensor *x, int axis, int keepdims, clmad_tensor **out);
CLMAD_API clmad_status clmad_argmin(clmad_context *ctx, clmad_tensor *x, int axis, int keepdims, clmad_tensor **out);

/**
 * The rows index[0..K) of x along axis (index 1-d, i64; repeats allowed):
 * out has x's shape with K along axis, out[.., k, ..] = x[.., index[k], ..].
 * x of any dtype. Gradient to x: each row of x receives the sum of the
 * output's rows that took it. Errors also: CLMAD_ERR_SHAPE (index not
 * 1-d), CLMAD_ERR_INVALID_ARGUMENT (an index outside [0, x's size along axis)).
 */
CLMAD_API clmad_status clmad_index_select(clmad_context *ctx, clmad_tensor *x, int axis, clmad_tensor *index,
                                          clmad_tensor **out);

/**
 * Embedding lookup: weight (V, D), index i64 of any shape (rank below
 * CLMAD_MAX_DIMS); out (index's shape..., D) holds the rows
 * weight[index[...]]. clmad_index_select of weight along axis 0 by the
 * flattened index, with its gradient to weight. Errors also:
 * CLMAD_ERR_SHAPE (weight not 2-d), CLMAD_ERR_INVALID_ARGUMENT (an index
 * outside [0, V)).
 */
CLMAD_API clmad_status clmad_embedding(clmad_context *ctx, clmad_tensor *weight, clmad_tensor *index,
                                       clmad_tensor **out);

/**
 * out[i][j][k] = x[i][index[i][j][k]][k] for axis 1 (and likewise for any
 * axis), as torch.gather: index (i64) has x's rank and x's sizes outside
 * axis (any size along it), out has index's shape. x of any dtype.
 * Gradient to x: the output's adjoint scattered back and summed
 * (clmad_scatter_add). Errors also: CLMAD_ERR_SHAPE (index's rank or sizes
 * outside axis), CLMAD_ERR_INVALID_ARGUMENT (an index outside [0, x's size
 * along axis)).
 */
CLMAD_API clmad_status clmad_gather(clmad_context *ctx, clmad_tensor *x, int axis, clmad_tensor *index,
                                    clmad_tensor **out);

/**
 * out = x with src added at index along axis, as torch.scatter_add (out of
 * place): for axis 1, out[i][index[i][j][k]][k] += src[i][j][k]; index (i64)
 * and src have one shape, with x's rank and sizes outside axis. Repeated
 * indices add up, in the order of j. Gradients: to x the output's adjoint,
 * to src the adjoint gathered at index (clmad_gather). Errors also:
 * CLMAD_ERR_SHAPE, CLMAD_ERR_DTYPE (x and src differ), CLMAD_ERR_INVALID_ARGUMENT
 * (an index outside [0, x's size along axis)).
 */
CLMAD_API clmad_status clmad_scatter_add(clmad_context *ctx, clmad_tensor *x, int axis, clmad_tensor *index,
                                         clmad_tensor *src, clmad_tensor **out);

/**
 * One-hot rows: index i64 of any shape (rank below CLMAD_MAX_DIMS); out
 * (index's shape..., classes) of dtype (float or integer) is 1 at
 * [..., index[...]] and 0 elsewhere. Records nothing. Errors also:
 * CLMAD_ERR_SHAPE (rank), CLMAD_ERR_INVALID_ARGUMENT (an index outside
 * [0, classes), an unknown dtype).
 */
CLMAD_API clmad_status clmad_one_hot(clmad_context *ctx, clmad_tensor *index, size_t classes, clmad_dtype dtype,
                                     clmad_tensor **out);

/**
 * x converted to dtype, elementwise, as C converts: integers to floats
 * round to nearest, floats to integers truncate toward zero (NaN, inf and
 * values outside the integer type's range give unspecified values), a
 * nonzero mask stays nonzero when made float; to and from f16 and bf16
 * as "16-bit tensors" says. Between the float dtypes (f32, f64, f16, bf16)
 * the gradient flows back (converted to x's dtype); a cast to an integer
 * dtype records nothing. Errors also: CLMAD_ERR_INVALID_ARGUMENT (an unknown
 * dtype), CLMAD_ERR_UNSUPPORTED (f64 without device fp64).
 */
CLMAD_API clmad_status clmad_cast(clmad_context *ctx, clmad_tensor *x, clmad_dtype dtype, clmad_tensor **out);

/**
 * Softmax cross-entropy over integer class labels: logits (..., C) of f32
 * or f64, labels (...) of i64 (i32 and u8 are converted) in [0, C); the
 * mean over the rows of -log_softmax(logits)[label], a 0-d tensor, NaN
 * over zero rows. Built from recorded operations (clmad_log_softmax,
 * clmad_gather, clmad_mean), so the gradient of the logits is
 * (softmax - onehot(label)) / rows; as clmad_cross_entropy, a row with a
 * +inf or NaN logit has a NaN gradient and makes the loss NaN, the other
 * rows' gradients untouched. clmad_cross_entropy given an integer target
 * calls this. Errors also: CLMAD_ERR_DTYPE (float labels, integer
 * logits), CLMAD_ERR_SHAPE (labels not of logits' shape without its last
 * axis, no classes), CLMAD_ERR_INVALID_ARGUMENT (a label outside [0, C)).
 */
CLMAD_API clmad_status clmad_cross_entropy_index(clmad_context *ctx, clmad_tensor *logits, clmad_tensor *labels,
                                                 clmad_tensor **out);

/**
 * The fraction of rows whose argmax over the last axis of logits (ties:
 * the first) equals the label, in *value (NaN over zero rows): argmax on
 * the device, the comparison on the host (it waits for the device).
 * Records nothing. Arguments and errors as clmad_cross_entropy_index,
 * except that labels are not range-checked (an out-of-range label is a
 * miss).
 */
CLMAD_API clmad_status clmad_accuracy(clmad_context *ctx, clmad_tensor *logits, clmad_tensor *labels, double *value);

/* ------------------------------------------------------------------------ */
/* Training helpers: scalars                                                 */
/* ------------------------------------------------------------------------ */

/** A new 0-d tensor holding value (rounded to dtype), owned by the caller:
 * a number as an operand of any builtin or broadcast. Errors as
 * clmad_tensor_fill. */
CLMAD_API clmad_status clmad_tensor_scalar(clmad_context *ctx, clmad_dtype dtype, double value, clmad_tensor **out);

/**
 * x + value, x * value and x ^ value elementwise, value a number rounded to
 * x's dtype: the same kernels and gradients as clmad_add, clmad_mul and
 * clmad_pow with a 0-d tensor (x - c is clmad_add_scalar(x, -c)). *out is
 * new, owned by the caller; recorded on the tape when x needs a gradient.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, x of another context), and
 * those of clmad_broadcast.
 */
CLMAD_API clmad_status clmad_add_scalar(clmad_context *ctx, clmad_tensor *x, double value, clmad_tensor **out);
CLMAD_API clmad_status clmad_mul_scalar(clmad_context *ctx, clmad_tensor *x, double value, clmad_tensor **out);
CLMAD_API clmad_status clmad_pow_scalar(clmad_context *ctx, clmad_tensor *x, double value, clmad_tensor **out);

/**
 * The value of a one-element tensor (0-d, or any shape of one element, such
 * as a loss) as a double; waits for the work that computes it.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL), CLMAD_ERR_SHAPE (not exactly
 * one element), CLMAD_ERR_OPENCL.
 */
CLMAD_API clmad_status clmad_tensor_item(clmad_tensor *t, double *value);

/* ------------------------------------------------------------------------ */
/* Training helpers: random initialisation                                   */
/* ------------------------------------------------------------------------ */

/**
 * New tensors of random values made on the device by the counter-based
 * generator Philox4x32-10 (Salmon et al., SC'11): element e is a pure
 * function of (seed, e, dtype), so a seed gives the same bits on every
 * device, in every run, whatever the launch size, and a tensor's first k
 * elements are those of any longer tensor of the same seed. Different
 * seeds give independent streams (use seed, seed + 1, ... for the
 * tensors of a model). f32 takes 24 random bits per value (four values per
 * Philox block), f64 53 bits (two per block).
 * clmad_tensor_rand_uniform: lo + (hi - lo) u, u uniform on [0, 1) in
 * steps of 2^-24 (f32) or 2^-53 (f64); rounding may give hi itself.
 * clmad_tensor_rand_normal: mean + std z, z standard normal by Box-Muller
 * on pairs of those uniforms (the device's log, sqrt, cos and sin: the
 * values agree across devices to their accuracy, not bit for bit).
 * *out is new (shape as clmad_tensor_create), owned by the caller; it does
 * not require a gradient until clmad_tensor_set_requires_grad.
 * Values are finite in the dtype: a range it cannot represent is refused
 * rather than filled with inf (lo, hi, mean or std beyond the dtype's
 * largest finite value, e.g. 1e39 in f32; hi - lo beyond it, e.g. f32 on
 * [-3e38, 3e38]; |mean| + std zmax beyond it, zmax the largest |z| the
 * generator makes: sqrt(-2 ln 2^-24) = 5.77 for f32, sqrt(-2 ln 2^-53) =
 * 8.57 for f64, with a 0.1% margin).
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, NaN, hi < lo, std < 0, a
 * range the dtype cannot represent: the message names the value and the
 * dtype), and those of clmad_tensor_create.
 */
CLMAD_API clmad_status clmad_tensor_rand_uniform(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                                       double lo, double hi, uint64_t seed, clmad_tensor **out);
CLMAD_API clmad_status clmad_tensor_rand_normal(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                                      double mean, double std, uint64_t seed, clmad_tensor **out);

/* ------------------------------------------------------------------------ */
/* Training helpers: scopes                                                  */
/* ------------------------------------------------------------------------ */

/*
 * A scope releases the intermediates of a training step in one call:
 *
 *     clmad_scope_begin(ctx);
 *     ... forward (no release of intermediates), clmad_backward, step ...
 *     clmad_scope_end(ctx);   // releases every tensor made since begin
 *
 * Every tensor that a call of ctx makes while a scope is open (the outputs
 * of builtins, broadcasts and tensor creation calls) is entered in the
 * innermost open scope, which takes a reference of its own. The call hands
 * the caller a reference as usual; the rule is that a scope owns one
 * reference per tensor it made, whatever the caller does with its own:
 * - the caller need not release it: clmad_scope_end drops both the
 *   scope's reference and the caller's;
 * - if the caller releases it by hand inside the scope (clmad_tensor_release,
 *   once, the first release of that tensor counting as this one), the end
 *   drops only the scope's. When nothing else holds the tensor (no retain,
 *   no tape node), its memory returns at once, as outside a scope;
 * - references the caller adds with clmad_tensor_retain are the caller's:
 *   each is released by the caller, before or after the end;
 * - clmad_scope_keep takes the tensor out of the scope, leaving the caller
 *   one reference from the creation (its own, or the scope's when it
 *   released its own already) to release after the end.
 * So a user release and the scope's end together drop exactly the
 * references that exist, and a tensor the tape or a retain still holds
 * stays alive through them. What clmad keeps itself is never entered: the
 * gradients that clmad_backward accumulates (read them with
 * clmad_tensor_grad, a new reference that the caller releases as usual),
 * stored partials, optimizer state. A tensor the tape still needs stays
 * alive through the tape's own reference until the tape is cleared.
 * Tensors made before begin (the parameters) are not affected. Scopes
 * nest; each end closes the innermost.
 */

/** Opens a scope on ctx. Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL),
 * CLMAD_ERR_OUT_OF_MEMORY, CLMAD_ERR_STATE (ctx was released). */
CLMAD_API clmad_status clmad_scope_begin(clmad_context *ctx);

/** Closes the innermost open scope of ctx: for every tensor made since its
 * begin and not kept, drops the scope's reference and the caller's when the
 * caller did not release it. Call it before clmad_context_release (after,
 * ctx must not be used; the tensors of scopes left open then stay the
 * caller's: one clmad_tensor_release each frees them).
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL), CLMAD_ERR_STATE (no open scope). */
CLMAD_API clmad_status clmad_scope_end(clmad_context *ctx);

/** Takes t out of its scope: the caller keeps one reference past
 * clmad_scope_end (its own, or the scope's when it had released its own)
 * and releases t itself (a no-op for a tensor in no scope).
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL). */
CLMAD_API clmad_status clmad_scope_keep(clmad_tensor *t);

/** How many scopes are open on ctx (0 for NULL). */
CLMAD_API int clmad_scope_depth(const clmad_context *ctx);

/* ------------------------------------------------------------------------ */
/* Training helpers: in-place updates and optimizers                         */
/* ------------------------------------------------------------------------ */

/*
 * These calls write into existing tensors and are never recorded. A tensor
 * that the tape still holds (an input of a recorded operation, or the
 * output of one) is refused with CLMAD_ERR_STATE: its values are needed by
 * backward, which would silently compute wrong gradients. After
 * clmad_backward the tape is cleared (unless retained), so updates go
 * after it; clmad_tape_clear clears it by hand.
 */

/**
 * y = alpha * x + beta * y, elementwise, in place. x may be NULL (y = beta
 * * y) and may be y itself; beta 0 does not read y (so y = alpha x, or 0
 * with x NULL, even over NaN). x must have y's shape, dtype and context.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (y NULL, x of another context, y a
 * read-only wrapped buffer: clmad_cl.h), CLMAD_ERR_SHAPE, CLMAD_ERR_DTYPE,
 * CLMAD_ERR_STATE (the tape holds y),
 * CLMAD_ERR_OPENCL.
 */
CLMAD_API clmad_status clmad_tensor_axpby(clmad_tensor *y, double alpha, clmad_tensor *x, double beta);

typedef enum clmad_optimizer_kind {
    CLMAD_OPTIM_SGD = 0,   /* torch.optim.SGD: momentum, nesterov, weight decay (L2) */
    CLMAD_OPTIM_ADAM = 1,  /* torch.optim.Adam: weight decay added to the gradient (L2) */
    CLMAD_OPTIM_ADAMW = 2  /* torch.optim.AdamW: decoupled weight decay */
} clmad_optimizer_kind;

/** Options of an optimizer. Initialise with clmad_optimizer_options_init. */
typedef struct clmad_optimizer_options {
    clmad_optimizer_kind kind;
    double lr;            /* learning rate; default 1e-3 */
    double momentum;      /* SGD: default 0 (no velocity kept) */
    int nesterov;         /* SGD: Nesterov momentum (needs momentum > 0); default 0 */
    double beta1, beta2;  /* Adam, AdamW: defaults 0.9, 0.999 */
    double eps;           /* Adam, AdamW: default 1e-8 */
    double weight_decay;  /* default 0; AdamW 1e-2 */
} clmad_optimizer_options;

/** Fills *opt with the defaults of kind (those of PyTorch's optimizers). */
CLMAD_API void clmad_optimizer_options_init(clmad_optimizer_options *opt, clmad_optimizer_kind kind);

typedef struct clmad_optimizer clmad_optimizer;

/**
 * Creates an optimizer over params[0..n): it retains each parameter and
 * owns its state (SGD with momentum: a velocity per parameter; Adam and
 * AdamW: first and second moments), zero-filled tensors of each
 * parameter's shape and dtype, outside any scope. The caller owns *out and
 * releases it with clmad_optimizer_release; the parameters stay the
 * caller's too. The formulas, per element of a parameter p with gradient g
 * at its step t (1, 2, ...: the steps that updated p, which skip those
 * where p had no gradient, PyTorch's per-parameter state['step']), are
 * PyTorch's:
 *   SGD:   d = g + wd p; with momentum: v = mu v + d, d = nesterov ? d + mu v : v;
 *          p = p - lr d
 *   Adam:  g = g + wd p (AdamW instead: p = p (1 - lr wd));
 *          m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
 *          p = p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, n < 1, a parameter NULL, of
 * another context, given twice or read-only (a wrapped CL_MEM_READ_ONLY
 * buffer, clmad_cl.h), an option out of range: lr, momentum,
 * eps or weight_decay negative or not finite, a beta outside [0, 1),
 * nesterov without momentum), CLMAD_ERR_OUT_OF_MEMORY, CLMAD_ERR_OPENCL.
 */
CLMAD_API clmad_status clmad_optimizer_create(clmad_context *ctx, const clmad_optimizer_options *opt,
                                    clmad_tensor *const *params, int n, clmad_optimizer **out);

/** Shorthands for clmad_optimizer_create with the defaults and these options. */
CLMAD_API clmad_status clmad_optimizer_sgd(clmad_context *ctx, clmad_tensor *const *params, int n, double lr,
                                 double momentum, clmad_optimizer **out);
CLMAD_API clmad_status clmad_optimizer_adam(clmad_context *ctx, clmad_tensor *const *params, int n, double lr,
                                  clmad_optimizer **out);
CLMAD_API clmad_status clmad_optimizer_adamw(clmad_context *ctx, clmad_tensor *const *params, int n, double lr,
                                   double weight_decay, clmad_optimizer **out);

/**
 * One step: every parameter with a gradient (clmad_backward's) is updated
 * in place, with its state, by one fused kernel (one pass over p, g and
 * the state); a parameter without a gradient is left as it is. One launch
 * updates up to 8 parameters of one dtype (their buffers are arguments of
 * their own: OpenCL 1.2 has no table of buffers), so a model of at most 8
 * parameter tensors per dtype takes one launch per step; the results are
 * bitwise those of one launch per parameter (the same element update). Gradients
 * are not cleared (clmad_optimizer_zero_grad). Every parameter is checked
 * before any is written. Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL),
 * CLMAD_ERR_STATE (the tape still holds a parameter: the message names
 * it; nothing is updated), CLMAD_ERR_BUILD, CLMAD_ERR_OPENCL (the step
 * may then be partly applied).
 */
CLMAD_API clmad_status clmad_optimizer_step(clmad_optimizer *o);

/** Drops the accumulated gradient of every parameter (clmad_tensor_zero_grad). */
CLMAD_API void clmad_optimizer_zero_grad(clmad_optimizer *o);

/** Sets the learning rate for the next steps (a schedule).
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, lr negative or not finite). */
CLMAD_API clmad_status clmad_optimizer_set_lr(clmad_optimizer *o, double lr);

/** How many steps o has taken (0 for NULL): the clmad_optimizer_step
 * calls that passed their checks; a parameter's own count, the t of its bias
 * correction, counts only the steps where it had a gradient. */
CLMAD_API uint64_t clmad_optimizer_steps(const clmad_optimizer *o);

/** Releases the optimizer, its state and its references to the parameters. */
CLMAD_API void clmad_optimizer_release(clmad_optimizer *o);

/*
 * Dynamic loss scaling, for training with 16-bit activations
 * (torch.cuda.amp.GradScaler's semantics). The loss is multiplied by a
 * scale before clmad_backward, so that small gradients do not underflow in
 * f16. Each step then divides the gradients of an optimizer's parameters by
 * the scale and checks them for inf and NaN in the same pass (one kernel
 * per gradient, one flag read back), skips the optimizer's step when one
 * is found, and updates the scale: times backoff_factor after a skipped
 * step; times growth_factor after growth_interval steps in a row without
 * one (kept only if finite). The scale is an f32 value, as PyTorch's.
 *
 *   clmad_grad_scaler_scale(s, loss, &scaled);   -- scaler.scale(loss)
 *   clmad_backward(ctx, scaled, NULL);            -- .backward()
 *   clmad_grad_scaler_step(s, opt, &stepped);     -- scaler.step(opt); scaler.update()
 *   clmad_optimizer_zero_grad(opt);
 *
 * The parameters are f32 (or f64) master weights, cast to 16 bits for the
 * forward (clmad_cast carries their gradients back).
 */
typedef struct clmad_grad_scaler_options {
    double init_scale;     /* default 65536 (2^16) */
    double growth_factor;  /* > 1; default 2 */
    double backoff_factor; /* in (0, 1); default 0.5 */
    int growth_interval;   /* >= 1; default 2000 */
} clmad_grad_scaler_options;

/** Fills *opt with the defaults (PyTorch's). */
CLMAD_API void clmad_grad_scaler_options_init(clmad_grad_scaler_options *opt);

typedef struct clmad_grad_scaler clmad_grad_scaler;

/** Creates a scaler (opt NULL: the defaults); the caller releases *out
 * with clmad_grad_scaler_release. Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL
 * ctx or out, an option out of its range: the message names it),
 * CLMAD_ERR_OUT_OF_MEMORY. */
CLMAD_API clmad_status clmad_grad_scaler_create(clmad_context *ctx, const clmad_grad_scaler_options *opt,
                                                clmad_grad_scaler **out);

/** *out = loss times the scale, recorded (its gradient reaches the loss
 * times the scale). A 16-bit loss is widened to f32 first (a recorded
 * cast), as PyTorch's promotion by its f32 scale makes it; an f32 or f64
 * loss keeps its dtype. The caller owns *out. Errors: as clmad_mul_scalar. */
CLMAD_API clmad_status clmad_grad_scaler_scale(clmad_grad_scaler *s, clmad_tensor *loss, clmad_tensor **out);

/**
 * Unscales and checks the gradients of o's parameters (each parameter with
 * a gradient: g = g * (1 / scale), the factor rounded to f32; found when a
 * gradient held an inf or NaN before), calls clmad_optimizer_step(o) unless
 * one was found, and updates the scale. *stepped (may be NULL) is 1 when the
 * step was taken. Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL s or o, or of
 * another context), CLMAD_ERR_STATE (no parameter of o has a gradient:
 * nothing to check; the scale is not updated), clmad_optimizer_step's.
 */
CLMAD_API clmad_status clmad_grad_scaler_step(clmad_grad_scaler *s, clmad_optimizer *o, int *stepped);

/** The current scale (0 for NULL). */
CLMAD_API double clmad_grad_scaler_get_scale(const clmad_grad_scaler *s);

/** Releases the scaler (NULL is ignored). */
CLMAD_API void clmad_grad_scaler_release(clmad_grad_scaler *s);

/* ------------------------------------------------------------------------ */
/* Files and text: safetensors, optimizer state, printing                    */
/* ------------------------------------------------------------------------ */

/*
 * clmad reads and writes the safetensors format (github.com/huggingface/
 * safetensors), which PyTorch, JAX, NumPy and Hugging Face models use: an
 * 8-byte little-endian length N, a JSON header of N bytes
 *   {"__metadata__": {"key": "value", ...},
 *    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
 * and the tensors' bytes (little-endian, row-major), back to back, the
 * offsets counted from the end of the header. clmad's dtypes are written
 * as "F32", "F64", "F16", "BF16", "I32", "I64" and "U8". Files clmad writes load with the Python package
 * safetensors (safetensors.numpy.load_file, safetensors.torch.load_file)
 * with the same bits, and files it writes load here (make test checks
 * both ways).
 *
 * Reading is strict: a file is refused whole, with CLMAD_ERR_IO and a
 * message naming the file and the fault, when it is shorter than its
 * header says, has a header over 100 MB (the reference implementation's
 * cap) or not strict JSON (objects, arrays, strings, non-negative
 * integers), an entry without "dtype", "shape" or "data_offsets" or with
 * other keys, a dtype the format does not define, offsets whose span is
 * not shape x dtype size, offsets that overlap, leave a hole, or go past
 * the end, bytes after the last tensor, a name given twice, or a metadata
 * value that is not a string. A tensor of rank above CLMAD_MAX_DIMS is
 * CLMAD_ERR_UNSUPPORTED. Nothing past the file's size is read, and a
 * failed read changes no tensor.
 */

/** The short name of a dtype: "f32", "f64", "i32", "i64", "u8", "f16", "bf16"; "unknown" for a
 * value outside the enum. A static string. */
CLMAD_API const char *clmad_dtype_name(clmad_dtype dtype);

/**
 * Writes tensors[0..n) under names[0..n) to a safetensors file at path, in
 * that order, with the metadata `metadata` (NULL, or a NULL-terminated list
 * of key, value strings: {"epoch", "3", NULL}) as "__metadata__". The file
 * is written whole or not at all: to a temporary file beside it, synced,
 * then renamed over path (mode 0666 less the umask). Waits for the
 * tensors' values. n may be 0 (a file of metadata only).
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (path, names, tensors or an entry
 * NULL with n > 0; a name given twice, "__metadata__", or not UTF-8; a
 * metadata key or value not UTF-8 or a key given twice; tensors of two
 * contexts), CLMAD_ERR_IO (the message has the file and the system's
 * error), CLMAD_ERR_OUT_OF_MEMORY, CLMAD_ERR_OPENCL. The message is on
 * the tensors' context (clmad_last_error(NULL) when n is 0).
 */
CLMAD_API clmad_status clmad_save(const char *path, const char *const *names, clmad_tensor *const *tensors,
                                  size_t n, const char *const *metadata);

/**
 * Loads the file's tensors named names[0..n) into the existing tensors
 * tensors[0..n) of ctx (a "load_state_dict"): each must have the entry's
 * shape and dtype. Every name, shape and dtype is checked and every value
 * read from the file before any tensor is written, so a bad file or a
 * mismatch leaves all of them as they were. The file may hold more
 * tensors than asked for. Written outside the tape, as clmad_tensor_write.
 * Errors: CLMAD_ERR_IO (the file, as above), CLMAD_ERR_INVALID_ARGUMENT
 * (NULL, a tensor of another context or read-only, a name the file does
 * not hold: the message names it), CLMAD_ERR_SHAPE and CLMAD_ERR_DTYPE
 * (the message names the tensor and both shapes or dtypes),
 * CLMAD_ERR_STATE (the tape holds a tensor), CLMAD_ERR_UNSUPPORTED,
 * CLMAD_ERR_OUT_OF_MEMORY, CLMAD_ERR_OPENCL (then some tensors may be
 * written).
 */
CLMAD_API clmad_status clmad_load(clmad_context *ctx, const char *path, const char *const *names,
                                  clmad_tensor *const *tensors, size_t n);

/** An open safetensors file: its checked header, to list and read. Like a
 * context's objects, one file is used by one thread at a time. */
typedef struct clmad_safetensors clmad_safetensors;

/** One tensor of an open file. Strings are owned by the file. */
typedef struct clmad_safetensors_entry {
    const char *name;
    const char *file_dtype;      /* as in the file: "F32", "BF16", "I64", ... */
    int supported;               /* 1 when clmad has that dtype: dtype is then valid */
    clmad_dtype dtype;
    int ndim;
    size_t shape[CLMAD_MAX_DIMS];
} clmad_safetensors_entry;

/**
 * Opens and checks a safetensors file (see above): the header is read and
 * kept, the data is read by clmad_safetensors_read. The caller owns *file
 * and closes it with clmad_safetensors_close. Needs no context; the
 * message of a failure is clmad_last_error(NULL).
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL), CLMAD_ERR_IO,
 * CLMAD_ERR_UNSUPPORTED (rank above CLMAD_MAX_DIMS),
 * CLMAD_ERR_OUT_OF_MEMORY.
 */
CLMAD_API clmad_status clmad_safetensors_open(const char *path, clmad_safetensors **file);

/** How many tensors the file holds (0 for NULL). */
CLMAD_API size_t clmad_safetensors_count(const clmad_safetensors *file);

/** Entry index (0..count), in the order of the tensors' data in the file.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, index out of range). */
CLMAD_API clmad_status clmad_safetensors_entry_at(const clmad_safetensors *file, size_t index,
                                                  clmad_safetensors_entry *entry);

/** The metadata value of key, or NULL when the file has none (owned by the file). */
CLMAD_API const char *clmad_safetensors_metadata(const clmad_safetensors *file, const char *key);

/**
 * A new tensor of ctx holding the file's tensor `name`, owned by the
 * caller. Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL, no tensor of that
 * name), CLMAD_ERR_UNSUPPORTED (a dtype clmad does not have, f64 on a
 * device without fp64), CLMAD_ERR_IO (the file changed and is now short),
 * and those of clmad_tensor_create.
 */
CLMAD_API clmad_status clmad_safetensors_read(clmad_context *ctx, clmad_safetensors *file, const char *name,
                                              clmad_tensor **out);

/** Closes the file and frees its header; NULL is a no-op. */
CLMAD_API void clmad_safetensors_close(clmad_safetensors *file);

/**
 * Saves the optimizer's state as a safetensors file (written as
 * clmad_save): per parameter i, the tensors "param.<i>.exp_avg" and
 * "param.<i>.exp_avg_sq" (Adam, AdamW: the first and second moments) or
 * "param.<i>.momentum_buffer" (SGD with momentum), PyTorch's names; in the
 * metadata the kind ("clmad.optimizer": "sgd", "adam" or "adamw"), the
 * parameter count ("clmad.params"), the step counts ("clmad.steps" and
 * "param.<i>.step", decimal) and the options ("lr", "momentum",
 * "nesterov", "beta1", "beta2", "eps", "weight_decay", as %.17g: they
 * round-trip). The parameters themselves are not saved (clmad_save them).
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL), and those of clmad_save.
 */
CLMAD_API clmad_status clmad_optimizer_save(clmad_optimizer *o, const char *path);

/**
 * Loads a state saved by clmad_optimizer_save into o, which must have the
 * same kind, parameter count and parameter shapes and dtypes (the same
 * model): the moments or velocities and the step counts, so that training
 * continues with the same bits as if it had not stopped. The options stay
 * o's own (set at creation or by clmad_optimizer_set_lr). Checks all
 * before changing anything. Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL;
 * a file of another kind or parameter count, or without clmad's
 * metadata: the message says which), those of clmad_load.
 */
CLMAD_API clmad_status clmad_optimizer_load(clmad_optimizer *o, const char *path);

/**
 * The text of a tensor, as PyTorch prints it: nested brackets per
 * dimension, each value with 4 decimals ("%.4f"), or in scientific form
 * ("%.4e") for all of them when, among the finite nonzero magnitudes
 * shown, the largest is above 1e8 or more than 1000 times the smallest, or
 * the smallest is below 1e-4 (PyTorch's rule); values right-aligned to one
 * width; inf, -inf, nan. Integer dtypes, once clmad has them, will print
 * as integers. Past 1000
 * elements, only the first and last 3 items of each dimension longer than
 * 6 are shown, the rest as "..." (NumPy's and PyTorch's thresholds). Then
 * the shape and the dtype:
 *   tensor([[1.0000, 2.0000, 3.0000],
 *           [4.0000, 5.0000, 6.0000]], shape=(2, 3), dtype=f32)
 * (tensor(2.5000, shape=(), dtype=f64) for rank 0). Waits for the values
 * and reads the whole tensor to the host.
 * clmad_tensor_format writes it into buf as snprintf does: at most size
 * bytes including the final NUL (buf may be NULL when size is 0), and
 * sets *length to the full text's length without the NUL, so a text cut
 * short shows as *length >= size: call again with *length + 1 bytes.
 * clmad_tensor_print writes it and a newline to f.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL), CLMAD_ERR_IO (f failed),
 * CLMAD_ERR_OUT_OF_MEMORY, CLMAD_ERR_OPENCL.
 */
CLMAD_API clmad_status clmad_tensor_format(clmad_tensor *t, char *buf, size_t size, size_t *length);
CLMAD_API clmad_status clmad_tensor_print(clmad_tensor *t, FILE *f);

#ifdef __cplusplus
}
#endif
#endif /* CLMAD_H */
