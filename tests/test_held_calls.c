/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Held tensors (docs/fusion.md) against every public call that takes a
 * tensor. With fusion on, a recorded broadcast's output y is held: it has a
 * buffer but no values until some call needs them. Every call must either
 * run the held work first (the guard of context_guard.h) or handle the held
 * tensor itself; a call that does neither reads a buffer never written.
 *
 * The table below has one ENTRY per public function of clmad.h and
 * clmad_cl.h with a tensor input (tests/held_calls_complete.sh keeps it
 * complete). Each entry is one or more calls (AT(k)), each run on a fresh
 * held y, in a fresh program, on two contexts, fusion on and off:
 *   1. the auxiliary tensors and objects the calls use are made first
 *      (making anything after y would run the held work before the call);
 *   2. a, b (4x8 leaves) and y = f(a, b) = sin(a) b by clmad_broadcast; on
 *      the fused context y is held (asserted on the tensor itself: every
 *      public call that could tell, clmad_context_stats included, runs the
 *      held work first), on the other it is written;
 *   3. the call, with y in a tensor position; its status, every host
 *      output (numbers, text, file contents, the bytes behind
 *      clmad_tensor_get_cl) and, after its last call, every output tensor;
 *   4. y's values, loss = sum(y), backward, a's and b's gradients.
 * The two contexts' results must be bitwise equal (signs of zero included;
 * a NaN equals any NaN, as in test_fusion). Calls refused on a recorded
 * tensor (a write into y, a non-leaf given to an optimizer, ...) are fine:
 * their status is compared, and so is everything after them.
 * Every entry runs twice: y the broadcast's output, and y = y0 * w, a held
 * stage over a held broadcast y0 ("Held stages").
 */
#include <criterion/criterion.h>

#include "support.h"
#include "internal.h" /* y->held: whether y is held, which no public call can ask without running it */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 4
#define COLS 8
#define N (ROWS * COLS)

/* ---- results ------------------------------------------------------------ */

/* How a record compares: bytes, or floats (a NaN equals any NaN). */
enum kind { RAW, F32, F64 };

typedef struct record {
    int kind;
    size_t at, len;
    char what[112];
} record;

typedef struct results {
    unsigned char *bytes;
    size_t len, cap;
    record *recs;
    size_t n, n_cap;
} results;

static void put(results *r, int kind, const char *what, const void *p, size_t len)
{
    if (r->len + len > r->cap) {
        r->cap = 2 * (r->len + len) + 256;
        r->bytes = realloc(r->bytes, r->cap);
        cr_assert(r->bytes);
    }
    if (r->n == r->n_cap) {
        r->n_cap = 2 * r->n_cap + 64;
        r->recs = realloc(r->recs, r->n_cap * sizeof *r->recs);
        cr_assert(r->recs);
    }
    record *c = &r->recs[r->n++];
    c->kind = kind, c->at = r->len, c->len = len;
    snprintf(c->what, sizeof c->what, "%s", what);
    if (len)
        memcpy(r->bytes + r->len, p, len);
    r->len += len;
}

static void results_free(results *r)
{
    free(r->bytes);
    free(r->recs);
    memset(r, 0, sizeof *r);
}

/* 1 if element i of the record's bytes in x and y are equal (NaN = NaN);
 * within TEST_PROGRAM_ULPS on a device whose primal and dual programs
 * round apart (fused and eager compute y in different programs). */
static int same_element(int kind, const unsigned char *x, const unsigned char *y)
{
    const double ulps = test_programs_round_alike() ? 0 : TEST_PROGRAM_ULPS;
    return test_elements_equal(x, y, kind == F32 ? 4 : 8, ulps);
}

/* "" if fused and eager hold the same records, else what differs first. */
static const char *difference(const results *fused, const results *eager)
{
    static char msg[512];
    for (size_t i = 0; i < fused->n && i < eager->n; i++) {
        const record *f = &fused->recs[i], *g = &eager->recs[i];
        if (strcmp(f->what, g->what) != 0 || f->len != g->len) {
            snprintf(msg, sizeof msg, "record %zu: fused \"%s\" (%zu bytes), eager \"%s\" (%zu bytes)", i, f->what,
                     f->len, g->what, g->len);
            return msg;
        }
        const unsigned char *x = fused->bytes + f->at, *y = eager->bytes + g->at;
        size_t size = f->kind == F32 ? 4 : f->kind == F64 ? 8 : f->len;
        for (size_t at = 0; size && at < f->len; at += size) {
            if (f->kind == RAW ? memcmp(x, y, f->len) == 0 : same_element(f->kind, x + at, y + at))
                continue;
            if (f->kind == F32) {
                float a, b;
                memcpy(&a, x + at, 4), memcpy(&b, y + at, 4);
                snprintf(msg, sizeof msg, "%s: element %zu is %a fused, %a eager", f->what, at / 4, a, b);
            } else if (f->kind == F64) {
                double a, b;
                memcpy(&a, x + at, 8), memcpy(&b, y + at, 8);
                snprintf(msg, sizeof msg, "%s: element %zu is %a fused, %a eager", f->what, at / 8, a, b);
            } else if (f->len == sizeof(int)) {
                int a, b;
                memcpy(&a, x, sizeof a), memcpy(&b, y, sizeof b);
                snprintf(msg, sizeof msg, "%s: %d fused, %d eager", f->what, a, b);
            } else {
                snprintf(msg, sizeof msg, "%s: the bytes differ (\"%.*s\" fused, \"%.*s\" eager)", f->what,
                         (int)(f->len < 60 ? f->len : 60), (const char *)x, (int)(f->len < 60 ? f->len : 60),
                         (const char *)y);
            }
            return msg;
        }
    }
    if (fused->n != eager->n) {
        snprintf(msg, sizeof msg, "%zu records fused, %zu eager (first extra: \"%s\")", fused->n, eager->n,
                 fused->n > eager->n ? fused->recs[eager->n].what : eager->recs[fused->n].what);
        return msg;
    }
    return "";
}

/* ---- one run -------------------------------------------------------------- */

typedef struct env {
    clmad_context *ctx;
    int fused;                /* the context holds broadcasts (fusion on) */
    int stage;                /* y = y0 * w, not y0 itself */
    const char *tag;          /* "on" or "off": the context's files */
    const char *dir;          /* this test's folder under CLMAD_TEST_TMP */
    char load_path[1024];     /* a file made at setup: "y" and "w", w's values */
    char save_path[1024];
    cl_command_queue queue;   /* the context's, taken at setup */
    clmad_kernel *f, *g;      /* f makes y; g takes it (clmad_broadcast's entries) */
    int part, n_parts;        /* the entry's call under way (AT), and how many it has */
    int serial;               /* the program's number: its inputs' values (below) */
    results *r;
    clmad_tensor *a, *b, *y0, *y;
    /* Auxiliaries, made before y. */
    clmad_tensor *w, *m84, *s0, *dst, *leaf, *mask, *maskf, *idx, *idx48, *labels, *labels32, *classes, *target;
    clmad_staging *staging;
    /* Output tensors of the calls, read after the last one. */
    clmad_tensor *pending[16];
    const char *pending_what[16];
    int n_pending;
} env;

static void keep_status(env *e, const char *what, clmad_status st)
{
    int v = (int)st;
    char w[112];
    snprintf(w, sizeof w, "status of %s", what);
    put(e->r, RAW, w, &v, sizeof v);
}

static void keep_int(env *e, const char *what, long long value)
{
    int v = (int)value;
    cr_assert_eq(v, value);
    put(e->r, RAW, what, &v, sizeof v);
}

static void keep_double(env *e, const char *what, double value)
{
    put(e->r, F64, what, &value, sizeof value);
}

static void keep_text(env *e, const char *what, const char *text, size_t len)
{
    put(e->r, RAW, what, text, len);
}

/* t's shape, dtype and values (NULL: a record that says so). */
static void keep_tensor(env *e, const char *what, clmad_tensor *t)
{
    char w[112];
    if (!t) {
        snprintf(w, sizeof w, "%s is NULL", what);
        put(e->r, RAW, w, "", 0);
        return;
    }
    int head[2 + CLMAD_MAX_DIMS] = {clmad_tensor_dtype(t), clmad_tensor_ndim(t)};
    for (int d = 0; d < head[1]; d++)
        head[2 + d] = (int)clmad_tensor_dim(t, d);
    snprintf(w, sizeof w, "dtype and shape of %s", what);
    put(e->r, RAW, w, head, (size_t)(2 + head[1]) * sizeof head[0]);
    size_t bytes = clmad_tensor_numel(t) * clmad_dtype_size(clmad_tensor_dtype(t));
    void *h = malloc(bytes + 1);
    cr_assert(h);
    CHECK_OK(e->ctx, clmad_tensor_read(t, h, bytes));
    put(e->r, head[0] == CLMAD_F32 ? F32 : head[0] == CLMAD_F64 ? F64 : RAW, what, h, bytes);
    free(h);
}

/* Keeps t (owned: released) for the end of the entry's call. */
static void defer(env *e, const char *what, clmad_tensor *t)
{
    cr_assert(e->n_pending < 16);
    e->pending[e->n_pending] = t;
    e->pending_what[e->n_pending++] = what;
}

static void keep_grad(env *e, const char *what, clmad_tensor *x)
{
    clmad_tensor *g = NULL;
    CHECK_OK(e->ctx, clmad_tensor_grad(x, &g));
    keep_tensor(e, what, g);
    clmad_tensor_release(g);
}

/* The status of `call`. */
#define ST(call) keep_status(e, #call, (call))
/* The status of `call`, which makes the tensor `out`, and out's values
 * after the entry's last call (read then: reading one output runs the held
 * work it depends on, y's among them). */
#define ONE(call)                                                                                          \
    do {                                                                                                   \
        clmad_tensor *out = NULL;                                                                          \
        keep_status(e, #call, (call));                                                                     \
        defer(e, #call, out);                                                                              \
    } while (0)
/* The entry's call number k, on a fresh held y of its own (a call that
 * runs the held work would leave the next one a written y). */
#define AT(k) if (note_part(e, (k)) == e->part)

static int note_part(env *e, int k)
{
    if (e->n_parts < k + 1)
        e->n_parts = k + 1;
    return k;
}

static clmad_tensor *tensor(clmad_context *ctx, clmad_dtype dt, int ndim, const size_t *shape, const void *host)
{
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, dt, ndim, shape, host, &t));
    return t;
}

static const size_t SHAPE[2] = {ROWS, COLS};

/* w's values: ordinary, nonzero, some negative. */
static void w_values(float *w)
{
    for (int i = 0; i < N; i++)
        w[i] = 0.75f - 0.06f * (float)i;
}

/* Step 1: everything the calls may need, before y. */
static void make_auxiliaries(env *e)
{
    clmad_context *ctx = e->ctx;
    float w[N], m84[N], dst[N], maskf[N], target[N], classes[ROWS] = {1, 7, 0, 3};
    unsigned char mask[N];
    int64_t idx[3] = {2, 0, 3}, idx48[N], labels[ROWS] = {1, 7, 0, 3};
    int32_t labels32[ROWS] = {1, 7, 0, 3};
    w_values(w);
    for (int i = 0; i < N; i++) {
        int r = i / COLS, c = i % COLS;
        m84[i] = 0.1f * (float)(i % 5) - 0.2f;
        dst[i] = 0.5f;
        mask[i] = i % 3 == 0;
        maskf[i] = (float)(i % 3 == 1);
        idx48[i] = (r * 3 + c * 5) % COLS;
        target[i] = (float)(r + c + 1) / (float)(8 * (r + 1) + 28); /* each row sums to 1 */
    }
    const size_t s84[2] = {COLS, ROWS}, s3 = 3, rows = ROWS;
    float s0 = 1.75f;
    e->w = tensor(ctx, CLMAD_F32, 2, SHAPE, w);
    e->m84 = tensor(ctx, CLMAD_F32, 2, s84, m84);
    e->s0 = tensor(ctx, CLMAD_F32, 0, NULL, &s0);
    e->dst = tensor(ctx, CLMAD_F32, 2, SHAPE, dst);
    e->leaf = tensor(ctx, CLMAD_F32, 2, SHAPE, w);
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(e->leaf, 1));
    e->mask = tensor(ctx, CLMAD_U8, 2, SHAPE, mask);
    e->maskf = tensor(ctx, CLMAD_F32, 2, SHAPE, maskf);
    e->idx = tensor(ctx, CLMAD_I64, 1, &s3, idx);
    e->idx48 = tensor(ctx, CLMAD_I64, 2, SHAPE, idx48);
    e->labels = tensor(ctx, CLMAD_I64, 1, &rows, labels);
    e->labels32 = tensor(ctx, CLMAD_I32, 1, &rows, labels32);
    e->classes = tensor(ctx, CLMAD_F32, 1, &rows, classes);
    e->target = tensor(ctx, CLMAD_F32, 2, SHAPE, target);
    /* A staging area, mapped and filled now for the scatter (a map is a
     * call that would run the held work). */
    CHECK_OK(ctx, clmad_staging_create(ctx, 4 * N * sizeof(float), &e->staging));
    void *host = NULL;
    CHECK_OK(ctx, clmad_staging_map(e->staging, &host));
    for (int i = 0; i < 4 * N; i++)
        ((float *)host)[i] = -1.25f + 0.1f * (float)i;
}

static void release_auxiliaries(env *e)
{
    clmad_tensor *all[] = {e->w,   e->m84,    e->s0,     e->dst,      e->leaf,    e->mask,  e->maskf,
                           e->idx, e->idx48,  e->labels, e->labels32, e->classes, e->target};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clmad_tensor_release(all[i]);
    clmad_staging_release(e->staging);
    e->staging = NULL;
}

/* Step 2: a, b and the held y (y0, or the stage y0 * w). Their values
 * change from one program to the next, so that a pooled buffer that held
 * an earlier program's y cannot pass for this one's. */
static void make_held(env *e)
{
    clmad_context *ctx = e->ctx;
    float a[N], b[N], scale = 1.0f + 0.01f * (float)e->serial;
    for (int i = 0; i < N; i++) {
        a[i] = scale * 0.37f * (float)(i % 7 - 3);                       /* 0 at i % 7 == 3, negatives */
        b[i] = scale * (0.25f * (float)(i % 9 - 4) + 0.1f * (float)(i / 9)); /* 0 at i = 4 */
    }
    e->a = tensor(ctx, CLMAD_F32, 2, SHAPE, a);
    e->b = tensor(ctx, CLMAD_F32, 2, SHAPE, b);
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(e->a, 1));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(e->b, 1));
    clmad_tensor *in[2] = {e->a, e->b};
    CHECK_OK(ctx, clmad_broadcast(ctx, e->f, in, &e->y0));
    cr_assert_eq(e->y0->held != NULL, e->fused, "%sy0 is %sheld with fusion %s", test_case(),
                 e->y0->held ? "" : "not ", e->tag);
    e->y = e->y0;
    if (e->stage) {
        CHECK_OK(ctx, clmad_mul(ctx, e->y0, e->w, &e->y));
        cr_assert_eq(e->y->held != NULL, e->fused, "%sthe stage y0 * w is %sheld with fusion %s", test_case(),
                     e->y->held ? "" : "not ", e->tag);
        cr_assert_eq(e->y0->held != NULL, e->fused, "%sy0 was written for its stage", test_case());
    }
}

/* ---- the entries ------------------------------------------------------------ */

#define CALL(name)                                                                                      \
    static void call_##name(__attribute__((unused)) env *e, __attribute__((unused)) clmad_context *ctx, \
                            clmad_tensor *y)

CALL(tensor_read)
{
    float h[N];
    ST(clmad_tensor_read(y, h, sizeof h));
    put(e->r, F32, "values read", h, sizeof h);
}

CALL(tensor_write)
{
    float h[N];
    w_values(h);
    ST(clmad_tensor_write(y, h, sizeof h));
}

CALL(tensor_copy)
{
    AT(0)
    {
        ST(clmad_tensor_copy(e->dst, y));
        defer(e, "dst after the copy", clmad_tensor_retain(e->dst));
    }
    AT(1) ST(clmad_tensor_copy(y, e->w));
}

CALL(staging_gather)
{
    void *host = NULL;
    AT(0)
    {
        ST(clmad_staging_gather(e->staging, &y, 1, &host));
        put(e->r, F32, "the area after gather(y)", host, host ? N * sizeof(float) : 0);
    }
    AT(1)
    {
        clmad_tensor *ts[3] = {e->w, y, e->dst};
        ST(clmad_staging_gather(e->staging, ts, 3, &host));
        put(e->r, F32, "the area after gather(w, y, dst)", host, host ? 3 * N * sizeof(float) : 0);
    }
}

CALL(staging_scatter)
{
    AT(0) ST(clmad_staging_scatter(e->staging, &y, 1));
    AT(1)
    {
        clmad_tensor *ts[2] = {e->dst, y};
        ST(clmad_staging_scatter(e->staging, ts, 2));
        defer(e, "dst after the scatter", clmad_tensor_retain(e->dst));
    }
}

CALL(tensor_retain)
{
    clmad_tensor *r = clmad_tensor_retain(y);
    keep_int(e, "clmad_tensor_retain(y) == y", r == y);
    clmad_tensor_release(r);
}

/* The harness's own reference to y goes while a held stage over y still
 * needs its values (z = 2 y takes y's place in the rest of the run); then
 * a second held broadcast, released unrun (its work is dropped; its node
 * stays on the tape). */
CALL(tensor_release)
{
    AT(0)
    {
        clmad_tensor *z = NULL;
        CHECK_OK(ctx, clmad_mul_scalar(ctx, y, 2.0, &z));
        clmad_tensor_release(y);
        if (e->y0 == y)
            e->y0 = NULL;
        e->y = z;
    }
    AT(1)
    {
        clmad_tensor *in[2] = {e->b, e->a}, *other = NULL;
        CHECK_OK(ctx, clmad_broadcast(ctx, e->f, in, &other));
        clmad_tensor_release(other);
    }
}

CALL(tensor_ndim)
{
    keep_int(e, "clmad_tensor_ndim(y)", clmad_tensor_ndim(y));
}

CALL(tensor_dim)
{
    for (int d = 0; d < 3; d++)
        keep_int(e, "clmad_tensor_dim(y, d)", (long long)clmad_tensor_dim(y, d));
}

CALL(tensor_numel)
{
    keep_int(e, "clmad_tensor_numel(y)", (long long)clmad_tensor_numel(y));
}

CALL(tensor_dtype)
{
    keep_int(e, "clmad_tensor_dtype(y)", clmad_tensor_dtype(y));
}

CALL(broadcast)
{
    clmad_tensor *yw[2] = {y, e->w}, *wy[2] = {e->w, y};
    AT(0) ONE(clmad_broadcast(ctx, e->g, yw, &out));
    AT(1) ONE(clmad_broadcast(ctx, e->g, wy, &out));
}

CALL(broadcast_partials)
{
    clmad_tensor *yw[2] = {y, e->w}, *wy[2] = {e->w, y}, *out[1] = {NULL}, *partials[2] = {NULL, NULL};
    AT(0) ST(clmad_broadcast_partials(ctx, e->g, yw, NULL, out, partials));
    AT(1) ST(clmad_broadcast_partials(ctx, e->g, wy, NULL, out, partials));
    defer(e, "outputs[0]", out[0]);
    defer(e, "partials[0]", partials[0]);
    defer(e, "partials[1]", partials[1]);
}

CALL(broadcast_jvp)
{
    clmad_tensor *in[2] = {y, e->w}, *tangents[2] = {e->w, NULL}, *out[1] = {NULL}, *tout[1] = {NULL};
    AT(1) in[0] = e->w, tangents[0] = y;              /* y as a tangent */
    AT(2) in[1] = e->leaf, tangents[0] = NULL, tangents[1] = y;
    ST(clmad_broadcast_jvp(ctx, e->g, in, tangents, out, tout));
    defer(e, "outputs[0]", out[0]);
    defer(e, "out_tangents[0]", tout[0]);
}

CALL(broadcast_second)
{
    clmad_tensor *in[2] = {y, e->w}, *tangents[2] = {e->w, NULL}, *out[1] = {NULL}, *tout[1] = {NULL};
    clmad_tensor *partials[2] = {NULL, NULL}, *ptangents[2] = {NULL, NULL};
    AT(1) in[0] = e->w, tangents[0] = y, tangents[1] = y; /* y as both tangents */
    ST(clmad_broadcast_second(ctx, e->g, in, tangents, NULL, out, tout, partials, ptangents));
    defer(e, "outputs[0]", out[0]);
    defer(e, "out_tangents[0]", tout[0]);
    for (int j = 0; j < 2; j++) {
        defer(e, "partials[j]", partials[j]);
        defer(e, "partial_tangents[j]", ptangents[j]);
    }
}

/* The loss dot(y, w) leaves y held (a fused loss); then y as the direction,
 * as the loss, as a parameter. */
CALL(hvp)
{
    clmad_tensor *loss = NULL, *hv[2] = {NULL, NULL};
    clmad_tensor *params[2] = {e->a, e->b}, *v[2] = {y, e->w}, *ww[2] = {e->w, e->w};
    AT(0)
    {
        ST(clmad_dot(ctx, y, e->w, &loss));
        ST(clmad_hvp(ctx, loss, params, 2, v, hv));
    }
    AT(1) ST(clmad_hvp(ctx, y, params, 2, ww, hv));
    AT(2)
    {
        ST(clmad_dot(ctx, y, e->w, &loss));
        ST(clmad_hvp(ctx, loss, &y, 1, ww, hv));
    }
    defer(e, "loss", loss);
    defer(e, "hv[0]", hv[0]);
    defer(e, "hv[1]", hv[1]);
}

CALL(tensor_set_requires_grad)
{
    AT(0) ST(clmad_tensor_set_requires_grad(y, 0));
    AT(1) ST(clmad_tensor_set_requires_grad(y, 1));
}

CALL(tensor_requires_grad)
{
    keep_int(e, "clmad_tensor_requires_grad(y)", clmad_tensor_requires_grad(y));
}

CALL(tensor_grad)
{
    ONE(clmad_tensor_grad(y, &out));
}

CALL(tensor_zero_grad)
{
    clmad_tensor_zero_grad(y);
}

/* y as the loss without a seed (refused: 32 elements), seeded by itself
 * (y in both places), seeded by w. */
CALL(backward)
{
    AT(0) ST(clmad_backward(ctx, y, NULL));
    AT(1) ST(clmad_backward(ctx, y, y));
    AT(2) ST(clmad_backward(ctx, y, e->w));
    AT(1) keep_grad(e, "a's gradient after backward(y, y)", e->a);
}

typedef clmad_status (*binary_fn)(clmad_context *, clmad_tensor *, clmad_tensor *, clmad_tensor **);

/* y in either place, against w (op(y, w) is held itself: a stage), the 0-d
 * s0, y itself; first a stage released unread, which must leave y held. */
static void binary_calls(env *e, clmad_context *ctx, clmad_tensor *y, binary_fn op)
{
    AT(0)
    {
        clmad_tensor *z = NULL;
        ST(op(ctx, y, e->w, &z));
        clmad_tensor_release(z);
        ONE(op(ctx, y, e->w, &out));
    }
    AT(1) ONE(op(ctx, e->w, y, &out));
    AT(2) ONE(op(ctx, y, e->s0, &out));
    AT(3) ONE(op(ctx, e->s0, y, &out));
    AT(4) ONE(op(ctx, y, y, &out));
    AT(5) ONE(op(ctx, y, e->leaf, &out));
}

CALL(add) { binary_calls(e, ctx, y, clmad_add); }
CALL(sub) { binary_calls(e, ctx, y, clmad_sub); }
CALL(mul) { binary_calls(e, ctx, y, clmad_mul); }
CALL(div) { binary_calls(e, ctx, y, clmad_div); }
CALL(pow) { binary_calls(e, ctx, y, clmad_pow); }

CALL(neg) { ONE(clmad_neg(ctx, y, &out)); }
CALL(exp) { ONE(clmad_exp(ctx, y, &out)); }
CALL(log) { ONE(clmad_log(ctx, y, &out)); }
CALL(tanh) { ONE(clmad_tanh(ctx, y, &out)); }
CALL(sigmoid) { ONE(clmad_sigmoid(ctx, y, &out)); }
CALL(relu) { ONE(clmad_relu(ctx, y, &out)); }
CALL(sqrt) { ONE(clmad_sqrt(ctx, y, &out)); }

CALL(where)
{
    AT(0) ONE(clmad_where(ctx, y, e->w, e->s0, &out));      /* a float condition */
    AT(1) ONE(clmad_where(ctx, e->maskf, y, e->w, &out));
    AT(2) ONE(clmad_where(ctx, e->maskf, e->w, y, &out));
    AT(3) ONE(clmad_where(ctx, e->mask, y, e->w, &out));    /* an integer mask: cast first */
    AT(4) ONE(clmad_where(ctx, e->mask, e->w, y, &out));
}

CALL(compare)
{
    AT(0) ONE(clmad_compare(ctx, CLMAD_LT, y, e->w, &out));
    AT(1) ONE(clmad_compare(ctx, CLMAD_GE, e->w, y, &out));
    AT(2) ONE(clmad_compare(ctx, CLMAD_EQ, y, y, &out));
}

typedef clmad_status (*reduce_fn)(clmad_context *, clmad_tensor *, int, const int *, int, clmad_tensor **);

/* Whole (a fused loss: y stays held), along an axis, keepdims, and twice
 * (the second over a y that a loss kernel has read). */
static void reduce_calls(env *e, clmad_context *ctx, clmad_tensor *y, reduce_fn op)
{
    const int one = 1, zero = 0;
    AT(0) ONE(op(ctx, y, 0, NULL, 0, &out));
    AT(1) ONE(op(ctx, y, 1, &one, 0, &out));
    AT(2) ONE(op(ctx, y, 1, &zero, 1, &out));
    AT(3) ONE(op(ctx, y, 0, NULL, 1, &out));
    AT(4)
    {
        ONE(op(ctx, y, 0, NULL, 0, &out));
        ONE(op(ctx, y, 0, NULL, 0, &out));
    }
}

CALL(sum) { reduce_calls(e, ctx, y, clmad_sum); }
CALL(mean) { reduce_calls(e, ctx, y, clmad_mean); }

CALL(dot)
{
    AT(0) ONE(clmad_dot(ctx, y, e->w, &out));
    AT(1) ONE(clmad_dot(ctx, e->w, y, &out));
    AT(2) ONE(clmad_dot(ctx, y, y, &out));
    AT(3) ONE(clmad_dot(ctx, y, e->leaf, &out));    /* a weight needing a gradient: no fusion */
    AT(4)
    {
        ONE(clmad_dot(ctx, y, e->w, &out));
        ONE(clmad_dot(ctx, e->w, y, &out));
    }
}

CALL(matmul)
{
    AT(0) ONE(clmad_matmul(ctx, y, e->m84, 0, 0, &out));
    AT(1) ONE(clmad_matmul(ctx, e->m84, y, 0, 0, &out));
    AT(2) ONE(clmad_matmul(ctx, y, y, 0, 1, &out));
    AT(3) ONE(clmad_matmul(ctx, y, e->w, 1, 0, &out));
}

CALL(slice)
{
    AT(0) ONE(clmad_slice(ctx, y, 1, 2, 6, &out));
    AT(1) ONE(clmad_slice(ctx, y, 0, 1, 3, &out));
}

CALL(concat)
{
    clmad_tensor *yw[2] = {y, e->w}, *wy[2] = {e->w, y};
    AT(0) ONE(clmad_concat(ctx, 2, yw, 0, &out));
    AT(1) ONE(clmad_concat(ctx, 2, wy, 1, &out));
    AT(2) ONE(clmad_concat(ctx, 1, &y, 0, &out));
}

CALL(reshape)
{
    const size_t s84[2] = {COLS, ROWS}, s32 = N;
    AT(0) ONE(clmad_reshape(ctx, y, 2, s84, &out));
    AT(1) ONE(clmad_reshape(ctx, y, 1, &s32, &out));
}

CALL(transpose)
{
    ONE(clmad_transpose(ctx, y, NULL, &out));
}

CALL(max)
{
    AT(0) ONE(clmad_max(ctx, y, 1, 0, &out));
    AT(1) ONE(clmad_max(ctx, y, 0, 1, &out));
}

CALL(logsumexp)
{
    AT(0) ONE(clmad_logsumexp(ctx, y, 1, 0, &out));
    AT(1) ONE(clmad_logsumexp(ctx, y, 0, 1, &out));
}

CALL(softmax)
{
    AT(0) ONE(clmad_softmax(ctx, y, 1, &out));
    AT(1) ONE(clmad_softmax(ctx, y, 0, &out));
}

CALL(log_softmax)
{
    AT(0) ONE(clmad_log_softmax(ctx, y, -1, &out));
    AT(1) ONE(clmad_log_softmax(ctx, y, 0, &out));
}

CALL(mse_loss)
{
    AT(0) ONE(clmad_mse_loss(ctx, y, e->w, &out));
    AT(1) ONE(clmad_mse_loss(ctx, e->w, y, &out));
}

CALL(cross_entropy)
{
    AT(0) ONE(clmad_cross_entropy(ctx, y, e->target, &out));
    AT(1) ONE(clmad_cross_entropy(ctx, e->w, y, &out));      /* y as soft labels */
    AT(2) ONE(clmad_cross_entropy(ctx, y, e->classes, &out)); /* class indices as floats */
    AT(3) ONE(clmad_cross_entropy(ctx, y, e->labels, &out));
}

/* bmm takes 3-d operands only: refused, with y in either place. */
CALL(bmm)
{
    AT(0) ONE(clmad_bmm(ctx, y, y, 0, 1, &out));
    AT(1) ONE(clmad_bmm(ctx, e->w, y, 0, 1, &out));
}

CALL(argmax)
{
    AT(0) ONE(clmad_argmax(ctx, y, 1, 0, &out));
    AT(1) ONE(clmad_argmax(ctx, y, 0, 1, &out));
}

CALL(argmin)
{
    AT(0) ONE(clmad_argmin(ctx, y, 1, 0, &out));
    AT(1) ONE(clmad_argmin(ctx, y, 0, 1, &out));
}

CALL(index_select)
{
    AT(0) ONE(clmad_index_select(ctx, y, 0, e->idx, &out));
    AT(1) ONE(clmad_index_select(ctx, y, 1, e->idx, &out));
    AT(2) ONE(clmad_index_select(ctx, e->w, 0, y, &out)); /* a 2-d float index: refused */
}

CALL(embedding)
{
    AT(0) ONE(clmad_embedding(ctx, y, e->idx, &out));
    AT(1) ONE(clmad_embedding(ctx, e->w, y, &out));
}

CALL(gather)
{
    AT(0) ONE(clmad_gather(ctx, y, 1, e->idx48, &out));
    AT(1) ONE(clmad_gather(ctx, e->w, 1, y, &out));
}

CALL(scatter_add)
{
    AT(0) ONE(clmad_scatter_add(ctx, y, 1, e->idx48, e->w, &out));
    AT(1) ONE(clmad_scatter_add(ctx, e->w, 1, e->idx48, y, &out));
    AT(2) ONE(clmad_scatter_add(ctx, e->w, 1, y, e->w, &out));
}

CALL(one_hot)
{
    ONE(clmad_one_hot(ctx, y, COLS, CLMAD_F32, &out));
}

CALL(cast)
{
    AT(0) ONE(clmad_cast(ctx, y, CLMAD_F64, &out));
    AT(1) ONE(clmad_cast(ctx, y, CLMAD_I32, &out));
    AT(2) ONE(clmad_cast(ctx, y, CLMAD_I64, &out));
}

CALL(cross_entropy_index)
{
    AT(0) ONE(clmad_cross_entropy_index(ctx, y, e->labels, &out));
    AT(1) ONE(clmad_cross_entropy_index(ctx, y, e->labels32, &out));
    AT(2) ONE(clmad_cross_entropy_index(ctx, e->w, y, &out));
}

CALL(accuracy)
{
    double v = -7.0;
    AT(0) ST(clmad_accuracy(ctx, y, e->labels, &v));
    AT(1) ST(clmad_accuracy(ctx, e->w, y, &v));
    keep_double(e, "accuracy", v);
}

/* As clmad_mul with a 0-d w: held as a stage; first one released unread. */
CALL(add_scalar)
{
    AT(0)
    {
        clmad_tensor *z = NULL;
        ST(clmad_add_scalar(ctx, y, 0.5, &z));
        clmad_tensor_release(z);
        ONE(clmad_add_scalar(ctx, y, -2.0, &out));
    }
    AT(1)
    {
        ONE(clmad_add_scalar(ctx, y, 0.5, &out));
        ONE(clmad_add_scalar(ctx, y, -0.0, &out));
    }
}

CALL(mul_scalar)
{
    AT(0)
    {
        clmad_tensor *z = NULL;
        ST(clmad_mul_scalar(ctx, y, 0.5, &z));
        clmad_tensor_release(z);
        ONE(clmad_mul_scalar(ctx, y, -3.0, &out));
    }
    AT(1)
    {
        ONE(clmad_mul_scalar(ctx, y, -3.0, &out));
        ONE(clmad_mul_scalar(ctx, y, 0.0, &out));
    }
}

/* y times the scale (8): clmad_mul_scalar's. */
CALL(grad_scaler_scale)
{
    clmad_grad_scaler_options o;
    clmad_grad_scaler_options_init(&o);
    o.init_scale = 8;
    clmad_grad_scaler *s = NULL;
    ST(clmad_grad_scaler_create(ctx, &o, &s));
    ONE(clmad_grad_scaler_scale(s, y, &out));
    clmad_grad_scaler_release(s);
}

CALL(pow_scalar)
{
    AT(0) ONE(clmad_pow_scalar(ctx, y, 2.0, &out));
    AT(1) ONE(clmad_pow_scalar(ctx, y, 0.5, &out));
}

/* 32 elements: refused, value untouched. */
CALL(tensor_item)
{
    double v = -7.0;
    ST(clmad_tensor_item(y, &v));
    keep_double(e, "item", v);
}

/* Outside any scope: a no-op. */
CALL(scope_keep)
{
    ST(clmad_scope_keep(y));
}

CALL(tensor_axpby)
{
    AT(0) ST(clmad_tensor_axpby(y, 2.0, e->w, 0.5));
    AT(1)
    {
        ST(clmad_tensor_axpby(e->dst, 2.0, y, 0.5));
        defer(e, "dst after axpby", clmad_tensor_retain(e->dst));
    }
    AT(2) ST(clmad_tensor_axpby(y, 1.0, y, 0.0));
}

/* An optimizer over y (not a leaf: taken), and its step (refused: the
 * tape holds y) if one was made. */
static void optimizer_made(env *e, clmad_status st, clmad_optimizer **o)
{
    keep_status(e, "the optimizer's creation", st);
    if (st == CLMAD_OK)
        keep_status(e, "clmad_optimizer_step(o)", clmad_optimizer_step(*o));
    clmad_optimizer_release(*o);
}

CALL(optimizer_create)
{
    clmad_optimizer_options opt;
    clmad_optimizer_options_init(&opt, CLMAD_OPTIM_SGD);
    clmad_optimizer *o = NULL;
    clmad_tensor *both[2] = {e->leaf, y};
    AT(0) optimizer_made(e, clmad_optimizer_create(ctx, &opt, &y, 1, &o), &o);
    AT(1) optimizer_made(e, clmad_optimizer_create(ctx, &opt, both, 2, &o), &o);
}

CALL(optimizer_sgd)
{
    clmad_optimizer *o = NULL;
    optimizer_made(e, clmad_optimizer_sgd(ctx, &y, 1, 0.1, 0.9, &o), &o);
}

CALL(optimizer_adam)
{
    clmad_optimizer *o = NULL;
    optimizer_made(e, clmad_optimizer_adam(ctx, &y, 1, 0.1, &o), &o);
}

CALL(optimizer_adamw)
{
    clmad_optimizer *o = NULL;
    optimizer_made(e, clmad_optimizer_adamw(ctx, &y, 1, 0.1, 0.01, &o), &o);
}

static void keep_file(env *e, const char *what, const char *path)
{
    FILE *f = fopen(path, "rb");
    char buf[8192];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    keep_text(e, what, buf, n);
}

CALL(save)
{
    const char *names[2] = {"w", "y"}, *meta[3] = {"k", "v", NULL};
    clmad_tensor *ts[2] = {e->w, y};
    remove(e->save_path);
    AT(0) ST(clmad_save(e->save_path, names, ts, 2, meta));
    AT(1) ST(clmad_save(e->save_path, names + 1, &y, 1, NULL));
    keep_file(e, "the saved file", e->save_path);
}

/* Into a recorded tensor: refused, nothing written (dst neither). */
CALL(load)
{
    const char *names[2] = {"w", "y"};
    clmad_tensor *ts[2] = {e->dst, y};
    AT(0) ST(clmad_load(ctx, e->load_path, names + 1, &y, 1));
    AT(1)
    {
        ST(clmad_load(ctx, e->load_path, names, ts, 2));
        defer(e, "dst after the load", clmad_tensor_retain(e->dst));
    }
}

CALL(tensor_format)
{
    char buf[4096] = "";
    size_t len = 0;
    AT(0)
    {
        ST(clmad_tensor_format(y, buf, sizeof buf, &len));
        keep_text(e, "the text", buf, strlen(buf));
    }
    AT(1) ST(clmad_tensor_format(y, NULL, 0, &len));
    keep_int(e, "its length", (long long)len);
}

CALL(tensor_print)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    cr_assert(f);
    ST(clmad_tensor_print(y, f));
    cr_assert_eq(fclose(f), 0);
    keep_text(e, "the printed text", text, size);
    free(text);
}

/* The buffer behind y, read by the caller's own OpenCL command (the queue
 * was taken at setup: asking for it now could run the held work). */
CALL(tensor_get_cl)
{
    cl_mem mem = NULL;
    size_t offset = 99;
    float h[N];
    memset(h, 0, sizeof h);
    ST(clmad_tensor_get_cl(y, &mem, &offset));
    keep_int(e, "the offset", (long long)offset);
    keep_int(e, "a buffer", mem != NULL);
    cr_assert_eq(clFinish(e->queue), CL_SUCCESS);
    if (mem)
        cr_assert_eq(clEnqueueReadBuffer(e->queue, mem, CL_TRUE, offset, sizeof h, h, 0, NULL, NULL), CL_SUCCESS);
    put(e->r, F32, "the bytes of y's cl_mem", h, sizeof h);
}

typedef struct entry {
    const char *name;
    void (*call)(env *e, clmad_context *ctx, clmad_tensor *y);
} entry;

#define ENTRY(name) {"clmad_" #name, call_##name}

/* Every public function with a tensor input (tests/held_calls_complete.sh). */
static const entry TABLE[] = {
    ENTRY(tensor_read),
    ENTRY(tensor_write),
    ENTRY(tensor_copy),
    ENTRY(staging_gather),
    ENTRY(staging_scatter),
    ENTRY(tensor_retain),
    ENTRY(tensor_release),
    ENTRY(tensor_ndim),
    ENTRY(tensor_dim),
    ENTRY(tensor_numel),
    ENTRY(tensor_dtype),
    ENTRY(broadcast),
    ENTRY(broadcast_partials),
    ENTRY(broadcast_jvp),
    ENTRY(broadcast_second),
    ENTRY(hvp),
    ENTRY(tensor_set_requires_grad),
    ENTRY(tensor_requires_grad),
    ENTRY(tensor_grad),
    ENTRY(tensor_zero_grad),
    ENTRY(backward),
    ENTRY(add),
    ENTRY(sub),
    ENTRY(mul),
    ENTRY(div),
    ENTRY(pow),
    ENTRY(neg),
    ENTRY(exp),
    ENTRY(log),
    ENTRY(tanh),
    ENTRY(sigmoid),
    ENTRY(relu),
    ENTRY(sqrt),
    ENTRY(where),
    ENTRY(compare),
    ENTRY(sum),
    ENTRY(dot),
    ENTRY(mean),
    ENTRY(matmul),
    ENTRY(slice),
    ENTRY(concat),
    ENTRY(reshape),
    ENTRY(transpose),
    ENTRY(max),
    ENTRY(logsumexp),
    ENTRY(softmax),
    ENTRY(log_softmax),
    ENTRY(mse_loss),
    ENTRY(cross_entropy),
    ENTRY(bmm),
    ENTRY(argmax),
    ENTRY(argmin),
    ENTRY(index_select),
    ENTRY(embedding),
    ENTRY(gather),
    ENTRY(scatter_add),
    ENTRY(one_hot),
    ENTRY(cast),
    ENTRY(cross_entropy_index),
    ENTRY(accuracy),
    ENTRY(add_scalar),
    ENTRY(mul_scalar),
    ENTRY(grad_scaler_scale),
    ENTRY(pow_scalar),
    ENTRY(tensor_item),
    ENTRY(scope_keep),
    ENTRY(tensor_axpby),
    ENTRY(optimizer_create),
    ENTRY(optimizer_sgd),
    ENTRY(optimizer_adam),
    ENTRY(optimizer_adamw),
    ENTRY(save),
    ENTRY(load),
    ENTRY(tensor_format),
    ENTRY(tensor_print),
    ENTRY(tensor_get_cl),
};

/* ---- the harness -------------------------------------------------------------- */

/* One program: steps 1 to 4 for call `part` of entry t, into e->r. */
static void run(env *e, const entry *t)
{
    clmad_context *ctx = e->ctx;
    make_auxiliaries(e);
    make_held(e);
    e->n_pending = 0;
    t->call(e, ctx, e->y);
    for (int i = 0; i < e->n_pending; i++) {
        keep_tensor(e, e->pending_what[i], e->pending[i]);
        clmad_tensor_release(e->pending[i]);
    }
    keep_tensor(e, "y after the call", e->y);
    if (e->y0 && e->y0 != e->y)
        keep_tensor(e, "y0 after the call", e->y0);
    clmad_tensor *loss = NULL;
    keep_status(e, "the harness's clmad_sum(y)", clmad_sum(ctx, e->y, 0, NULL, 0, &loss));
    if (loss) {
        keep_tensor(e, "the harness's loss", loss);
        keep_status(e, "the harness's clmad_backward(loss)", clmad_backward(ctx, loss, NULL));
    }
    keep_grad(e, "a's gradient", e->a);
    keep_grad(e, "b's gradient", e->b);
    clmad_tape_clear(ctx);
    clmad_tensor_release(loss);
    if (e->y0 != e->y)
        clmad_tensor_release(e->y0);
    clmad_tensor *all[] = {e->y, e->a, e->b};
    for (int i = 0; i < 3; i++)
        clmad_tensor_release(all[i]);
    e->y = e->y0 = e->a = e->b = NULL;
    release_auxiliaries(e);
}

static const char *G_SOURCE = "T g(T x, T v) { return x * v + exp(-x); }";

static void setup(env *e, int fused, const char *dir)
{
    clmad_options opt;
    clmad_options_init(&opt);
    opt.disable_fusion = !fused;
    memset(e, 0, sizeof *e);
    e->ctx = test_context_with(&opt);
    e->fused = fused;
    e->tag = fused ? "on" : "off";
    e->dir = dir;
    CHECK_OK(e->ctx, clmad_context_get_cl(e->ctx, NULL, NULL, &e->queue));
    CHECK_OK(e->ctx, clmad_kernel_create(e->ctx, "T f(T a, T b) { return ad_mul(ad_sin(a), b); }", "f", 2, 1, &e->f));
    CHECK_OK(e->ctx, clmad_kernel_create(e->ctx, G_SOURCE, "g", 2, 1, &e->g));
    snprintf(e->load_path, sizeof e->load_path, "%s/load-%s.safetensors", dir, e->tag);
    snprintf(e->save_path, sizeof e->save_path, "%s/save-%s.safetensors", dir, e->tag);
    /* The file clmad_load reads: "w" and "y", both of w's values. */
    float w[N];
    w_values(w);
    clmad_tensor *t = tensor(e->ctx, CLMAD_F32, 2, SHAPE, w);
    const char *names[2] = {"w", "y"};
    clmad_tensor *ts[2] = {t, t};
    CHECK_OK(e->ctx, clmad_save(e->load_path, names, ts, 2, NULL));
    clmad_tensor_release(t);
}

static void teardown(env *e)
{
    clmad_kernel_release(e->f);
    clmad_kernel_release(e->g);
    clmad_context_release(e->ctx);
}

/* Every entry, every call of it, fused against eager. */
static void check_all(int stage)
{
    const char *fuse = getenv("CLMAD_FUSE");
    if (fuse && strcmp(fuse, "0") == 0)
        cr_skip_test("CLMAD_FUSE=0: no context holds anything");
    const char *dir = test_fresh_dir("held_calls");
    env on, off;
    setup(&on, 1, dir);
    setup(&off, 0, dir);
    int failures = 0, serial = 0;
    for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++) {
        const entry *t = &TABLE[i];
        results fused = {0}, eager = {0};
        on.r = &fused, off.r = &eager;
        on.n_parts = off.n_parts = 1;
        for (int part = 0; part < on.n_parts; part++) {
            test_set_case("%s (%s, call %d)", t->name, stage ? "y = y0 * w" : "y = y0", part);
            on.part = off.part = part, on.stage = off.stage = stage;
            on.serial = off.serial = serial++;
            run(&on, t);
            run(&off, t);
            cr_assert_eq(on.n_parts, off.n_parts);
        }
        test_set_case("%s (%s)", t->name, stage ? "y = y0 * w" : "y = y0");
        const char *d = difference(&fused, &eager);
        cr_expect(d[0] == '\0', "%sfused and eager differ: %s", test_case(), d);
        failures += d[0] != '\0';
        results_free(&fused);
        results_free(&eager);
    }
    test_set_case(NULL);
    teardown(&on);
    teardown(&off);
    cr_assert_eq(failures, 0, "%d of %zu entries differ (above)", failures, sizeof TABLE / sizeof TABLE[0]);
}

Test(held_calls, broadcast_output, .timeout = 300)
{
    check_all(0);
}

Test(held_calls, stage_over_it, .timeout = 300)
{
    check_all(1);
}
