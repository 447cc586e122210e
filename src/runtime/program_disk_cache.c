/* SPDX-License-Identifier: Apache-2.0 */
/*
 * On-disk cache of program binaries.
 *
 * Trust. A binary is native code on some devices (POCL), so whoever can
 * write the folder can run code as the user. The folder is used only when
 * the user owns it and group and others cannot write it; it is opened once
 * and every file is reached relative to that open folder.
 *
 * A file is one program, named by the hash of its key: a header (magic, the
 * key's size, the binary's size, a checksum of key and binary), the key
 * itself (program.c: versions, device, options, source), the binary. A file
 * is used only when it is a regular file of the user's, at most
 * CLMAD_DISK_CACHE_MAX_BYTES, whose checksum holds and whose key is the one
 * asked for, byte for byte: a corrupt, truncated, colliding or renamed file
 * is rebuilt from source (and removed). Files are opened with O_NOFOLLOW and
 * O_NONBLOCK: a link or a FIFO is refused, not followed or waited on.
 *
 * Files are written to a temporary name and renamed, so that concurrent
 * processes never read a half-written file. The temporary name holds the
 * process id and a per-process serial number (two contexts on two threads
 * may write the same program at once) and is created exclusively, mode 0600.
 */
#include "runtime/context.h"
#include "base/hash.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_uint temp_serial;

static const char MAGIC[8] = {'C', 'L', 'M', 'A', 'D', 'P', 'B', '2'};

typedef struct file_header {
    char magic[8];
    uint64_t key_size;
    uint64_t payload_size;
    uint64_t checksum; /* of the key, then the payload */
} file_header;

/* Keeps the first problem of the context for clmad_stats.disk_cache_problem. */
CLMAD_PRINTF(2, 3)
static void note_problem(clmad_context *ctx, const char *fmt, ...)
{
    if (ctx->stats.disk_cache_problem[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->stats.disk_cache_problem, sizeof ctx->stats.disk_cache_problem, fmt, ap);
    va_end(ap);
}

static void entry_name(const clmad_program_key *key, char *buf, size_t cap)
{
    snprintf(buf, cap, "%016llx.clbin", (unsigned long long)key->hash);
}

/* Creates the missing folders of dir, mode 0700; 0 or an errno value. */
static int make_dirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n >= sizeof path)
        return ENAMETOOLONG;
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] == '/' || path[i] == '\0') {
            char c = path[i];
            path[i] = '\0';
            /* An existing folder may answer EACCES or EROFS rather than EEXIST. */
            struct stat st;
            if (mkdir(path, 0700) != 0 && errno != EEXIST) {
                int err = errno;
                if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
                    return err;
            }
            path[i] = c;
        }
    }
    return 0;
}

static void cache_off(clmad_context *ctx, int fd)
{
    if (fd >= 0)
        close(fd);
    free(ctx->cache_dir);
    ctx->cache_dir = NULL;
}

void clmad__disk_cache_open(clmad_context *ctx)
{
    const char *dir = ctx->cache_dir;
    if (!dir)
        return;
    int err = make_dirs(dir);
    if (err) {
        note_problem(ctx, "disk cache off: cannot create folder \"%s\": %s", dir, strerror(err));
        cache_off(ctx, -1);
        return;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        note_problem(ctx, "disk cache off: cannot open folder \"%s\": %s", dir, strerror(errno));
        cache_off(ctx, fd);
        return;
    }
    /* Whoever can write the folder can run code as this user. */
    if (st.st_uid != geteuid()) {
        note_problem(ctx, "disk cache off: folder \"%s\" is owned by uid %lu, not by this user (uid %lu)",
                     dir, (unsigned long)st.st_uid, (unsigned long)geteuid());
        cache_off(ctx, fd);
        return;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        note_problem(ctx, "disk cache off: folder \"%s\" is writable by group or others (mode %04o)",
                     dir, (unsigned)(st.st_mode & 07777));
        cache_off(ctx, fd);
        return;
    }
    ctx->cache_fd = fd;
}

void clmad__disk_cache_close(clmad_context *ctx)
{
    if (ctx->cache_dir)
        close(ctx->cache_fd);
}

/* Reads exactly n bytes; 0 on a short read or an error. */
static int read_all(int fd, unsigned char *buf, size_t n)
{
    while (n > 0) {
        ssize_t got = read(fd, buf, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return 0;
        buf += got;
        n -= (size_t)got;
    }
    return 1;
}

/* Writes n bytes; 0 or an errno value. */
static int write_all(int fd, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n > 0) {
        ssize_t put = write(fd, p, n);
        if (put < 0 && errno == EINTR)
            continue;
        if (put < 0)
            return errno;
        if (put == 0)
            return EIO;
        p += put;
        n -= (size_t)put;
    }
    return 0;
}

/*
 * Reads entry `name` into a malloc'ed buffer: 1 and *data, *size; 0 when
 * there is no such file; -1 when it is there but unusable (*why says why).
 */
static int read_entry(const clmad_context *ctx, const char *name, unsigned char **data, size_t *size,
                      char *why, size_t why_cap)
{
    int fd = openat(ctx->cache_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(why, why_cap, "%s", errno == ELOOP ? "a symbolic link" : strerror(errno));
        return -1;
    }
    struct stat st;
    int ok = 0;
    if (fstat(fd, &st) != 0)
        snprintf(why, why_cap, "%s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(why, why_cap, "not a regular file");
    else if (st.st_uid != geteuid())
        snprintf(why, why_cap, "owned by uid %lu, not by this user", (unsigned long)st.st_uid);
    else if ((uint64_t)st.st_size > CLMAD_DISK_CACHE_MAX_BYTES)
        snprintf(why, why_cap, "larger than %llu bytes",
                 (unsigned long long)CLMAD_DISK_CACHE_MAX_BYTES);
    else if (!(*data = malloc((size_t)st.st_size + 1)))
        snprintf(why, why_cap, "out of host memory");
    else if (!read_all(fd, *data, (size_t)st.st_size)) {
        snprintf(why, why_cap, "cannot be read");
        free(*data);
    } else {
        *size = (size_t)st.st_size;
        ok = 1;
    }
    close(fd);
    return ok ? 1 : -1;
}

/* The binary inside a file's bytes, when the file is whole and for key. */
static int check_entry(const clmad_program_key *key, const unsigned char *data, size_t size,
                       const unsigned char **payload, size_t *payload_size)
{
    file_header h;
    if (size < sizeof h)
        return 0;
    memcpy(&h, data, sizeof h);
    size_t body = size - sizeof h;
    if (memcmp(h.magic, MAGIC, sizeof MAGIC) != 0 || h.key_size > body ||
        h.payload_size != body - h.key_size || h.payload_size == 0 ||
        h.checksum != clmad__hash_bytes(CLMAD_HASH_INIT, data + sizeof h, body))
        return 0;
    if (h.key_size != key->size || memcmp(data + sizeof h, key->text, key->size) != 0)
        return 0;
    *payload = data + sizeof h + h.key_size;
    *payload_size = (size_t)h.payload_size;
    return 1;
}

int clmad__disk_cache_load(clmad_context *ctx, const clmad_program_key *key, cl_program *program)
{
    if (!ctx->cache_dir)
        return 0;
    char name[64];
    entry_name(key, name, sizeof name);
    unsigned char *data = NULL;
    size_t size = 0;
    char why[160] = "";
    int found = read_entry(ctx, name, &data, &size, why, sizeof why);
    if (found == 0)
        return 0; /* not cached yet */

    int ok = 0;
    const unsigned char *payload;
    size_t payload_size;
    if (found > 0 && !check_entry(key, data, size, &payload, &payload_size))
        snprintf(why, sizeof why, "corrupt, truncated or for another program");
    else if (found > 0) {
        cl_int status = CL_SUCCESS, err;
        cl_program p = clCreateProgramWithBinary(ctx->cl, 1, &ctx->device, &payload_size, &payload,
                                                 &status, &err);
        ok = err == CL_SUCCESS && status == CL_SUCCESS;
        if (ok && clBuildProgram(p, 1, &ctx->device, "", NULL, NULL) != CL_SUCCESS)
            ok = 0;
        if (ok)
            *program = p;
        else if (p)
            clReleaseProgram(p);
        if (!ok)
            snprintf(why, sizeof why, "the device does not take its binary");
    }
    free(data);
    if (!ok) {
        ctx->stats.disk_cache_rejected++;
        note_problem(ctx, "disk cache file \"%s/%s\" rejected (%s); rebuilt from source",
                     ctx->cache_dir, name, why);
        unlinkat(ctx->cache_fd, name, 0);
    }
    return ok;
}

/* Writes header, key and payload to a new temporary file and renames it to
 * name; 0 or an errno value. */
static int write_entry(const clmad_context *ctx, const char *name, const file_header *h,
                       const clmad_program_key *key, const unsigned char *payload)
{
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s.%ld-%u.tmp", name, (long)getpid(),
             atomic_fetch_add(&temp_serial, 1u));
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(ctx->cache_fd, tmp, flags, 0600);
    /* A leftover of a crashed process that had our pid: remove, try again. */
    if (fd < 0 && errno == EEXIST && unlinkat(ctx->cache_fd, tmp, 0) == 0)
        fd = openat(ctx->cache_fd, tmp, flags, 0600);
    if (fd < 0)
        return errno;
    int err = write_all(fd, h, sizeof *h);
    if (!err)
        err = write_all(fd, key->text, key->size);
    if (!err)
        err = write_all(fd, payload, (size_t)h->payload_size);
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && renameat(ctx->cache_fd, tmp, ctx->cache_fd, name) != 0)
        err = errno;
    if (err)
        unlinkat(ctx->cache_fd, tmp, 0);
    return err;
}

int clmad__disk_cache_store(clmad_context *ctx, const clmad_program_key *key, cl_program program)
{
    if (!ctx->cache_dir)
        return 0;
    char name[64];
    entry_name(key, name, sizeof name);
    const char *why = NULL;
    int err = 0;
    size_t size = 0;
    unsigned char *payload = NULL;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
        size == 0)
        why = "the device gives no binary";
    else if (sizeof(file_header) + key->size + size > CLMAD_DISK_CACHE_MAX_BYTES)
        why = "the file would be over the size bound";
    else if (!(payload = malloc(size)))
        why = "out of host memory";
    else if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof payload, &payload, NULL) != CL_SUCCESS)
        why = "the device gives no binary";
    if (!why) {
        file_header h;
        memcpy(h.magic, MAGIC, sizeof MAGIC);
        h.key_size = key->size;
        h.payload_size = size;
        h.checksum = clmad__hash_bytes(clmad__hash_bytes(CLMAD_HASH_INIT, key->text, key->size),
                                       payload, size);
        err = write_entry(ctx, name, &h, key, payload);
        if (err)
            why = strerror(err);
    }
    free(payload);
    if (why) {
        ctx->stats.disk_cache_write_failures++;
        note_problem(ctx, "disk cache: cannot write \"%s/%s\": %s", ctx->cache_dir, name, why);
    }
    return !why;
}
