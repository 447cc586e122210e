/* SPDX-License-Identifier: Apache-2.0 */
/* clmad-info --tune: measures the elements per work-item that make the
 * HM-LSTM cell's fused forward + backward fastest on the default device
 * (CLMAD_DEVICE) and stores the winner with clmad_tuning_save, in the cache
 * folder, for the contexts created afterwards on that device. */
#include "tune.h"

#include <clmad.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char CELL[] =
    "T cell(T z, T zb, T c, T f, T i, T g)\n"
    "{\n"
    "    if (ad_val(z) == 1)  return ad_mul(ad_sigmoid(i), ad_tanh(g));\n"
    "    if (ad_val(zb) == 0) return c;\n"
    "    return ad_add(ad_mul(ad_sigmoid(f), c), ad_mul(ad_sigmoid(i), ad_tanh(g)));\n"
    "}\n";

enum { ROUNDS = 9, ROWS = 1024, COLS = 1024 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define TRY(call)                                                                                   \
    do {                                                                                            \
        clmad_status st_ = (call);                                                                  \
        if (st_ != CLMAD_OK) {                                                                      \
            fprintf(stderr, "clmad-info --tune: %s: %s: %s\n", #call, clmad_status_string(st_),     \
                    clmad_last_error(ctx));                                                         \
            goto done;                                                                              \
        }                                                                                           \
    } while (0)

/* One candidate: a context made with `items` elements per work-item and
 * the cell's inputs on it. */
typedef struct candidate {
    int items;
    clmad_context *ctx;
    clmad_kernel *k;
    clmad_tensor *in[6], *seed;
    double times[ROUNDS];
} candidate;

static void release(candidate *c)
{
    for (int j = 0; j < 6; j++)
        clmad_tensor_release(c->in[j]);
    clmad_tensor_release(c->seed);
    clmad_kernel_release(c->k);
    clmad_context_release(c->ctx);
    c->ctx = NULL;
}

/* One forward + backward of the cell (RECOMPUTE: the primal and the VJP
 * kernels), waited for; its ms, or < 0 on failure. */
static double run_once(candidate *c)
{
    clmad_context *ctx = c->ctx;
    double start = now();
    clmad_tensor *y = NULL;
    TRY(clmad_broadcast(ctx, c->k, c->in, &y));
    clmad_status st = clmad_backward(ctx, y, c->seed);
    clmad_tensor_release(y);
    TRY(st);
    TRY(clmad_finish(ctx));
    for (int j = 2; j < 6; j++)
        clmad_tensor_zero_grad(c->in[j]);
    return 1e3 * (now() - start);
done:
    return -1;
}

/* Makes c's context (the elements per work-item are fixed at creation,
 * through CLMAD_ITEMS_PER_WORK_ITEM) and inputs, and compiles; 0 on success. */
static int setup(candidate *c)
{
    char value[16];
    snprintf(value, sizeof value, "%d", c->items);
    setenv("CLMAD_ITEMS_PER_WORK_ITEM", value, 1);
    if (clmad_context_create(NULL, &c->ctx) != CLMAD_OK) {
        fprintf(stderr, "clmad-info --tune: no context: %s\n", clmad_last_error(NULL));
        return -1;
    }
    clmad_context *ctx = c->ctx;
    TRY(clmad_set_partials_policy(ctx, CLMAD_PARTIALS_RECOMPUTE));
    TRY(clmad_kernel_create(ctx, CELL, "cell", 6, 1, &c->k));
    const size_t full[2] = {ROWS, COLS}, row[2] = {ROWS, 1};
    TRY(clmad_tensor_rand_uniform(ctx, CLMAD_F32, 2, row, 0, 1, 1, &c->in[0]));
    TRY(clmad_tensor_rand_uniform(ctx, CLMAD_F32, 2, row, 0, 1, 2, &c->in[1]));
    for (int j = 2; j < 6; j++) {
        TRY(clmad_tensor_rand_normal(ctx, CLMAD_F32, 2, full, 0, 1, (uint64_t)j, &c->in[j]));
        TRY(clmad_tensor_set_requires_grad(c->in[j], 1));
    }
    TRY(clmad_tensor_fill(ctx, CLMAD_F32, 2, full, 1.0, &c->seed));
    return run_once(c) < 0 ? -1 : 0; /* compiles */
done:
    return -1;
}

int clmad_info_tune(void)
{
    static const int candidates[] = {1, 4, 8, 16, 32, 64};
    const int n = (int)(sizeof candidates / sizeof candidates[0]);
    const char *saved_env = getenv("CLMAD_ITEMS_PER_WORK_ITEM");
    char *restore = saved_env ? strdup(saved_env) : NULL;
    clmad_context *ctx = NULL;
    if (clmad_context_create(NULL, &ctx) != CLMAD_OK) {
        fprintf(stderr, "clmad-info --tune: no context: %s\n", clmad_last_error(NULL));
        free(restore);
        return 1;
    }
    clmad_device_info dev;
    clmad_tuning before;
    clmad_context_device(ctx, &dev);
    clmad_context_tuning(ctx, &before);
    printf("clmad-info --tune: %s (driver %s)\n", dev.name, dev.driver_version);
    printf("  now: %d elements per work-item (%s)\n", before.items_per_work_item, before.origin);
    printf("  HM-LSTM cell, %d x %d f32, forward + backward (RECOMPUTE), median of %d interleaved rounds:\n", ROWS, COLS, ROUNDS);
    candidate cands[sizeof candidates / sizeof candidates[0]];
    memset(cands, 0, sizeof cands);
    for (int c = 0; c < n; c++) {
        cands[c].items = candidates[c];
        if (setup(&cands[c]) != 0)
            release(&cands[c]);
    }
    /* Interleaved rounds: each candidate once per round, so that the
     * machine's noise falls on all alike. */
    for (int r = 0; r < ROUNDS; r++)
        for (int c = 0; c < n; c++)
            if (cands[c].ctx && (cands[c].times[r] = run_once(&cands[c])) < 0)
                release(&cands[c]);
    int best = -1;
    double best_ms = 0;
    for (int c = 0; c < n; c++) {
        if (!cands[c].ctx) {
            printf("  %4d elements per work-item: failed\n", candidates[c]);
            continue;
        }
        qsort(cands[c].times, ROUNDS, sizeof(double), cmp_double);
        double ms = cands[c].times[ROUNDS / 2];
        printf("  %4d elements per work-item: %8.2f ms (fastest %.2f, slowest %.2f)\n", candidates[c], ms,
               cands[c].times[0], cands[c].times[ROUNDS - 1]);
        /* Ties (within 3%) go to fewer elements: less code, a shorter remainder loop. */
        if (best < 0 || ms < 0.97 * best_ms) {
            best = candidates[c];
            best_ms = ms;
        }
        release(&cands[c]);
    }
    if (restore)
        setenv("CLMAD_ITEMS_PER_WORK_ITEM", restore, 1);
    else
        unsetenv("CLMAD_ITEMS_PER_WORK_ITEM");
    free(restore);
    int status = 1;
    if (best > 0) {
        clmad_tuning t = before;
        t.items_per_work_item = best;
        clmad_status st = clmad_tuning_save(ctx, &t);
        if (st == CLMAD_OK) {
            printf("  saved: %d elements per work-item for this device (contexts created from now on)\n", best);
            status = 0;
        } else {
            fprintf(stderr, "clmad-info --tune: %s: %s\n", clmad_status_string(st), clmad_last_error(ctx));
        }
    }
    clmad_context_release(ctx);
    return status;
}
