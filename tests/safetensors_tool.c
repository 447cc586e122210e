/* SPDX-License-Identifier: Apache-2.0 */
/* The C side of the safetensors interoperability test
 * (tests/safetensors_interop.py, run by tests/safetensors_interop.sh):
 *   safetensors_tool write PATH   writes the reference tensors with clmad_save
 *   safetensors_tool check PATH   reads a file the Python package wrote and
 *                                 checks every bit against the same tensors
 * The reference tensors are defined by bit patterns, here and in the
 * script: element i of a 4-byte tensor (f32, i32) of seed s has the bits
 * (i * 2654435761 + s) mod 2^32, of an 8-byte one (f64, i64)
 * (i * 0x9E3779B97F4A7C15 + s) mod 2^64, of a u8 one the low byte and of
 * a 2-byte one (f16, bf16) the low two bytes of the 4-byte pattern (NaNs
 * and infinities included: they must survive as bits). */
#include <clmad.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct reference {
    const char *name;
    clmad_dtype dtype;
    int ndim;
    size_t shape[3];
    uint64_t seed;
} reference;

static const reference refs[] = {
    {"a", CLMAD_F32, 3, {2, 3, 4}, 1},
    {"b", CLMAD_F64, 1, {5}, 7},
    {"scalar", CLMAD_F32, 0, {0}, 3},
    {"empty", CLMAD_F32, 2, {0, 3}, 0},
    {"caf\xc3\xa9 \"quoted\"", CLMAD_F32, 1, {2}, 11},
    {"labels", CLMAD_I32, 1, {6}, 5},
    {"ids", CLMAD_I64, 2, {2, 2}, 9},
    {"mask", CLMAD_U8, 1, {7}, 13},
    {"halves", CLMAD_F16, 1, {9}, 17},
    {"brains", CLMAD_BF16, 2, {3, 2}, 19},
};
#define N_REFS (sizeof refs / sizeof refs[0])

static size_t numel(const reference *r)
{
    size_t n = 1;
    for (int d = 0; d < r->ndim; d++)
        n *= r->shape[d];
    return n;
}

/* The reference bits of r in buf (numel elements of its dtype). */
static void fill(const reference *r, void *buf)
{
    size_t size = clmad_dtype_size(r->dtype);
    for (size_t i = 0; i < numel(r); i++) {
        if (size == 8) {
            uint64_t u = (uint64_t)i * 0x9E3779B97F4A7C15ull + r->seed;
            memcpy((char *)buf + 8 * i, &u, 8);
        } else {
            uint32_t u = (uint32_t)(i * 2654435761u + r->seed);
            uint16_t h = (uint16_t)u;
            if (size == 4)
                memcpy((char *)buf + 4 * i, &u, 4);
            else if (size == 2)
                memcpy((char *)buf + 2 * i, &h, 2);
            else
                ((unsigned char *)buf)[i] = (unsigned char)u;
        }
    }
}

static int fail(clmad_context *ctx, const char *what)
{
    fprintf(stderr, "safetensors_tool: %s: %s\n", what, clmad_last_error(ctx));
    return 1;
}

static int write_file(clmad_context *ctx, const char *path)
{
    clmad_tensor *t[N_REFS];
    const char *names[N_REFS];
    unsigned char buf[1024];
    for (size_t k = 0; k < N_REFS; k++) {
        fill(&refs[k], buf);
        names[k] = refs[k].name;
        if (clmad_tensor_create(ctx, refs[k].dtype, refs[k].ndim, refs[k].shape, buf, &t[k]) != CLMAD_OK)
            return fail(ctx, "clmad_tensor_create");
    }
    const char *meta[] = {"format", "np", "written_by", "clmad", NULL};
    int rc = clmad_save(path, names, t, N_REFS, meta) == CLMAD_OK ? 0 : fail(ctx, "clmad_save");
    for (size_t k = 0; k < N_REFS; k++)
        clmad_tensor_release(t[k]);
    return rc;
}

static int check_file(clmad_context *ctx, const char *path)
{
    clmad_safetensors *f = NULL;
    if (clmad_safetensors_open(path, &f) != CLMAD_OK)
        return fail(NULL, "clmad_safetensors_open");
    int bad = 0;
    const char *v = clmad_safetensors_metadata(f, "written_by");
    if (!v || strcmp(v, "safetensors") != 0)
        bad = fprintf(stderr, "metadata written_by is %s\n", v ? v : "missing");
    /* The Python side adds an int16 tensor: listed, not supported. */
    int saw_shorts = 0;
    for (size_t i = 0; i < clmad_safetensors_count(f); i++) {
        clmad_safetensors_entry e;
        clmad_safetensors_entry_at(f, i, &e);
        if (strcmp(e.name, "shorts") == 0)
            saw_shorts = !e.supported && strcmp(e.file_dtype, "I16") == 0 && e.ndim == 1 && e.shape[0] == 4;
    }
    if (!saw_shorts)
        bad = fprintf(stderr, "no I16 entry \"shorts\" of shape (4,) listed as unsupported\n");
    unsigned char want[1024], got[1024];
    for (size_t k = 0; k < N_REFS; k++) {
        const reference *r = &refs[k];
        clmad_tensor *t = NULL;
        if (clmad_safetensors_read(ctx, f, r->name, &t) != CLMAD_OK) {
            bad = fail(ctx, r->name);
            continue;
        }
        size_t bytes = numel(r) * clmad_dtype_size(r->dtype);
        fill(r, want);
        int same_shape = clmad_tensor_ndim(t) == r->ndim && clmad_tensor_dtype(t) == r->dtype;
        for (int d = 0; d < r->ndim; d++)
            same_shape = same_shape && clmad_tensor_dim(t, d) == r->shape[d];
        if (!same_shape || clmad_tensor_read(t, got, sizeof got) != CLMAD_OK || memcmp(want, got, bytes) != 0)
            bad = fprintf(stderr, "tensor \"%s\" differs (shape, dtype or bits)\n", r->name);
        clmad_tensor_release(t);
    }
    clmad_safetensors_close(f);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "check") != 0)) {
        fprintf(stderr, "usage: safetensors_tool write|check PATH\n");
        return 2;
    }
    clmad_context *ctx = NULL;
    if (clmad_context_create(NULL, &ctx) != CLMAD_OK)
        return fail(NULL, "clmad_context_create");
    clmad_device_info dev;
    clmad_context_device(ctx, &dev);
    if (!dev.fp64) { /* the reference tensors include f64 */
        printf("safetensors_tool: skipped: %s has no fp64\n", dev.name);
        clmad_context_release(ctx);
        return 77;
    }
    int rc = argv[1][0] == 'w' ? write_file(ctx, argv[2]) : check_file(ctx, argv[2]);
    clmad_context_release(ctx);
    if (rc == 0)
        printf("safetensors_tool %s %s: ok\n", argv[1], argv[2]);
    return rc;
}
