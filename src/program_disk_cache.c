/*
 * On-disk cache of program binaries. One file per program, named by the key
 * hash; the header repeats an independent hash of the key (a stale or
 * colliding file is detected) and a checksum of the payload (a corrupt or
 * truncated file is detected). Any doubt means: rebuild from source.
 * Files are written to a temporary name and renamed, so that concurrent
 * processes never read a half-written file. The temporary name holds the
 * process id and a per-process serial number: two contexts on two threads
 * may write the same program at once.
 */
#include "context.h"
#include "hash.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_uint temp_serial;

static const char MAGIC[8] = {'C', 'L', 'M', 'A', 'D', 'P', 'B', '1'};

typedef struct file_header {
    char magic[8];
    uint64_t check;
    uint64_t payload_size;
    uint64_t payload_hash;
} file_header;

static void cache_path(const clmad_context *ctx, uint64_t key, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%016llx.clbin", ctx->cache_dir, (unsigned long long)key);
}

/* Creates dir and its parents; returns 1 if it exists afterwards. */
static int make_dirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path)
        return 0;
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] == '/' || path[i] == '\0') {
            char c = path[i];
            path[i] = '\0';
            if (mkdir(path, 0755) != 0 && errno != EEXIST)
                return 0;
            path[i] = c;
        }
    }
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

static unsigned char *read_whole_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *data = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        data = malloc((size_t)n + 1);
        if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
            free(data);
            data = NULL;
        }
    }
    fclose(f);
    if (data)
        *size = (size_t)n;
    return data;
}

int clmad__disk_cache_load(clmad_context *ctx, uint64_t key, uint64_t check, cl_program *program)
{
    if (!ctx->cache_dir)
        return 0;
    char path[4096];
    cache_path(ctx, key, path, sizeof path);
    size_t size = 0;
    unsigned char *data = read_whole_file(path, &size);
    if (!data)
        return 0; /* not cached yet */

    int ok = 0;
    file_header h;
    if (size >= sizeof h) {
        memcpy(&h, data, sizeof h);
        const unsigned char *payload = data + sizeof h;
        size_t payload_size = size - sizeof h;
        ok = memcmp(h.magic, MAGIC, sizeof MAGIC) == 0 && h.check == check &&
             h.payload_size == payload_size && payload_size > 0 &&
             h.payload_hash == clmad__hash_bytes(CLMAD_HASH_INIT, payload, payload_size);
        if (ok) {
            cl_int status = CL_SUCCESS, err;
            cl_program p = clCreateProgramWithBinary(ctx->cl, 1, &ctx->device, &payload_size,
                                                     &payload, &status, &err);
            ok = err == CL_SUCCESS && status == CL_SUCCESS;
            if (ok && clBuildProgram(p, 1, &ctx->device, "", NULL, NULL) != CL_SUCCESS)
                ok = 0;
            if (ok)
                *program = p;
            else if (p)
                clReleaseProgram(p);
        }
    }
    free(data);
    if (!ok) {
        ctx->stats.disk_cache_rejected++;
        remove(path);
    }
    return ok;
}

int clmad__disk_cache_store(clmad_context *ctx, uint64_t key, uint64_t check, cl_program program)
{
    if (!ctx->cache_dir || !make_dirs(ctx->cache_dir))
        return 0;
    size_t size = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
        size == 0)
        return 0;
    unsigned char *payload = malloc(size);
    if (!payload)
        return 0;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof payload, &payload, NULL) != CL_SUCCESS) {
        free(payload);
        return 0;
    }
    file_header h;
    memcpy(h.magic, MAGIC, sizeof MAGIC);
    h.check = check;
    h.payload_size = size;
    h.payload_hash = clmad__hash_bytes(CLMAD_HASH_INIT, payload, size);

    char path[4096], tmp[4200];
    cache_path(ctx, key, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.%ld-%u.tmp", path, (long)getpid(), atomic_fetch_add(&temp_serial, 1u));
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(&h, sizeof h, 1, f) == 1 && fwrite(payload, 1, size, f) == size;
    if (f && fclose(f) != 0)
        ok = 0;
    ok = ok && rename(tmp, path) == 0;
    if (!ok)
        remove(tmp);
    free(payload);
    return ok;
}
