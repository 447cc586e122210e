/* SPDX-License-Identifier: Apache-2.0 */
/* The tuning of a device (clmad_tuning in clmad.h): one table keyed by
 * platform vendor, device type and driver, defaults by device type, values
 * measured by `clmad-info --tune` in the cache folder, the environment. */
#include "runtime/tuning.h"
#include "base/hash.h"
#include "base/log.h"
#include "runtime/context_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct tuning_row {
    const char *platform_vendor; /* CL_PLATFORM_VENDOR, exactly; NULL: any */
    int type;                    /* a clmad_device_type; -1: any */
    const char *driver_prefix;   /* CL_DRIVER_VERSION starts with it; NULL: any */
    int items, chunk_cap, inline_pragma;
    const char *name;
    int loss_lanes; /* work-items sharing one partial sum of a loss kernel (codegen_loss.c) */
    int caches_by_source; /* its own binary cache is keyed by source and options
                             alone, not by what an #include reads (rusticl) */
    int vector_width;     /* elements per work-item of the flat internal kernels (fill, copy,
                             accumulate, axpby: cl/real.clh's CLMAD_VW) */
    int loss_terms;       /* a loss kernel summing ranges takes one element per work-item and
                             writes its term; the range pass sums them (codegen_loss.c) */
    const clmad_clblast_tuning *clblast_f32; /* CLBlast's F32 GEMM parameters; NULL: its own */
} tuning_row;

/* POCL and rusticl (llvmpipe) on a CPU: CLBlast's database has no entry
 * for them, and its defaults (tiles for GPUs, and XgemmDirect up to 704^3
 * multiply-adds) made 11-13 GFLOP/s in bench_mlp's products on POCL, 2 on
 * llvmpipe, on a 2-core AVX-512 EPYC. These are the best of
 * clblast_tuner_xgemm's fixed set on both (about 90 GFLOP/s at 1024^3 on
 * POCL, 14 at 512^3 on llvmpipe), with the tiled kernel from 256^3
 * (docs/design-notes.md, "CLBlast on POCL"). */
static const clmad_clblast_tuning LLVM_CPU_CLBLAST = {{0, 64, 64, 32, 8, 8, 8, 8, 2, 4, 4, 0, 0, 1, 1, 1}, 256};
/* Intel's CPU runtime: CLBlast's database has entries for it (tuned on
 * Intel Core CPUs of 2015-16), but the tuner's best on the EPYC, 174
 * GFLOP/s at 1024^3, made bench_mlp's step 1.3x faster. */
static const clmad_clblast_tuning INTEL_CPU_CLBLAST = {{0, 32, 64, 32, 16, 8, 16, 8, 2, 2, 4, 0, 0, 0, 0, 1}, 256};

/* The first row that matches wins. Items: POCL vectorises only a loop
 * inside the work-item (docs/design-notes.md); rusticl's llvmpipe and
 * Intel's CPU runtime vectorise across work-items themselves, and GPUs
 * want one element per work-item for coalescing. Chunk cap: bench_arity
 * (one chunk of up to 16 partials was fastest on POCL, llvmpipe and an
 * H100). Inline pragma: compilers on upstream clang that take always_inline
 * in `#pragma clang attribute` (codegen.c). Loss lanes: on GPUs a loss
 * kernel's partial sum of about 32 elements is 8 work-items' work, so that
 * a 1024 x 1024 loss fills an H100 (CPUs sum by ranges: no lanes).
 * Vector width: the flat kernels' one vector load and store per work-item
 * (bench_hmlstm's copy against clEnqueueCopyBuffer on the same buffers;
 * docs/design-notes.md): 16 floats on POCL's CPU device and 8 on Intel's
 * reach the driver's copy where one element reached 0.3-0.8 of it; GPUs
 * take 4 (vload4 moved 1.18x one element's bytes on an H100); rusticl's
 * kernels cost the same at any width (its launch dominates). Loss terms:
 * Intel's CPU runtime does not vectorise a loop that calls exp (its build
 * log: "call instruction cannot be vectorized") and vectorised a range-
 * summing loss kernel across work-items, a range each, with 32-36 gathers
 * and 10-40 scatters; one element per work-item is 16-way with 2 gathers
 * (docs/design-notes.md). Also rusticl: llvmpipe ends every loop of a
 * work-item once all its loops together made 65535 iterations (Mesa's
 * LP_MAX_TGSI_LOOP_ITERATIONS), and a range of 8192 elements whose user
 * functions loop about 8 times each got there: the rest of the range was
 * skipped, its gradients unwritten (docs/design-notes.md). Intel's
 * compiler takes the inline pragma (it inlined the user's functions
 * already). */
static const tuning_row TABLE[] = {
    {"The pocl project", CLMAD_DEVICE_CPU, NULL, 32, 16, 1, "POCL on a CPU", 0, 1, 16, 0, &LLVM_CPU_CLBLAST},
    {"The pocl project", -1, NULL, 1, 16, 1, "POCL", 0, 8, 4, 0, NULL},
    {"Mesa/X.org", CLMAD_DEVICE_CPU, NULL, 1, 16, 1, "Mesa (rusticl) on a CPU", 1, 1, 1, 1, &LLVM_CPU_CLBLAST},
    {"Mesa/X.org", -1, NULL, 1, 16, 1, "Mesa (rusticl)", 1, 1, 1, 1, NULL},
    {"Intel(R) Corporation", CLMAD_DEVICE_CPU, NULL, 1, 16, 1, "Intel's CPU runtime", 0, 1, 8, 1, &INTEL_CPU_CLBLAST},
    {"Oclgrind", -1, NULL, 1, 16, 0, "Oclgrind (a simulator: the GPU form)", 0, 8, 4, 0, NULL},
};

/* When no row matches: by device type; accelerators and others keep the
 * paper's cautious chunk cap of 8. */
static tuning_row type_default(clmad_device_type type)
{
    if (type == CLMAD_DEVICE_GPU)
        return (tuning_row){NULL, type, NULL, 1, 16, 0, "default for GPUs", 0, 8, 4, 0, NULL};
    if (type == CLMAD_DEVICE_CPU)
        return (tuning_row){NULL, type, NULL, 1, 16, 0, "default for CPUs", 0, 1, 1, 0, NULL};
    return (tuning_row){NULL, type, NULL, 1, 8, 0, "default for other devices", 0, 1, 1, 0, NULL};
}

static int row_matches(const tuning_row *r, const char *vendor, const clmad_device_info *info)
{
    return (!r->platform_vendor || strcmp(r->platform_vendor, vendor) == 0) &&
           (r->type < 0 || r->type == (int)info->type) &&
           (!r->driver_prefix || strncmp(info->driver_version, r->driver_prefix, strlen(r->driver_prefix)) == 0);
}

static void platform_vendor(const clmad_context *ctx, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (clGetPlatformInfo(ctx->platform, CL_PLATFORM_VENDOR, cap, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[cap - 1] = '\0';
}

/* The name of the device's file in the cache folder. */
static void tuned_file_name(const clmad_context *ctx, char *name, size_t cap)
{
    char vendor[256];
    platform_vendor(ctx, vendor, sizeof vendor);
    uint64_t h = clmad__hash_string(CLMAD_HASH_INIT, vendor);
    h = clmad__hash_string(h, ctx->info.name);
    h = clmad__hash_string(h, ctx->info.driver_version);
    snprintf(name, cap, "tuning-%016llx.txt", (unsigned long long)h);
}

/* Reads "items_per_work_item N" and "chunk_cap N" lines (# comments) of
 * the device's file into t; 1 when the file was there and valid. */
static int read_tuned(const clmad_context *ctx, const char *name, clmad_tuning *t)
{
    int fd = openat(ctx->cache_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return 0;
    }
    clmad_tuning got = *t;
    char line[256];
    int ok = 1;
    while (ok && fgets(line, sizeof line, f)) {
        char key[64];
        long value;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (sscanf(line, "%63s %ld", key, &value) != 2)
            ok = 0;
        else if (!strcmp(key, "items_per_work_item") && value >= 1 && value <= 1024)
            got.items_per_work_item = (int)value;
        else if (!strcmp(key, "chunk_cap") && value >= 1 && value <= 64)
            got.chunk_cap = (int)value;
        else
            ok = 0;
    }
    fclose(f);
    if (!ok) {
        clmad__log("tuning file %s/%s is not valid: ignored (clmad-info --tune writes it anew)", ctx->cache_dir,
                   name);
        return 0;
    }
    *t = got;
    return 1;
}

void clmad__tuning_resolve(clmad_context *ctx)
{
    char vendor[256];
    platform_vendor(ctx, vendor, sizeof vendor);
    tuning_row row = type_default(ctx->info.type);
    const char *kind = "";
    for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++)
        if (row_matches(&TABLE[i], vendor, &ctx->info)) {
            row = TABLE[i];
            kind = "table: ";
            break;
        }
    clmad_tuning *t = &ctx->tuning;
    *t = (clmad_tuning){row.items, row.chunk_cap, row.inline_pragma, ""};
    ctx->driver_caches_by_source = row.caches_by_source;
    ctx->loss_lanes = row.loss_lanes;
    ctx->vector_width = row.vector_width;
    ctx->loss_terms = row.loss_terms;
    ctx->clblast_f32 = row.clblast_f32;
    snprintf(t->origin, sizeof t->origin, "%s%s", kind, row.name);
    if (ctx->cache_dir) {
        char name[64];
        tuned_file_name(ctx, name, sizeof name);
        if (read_tuned(ctx, name, t))
            snprintf(t->origin, sizeof t->origin, "tuned: %s/%s", ctx->cache_dir, name);
    }
    /* CLMAD_ITEMS_PER_WORK_ITEM=N: N elements per work-item on any device
     * (tests run the one-element form of GPUs on POCL, Oclgrind checks the
     * runs' bounds, clmad-info --tune measures). */
    const char *items = getenv("CLMAD_ITEMS_PER_WORK_ITEM");
    if (items && *items) {
        char *end;
        long v = strtol(items, &end, 10);
        if (!*end && v >= 1 && v <= 1024) {
            t->items_per_work_item = (int)v;
            size_t len = strlen(t->origin);
            snprintf(t->origin + len, sizeof t->origin - len, ", CLMAD_ITEMS_PER_WORK_ITEM");
        }
    }
}

clmad_status clmad_context_tuning(const clmad_context *ctx, clmad_tuning *tuning)
{
    CLMAD_GUARD(ctx, "clmad_context_tuning");
    if (!ctx || !tuning)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_context_tuning: %s is NULL",
                           ctx ? "tuning" : "ctx");
    *tuning = ctx->tuning;
    return CLMAD_OK;
}

clmad_status clmad_tuning_save(clmad_context *ctx, const clmad_tuning *tuning)
{
    CLMAD_GUARD(ctx, "clmad_tuning_save");
    if (!ctx || !tuning)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tuning_save: %s is NULL",
                           ctx ? "tuning" : "ctx");
    if (tuning->items_per_work_item < 1 || tuning->items_per_work_item > 1024 || tuning->chunk_cap < 1 ||
        tuning->chunk_cap > 64)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_tuning_save: items_per_work_item %d (1..1024) or chunk_cap %d (1..64) "
                           "out of bounds",
                           tuning->items_per_work_item, tuning->chunk_cap);
    if (!ctx->cache_dir)
        return clmad__fail(ctx, CLMAD_ERR_STATE, "clmad_tuning_save: the context has no cache folder");
    char name[64], tmp[96];
    static atomic_uint serial;
    tuned_file_name(ctx, name, sizeof name);
    snprintf(tmp, sizeof tmp, "%s.%ld-%u.tmp", name, (long)getpid(), atomic_fetch_add(&serial, 1u));
    int fd = openat(ctx->cache_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int err = f ? 0 : errno;
    if (f) {
        fprintf(f, "# clmad tuning of \"%s\" (driver %s), written by clmad_tuning_save\n"
                   "items_per_work_item %d\nchunk_cap %d\n",
                ctx->info.name, ctx->info.driver_version, tuning->items_per_work_item, tuning->chunk_cap);
        if (fclose(f) != 0)
            err = errno ? errno : EIO;
    } else if (fd >= 0) {
        close(fd);
    }
    if (!err && renameat(ctx->cache_fd, tmp, ctx->cache_fd, name) != 0)
        err = errno;
    if (err) {
        unlinkat(ctx->cache_fd, tmp, 0);
        return clmad__fail(ctx, CLMAD_ERR_IO, "clmad_tuning_save: cannot write %s/%s: %s", ctx->cache_dir, name,
                           strerror(err));
    }
    return CLMAD_OK;
}
