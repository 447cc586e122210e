/* SPDX-License-Identifier: Apache-2.0 */
/* Writing a safetensors file: the header as JSON, then the tensors' bytes,
 * into a temporary file beside the target that is synced and renamed over
 * it, so that a reader sees the old file or the whole new one. */
#include "base/strbuf.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "runtime/context_guard.h"
#include "runtime/tensor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 1 when s is well-formed UTF-8 (the JSON parser's check, on a string). */
static int is_utf8(const char *s)
{
    clmad_strbuf sb = {0};
    clmad__sb_append(&sb, "\"");
    for (const char *c = s; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
            clmad__sb_append(&sb, " "); /* checked for UTF-8 only */
        else
            clmad__sb_printf(&sb, "%c", *c);
    clmad__sb_append(&sb, "\"");
    clmad_json *v = NULL;
    int ok = !sb.failed && clmad__json_parse(sb.data, sb.len, &v, NULL, 0) == 0;
    clmad__json_free(v);
    clmad__sb_free(&sb);
    return ok;
}

static void append_string(clmad_strbuf *sb, const char *s)
{
    clmad__sb_append(sb, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c == '"' || *c == '\\')
            clmad__sb_printf(sb, "\\%c", *c);
        else if (*c < 0x20)
            clmad__sb_printf(sb, "\\u%04x", *c);
        else
            clmad__sb_printf(sb, "%c", *c);
    clmad__sb_append(sb, "\"");
}

static clmad_status check_arguments(clmad_context *ctx, const char *call, const char *const *names,
                                    clmad_tensor *const *tensors, size_t n, const char *const *metadata)
{
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || !tensors[i])
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s[%zu] is NULL", call,
                               !names[i] ? "names" : "tensors", i);
        if (tensors[i]->ctx != ctx)
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: tensors[%zu] belongs to another context than "
                               "tensors[0]", call, i);
        if (strcmp(names[i], "__metadata__") == 0 || !is_utf8(names[i]))
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: names[%zu] is %s", call, i,
                               names[i][0] == '_' ? "\"__metadata__\", the format's own key" : "not UTF-8");
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[j], names[i]) == 0)
                return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: names[%zu] and names[%zu] are both \"%s\"",
                                   call, j, i, names[i]);
    }
    for (size_t i = 0; metadata && metadata[i]; i += 2) {
        if (!metadata[i + 1] || !is_utf8(metadata[i]) || !is_utf8(metadata[i + 1]))
            return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: metadata[%zu] %s", call, i,
                               !metadata[i + 1] ? "has no value (the list is key, value, ..., NULL)" : "is not UTF-8");
        for (size_t j = 0; j < i; j += 2)
            if (strcmp(metadata[j], metadata[i]) == 0)
                return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: metadata key \"%s\" given twice", call,
                                   metadata[i]);
    }
    return CLMAD_OK;
}

/* The header, padded with spaces to a multiple of 8 bytes as the reference
 * writer does (the data then starts aligned). */
static void build_header(clmad_strbuf *sb, const char *const *names, clmad_tensor *const *tensors, size_t n,
                         const char *const *metadata)
{
    clmad__sb_append(sb, "{");
    if (metadata && metadata[0]) {
        clmad__sb_append(sb, "\"__metadata__\":{");
        for (size_t i = 0; metadata[i]; i += 2) {
            clmad__sb_append(sb, i ? "," : "");
            append_string(sb, metadata[i]);
            clmad__sb_append(sb, ":");
            append_string(sb, metadata[i + 1]);
        }
        clmad__sb_append(sb, n ? "}," : "}");
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        const clmad_tensor *t = tensors[i];
        append_string(sb, names[i]);
        clmad__sb_printf(sb, ":{\"dtype\":\"%s\",\"shape\":[", clmad__st_dtype_of(t->dtype));
        for (int d = 0; d < t->ndim; d++)
            clmad__sb_printf(sb, d ? ",%zu" : "%zu", t->shape[d]);
        uint64_t bytes = clmad__tensor_bytes(t);
        clmad__sb_printf(sb, "],\"data_offsets\":[%llu,%llu]}%s", (unsigned long long)offset,
                         (unsigned long long)(offset + bytes), i + 1 < n ? "," : "");
        offset += bytes;
    }
    clmad__sb_append(sb, "}");
    while (!sb->failed && sb->len % 8)
        clmad__sb_append(sb, " ");
}

static clmad_status write_all(clmad_context *ctx, const char *call, FILE *out, const char *tmp, const void *data,
                              size_t size)
{
    if (size && fwrite(data, 1, size, out) != size)
        return clmad__fail(ctx, CLMAD_ERR_IO, "%s: %s: write failed: %s", call, tmp, strerror(errno));
    return CLMAD_OK;
}

/* The header and the data into out. */
static clmad_status write_body(clmad_context *ctx, const char *call, FILE *out, const char *tmp,
                               const clmad_strbuf *header, clmad_tensor *const *tensors, size_t n)
{
    unsigned char prefix[8];
    for (int i = 0; i < 8; i++)
        prefix[i] = (unsigned char)((uint64_t)header->len >> (8 * i));
    clmad_status st = write_all(ctx, call, out, tmp, prefix, 8);
    if (st == CLMAD_OK)
        st = write_all(ctx, call, out, tmp, header->data, header->len);
    size_t most = 1;
    for (size_t i = 0; i < n; i++)
        most = clmad__tensor_bytes(tensors[i]) > most ? clmad__tensor_bytes(tensors[i]) : most;
    void *host = st == CLMAD_OK ? malloc(most) : NULL;
    if (st == CLMAD_OK && !host)
        st = clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory (%zu bytes)", call, most);
    for (size_t i = 0; i < n && st == CLMAD_OK; i++) {
        size_t bytes = clmad__tensor_bytes(tensors[i]);
        st = clmad_tensor_read(tensors[i], host, bytes);
        clmad__st_to_little_endian(host, tensors[i]->numel, clmad_dtype_size(tensors[i]->dtype));
        if (st == CLMAD_OK)
            st = write_all(ctx, call, out, tmp, host, bytes);
    }
    free(host);
    if (st == CLMAD_OK && (fflush(out) != 0 || fsync(fileno(out)) != 0))
        st = clmad__fail(ctx, CLMAD_ERR_IO, "%s: %s: write failed: %s", call, tmp, strerror(errno));
    return st;
}

/* A new file beside path, "PATH.tmp-PID-K", made with O_EXCL (mode 0666
 * less the umask); its name in tmp. */
static FILE *create_temporary(const char *path, clmad_strbuf *tmp)
{
    for (int k = 0; k < 100; k++) {
        tmp->len = 0;
        clmad__sb_printf(tmp, "%s.tmp-%ld-%d", path, (long)getpid(), k);
        if (tmp->failed)
            return NULL;
        int fd = open(tmp->data, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd >= 0) {
            FILE *f = fdopen(fd, "wb");
            if (!f)
                close(fd), unlink(tmp->data);
            return f;
        }
        if (errno != EEXIST)
            return NULL;
    }
    return NULL;
}

clmad_status clmad__st_save(clmad_context *ctx, const char *call, const char *path, const char *const *names,
                            clmad_tensor *const *tensors, size_t n, const char *const *metadata)
{
    clmad_status st = check_arguments(ctx, call, names, tensors, n, metadata);
    if (st != CLMAD_OK)
        return st;
    clmad_strbuf header = {0}, tmp = {0};
    build_header(&header, names, tensors, n, metadata);
    if (header.failed)
        st = clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory for the header", call);
    FILE *out = st == CLMAD_OK ? create_temporary(path, &tmp) : NULL;
    if (st == CLMAD_OK && !out)
        st = clmad__fail(ctx, tmp.failed ? CLMAD_ERR_OUT_OF_MEMORY : CLMAD_ERR_IO,
                         "%s: %s: cannot create a temporary file beside it: %s", call, path, strerror(errno));
    if (st == CLMAD_OK)
        st = write_body(ctx, call, out, tmp.data, &header, tensors, n);
    if (out && fclose(out) != 0 && st == CLMAD_OK)
        st = clmad__fail(ctx, CLMAD_ERR_IO, "%s: %s: close failed: %s", call, tmp.data, strerror(errno));
    if (st == CLMAD_OK && rename(tmp.data, path) != 0)
        st = clmad__fail(ctx, CLMAD_ERR_IO, "%s: cannot rename %s to %s: %s", call, tmp.data, path, strerror(errno));
    if (out && st != CLMAD_OK)
        unlink(tmp.data);
    clmad__sb_free(&header);
    clmad__sb_free(&tmp);
    return st;
}

clmad_status clmad_save(const char *path, const char *const *names, clmad_tensor *const *tensors, size_t n,
                        const char *const *metadata)
{
    clmad_context *ctx = n > 0 && tensors && tensors[0] ? tensors[0]->ctx : NULL;
    CLMAD_GUARD(ctx, "clmad_save");
    if (!path || (n > 0 && (!names || !tensors || !tensors[0])))
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_save: %s is NULL",
                           !path ? "path" : !names ? "names" : !tensors ? "tensors" : "tensors[0]");
    return clmad__st_save(ctx, "clmad_save", path, names, tensors, n, metadata);
}
