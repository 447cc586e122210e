/* SPDX-License-Identifier: Apache-2.0 */
/* The on-disk program cache trusts only a folder of the user's own, reads
 * only regular files of bounded size, never writes through a planted link,
 * keys everything that changes the binary, and says when it cannot work. */
#include "support.h"

#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *SOURCE_A =
    "__kernel void scale(__global float *x, float a) { x[get_global_id(0)] *= 3.0f * a; }\n";
static const char *SOURCE_B =
    "__kernel void scale(__global float *x, float a) { x[get_global_id(0)] *= 5.0f * a; }\n";

/* Runs the scale kernel of program on {1, 2, 3, 4}: expects factor * x. */
static void check_program_scales(clmad_context *ctx, cl_program program, float factor)
{
    float host[4] = {1, 2, 3, 4};
    size_t shape[1] = {4};
    clmad_tensor *t;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, shape, host, &t));
    cl_int err;
    cl_kernel k = clCreateKernel(program, "scale", &err);
    cr_assert_eq(err, CL_SUCCESS);
    float a = 1;
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
        cr_expect_eq(host[i], factor * (float)(i + 1), "x[%d] = %g, expected %g", i, host[i],
                     factor * (float)(i + 1));
    clReleaseKernel(k);
    clmad_tensor_release(t);
}

/* The single .clbin file name in dir. */
static void entry_name(const char *dir, char *name, size_t cap)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".clbin") && !strstr(e->d_name, ".tmp")) {
            snprintf(name, cap, "%s", e->d_name);
            found++;
        }
    closedir(d);
    cr_assert_eq(found, 1, "expected one cache file in %s", dir);
}

/* Builds source in a fresh cache folder of its own; *dir and name: its entry. */
static void make_entry(const char *source, char *dir, size_t dir_cap, char *name, size_t name_cap)
{
    snprintf(dir, dir_cap, "%s", test_fresh_dir("trust-entry"));
    clmad_context *ctx = test_context_with_cache(dir);
    cl_program p;
    CHECK_OK(ctx, clmad__program_get(ctx, source, "", &p, NULL));
    clmad_context_release(ctx);
    entry_name(dir, name, name_cap);
}

static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)n + 1);
    cr_assert_not_null(data);
    cr_assert_eq(fread(data, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return data;
}

static void write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "create %s", path);
    cr_assert_eq(fwrite(data, 1, size, f), size);
    fclose(f);
}

static int holds(const unsigned char *data, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; m <= n && i <= n - m; i++)
        if (memcmp(data + i, needle, m) == 0)
            return 1;
    return 0;
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

/*
 * What someone who can write the folder makes of the genuine entries of A
 * and B (paths a and b): a file that carries A's binary and passes every
 * integrity check as B's entry, written to `out`. A forger knows the file
 * format, so this follows the format of the files it is given.
 * strong = 0: A's whole entry under B's name, checksums fixed up.
 * strong = 1: in addition, B's own key material put in front of A's binary.
 */
static void forge(const char *a, const char *b, const char *out, int strong)
{
    size_t na, nb;
    unsigned char *fa = read_file(a, &na);
    unsigned char *fb = read_file(b, &nb);
    cr_assert(na >= 32 && nb >= 32);
    if (memcmp(fa, "CLMADPB1", 8) == 0) {
        /* header: magic, hash of the key, payload size, payload hash. */
        memcpy(fa + 8, fb + 8, 8);
        write_file(out, fa, na);
    } else {
        /* header: magic, key size, payload size, checksum of key + payload. */
        cr_assert(memcmp(fa, "CLMADPB2", 8) == 0, "unknown cache file format");
        const unsigned char *src = strong ? fb : fa;
        uint64_t key_size = get64(src + 8);
        uint64_t payload_size = get64(fa + 16);
        const unsigned char *payload = fa + 32 + get64(fa + 8);
        size_t n = 32 + key_size + payload_size;
        unsigned char *f = malloc(n);
        cr_assert_not_null(f);
        memcpy(f, src, 32 + key_size);
        memcpy(f + 32 + key_size, payload, payload_size);
        put64(f + 16, payload_size);
        put64(f + 24, clmad__hash_bytes(CLMAD_HASH_INIT, f + 32, key_size + payload_size));
        write_file(out, f, n);
        free(f);
    }
    free(fa);
    free(fb);
}

/* A folder holding, under B's entry name, a forgery of A's binary as B. */
static const char *folder_with_forged_entry(int strong, char *forged_path, size_t cap)
{
    char dir_a[1024], name_a[256], dir_b[1024], name_b[256], a[1400], b[1400];
    make_entry(SOURCE_A, dir_a, sizeof dir_a, name_a, sizeof name_a);
    make_entry(SOURCE_B, dir_b, sizeof dir_b, name_b, sizeof name_b);
    snprintf(a, sizeof a, "%s/%s", dir_a, name_a);
    snprintf(b, sizeof b, "%s/%s", dir_b, name_b);
    const char *dir = test_fresh_dir("trust-forged");
    snprintf(forged_path, cap, "%s/%s", dir, name_b);
    forge(a, b, forged_path, strong);
    return dir;
}

/* B, requested from a cache folder, computes B's results (5x), not A's. */
static clmad_stats check_b_computes_b(const char *dir)
{
    clmad_context *ctx = test_context_with_cache(dir);
    cl_program p;
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE_B, "", &p, NULL));
    clmad_stats s = test_stats(ctx);
    cr_expect_eq(s.programs_from_disk, 0, "the forged entry must not be loaded");
    cr_expect_eq(s.programs_compiled, 1, "B is compiled from its source");
    check_program_scales(ctx, p, 5.0f);
    clmad_context_release(ctx);
    return s;
}

Test(disk_cache_trust, entry_copied_under_another_key_is_rejected)
{
    char forged[1400];
    const char *dir = folder_with_forged_entry(0, forged, sizeof forged);
    clmad_stats s = check_b_computes_b(dir);
    cr_expect_eq(s.disk_cache_rejected, 1);
}

static void check_folder_mode_refused(mode_t mode)
{
    char forged[1400];
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", folder_with_forged_entry(1, forged, sizeof forged));
    cr_assert_eq(chmod(dir, mode), 0);
    clmad_stats s = check_b_computes_b(dir);
    cr_expect(test_contains(s.disk_cache_problem, "writable by group or others"), "problem: %s",
              s.disk_cache_problem);
    cr_expect(test_contains(s.disk_cache_problem, dir), "problem: %s", s.disk_cache_problem);
}

Test(disk_cache_trust, folder_writable_by_others_is_refused) { check_folder_mode_refused(0777); }
Test(disk_cache_trust, folder_writable_by_group_is_refused) { check_folder_mode_refused(0770); }
Test(disk_cache_trust, sticky_shared_folder_is_refused) { check_folder_mode_refused(01777); }

/* Another user's folder (as root: made so with chown; otherwise /, root's). */
Test(disk_cache_trust, folder_of_another_user_is_refused)
{
    char forged[1400];
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", folder_with_forged_entry(1, forged, sizeof forged));
    if (geteuid() == 0) {
        cr_assert_eq(chown(forged, 65534, 65534), 0);
        cr_assert_eq(chown(dir, 65534, 65534), 0);
    } else {
        snprintf(dir, sizeof dir, "/");
    }
    clmad_stats s = check_b_computes_b(dir);
    cr_expect(test_contains(s.disk_cache_problem, "owned by"), "problem: %s", s.disk_cache_problem);
}

/* In a folder of the user's own, an entry file of another user is not used. */
Test(disk_cache_trust, entry_of_another_user_is_rejected)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to give a file to another user");
    char forged[1400];
    const char *dir = folder_with_forged_entry(1, forged, sizeof forged);
    cr_assert_eq(chown(forged, 65534, 65534), 0);
    clmad_stats s = check_b_computes_b(dir);
    cr_expect_eq(s.disk_cache_rejected, 1);
    cr_expect(test_contains(s.disk_cache_problem, "owned by"), "problem: %s", s.disk_cache_problem);
}

Test(disk_cache_trust, new_folder_and_entries_are_private)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/a/b", test_fresh_dir("trust-private"));
    clmad_context *ctx = test_context_with_cache(dir);
    cl_program p;
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE_A, "", &p, NULL));
    clmad_context_release(ctx);
    struct stat st;
    cr_assert_eq(stat(dir, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0700, "folder mode %o", (unsigned)(st.st_mode & 0777));
    char name[256], path[1600];
    entry_name(dir, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600, "entry mode %o", (unsigned)(st.st_mode & 0777));
}

Test(disk_cache_trust, planted_link_at_the_temporary_name_is_not_followed)
{
    char dir_a[1024], name[256];
    make_entry(SOURCE_A, dir_a, sizeof dir_a, name, sizeof name);

    const char *dir = test_fresh_dir("trust-link");
    char victim[1400];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    write_file(victim, "precious", 8);
    /* The temporary names this process will use: name.PID-SERIAL.tmp */
    for (int serial = 0; serial < 16; serial++) {
        char link[1600];
        snprintf(link, sizeof link, "%s/%s.%ld-%d.tmp", dir, name, (long)getpid(), serial);
        cr_assert_eq(symlink(victim, link), 0);
    }
    clmad_context *ctx = test_context_with_cache(dir);
    cl_program p;
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE_A, "", &p, NULL));
    check_program_scales(ctx, p, 3.0f);
    clmad_context_release(ctx);

    size_t n;
    unsigned char *data = read_file(victim, &n);
    cr_expect(n == 8 && memcmp(data, "precious", 8) == 0, "the link's target was overwritten");
    free(data);
}

Test(disk_cache_trust, fifo_at_an_entry_path_does_not_block, .timeout = 120)
{
    char dir_a[1024], name[256];
    make_entry(SOURCE_A, dir_a, sizeof dir_a, name, sizeof name);
    const char *dir = test_fresh_dir("trust-fifo");
    char fifo[1400];
    snprintf(fifo, sizeof fifo, "%s/%s", dir, name);
    cr_assert_eq(mkfifo(fifo, 0600), 0);

    clmad_context *ctx = test_context_with_cache(dir);
    cl_program p;
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE_A, "", &p, NULL));
    clmad_stats s = test_stats(ctx);
    cr_expect_eq(s.disk_cache_rejected, 1);
    cr_expect_eq(s.programs_compiled, 1);
    cr_expect(test_contains(s.disk_cache_problem, "not a regular file"), "problem: %s",
              s.disk_cache_problem);
    check_program_scales(ctx, p, 3.0f);
    clmad_context_release(ctx);
}

static long max_rss_kib(void)
{
    struct rusage ru;
    cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
    return ru.ru_maxrss;
}

Test(disk_cache_trust, oversized_entry_is_not_read)
{
    char dir_a[1024], name[256];
    make_entry(SOURCE_A, dir_a, sizeof dir_a, name, sizeof name);
    const char *dir = test_fresh_dir("trust-big");
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert(fd >= 0);
    cr_assert_eq(ftruncate(fd, (off_t)2 << 30), 0); /* 2 GiB, sparse */
    close(fd);

    long before = max_rss_kib();
    clmad_context *ctx = test_context_with_cache(dir);
    cl_program p;
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE_A, "", &p, NULL));
    long grew_mib = (max_rss_kib() - before) / 1024;
    clmad_stats s = test_stats(ctx);
    cr_expect_eq(s.disk_cache_rejected, 1);
    cr_expect(grew_mib < 256, "the 2 GiB file was read: the process grew by %ld MiB", grew_mib);
    cr_expect(test_contains(s.disk_cache_problem, "larger than"), "problem: %s", s.disk_cache_problem);
    check_program_scales(ctx, p, 3.0f);
    clmad_context_release(ctx);
}

/* A kernel that includes a header sees the header's current text, in a
 * fresh context of another process as well as here. */
Test(disk_cache_trust, included_header_changes_are_seen)
{
    const char *dir = test_fresh_dir("trust-include");
    char header[1400], source[2000];
    snprintf(header, sizeof header, "%s/factor.h", dir);
    snprintf(source, sizeof source,
             "#include \"%s\"\n"
             "T times_factor(T x) { return ad_mul(ad_const(FACTOR), x); }\n",
             header);
    char cache[1400];
    snprintf(cache, sizeof cache, "%s/cache", dir);

    for (int factor = 2; factor <= 3; factor++) {
        char text[64];
        snprintf(text, sizeof text, "#define FACTOR %d\n", factor);
        write_file(header, text, strlen(text));
        clmad_context *ctx = test_context_with_cache(cache);
        clmad_kernel *k;
        CHECK_OK(ctx, clmad_kernel_create(ctx, source, "times_factor", 1, 1, &k));
        float host[3] = {1, 2, 3};
        size_t shape[1] = {3};
        clmad_tensor *x, *y;
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, shape, host, &x));
        CHECK_OK(ctx, clmad_broadcast(ctx, k, &x, &y));
        CHECK_OK(ctx, clmad_tensor_read(y, host, sizeof host));
        for (int i = 0; i < 3; i++)
            cr_expect_eq(host[i], (float)(factor * (i + 1)), "FACTOR %d: y[%d] = %g", factor, i,
                         host[i]);
        clmad_tensor_release(x);
        clmad_tensor_release(y);
        clmad_kernel_release(k);
        clmad_context_release(ctx);
    }
}

/* An entry spells out its key: clmad's version and the device's and the
 * driver's, beside the source. */
Test(disk_cache_trust, entry_holds_its_whole_key)
{
    char dir[1024], name[256], path[1400];
    make_entry(SOURCE_A, dir, sizeof dir, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t n;
    unsigned char *data = read_file(path, &n);
    clmad_context *ctx = test_context();
    clmad_device_info info;
    CHECK_OK(ctx, clmad_context_device(ctx, &info));
    char version[64];
    snprintf(version, sizeof version, "clmad %d.%d.%d", CLMAD_VERSION_MAJOR, CLMAD_VERSION_MINOR,
             CLMAD_VERSION_PATCH);
    const char *needles[] = {version, info.platform_name, info.name, info.version,
                             info.driver_version, SOURCE_A};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
        cr_expect(holds(data, n, needles[i]),
                  "the entry does not hold \"%s\"", needles[i]);
    free(data);
    clmad_context_release(ctx);
}

/* A cache that cannot be written says so: a counter and the first reason. */
Test(disk_cache_trust, unwritable_cache_is_reported)
{
    char dir_a[1024], name[256];
    make_entry(SOURCE_A, dir_a, sizeof dir_a, name, sizeof name);
    const char *dir = test_fresh_dir("trust-unwritable");
    /* Non-empty folders at the temporary names this process will use
     * (name.PID-SERIAL.tmp): no file can be made there. */
    for (int serial = 0; serial < 16; serial++) {
        char blocker[1600], inside[1700];
        snprintf(blocker, sizeof blocker, "%s/%s.%ld-%d.tmp", dir, name, (long)getpid(), serial);
        cr_assert_eq(mkdir(blocker, 0700), 0);
        snprintf(inside, sizeof inside, "%s/keep", blocker);
        write_file(inside, "x", 1);
    }

    clmad_context *ctx = test_context_with_cache(dir);
    cl_program p;
    CHECK_OK(ctx, clmad__program_get(ctx, SOURCE_A, "", &p, NULL));
    check_program_scales(ctx, p, 3.0f);
    clmad_stats s = test_stats(ctx);
    cr_expect_eq(s.disk_cache_write_failures, 1);
    cr_expect(test_contains(s.disk_cache_problem, "cannot write"), "problem: %s", s.disk_cache_problem);
    cr_expect(test_contains(s.disk_cache_problem, name), "problem: %s", s.disk_cache_problem);
    clmad_context_release(ctx);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strstr(e->d_name, ".clbin") != NULL;
    closedir(d);
    return n;
}

/* Every spelling of a directive that reads a file keeps the program off
 * the disk; the word inside a longer one does not. */
Test(disk_cache_trust, include_in_any_spelling_skips_the_disk_cache)
{
    const char *dir = test_fresh_dir("trust-spelling");
    char header[1400];
    snprintf(header, sizeof header, "%s/factor.h", dir);
    write_file(header, "#define FACTOR 3.0f\n", 20);
    const char *spellings[] = {"#include", "  #  include", "# /* note */ include", "%:include",
                               "#inc\\\nlude", "#inc\\  \nlude"};
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        char cache[1400], source[2000];
        snprintf(cache, sizeof cache, "%s/cache-%zu", dir, i);
        snprintf(source, sizeof source,
                 "%s \"%s\"\n"
                 "__kernel void scale(__global float *x, float a) { x[get_global_id(0)] *= FACTOR * a; }\n",
                 spellings[i], header);
        clmad_context *ctx = test_context_with_cache(cache);
        cl_program p;
        CHECK_OK(ctx, clmad__program_get(ctx, source, "", &p, NULL));
        check_program_scales(ctx, p, 3.0f);
        clmad_stats s = test_stats(ctx);
        cr_expect_eq(s.disk_cache_write_failures, 0);
        clmad_context_release(ctx);
        cr_expect_eq(count_entries(cache), 0, "stored on disk: %s", source);
    }

    char cache[1400], source[2000];
    snprintf(cache, sizeof cache, "%s/cache-plain", dir);
    snprintf(source, sizeof source, "/* nothing included, imported or embedded */\n%s", SOURCE_A);
    clmad_context *ctx = test_context_with_cache(cache);
    cl_program p;
    CHECK_OK(ctx, clmad__program_get(ctx, source, "", &p, NULL));
    clmad_context_release(ctx);
    cr_expect_eq(count_entries(cache), 1);
}
