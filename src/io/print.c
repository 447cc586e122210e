/* SPDX-License-Identifier: Apache-2.0 */
/* Tensors as text, as PyTorch prints them: clmad_tensor_format and
 * clmad_tensor_print. */
#include "base/strbuf.h"
#include "runtime/context_guard.h"
#include "runtime/tensor.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* NumPy's and PyTorch's summarisation: past this many elements, EDGE
 * items at each end of every dimension longer than 2 EDGE. */
#define SUMMARY_THRESHOLD 1000
#define EDGE 3
#define PREFIX "tensor("

typedef struct printer {
    const clmad_tensor *t;
    const void *host;  /* the elements, in the tensor's dtype */
    int summarize;
    int sci;           /* "%.4e" instead of "%.4f" */
    int width;         /* every element right-aligned to this */
    clmad_strbuf *out;
} printer;

/* Element i as a double, by dtype (the printed value of floats; for
 * integers only the range that picks the float layout reads it). */
static double element(const printer *p, size_t i)
{
    switch (p->t->dtype) {
    case CLMAD_F32: return ((const float *)p->host)[i];
    case CLMAD_F64: return ((const double *)p->host)[i];
    case CLMAD_I32: return ((const int32_t *)p->host)[i];
    case CLMAD_I64: return (double)((const int64_t *)p->host)[i];
    case CLMAD_U8: return ((const uint8_t *)p->host)[i];
    case CLMAD_F16: return clmad_f16_to_float(((const uint16_t *)p->host)[i]);
    case CLMAD_BF16: return clmad_bf16_to_float(((const uint16_t *)p->host)[i]);
    }
    return 0;
}

static int format_element(const printer *p, size_t i, char *buf, size_t size)
{
    double v = element(p, i);
    switch (p->t->dtype) {
    case CLMAD_F32:
    case CLMAD_F64:
    case CLMAD_F16:
    case CLMAD_BF16:
        if (isnan(v))
            return snprintf(buf, size, "nan");
        if (isinf(v))
            return snprintf(buf, size, v < 0 ? "-inf" : "inf");
        return snprintf(buf, size, p->sci ? "%.4e" : "%.4f", v);
    case CLMAD_I32: return snprintf(buf, size, "%" PRId32, ((const int32_t *)p->host)[i]);
    case CLMAD_I64: return snprintf(buf, size, "%" PRId64, ((const int64_t *)p->host)[i]);
    case CLMAD_U8: return snprintf(buf, size, "%u", (unsigned)((const uint8_t *)p->host)[i]);
    }
    return snprintf(buf, size, "?");
}

/* Calls visit on the flat index of every element shown, in order. */
static void for_each_shown(printer *p, int dim, size_t base, void (*visit)(printer *, size_t, void *), void *user)
{
    const clmad_tensor *t = p->t;
    if (dim == t->ndim) {
        visit(p, base, user);
        return;
    }
    size_t n = t->shape[dim], stride = 1;
    for (int d = dim + 1; d < t->ndim; d++)
        stride *= t->shape[d];
    for (size_t i = 0; i < n; i++) {
        if (p->summarize && n > 2 * EDGE && i == EDGE)
            i = n - EDGE;
        for_each_shown(p, dim + 1, base + i * stride, visit, user);
    }
}

typedef struct range {
    double max, min; /* of the finite nonzero magnitudes */
    int any;
} range;

static void measure_range(printer *p, size_t i, void *user)
{
    range *r = user;
    double a = fabs(element(p, i));
    if (isfinite(a) && a != 0) {
        r->max = r->any && r->max > a ? r->max : a;
        r->min = r->any && r->min < a ? r->min : a;
        r->any = 1;
    }
}

static void measure_width(printer *p, size_t i, void *user)
{
    (void)user;
    char buf[64];
    int n = format_element(p, i, buf, sizeof buf);
    p->width = n > p->width ? n : p->width;
}

static void emit(printer *p, int dim, size_t base)
{
    const clmad_tensor *t = p->t;
    char buf[64];
    if (dim == t->ndim) {
        format_element(p, base, buf, sizeof buf);
        clmad__sb_printf(p->out, "%*s", p->width, buf);
        return;
    }
    size_t n = t->shape[dim], stride = 1;
    for (int d = dim + 1; d < t->ndim; d++)
        stride *= t->shape[d];
    clmad__sb_append(p->out, "[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            /* Rows on lines of their own, a blank line per level above. */
            if (dim == t->ndim - 1)
                clmad__sb_append(p->out, ", ");
            else {
                clmad__sb_append(p->out, ",\n");
                for (int d = dim; d < t->ndim - 2; d++)
                    clmad__sb_append(p->out, "\n");
                clmad__sb_printf(p->out, "%*s", (int)strlen(PREFIX) + dim + 1, "");
            }
        }
        if (p->summarize && n > 2 * EDGE && i == EDGE) {
            clmad__sb_append(p->out, "...");
            i = n - EDGE - 1;
            continue;
        }
        emit(p, dim + 1, base + i * stride);
    }
    clmad__sb_append(p->out, "]");
}

/* The whole text of t, its elements in host. */
static void format_text(const clmad_tensor *t, const void *host, clmad_strbuf *out)
{
    printer p = {.t = t, .host = host, .summarize = t->numel > SUMMARY_THRESHOLD, .out = out};
    clmad__sb_append(out, PREFIX);
    if (t->numel == 0 && t->ndim > 0) {
        clmad__sb_append(out, "[]");
    } else {
        range r = {0};
        for_each_shown(&p, 0, 0, measure_range, &r);
        /* PyTorch's rule for its scientific mode. */
        p.sci = r.any && (r.max / r.min > 1000 || r.max > 1e8 || r.min < 1e-4);
        for_each_shown(&p, 0, 0, measure_width, NULL);
        emit(&p, 0, 0);
    }
    clmad__sb_append(out, ", shape=(");
    for (int d = 0; d < t->ndim; d++)
        clmad__sb_printf(out, d ? ", %zu" : "%zu", t->shape[d]);
    clmad__sb_printf(out, "%s), dtype=%s)", t->ndim == 1 ? "," : "", clmad_dtype_name(t->dtype));
}

/* The text of t in *out (the caller frees it). */
static clmad_status tensor_text(clmad_tensor *t, const char *call, clmad_strbuf *out)
{
    size_t bytes = clmad__tensor_bytes(t);
    void *host = malloc(bytes ? bytes : 1);
    if (!host)
        return clmad__fail(t->ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory (%zu bytes)", call, bytes);
    clmad_status st = clmad_tensor_read(t, host, bytes);
    if (st == CLMAD_OK) {
        format_text(t, host, out);
        if (out->failed || !out->data)
            st = clmad__fail(t->ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory for the text", call);
    }
    free(host);
    return st;
}

clmad_status clmad_tensor_format(clmad_tensor *t, char *buf, size_t size, size_t *length)
{
    CLMAD_GUARD(t ? t->ctx : NULL, "clmad_tensor_format");
    if (!t || !length || (!buf && size > 0))
        return clmad__fail(t ? t->ctx : NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_format: %s is NULL",
                           !t ? "t" : !length ? "length" : "buf");
    clmad_strbuf text = {0};
    clmad_status st = tensor_text(t, "clmad_tensor_format", &text);
    if (st == CLMAD_OK) {
        if (size > 0) {
            size_t n = text.len < size - 1 ? text.len : size - 1;
            memcpy(buf, text.data, n);
            buf[n] = 0;
        }
        *length = text.len;
    }
    clmad__sb_free(&text);
    return st;
}

clmad_status clmad_tensor_print(clmad_tensor *t, FILE *f)
{
    CLMAD_GUARD(t ? t->ctx : NULL, "clmad_tensor_print");
    if (!t || !f)
        return clmad__fail(t ? t->ctx : NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_print: %s is NULL",
                           !t ? "t" : "f");
    clmad_strbuf text = {0};
    clmad_status st = tensor_text(t, "clmad_tensor_print", &text);
    if (st == CLMAD_OK && (fwrite(text.data, 1, text.len, f) != text.len || fputc('\n', f) == EOF || ferror(f)))
        st = clmad__fail(t->ctx, CLMAD_ERR_IO, "clmad_tensor_print: writing failed");
    clmad__sb_free(&text);
    return st;
}
