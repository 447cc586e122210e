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
    const char *device_name;     /* CL_DEVICE_NAME, exactly (CLBlast's own key); NULL: any */
    int items, chunk_cap, inline_pragma;
    const char *name;
    int loss_lanes; /* work-items sharing one partial sum of a loss kernel (codegen_loss.c); 0: auto */
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

/* NVIDIA's Hopper (H200, H100): CLBlast 1.5.3's database knows NVIDIA GPUs up to the
 * A100 (SM8.0). clblast_tuner_xgemm at 2048^3 on an H200 (2026-11-28,
 * driver 580.159.04) found 37.8 TFLOP/s with these after 1076
 * configurations; bench_mlp's step at 4096 x 1024 x 4096 x 1000 took
 * 6.53-6.80 ms with them against 7.67-8.53 with CLBlast's own, alternating
 * in one run. Products under 1024^3 multiply-adds keep XgemmDirect: from
 * 256^3 the tiled kernel's copies made the 256-batch step 2x slower
 * (bench/results/nvidia-h200.md). The H100 (same Hopper SM, same SM
 * count) takes them too: 6.57-6.89 ms against 7.45-7.53 with CLBlast's
 * own (bench/results/nvidia-h100-2026-11-28.md). */
static const clmad_clblast_tuning NVIDIA_HOPPER_CLBLAST = {{0, 128, 128, 32, 16, 16, 16, 8, 2, 4, 4, 0, 1, 1, 1, 1},
                                                         1024};

/* The first row that matches wins. Items: POCL vectorises only a loop
 * inside the work-item (docs/design-notes.md); rusticl's llvmpipe and
 * Intel's CPU runtime vectorise across work-items themselves, and GPUs
 * want one element per work-item for coalescing. Chunk cap: bench_arity
 * (one chunk of up to 16 partials was fastest on POCL, llvmpipe and an
 * H100). Inline pragma: compilers on upstream clang that take always_inline
 * in `#pragma clang attribute` (codegen.c). Loss lanes: several work-items
 * per partial sum of a loss kernel (codegen_loss.c); 0: as many as fill
 * the device (loss_lanes.c: 8 for a 1024 x 1024 loss on an H100, 1 from
 * 4096 x 4096), as measured there; a tuning file's "loss_lanes N" fixes
 * them. CPUs sum by ranges: no lanes. Oclgrind: none, as its simulated
 * barriers are slow (CI's phase). Caches by source: 1
 * (programs that include files get a define of their own, program.c)
 * wherever the driver's cache is not known to key the preprocessed
 * source, as POCL's does.
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
    {.platform_vendor = "The pocl project", .type = CLMAD_DEVICE_CPU, .items = 32, .chunk_cap = 16,
     .inline_pragma = 1, .name = "POCL on a CPU", .loss_lanes = 1, .vector_width = 16,
     .clblast_f32 = &LLVM_CPU_CLBLAST},
    {.platform_vendor = "The pocl project", .type = -1, .items = 1, .chunk_cap = 16, .inline_pragma = 1,
     .name = "POCL", .loss_lanes = 0, .vector_width = 4},
    {.platform_vendor = "Mesa/X.org", .type = CLMAD_DEVICE_CPU, .items = 1, .chunk_cap = 16, .inline_pragma = 1,
     .name = "Mesa (rusticl) on a CPU", .loss_lanes = 1, .caches_by_source = 1, .vector_width = 1,
     .loss_terms = 1, .clblast_f32 = &LLVM_CPU_CLBLAST},
    {.platform_vendor = "Mesa/X.org", .type = -1, .items = 1, .chunk_cap = 16, .inline_pragma = 1,
     .name = "Mesa (rusticl)", .loss_lanes = 0, .caches_by_source = 1, .vector_width = 1, .loss_terms = 1},
    {.platform_vendor = "Intel(R) Corporation", .type = CLMAD_DEVICE_CPU, .items = 1, .chunk_cap = 16,
     .inline_pragma = 1, .name = "Intel's CPU runtime", .loss_lanes = 1, .caches_by_source = 1, .vector_width = 8,
     .loss_terms = 1, .clblast_f32 = &INTEL_CPU_CLBLAST},
    {.type = CLMAD_DEVICE_GPU, .device_name = "NVIDIA H200", .items = 1, .chunk_cap = 16, .name = "NVIDIA H200",
     .loss_lanes = 0, .caches_by_source = 1, .vector_width = 4, .clblast_f32 = &NVIDIA_HOPPER_CLBLAST},
    {.type = CLMAD_DEVICE_GPU, .device_name = "NVIDIA H100 80GB HBM3", .items = 1, .chunk_cap = 16,
     .name = "NVIDIA H100", .loss_lanes = 0, .caches_by_source = 1, .vector_width = 4,
     .clblast_f32 = &NVIDIA_HOPPER_CLBLAST},
    {.platform_vendor = "Oclgrind", .type = -1, .items = 1, .chunk_cap = 16,
     .name = "Oclgrind (a simulator: the GPU form)", .loss_lanes = 1, .caches_by_source = 1, .vector_width = 4},
};

/* When no row matches: by device type; accelerators and others keep the
 * paper's cautious chunk cap of 8. */
static tuning_row type_default(clmad_device_type type)
{
    if (type == CLMAD_DEVICE_GPU)
        return (tuning_row){.type = type, .items = 1, .chunk_cap = 16, .name = "default for GPUs", .loss_lanes = 0,
                            .caches_by_source = 1, .vector_width = 4};
    if (type == CLMAD_DEVICE_CPU)
        return (tuning_row){.type = type, .items = 1, .chunk_cap = 16, .name = "default for CPUs", .loss_lanes = 1,
                            .caches_by_source = 1, .vector_width = 1};
    return (tuning_row){.type = type, .items = 1, .chunk_cap = 8, .name = "default for other devices",
                        .loss_lanes = 1, .caches_by_source = 1, .vector_width = 1};
}

static int row_matches(const tuning_row *r, const char *vendor, const clmad_device_info *info)
{
    return (!r->platform_vendor || strcmp(r->platform_vendor, vendor) == 0) &&
           (r->type < 0 || r->type == (int)info->type) &&
           (!r->driver_prefix || strncmp(info->driver_version, r->driver_prefix, strlen(r->driver_prefix)) == 0) &&
           (!r->device_name || strcmp(info->name, r->device_name) == 0);
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

/* The numbers after "clblast_xgemm_f32" in a tuning file's line: the 16
 * Xgemm parameters in CLMAD_XGEMM_NAMES' order, then XGEMM_MIN_INDIRECT_SIZE.
 * The bounds keep nonsense out; CLBlast checks what it builds with. */
static int parse_clblast(const char *rest, clmad_clblast_tuning *c)
{
    size_t values[CLMAD_XGEMM_PARAMS + 1];
    for (int i = 0; i <= CLMAD_XGEMM_PARAMS; i++) {
        char *end;
        long v = strtol(rest, &end, 10);
        if (end == rest || v < 0 || v > (i < CLMAD_XGEMM_PARAMS ? 1024 : 65536))
            return 0;
        values[i] = (size_t)v;
        rest = end;
    }
    while (*rest == ' ' || *rest == '\t')
        rest++;
    if (*rest != '\n' && *rest != '\0')
        return 0;
    memcpy(c->xgemm, values, sizeof c->xgemm);
    c->min_indirect = values[CLMAD_XGEMM_PARAMS];
    return 1;
}

/* Reads "items_per_work_item N", "chunk_cap N", "loss_lanes N" and
 * "clblast_xgemm_f32 ..." lines (# comments) of the device's file into t
 * and *extras; 1 when the file was there and valid. */
static int read_tuned(const clmad_context *ctx, const char *name, clmad_tuning *t, clmad_tuned_extras *extras)
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
    clmad_tuned_extras got_extras = {0};
    char line[512];
    int ok = 1;
    while (ok && fgets(line, sizeof line, f)) {
        char key[64];
        long value;
        int used = 0;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (sscanf(line, "%63s%n", key, &used) == 1 && !strcmp(key, "clblast_xgemm_f32"))
            ok = got_extras.has_clblast_f32 = parse_clblast(line + used, &got_extras.clblast_f32);
        else if (sscanf(line, "%63s %ld", key, &value) != 2)
            ok = 0;
        else if (!strcmp(key, "items_per_work_item") && value >= 1 && value <= 1024)
            got.items_per_work_item = (int)value;
        else if (!strcmp(key, "chunk_cap") && value >= 1 && value <= 64)
            got.chunk_cap = (int)value;
        else if (!strcmp(key, "loss_lanes") && value >= 1 && value <= 32 &&
                 (size_t)value * 32 <= ctx->info.max_work_group_size) /* groups of 32 parts x lanes */
            got_extras.loss_lanes = (int)value;
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
    *extras = got_extras;
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
        if (read_tuned(ctx, name, t, &ctx->tuned))
            snprintf(t->origin, sizeof t->origin, "tuned: %s/%s%s%s", ctx->cache_dir, name,
                     ctx->tuned.loss_lanes ? ", with loss lanes" : "",
                     ctx->tuned.has_clblast_f32 ? ", with CLBlast's F32 GEMM parameters" : "");
        if (ctx->tuned.loss_lanes)
            ctx->loss_lanes = ctx->tuned.loss_lanes;
        if (ctx->tuned.has_clblast_f32)
            ctx->clblast_f32 = &ctx->tuned.clblast_f32;
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

/* The tuning file's lines beyond clmad_tuning (read_tuned reads them). */
static void write_extras(FILE *f, const clmad_tuned_extras *e)
{
    if (e->loss_lanes)
        fprintf(f, "loss_lanes %d\n", e->loss_lanes);
    if (!e->has_clblast_f32)
        return;
    fputs("clblast_xgemm_f32", f);
    for (int i = 0; i < CLMAD_XGEMM_PARAMS; i++)
        fprintf(f, " %zu", e->clblast_f32.xgemm[i]);
    fprintf(f, " %zu\n", e->clblast_f32.min_indirect);
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
        write_extras(f, &ctx->tuned); /* the file's own lines: kept */
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
