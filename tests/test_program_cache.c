/* SPDX-License-Identifier: Apache-2.0 */
/* Program cache: memory hits, disk reuse across processes, corrupt files,
 * and build errors that carry the compiler's message. */
#include "support.h"

#include "internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *SOURCE =
    "__kernel void scale(__global float *x, float a) { x[get_global_id(0)] *= a; }\n";

/* Runs the scale kernel of program on a small tensor: the program works. */
static void check_program_runs(clmad_context *ctx, cl_program program)
{
    float host[4] = {1, 2, 3, 4};
    size_t shape[1] = {4};
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, shape, host, &t));
    cl_int err;
    cl_kernel k = clCreateKernel(program, "scale", &err);
    cr_assert_eq(err, CL_SUCCESS);
    float a = 3;
    cl_mem mem;
    cl_command_queue queue;
    CHECK_OK(ctx, clmad_tensor_get_cl(t, &mem, NULL));
    CHECK_OK(ctx, clmad_context_get_cl(ctx, NULL, NULL, &queue));
    clSetKernelArg(k, 0, sizeof(cl_mem), &mem);
    clSetKernelArg(k, 1, sizeof a, &a);
    size_t global = 4;
    cr_assert_eq(clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, NULL, 0, NULL, NULL), CL_SUCCESS);
    CHECK_OK(ctx, clmad_tensor_read(t, host, sizeof host));
    for (int i = 0; i < 4; i++)
        cr_expect_eq(host[i], 3.0f * (float)(i + 1));
    clReleaseKernel(k);
    clmad_tensor_release(t);
}

/* The single .clbin file in dir. */
static void cache_file(const char *dir, char *path, size_t cap)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".clbin")) {
            snprintf(path, cap, "%s/%s", dir, e->d_name);
            found++;
        }
    closedir(d);
    cr_assert_eq(found, 1, "expected one cache file in %s", dir);
}

Test(program_cache, second_request_hits_memory)
{
    clmad_context *ctx = test_context_with_cache("");
    cl_program p1, p2;
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE, "", &p1, NULL));
    clmad_stats s = test_stats(ctx);
    cr_expect_eq(s.programs_compiled, 1);
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE, "", &p2, NULL));
    s = test_stats(ctx);
    cr_expect_eq(s.programs_compiled, 1, "the compiler must not run again");
    cr_expect_eq(s.program_memory_hits, 1);
    cr_expect_eq(p1, p2);
    /* Other options are another program. */
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE, "-cl-fast-relaxed-math", &p2, NULL));
    cr_expect_eq(test_stats(ctx).programs_compiled, 2);
    check_program_runs(ctx, p1);
    clmad_context_release(ctx);
}

Test(program_cache, disk_cache_is_reused_by_a_second_process)
{
    const char *dir = test_fresh_dir("disk-cache");
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) {
        /* First process: compiles and writes the cache file. */
        clmad_context *ctx = NULL;
        clmad_options opt;
        clmad_options_init(&opt);
        opt.cache_dir = dir;
        cl_program p;
        clmad_stats stats;
        int ok = clmad_context_create(&opt, &ctx) == CLMAD_OK &&
                 clmad__program_get(ctx, SOURCE, "", &p, NULL) == CLMAD_OK &&
                 clmad_context_stats(ctx, &stats) == CLMAD_OK && stats.programs_compiled == 1;
        clmad_context_release(ctx);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "first process failed");

    clmad_context *ctx = test_context_with_cache(dir);
    cl_program p;
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE, "", &p, NULL));
    clmad_stats s = test_stats(ctx);
    cr_expect_eq(s.programs_compiled, 0, "the second process must not compile");
    cr_expect_eq(s.programs_from_disk, 1);
    check_program_runs(ctx, p);
    clmad_context_release(ctx);
}

/* A setting that changes what an implementation builds (here Intel's
 * CL_CONFIG_USE_VECTORIZER, which POCL ignores) is part of the key: a
 * binary built under one value is not loaded under another. */
Test(program_cache, compiler_settings_of_the_environment_are_in_the_key)
{
    const char *dir = test_fresh_dir("env-key");
    unsetenv("CL_CONFIG_USE_VECTORIZER");
    clmad_context *ctx = test_context_with_cache(dir);
    cl_program p;
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE, "", &p, NULL));
    cr_expect_eq(test_stats(ctx).programs_compiled, 1);
    clmad_context_release(ctx);

    setenv("CL_CONFIG_USE_VECTORIZER", "False", 1);
    ctx = test_context_with_cache(dir);
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE, "", &p, NULL));
    cr_expect_eq(test_stats(ctx).programs_from_disk, 0, "a binary of another setting was loaded");
    cr_expect_eq(test_stats(ctx).programs_compiled, 1);
    clmad_context_release(ctx);

    unsetenv("CL_CONFIG_USE_VECTORIZER");
    ctx = test_context_with_cache(dir);
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE, "", &p, NULL));
    cr_expect_eq(test_stats(ctx).programs_from_disk, 1, "the first binary is still there");
    cr_expect_eq(test_stats(ctx).programs_compiled, 0);
    check_program_runs(ctx, p);
    clmad_context_release(ctx);
}

static void corrupt_and_recover(void (*damage)(const char *path))
{
    const char *dir = test_fresh_dir("corrupt-cache");
    clmad_context *ctx = test_context_with_cache(dir);
    cl_program p;
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE, "", &p, NULL));
    clmad_context_release(ctx);

    char path[2048];
    cache_file(dir, path, sizeof path);
    damage(path);

    ctx = test_context_with_cache(dir);
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE, "", &p, NULL));
    clmad_stats s = test_stats(ctx);
    cr_expect_eq(s.disk_cache_rejected, 1);
    cr_expect_eq(s.programs_compiled, 1, "rebuilt from source");
    check_program_runs(ctx, p);
    clmad_context_release(ctx);

    /* The rebuilt program was written back and is good again. */
    ctx = test_context_with_cache(dir);
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE, "", &p, NULL));
    cr_expect_eq(test_stats(ctx).programs_from_disk, 1);
    cr_expect_eq(test_stats(ctx).programs_compiled, 0);
    clmad_context_release(ctx);
}

static void flip_payload_bytes(const char *path)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    for (long at = 40; at < n; at += n / 7 + 1) {
        fseek(f, at, SEEK_SET);
        int c = fgetc(f);
        fseek(f, at, SEEK_SET);
        fputc(c ^ 0x5A, f);
    }
    fclose(f);
}

static void truncate_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    cr_assert_eq(truncate(path, n / 2), 0);
}

static void replace_with_garbage(const char *path)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fputs("this is not a program binary", f);
    fclose(f);
}

Test(program_cache, corrupted_file_is_rebuilt) { corrupt_and_recover(flip_payload_bytes); }
Test(program_cache, truncated_file_is_rebuilt) { corrupt_and_recover(truncate_file); }
Test(program_cache, garbage_file_is_rebuilt) { corrupt_and_recover(replace_with_garbage); }

Test(program_cache, broken_source_returns_compiler_message)
{
    clmad_context *ctx = test_context_with_cache("");
    const char *broken =
        "__kernel void broken(__global float *x) {\n"
        "    x[0] = undefined_thing_42 + 1.0f;\n"
        "}\n";
    cl_program p = NULL;
    char *log = NULL;
    clmad_status st = clmad__program_get(ctx, broken, "", &p, &log);
    cr_expect_eq(st, CLMAD_ERR_BUILD);
    cr_expect_null(p);
    const char *msg = clmad_last_error(ctx);
    cr_expect(test_contains(msg, "undefined_thing_42"), "message: %s", msg);
    cr_expect(test_contains(log, "undefined_thing_42"), "log: %s", log);
    free(log);
    /* The context still works, and a failure is not cached. */
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE, "", &p, NULL));
    cr_expect_eq(clmad__program_get(ctx, broken, "", &p, NULL), CLMAD_ERR_BUILD);
    clmad_context_release(ctx);
}

Test(program_cache, embedded_sources_are_present)
{
    const char *copy = clmad__embedded_source("copy.cl");
    cr_assert_not_null(copy);
    cr_expect(test_contains(copy, "__kernel void clmad_copy"));
    cr_expect_null(clmad__embedded_source("no-such-file.cl"));

    clmad_context *ctx = test_context();
    char source[4096];
    snprintf(source, sizeof source, "typedef float real;\n%s", copy);
    cl_program p;
    CHECK_OK(ctx, clmad__program_get(ctx, source, "", &p, NULL));
    clmad_context_release(ctx);
}

/* Builds every internal kernel (the table of kernel_ids.h) of dtype in a
 * context on dir; 1 when all of them were built. */
static int build_every_internal_kernel(clmad_context *ctx, clmad_dtype dtype)
{
    clmad_device_info dev;
    clmad_context_device(ctx, &dev);
    for (int id = 0; id < CLMAD_KERNEL_COUNT; id++) {
        if (id == CLMAD_INDEX_CAST_F64 && !dev.fp64)
            continue; /* index.cl has it only where cl_khr_fp64 is defined */
        cl_kernel k;
        if (clmad__cached_kernel(ctx, dtype, (clmad_kernel_id)id, &k) != CLMAD_OK)
            return 0;
    }
    return 1;
}

/* clmad's own programs (cl/ops.cl, axis.cl, train.cl) go through the disk
 * cache like any other: a second process compiles none of them. A word
 * such as "include" in a comment of cl/ keeps a program off the disk
 * (reads_other_files in program.c), and then every process compiled it. */
Test(program_cache, internal_programs_are_stored_on_disk)
{
    const char *dir = test_fresh_dir("internal-programs");
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) {
        clmad_context *ctx = NULL;
        clmad_options opt;
        clmad_options_init(&opt);
        opt.cache_dir = dir;
        int ok = clmad_context_create(&opt, &ctx) == CLMAD_OK && build_every_internal_kernel(ctx, CLMAD_F32);
        if (!ok)
            fprintf(stderr, "first process: %s\n", clmad_last_error(ctx));
        clmad_context_release(ctx);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "first process failed");

    clmad_context *ctx = test_context_with_cache(dir);
    cr_assert(build_every_internal_kernel(ctx, CLMAD_F32), "%s", clmad_last_error(ctx));
    clmad_stats s = test_stats(ctx);
    cr_expect_eq(s.programs_compiled, 0, "the second process compiled %llu internal program(s) again",
                 (unsigned long long)s.programs_compiled);
    cr_expect_gt(s.programs_from_disk, 0);
    clmad_context_release(ctx);
}
