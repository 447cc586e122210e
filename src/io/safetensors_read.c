/* SPDX-License-Identifier: Apache-2.0 */
/* Tensors from a safetensors file: new ones (clmad_safetensors_read) and
 * into existing ones, all checked and read before any is written
 * (clmad_load). */
#include "base/strbuf.h"
#include "io/safetensors.h"
#include "runtime/context_guard.h"
#include "tape/tape.h"

#include <stdlib.h>
#include <string.h>

clmad_status clmad_safetensors_read(clmad_context *ctx, clmad_safetensors *file, const char *name,
                                    clmad_tensor **out)
{
    CLMAD_GUARD(ctx, "clmad_safetensors_read");
    if (!ctx || !file || !name || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_safetensors_read: %s is NULL",
                           !ctx ? "ctx" : !file ? "file" : !name ? "name" : "out");
    const clmad_st_tensor *e = clmad__st_find(file, name);
    if (!e)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_safetensors_read: %s: no tensor \"%s\"",
                           file->path, name);
    if (!e->dtype->supported)
        return clmad__fail(ctx, CLMAD_ERR_UNSUPPORTED, "clmad_safetensors_read: %s: tensor \"%s\" has dtype %s, "
                           "which clmad does not have", file->path, name, e->dtype->name);
    void *host = malloc(e->end - e->begin ? (size_t)(e->end - e->begin) : 1);
    if (!host)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "clmad_safetensors_read: out of host memory for \"%s\"",
                           name);
    clmad_status st = clmad__st_read_bytes(ctx, "clmad_safetensors_read", file, e, host);
    if (st == CLMAD_OK)
        st = clmad_tensor_create(ctx, e->dtype->dtype, e->ndim, e->shape, host, out);
    free(host);
    return st;
}

static const char *shape_text(clmad_strbuf *sb, int ndim, const size_t *shape)
{
    clmad__sb_shape(sb, ndim, shape);
    return sb->data && !sb->failed ? sb->data : "(?)";
}

/* Checks that tensors[i] may receive entry names[i] of f. */
static clmad_status check_target(clmad_context *ctx, const char *call, clmad_safetensors *f, const char *name, clmad_tensor *t,
                                 size_t i, const clmad_st_tensor **entry)
{
    if (!name || !t)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s[%zu] is NULL", call, !name ? "names" : "tensors",
                           i);
    char what[48];
    snprintf(what, sizeof what, "tensors[%zu]", i);
    clmad_status st = clmad__check_same_context(ctx, t, call, "%s", what);
    if (st == CLMAD_OK)
        st = clmad__check_writable(t, call, what);
    if (st == CLMAD_OK)
        st = clmad__check_not_on_tape(ctx, t, call, what);
    if (st != CLMAD_OK)
        return st;
    const clmad_st_tensor *e = clmad__st_find(f, name);
    if (!e)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s: no tensor \"%s\" in the file", call,
                           f->path, name);
    if (!e->dtype->supported || e->dtype->dtype != t->dtype)
        return clmad__fail(ctx, CLMAD_ERR_DTYPE, "%s: %s: tensor \"%s\" is %s in the file, %s in %s", call, f->path,
                           name, e->dtype->name, clmad__st_dtype_of(t->dtype), what);
    if (e->ndim != t->ndim || memcmp(e->shape, t->shape, (size_t)t->ndim * sizeof *t->shape) != 0) {
        clmad_strbuf a = {0}, b = {0};
        st = clmad__fail(ctx, CLMAD_ERR_SHAPE, "%s: %s: tensor \"%s\" has shape %s in the file, %s has %s",
                         call, f->path, name, shape_text(&a, e->ndim, e->shape), what, shape_text(&b, t->ndim, t->shape));
        clmad__sb_free(&a);
        clmad__sb_free(&b);
        return st;
    }
    *entry = e;
    return CLMAD_OK;
}

static void free_all(void **hosts, size_t n)
{
    for (size_t i = 0; hosts && i < n; i++)
        free(hosts[i]);
    free(hosts);
}

clmad_status clmad__st_load_into(clmad_context *ctx, const char *call, clmad_safetensors *f,
                                 const char *const *names, clmad_tensor *const *tensors, size_t n)
{
    clmad_status st = CLMAD_OK;
    void **hosts = calloc(n + 1, sizeof *hosts);
    if (!hosts)
        st = clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory", call);
    for (size_t i = 0; i < n && st == CLMAD_OK; i++) {
        const clmad_st_tensor *e = NULL;
        st = check_target(ctx, call, f, names[i], tensors[i], i, &e);
        if (st != CLMAD_OK)
            break;
        hosts[i] = malloc(e->end - e->begin ? (size_t)(e->end - e->begin) : 1);
        st = hosts[i] ? clmad__st_read_bytes(ctx, call, f, e, hosts[i])
                      : clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory for \"%s\"", call, names[i]);
    }
    /* Everything is checked and read: only now are the tensors written. */
    for (size_t i = 0; i < n && st == CLMAD_OK; i++)
        st = clmad_tensor_write(tensors[i], hosts[i], clmad__tensor_bytes(tensors[i]));
    free_all(hosts, n);
    return st;
}

clmad_status clmad_load(clmad_context *ctx, const char *path, const char *const *names,
                        clmad_tensor *const *tensors, size_t n)
{
    CLMAD_GUARD(ctx, "clmad_load");
    if (!ctx || !path || (n > 0 && (!names || !tensors)))
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "clmad_load: %s is NULL",
                           !ctx ? "ctx" : !path ? "path" : !names ? "names" : "tensors");
    clmad_safetensors *f = NULL;
    clmad_status st = clmad__st_open(ctx, "clmad_load", path, &f);
    if (st == CLMAD_OK)
        st = clmad__st_load_into(ctx, "clmad_load", f, names, tensors, n);
    clmad_safetensors_close(f);
    return st;
}
