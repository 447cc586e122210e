/* SPDX-License-Identifier: Apache-2.0 */
/* An optimizer's state as a safetensors file: its moments or velocities
 * under PyTorch's names, its step counts and options in the metadata. */
#include "base/strbuf.h"
#include "io/safetensors.h"
#include "ops/optim.h"
#include "runtime/context_guard.h"
#include "runtime/error.h"

#include <stdlib.h>
#include <string.h>

static const char *kind_name(clmad_optimizer_kind kind)
{
    switch (kind) {
    case CLMAD_OPTIM_SGD: return "sgd";
    case CLMAD_OPTIM_ADAM: return "adam";
    case CLMAD_OPTIM_ADAMW: return "adamw";
    }
    return "unknown";
}

/* The state slots of o that hold a tensor, and their names. */
static int slot_names(const clmad_optimizer *o, const char **names)
{
    if (o->opt.kind != CLMAD_OPTIM_SGD) {
        names[0] = "exp_avg";
        names[1] = "exp_avg_sq";
        return 2;
    }
    names[0] = "momentum_buffer";
    return o->opt.momentum > 0 ? 1 : 0;
}

/* The names "param.<i>.<slot>" and the state tensors, in one list; the
 * strings live in text (freed by the caller with the arrays). */
static clmad_status state_list(const clmad_optimizer *o, const char *call, char ***names, clmad_tensor ***tensors,
                               size_t *count, clmad_strbuf *text)
{
    const char *slot[2];
    int slots = slot_names(o, slot);
    size_t n = (size_t)o->n * (size_t)slots;
    size_t *at = calloc(n + 1, sizeof *at);
    *names = calloc(n + 1, sizeof **names);
    *tensors = calloc(n + 1, sizeof **tensors);
    for (int i = 0, k = 0; i < o->n; i++)
        for (int s = 0; s < slots; s++, k++) {
            if (at)
                at[k] = text->len;
            clmad__sb_printf(text, "param.%d.%s%c", i, slot[s], 0);
            if (*tensors)
                (*tensors)[k] = o->state[2 * i + s];
        }
    clmad_status st = CLMAD_OK;
    if (!at || !*names || !*tensors || text->failed)
        st = clmad__fail(o->ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory", call);
    for (size_t k = 0; k < n && st == CLMAD_OK; k++)
        (*names)[k] = text->data + at[k];
    free(at);
    *count = n;
    return st;
}

/* Metadata: key, value, ..., NULL, the strings in text. */
static clmad_status metadata_list(const clmad_optimizer *o, char ***meta, clmad_strbuf *text)
{
    const clmad_optimizer_options *q = &o->opt;
    clmad__sb_printf(text, "clmad.optimizer%c%s%c", 0, kind_name(q->kind), 0);
    clmad__sb_printf(text, "clmad.params%c%d%c", 0, o->n, 0);
    clmad__sb_printf(text, "clmad.steps%c%llu%c", 0, (unsigned long long)o->steps, 0);
    clmad__sb_printf(text, "lr%c%.17g%cmomentum%c%.17g%cnesterov%c%d%c", 0, q->lr, 0, 0, q->momentum, 0, 0,
                     q->nesterov, 0);
    clmad__sb_printf(text, "beta1%c%.17g%cbeta2%c%.17g%ceps%c%.17g%cweight_decay%c%.17g%c", 0, q->beta1, 0, 0,
                     q->beta2, 0, 0, q->eps, 0, 0, q->weight_decay, 0);
    for (int i = 0; i < o->n; i++)
        clmad__sb_printf(text, "param.%d.step%c%llu%c", i, 0, (unsigned long long)o->param_steps[i], 0);
    size_t strings = 2 * (10 + (size_t)o->n); /* 10 pairs above, then one per parameter */
    *meta = calloc(strings + 1, sizeof **meta);
    if (!*meta || text->failed)
        return clmad__fail(o->ctx, CLMAD_ERR_OUT_OF_MEMORY, "clmad_optimizer_save: out of host memory");
    const char *p = text->data;
    for (size_t k = 0; k < strings; k++, p += strlen(p) + 1)
        (*meta)[k] = (char *)p;
    return CLMAD_OK;
}

clmad_status clmad_optimizer_save(clmad_optimizer *o, const char *path)
{
    CLMAD_GUARD(o ? o->ctx : NULL, "clmad_optimizer_save");
    if (!o || !path)
        return clmad__fail(o ? o->ctx : NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_optimizer_save: %s is NULL",
                           !o ? "o" : "path");
    clmad_strbuf names_text = {0}, meta_text = {0};
    char **names = NULL, **meta = NULL;
    clmad_tensor **tensors = NULL;
    size_t n = 0;
    clmad_status st = state_list(o, "clmad_optimizer_save", &names, &tensors, &n, &names_text);
    if (st == CLMAD_OK)
        st = metadata_list(o, &meta, &meta_text);
    if (st == CLMAD_OK)
        st = clmad__st_save(o->ctx, "clmad_optimizer_save", path, (const char *const *)names, tensors, n,
                            (const char *const *)meta);
    free(names);
    free(tensors);
    free(meta);
    clmad__sb_free(&names_text);
    clmad__sb_free(&meta_text);
    return st;
}

/* The decimal metadata value of key as *value. */
static clmad_status count_of(const clmad_optimizer *o, const clmad_safetensors *f, const char *key, uint64_t *value)
{
    const char *text = clmad_safetensors_metadata(f, key);
    char *end = NULL;
    if (text && text[0] >= '0' && text[0] <= '9') {
        unsigned long long v = strtoull(text, &end, 10);
        if (*end == 0) {
            *value = v;
            return CLMAD_OK;
        }
    }
    return clmad__fail(o->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                       "clmad_optimizer_load: %s: metadata \"%s\" is %s%s%s, not a count of clmad_optimizer_save",
                       f->path, key, text ? "\"" : "missing", text ? text : "", text ? "\"" : "");
}

/* Checks the file's kind, count and step counts against o: steps in
 * param_steps (o->n entries) and *steps. */
static clmad_status read_counts(const clmad_optimizer *o, const clmad_safetensors *f, uint64_t *param_steps,
                                uint64_t *steps)
{
    const char *kind = clmad_safetensors_metadata(f, "clmad.optimizer");
    if (!kind || strcmp(kind, kind_name(o->opt.kind)) != 0)
        return clmad__fail(o->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_optimizer_load: %s: %s%s%s, the optimizer is %s", f->path,
                           kind ? "the state of a " : "no clmad.optimizer in the metadata (not a file of "
                                                      "clmad_optimizer_save)",
                           kind ? kind : "", kind ? " optimizer" : "", kind_name(o->opt.kind));
    uint64_t n = 0; /* set by count_of on success; 0 quiets -O3 maybe-uninitialized */
    clmad_status st = count_of(o, f, "clmad.params", &n);
    if (st == CLMAD_OK && n != (uint64_t)o->n)
        return clmad__fail(o->ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "clmad_optimizer_load: %s: the state of %llu parameters, the optimizer has %d", f->path,
                           (unsigned long long)n, o->n);
    if (st == CLMAD_OK)
        st = count_of(o, f, "clmad.steps", steps);
    for (int i = 0; i < o->n && st == CLMAD_OK; i++) {
        char key[48];
        snprintf(key, sizeof key, "param.%d.step", i);
        st = count_of(o, f, key, &param_steps[i]);
    }
    return st;
}

clmad_status clmad_optimizer_load(clmad_optimizer *o, const char *path)
{
    CLMAD_GUARD(o ? o->ctx : NULL, "clmad_optimizer_load");
    if (!o || !path)
        return clmad__fail(o ? o->ctx : NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_optimizer_load: %s is NULL",
                           !o ? "o" : "path");
    const char *call = "clmad_optimizer_load";
    clmad_safetensors *f = NULL;
    clmad_strbuf names_text = {0};
    char **names = NULL;
    clmad_tensor **tensors = NULL;
    size_t n = 0;
    uint64_t steps = 0, *param_steps = calloc((size_t)o->n, sizeof *param_steps);
    clmad_status st = CLMAD_OK;
    if (!param_steps)
        st = clmad__fail(o->ctx, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory", call);
    if (st == CLMAD_OK)
        st = clmad__st_open(o->ctx, call, path, &f);
    if (st == CLMAD_OK)
        st = read_counts(o, f, param_steps, &steps);
    if (st == CLMAD_OK)
        st = state_list(o, call, &names, &tensors, &n, &names_text);
    if (st == CLMAD_OK)
        st = clmad__st_load_into(o->ctx, call, f, (const char *const *)names, tensors, n);
    if (st == CLMAD_OK) {
        memcpy(o->param_steps, param_steps, (size_t)o->n * sizeof *param_steps);
        o->steps = steps;
    }
    clmad_safetensors_close(f);
    free(param_steps);
    free(names);
    free(tensors);
    clmad__sb_free(&names_text);
    return st;
}
