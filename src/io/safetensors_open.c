/* SPDX-License-Identifier: Apache-2.0 */
/* Opening a safetensors file: its header read, parsed and checked whole
 * before anything else reads the file. */
#include "io/json.h"
#include "io/safetensors.h"
#include "runtime/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What one open checks against; failures are recorded on ctx as
 * "CALL: PATH: ...". */
typedef struct opener {
    const clmad_context *ctx;
    const char *call, *path;
} opener;

static clmad_status bad(const opener *o, clmad_status s, const char *fmt, ...) CLMAD_PRINTF(3, 4);
static clmad_status bad(const opener *o, clmad_status s, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return clmad__fail(o->ctx, s, "%s: %s: %s", o->call, o->path, text);
}

static int has_nul(const clmad_json *s)
{
    return memchr(s->string, 0, s->length) != NULL;
}

static clmad_status read_metadata(const opener *o, const clmad_json *m, clmad_safetensors *f)
{
    if (m->kind != CLMAD_JSON_OBJECT)
        return bad(o, CLMAD_ERR_IO, "__metadata__ is not an object");
    f->meta_keys = calloc(m->count + 1, sizeof *f->meta_keys);
    f->meta_values = calloc(m->count + 1, sizeof *f->meta_values);
    if (!f->meta_keys || !f->meta_values)
        return bad(o, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < m->count; i++) {
        const clmad_json *v = &m->items[i];
        if (v->kind != CLMAD_JSON_STRING)
            return bad(o, CLMAD_ERR_IO, "__metadata__ value of \"%s\" is not a string", m->keys[i]);
        if (memchr(m->keys[i], 0, m->key_lengths[i]) || has_nul(v))
            return bad(o, CLMAD_ERR_IO, "__metadata__ holds a NUL character");
        /* Moved out of the parsed tree: the file owns them now. */
        f->meta_keys[f->meta_count] = m->keys[i];
        f->meta_values[f->meta_count++] = v->string;
        m->keys[i] = NULL;
        ((clmad_json *)v)->string = NULL;
    }
    return CLMAD_OK;
}

/* One entry "name": {"dtype", "shape", "data_offsets"} into *t. */
static clmad_status read_entry(const opener *o, const char *name, size_t name_length, const clmad_json *v,
                               clmad_st_tensor *t)
{
    if (memchr(name, 0, name_length))
        return bad(o, CLMAD_ERR_IO, "a tensor name holds a NUL character");
    if (v->kind != CLMAD_JSON_OBJECT)
        return bad(o, CLMAD_ERR_IO, "tensor \"%s\": its entry is not an object", name);
    const clmad_json *dtype = clmad__json_get(v, "dtype"), *shape = clmad__json_get(v, "shape"),
                     *offsets = clmad__json_get(v, "data_offsets");
    if (!dtype || !shape || !offsets)
        return bad(o, CLMAD_ERR_IO, "tensor \"%s\": no \"%s\"", name,
                   !dtype ? "dtype" : !shape ? "shape" : "data_offsets");
    if (v->count != 3)
        return bad(o, CLMAD_ERR_IO, "tensor \"%s\": keys other than dtype, shape and data_offsets", name);
    if (dtype->kind != CLMAD_JSON_STRING || has_nul(dtype))
        return bad(o, CLMAD_ERR_IO, "tensor \"%s\": dtype is not a string", name);
    t->dtype = clmad__st_dtype_by_name(dtype->string);
    if (!t->dtype)
        return bad(o, CLMAD_ERR_IO, "tensor \"%s\": unknown dtype \"%s\"", name, dtype->string);
    if (shape->kind != CLMAD_JSON_ARRAY)
        return bad(o, CLMAD_ERR_IO, "tensor \"%s\": shape is not an array", name);
    if (shape->count > CLMAD_MAX_DIMS)
        return bad(o, CLMAD_ERR_UNSUPPORTED, "tensor \"%s\": rank %zu, above clmad's %d", name, shape->count,
                   CLMAD_MAX_DIMS);
    uint64_t bytes = t->dtype->size;
    int overflow = 0;
    t->ndim = (int)shape->count;
    for (size_t d = 0; d < shape->count; d++) {
        const clmad_json *s = &shape->items[d];
        if (s->kind != CLMAD_JSON_INTEGER)
            return bad(o, CLMAD_ERR_IO, "tensor \"%s\": shape holds a non-integer", name);
        if (s->integer > SIZE_MAX)
            return bad(o, CLMAD_ERR_IO, "tensor \"%s\": dimension %zu is too large", name, d);
        t->shape[d] = (size_t)s->integer;
        if (s->integer != 0 && bytes > UINT64_MAX / s->integer)
            overflow = 1;
        else
            bytes *= s->integer;
    }
    if (offsets->kind != CLMAD_JSON_ARRAY || offsets->count != 2 || offsets->items[0].kind != CLMAD_JSON_INTEGER ||
        offsets->items[1].kind != CLMAD_JSON_INTEGER)
        return bad(o, CLMAD_ERR_IO, "tensor \"%s\": data_offsets is not [begin, end]", name);
    t->begin = offsets->items[0].integer;
    t->end = offsets->items[1].integer;
    if (t->end < t->begin)
        return bad(o, CLMAD_ERR_IO, "tensor \"%s\": data_offsets [%llu, %llu] end before they begin", name,
                   (unsigned long long)t->begin, (unsigned long long)t->end);
    /* An empty shape factor makes the size 0 whatever overflowed before. */
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] == 0)
            overflow = 0, bytes = 0;
    if (overflow || bytes != t->end - t->begin)
        return bad(o, CLMAD_ERR_IO, "tensor \"%s\": its shape of %s holds %s%llu bytes, data_offsets span %llu",
                   name, t->dtype->name, overflow ? "more than " : "",
                   (unsigned long long)(overflow ? UINT64_MAX : bytes), (unsigned long long)(t->end - t->begin));
    t->name = malloc(name_length + 1);
    if (!t->name)
        return bad(o, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory");
    memcpy(t->name, name, name_length + 1);
    return CLMAD_OK;
}

static int by_offset(const void *a, const void *b)
{
    const clmad_st_tensor *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* The tensors, sorted, must tile the data bytes exactly. */
static clmad_status check_layout(const opener *o, clmad_safetensors *f, uint64_t data_bytes)
{
    qsort(f->tensors, f->count, sizeof *f->tensors, by_offset);
    uint64_t next = 0;
    for (size_t i = 0; i < f->count; i++) {
        const clmad_st_tensor *t = &f->tensors[i];
        if (t->begin != next)
            return bad(o, CLMAD_ERR_IO, "tensor \"%s\" begins at byte %llu of the data, %s at %llu", t->name,
                       (unsigned long long)t->begin,
                       t->begin < next ? "overlapping the tensor that ends" : "leaving a hole after the data that ends",
                       (unsigned long long)next);
        next = t->end;
    }
    if (next > data_bytes)
        return bad(o, CLMAD_ERR_IO, "the tensors need %llu bytes of data, the file holds %llu (truncated?)",
                   (unsigned long long)next, (unsigned long long)data_bytes);
    if (next < data_bytes)
        return bad(o, CLMAD_ERR_IO, "%llu bytes after the last tensor's data", (unsigned long long)(data_bytes - next));
    return CLMAD_OK;
}

static clmad_status read_header(const opener *o, clmad_safetensors *f, char **header, uint64_t *length,
                                uint64_t *data_bytes)
{
    struct stat info;
    if (fstat(fileno(f->file), &info) != 0 || !S_ISREG(info.st_mode))
        return bad(o, CLMAD_ERR_IO, "not a regular file");
    uint64_t size = (uint64_t)info.st_size;
    unsigned char prefix[8];
    if (size < 8 || fread(prefix, 1, 8, f->file) != 8)
        return bad(o, CLMAD_ERR_IO, "%llu bytes, too short for the 8-byte header length", (unsigned long long)size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | prefix[i];
    if (n > CLMAD_SAFETENSORS_MAX_HEADER)
        return bad(o, CLMAD_ERR_IO, "header length %llu is above the 100 MB cap", (unsigned long long)n);
    if (n > size - 8)
        return bad(o, CLMAD_ERR_IO, "header length %llu runs past the end of the file (%llu bytes)",
                   (unsigned long long)n, (unsigned long long)size);
    *header = malloc(n ? n : 1);
    if (!*header)
        return bad(o, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory for a header of %llu bytes", (unsigned long long)n);
    if (fread(*header, 1, n, f->file) != n)
        return bad(o, CLMAD_ERR_IO, "could not read the header: %s", ferror(f->file) ? strerror(errno) : "short read");
    *length = n;
    f->data_start = 8 + n;
    *data_bytes = size - 8 - n;
    return CLMAD_OK;
}

static clmad_status read_entries(const opener *o, clmad_json *top, clmad_safetensors *f)
{
    if (top->kind != CLMAD_JSON_OBJECT)
        return bad(o, CLMAD_ERR_IO, "the header is not a JSON object");
    f->tensors = calloc(top->count + 1, sizeof *f->tensors);
    if (!f->tensors)
        return bad(o, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < top->count; i++) {
        clmad_status st;
        if (strcmp(top->keys[i], "__metadata__") == 0 && top->key_lengths[i] == 12)
            st = read_metadata(o, &top->items[i], f);
        else if ((st = read_entry(o, top->keys[i], top->key_lengths[i], &top->items[i], &f->tensors[f->count])) ==
                 CLMAD_OK)
            f->count++;
        if (st != CLMAD_OK)
            return st;
    }
    return CLMAD_OK;
}

clmad_status clmad__st_open(const clmad_context *ctx, const char *call, const char *path, clmad_safetensors **out)
{
    opener o = {ctx, call, path ? path : "(null)"};
    if (!path || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call, !path ? "path" : "file");
    clmad_safetensors *f = calloc(1, sizeof *f);
    if (f)
        f->path = malloc(strlen(path) + 1);
    if (!f || !f->path) {
        free(f);
        return bad(&o, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    strcpy(f->path, path);
    f->file = fopen(path, "rb");
    if (!f->file) {
        clmad_status st = bad(&o, CLMAD_ERR_IO, "cannot open: %s", strerror(errno));
        clmad_safetensors_close(f);
        return st;
    }
    char *text = NULL;
    uint64_t length = 0, data_bytes = 0;
    clmad_json *top = NULL;
    char message[256] = "";
    clmad_status st = read_header(&o, f, &text, &length, &data_bytes);
    if (st == CLMAD_OK) {
        int r = clmad__json_parse(text, (size_t)length, &top, message, sizeof message);
        if (r != 0)
            st = bad(&o, r == -2 ? CLMAD_ERR_OUT_OF_MEMORY : CLMAD_ERR_IO, "the header is not valid JSON: %s", message);
    }
    free(text);
    if (st == CLMAD_OK)
        st = read_entries(&o, top, f);
    clmad__json_free(top);
    if (st == CLMAD_OK)
        st = check_layout(&o, f, data_bytes);
    if (st != CLMAD_OK) {
        clmad_safetensors_close(f);
        return st;
    }
    *out = f;
    return CLMAD_OK;
}

clmad_status clmad_safetensors_open(const char *path, clmad_safetensors **file)
{
    return clmad__st_open(NULL, "clmad_safetensors_open", path, file);
}
