/* SPDX-License-Identifier: Apache-2.0 */
/* An optimizer step over many parameters per launch: up to
 * CLMAD_OPTIM_SLOTS parameters of one dtype, each with its own buffers as
 * kernel arguments (OpenCL 1.2 has no table of buffers), through
 * clmad_sgd_group and clmad_adam_group (cl/train.cl), which run the very
 * element update of the per-parameter kernels: the same bits. The
 * parameters, their state and their step counts stay as they were, so
 * nothing of the public interface changes; a model of a few tensors takes
 * one launch per step instead of one per tensor. */
#include "ops/optim.h"

#include <stdlib.h>

/* Per slot: SGD p, g, v, end; Adam p, g, m, v, end, step_size, sqrt_bc2.
 * Then the common ones: SGD lr, mu, wd, has_v, nesterov; Adam b1, c1, b2,
 * c2, eps, wd, decay, decoupled. */
enum { ADAM_PER_SLOT = 7, SGD_COMMON = 5, ADAM_COMMON = 8 };
enum { MAX_ARGS = CLMAD_OPTIM_SLOTS * ADAM_PER_SLOT + ADAM_COMMON };

typedef struct group {
    int idx[CLMAD_OPTIM_SLOTS];
    int count;
} group;

static clmad_status launch(struct clmad_optimizer *o, const group *gr)
{
    clmad_context *ctx = o->ctx;
    const clmad_optimizer_options *q = &o->opt;
    const clmad_dtype dt = o->params[gr->idx[0]]->dtype;
    const size_t rs = clmad_dtype_size(dt);
    const int adam = q->kind != CLMAD_OPTIM_SGD;
    cl_ulong end[CLMAD_OPTIM_SLOTS];
    clmad_real_arg step_size[CLMAD_OPTIM_SLOTS], sqrt_bc2[CLMAD_OPTIM_SLOTS];
    size_t sizes[MAX_ARGS];
    const void *values[MAX_ARGS];
    cl_ulong total = 0;
    uint64_t bytes = 0;
    for (int s = 0; s < gr->count; s++) {
        clmad_tensor *p = o->params[gr->idx[s]];
        total += p->numel;
        bytes += (uint64_t)(adam ? 7 : o->state[2 * gr->idx[s]] ? 5 : 3) * clmad__tensor_bytes(p);
        if (adam)
            clmad__adam_corrections(o, gr->idx[s], &step_size[s], &sqrt_bc2[s]);
    }
    int a = 0;
    for (int s = 0; s < CLMAD_OPTIM_SLOTS; s++) {
        /* Unused slots repeat the first one's buffers behind the last end. */
        const int i = gr->idx[s < gr->count ? s : 0], used = s < gr->count;
        clmad_tensor *p = o->params[i], *s0 = o->state[2 * i], *s1 = o->state[2 * i + 1];
        end[s] = used ? (s ? end[s - 1] : 0) + p->numel : total;
        sizes[a] = sizeof(cl_mem), values[a++] = &p->mem;
        sizes[a] = sizeof(cl_mem), values[a++] = &p->grad->mem;
        sizes[a] = sizeof(cl_mem), values[a++] = s0 ? &s0->mem : &p->mem;
        if (adam)
            sizes[a] = sizeof(cl_mem), values[a++] = &s1->mem;
        sizes[a] = sizeof end[s], values[a++] = &end[s];
        if (adam) {
            sizes[a] = rs, values[a++] = used ? &step_size[s] : &step_size[0];
            sizes[a] = rs, values[a++] = used ? &sqrt_bc2[s] : &sqrt_bc2[0];
        }
    }
    cl_kernel k;
    clmad_status st = clmad__cached_kernel(ctx, dt, adam ? CLMAD_TRAIN_ADAM_GROUP : CLMAD_TRAIN_SGD_GROUP, &k);
    if (st != CLMAD_OK)
        return st;
    clmad_real_arg lr = clmad__real_of(dt, q->lr), mu = clmad__real_of(dt, q->momentum),
                   wd = clmad__real_of(dt, q->weight_decay), b1 = clmad__real_of(dt, q->beta1),
                   c1 = clmad__real_of(dt, 1 - q->beta1), b2 = clmad__real_of(dt, q->beta2),
                   c2 = clmad__real_of(dt, 1 - q->beta2), eps = clmad__real_of(dt, q->eps),
                   decay = clmad__real_of(dt, 1 - q->lr * q->weight_decay);
    cl_int has_v = o->state[2 * gr->idx[0]] != NULL, nesterov = q->nesterov != 0,
           decoupled = q->kind == CLMAD_OPTIM_ADAMW;
    if (adam) {
        const void *common[ADAM_COMMON] = {&b1, &c1, &b2, &c2, &eps, &wd, &decay, &decoupled};
        for (int c = 0; c < ADAM_COMMON; c++)
            sizes[a] = c < ADAM_COMMON - 1 ? rs : sizeof decoupled, values[a++] = common[c];
    } else {
        const void *common[SGD_COMMON] = {&lr, &mu, &wd, &has_v, &nesterov};
        for (int c = 0; c < SGD_COMMON; c++)
            sizes[a] = c < 3 ? rs : sizeof(cl_int), values[a++] = common[c];
    }
    st = clmad__set_kernel_args(ctx, k, a, sizes, values);
    return st != CLMAD_OK ? st : clmad__enqueue_1d(ctx, k, (size_t)total, bytes);
}

/* Whether parameter i's buffer is already in gr: one launch must not
 * update a buffer twice (two tensors wrapping one cl_mem). */
static int shares_buffer(const struct clmad_optimizer *o, const group *gr, int i)
{
    for (int s = 0; s < gr->count; s++)
        if (o->params[gr->idx[s]]->mem == o->params[i]->mem)
            return 1;
    return 0;
}

static int steps_now(const struct clmad_optimizer *o, int i)
{
    return o->params[i]->grad && o->params[i]->numel > 0;
}

clmad_status clmad__optimizer_step_grouped(struct clmad_optimizer *o)
{
    /* One pass per dtype, in the order the dtypes first appear. */
    clmad_dtype done[16];
    int ndone = 0;
    for (int first = 0; first < o->n; first++) {
        if (!steps_now(o, first))
            continue;
        const clmad_dtype dt = o->params[first]->dtype;
        int seen = 0;
        for (int d = 0; d < ndone && !seen; d++)
            seen = done[d] == dt;
        for (int j = 0; j < first && !seen && ndone == 16; j++) /* past 16 dtypes: look back */
            seen = steps_now(o, j) && o->params[j]->dtype == dt;
        if (seen)
            continue;
        if (ndone < 16)
            done[ndone++] = dt;
        group gr = {.count = 0};
        for (int i = first; i < o->n; i++) {
            if (!steps_now(o, i) || o->params[i]->dtype != dt)
                continue;
            if (o->params[i]->numel >= CLMAD_OPTIM_ALONE)
                continue; /* launched alone (clmad_optimizer_step) */
            if (gr.count == CLMAD_OPTIM_SLOTS || shares_buffer(o, &gr, i)) {
                clmad_status st = launch(o, &gr);
                if (st != CLMAD_OK)
                    return st;
                gr.count = 0;
            }
            gr.idx[gr.count++] = i;
        }
        clmad_status st = gr.count ? launch(o, &gr) : CLMAD_OK;
        if (st != CLMAD_OK)
            return st;
    }
    return CLMAD_OK;
}
