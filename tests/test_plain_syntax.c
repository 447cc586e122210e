/* SPDX-License-Identifier: Apache-2.0 */
/* Plain syntax against the ad_ vocabulary: every kernel of the examples,
 * benchmarks and tests, written both ways (tests/plain_pairs.h), gives the
 * same bits. For each pair, f32 and f64, partials policy STORE and
 * RECOMPUTE, on the same random inputs in the kernel's domain (a few
 * hundred elements, some inputs broadcast): clmad_broadcast's values,
 * clmad_broadcast_partials' values and partials, and through the tape the
 * values, the loss sum_o dot(y_o, w_o) and the gradient of every input.
 * Also: clmad_lower_source returns an ad_ source byte for byte and lowers
 * the plain one keeping its line count. One Criterion test loops over the
 * pairs, all in f32 and then all in f64, in one context (a test is a
 * process, and a process per pair cost seconds each under valgrind); every
 * message names the pair (test_case). */
#include "plain_pairs.h"

#include <stdio.h>

#define ROWS 12
#define COLS 25
#define MAX_BLOBS 64

/* ---- inputs ------------------------------------------------------------------ */

/* The inputs of one pair and the loss weights, in double. */
typedef struct draw {
    int ndim[PAIR_MAX_IN], out_ndim;
    size_t shape[PAIR_MAX_IN][CLMAD_MAX_DIMS], out_shape[CLMAD_MAX_DIMS];
    double *x[PAIR_MAX_IN], *w[3];
} draw;

static void shape_of(char kind, int *ndim, size_t *shape)
{
    switch (kind) {
    case 'f': *ndim = 2, shape[0] = ROWS, shape[1] = COLS; break;
    case 'r': *ndim = 1, shape[0] = COLS; break;
    case 'c': *ndim = 2, shape[0] = ROWS, shape[1] = 1; break;
    default: *ndim = 0; break; /* 's' */
    }
}

/* The same draw for the same pair every time (the seed is the pair's index). */
static draw make_draw(const plain_pair *p, int index)
{
    draw d = {0};
    uint64_t rng = 0x5eedull + (uint64_t)index;
    cr_assert_eq(strlen(p->shapes), (size_t)p->n_in, "%s: one shape per input", p->name);
    for (int j = 0; j < p->n_in; j++) {
        shape_of(p->shapes[j], &d.ndim[j], d.shape[j]);
        size_t n = bs_numel(d.ndim[j], d.shape[j]);
        d.x[j] = malloc(n * sizeof(double));
        cr_assert_not_null(d.x[j], "%s: out of memory", p->name);
        for (size_t e = 0; e < n; e++)
            d.x[j][e] = p->value ? p->value(j, e, &rng)
                        : p->dom[j].ints ? bs_int(&rng, (int)p->dom[j].lo, (int)p->dom[j].hi)
                                         : bs_uniform(&rng, p->dom[j].lo, p->dom[j].hi);
    }
    cr_assert(bs_broadcast_shape(p->n_in, d.ndim, (const size_t(*)[CLMAD_MAX_DIMS])d.shape, &d.out_ndim,
                                 d.out_shape),
              "%s: the inputs do not broadcast", p->name);
    size_t n = bs_numel(d.out_ndim, d.out_shape);
    for (int o = 0; o < p->n_out; o++) {
        d.w[o] = malloc(n * sizeof(double));
        cr_assert_not_null(d.w[o], "%s: out of memory", p->name);
        for (size_t e = 0; e < n; e++)
            d.w[o][e] = bs_uniform(&rng, -1, 1);
    }
    return d;
}

static void free_draw(draw *d)
{
    for (int j = 0; j < PAIR_MAX_IN; j++)
        free(d->x[j]);
    for (int o = 0; o < 3; o++)
        free(d->w[o]);
}

/* A tensor of dtype from n doubles (copied: bs_tensor rounds in place). */
static clmad_tensor *tensor_of(clmad_context *ctx, clmad_dtype dtype, int ndim, const size_t *shape,
                               const double *data)
{
    size_t n = bs_numel(ndim, shape);
    double *copy = malloc(n * sizeof *copy);
    cr_assert_not_null(copy, "%sout of memory", test_case());
    memcpy(copy, data, n * sizeof *copy);
    clmad_tensor *t = bs_tensor(ctx, dtype, ndim, shape, copy);
    free(copy);
    return t;
}

/* ---- results ----------------------------------------------------------------- */

/* What one form computed in one configuration: labelled bytes. */
typedef struct results {
    int n;
    char what[MAX_BLOBS][40];
    unsigned char *bytes[MAX_BLOBS];
    size_t size[MAX_BLOBS];
    clmad_dtype dtype;
} results;

/* Keeps t's bytes under the label and releases t. */
static void keep(clmad_context *ctx, results *r, clmad_tensor *t, const char *fmt, int a, int b)
{
    cr_assert_not_null(t, "%sno tensor for %s", test_case(), fmt);
    cr_assert_lt(r->n, MAX_BLOBS, "%smore than %d results", test_case(), MAX_BLOBS);
    size_t size = clmad_tensor_numel(t) * clmad_dtype_size(clmad_tensor_dtype(t));
    unsigned char *bytes = malloc(size ? size : 1);
    cr_assert_not_null(bytes, "%sout of memory", test_case());
    CHECK_OK(ctx, clmad_tensor_read(t, bytes, size));
    snprintf(r->what[r->n], sizeof r->what[r->n], fmt, a, b);
    r->bytes[r->n] = bytes;
    r->size[r->n++] = size;
    clmad_tensor_release(t);
}

static void free_results(results *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->bytes[i]);
    r->n = 0;
}

static double element(const results *r, int i, size_t e)
{
    if (r->dtype == CLMAD_F64) {
        double v;
        memcpy(&v, r->bytes[i] + e * sizeof v, sizeof v);
        return v;
    }
    float v;
    memcpy(&v, r->bytes[i] + e * sizeof v, sizeof v);
    return v;
}

/* ---- one pair, one form, one configuration ------------------------------------ */

static void run_form(clmad_context *ctx, const plain_pair *p, clmad_kernel *k, const draw *d,
                     clmad_dtype dtype, clmad_partials_policy policy, results *r)
{
    int ni = p->n_in, no = p->n_out;
    r->n = 0;
    r->dtype = dtype;
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, policy));
    clmad_tensor *in[PAIR_MAX_IN], *out[3] = {NULL}, *parts[3 * PAIR_MAX_IN] = {NULL};
    for (int j = 0; j < ni; j++)
        in[j] = tensor_of(ctx, dtype, d->ndim[j], d->shape[j], d->x[j]);

    /* The primal kernel, nothing recorded. */
    CHECK_OK(ctx, clmad_set_grad_enabled(ctx, 0));
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, out));
    CHECK_OK(ctx, clmad_set_grad_enabled(ctx, 1));
    for (int o = 0; o < no; o++)
        keep(ctx, r, out[o], "broadcast y%d", o, 0);

    /* Forward mode: every partial. */
    CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, in, NULL, out, parts));
    for (int o = 0; o < no; o++) {
        keep(ctx, r, out[o], "partials y%d", o, 0);
        for (int j = 0; j < ni; j++)
            keep(ctx, r, parts[o * ni + j], "d y%d / d x%d", o, j);
    }

    /* The tape: loss = sum_o dot(y_o, w_o), gradients of every input. */
    for (int j = 0; j < ni; j++)
        CHECK_OK(ctx, clmad_tensor_set_requires_grad(in[j], 1));
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, out));
    clmad_tensor *loss = NULL;
    for (int o = 0; o < no; o++) {
        clmad_tensor *w = tensor_of(ctx, dtype, d->out_ndim, d->out_shape, d->w[o]), *term = NULL, *sum = NULL;
        CHECK_OK(ctx, clmad_dot(ctx, out[o], w, &term));
        if (loss) {
            CHECK_OK(ctx, clmad_add(ctx, loss, term, &sum));
            clmad_tensor_release(loss);
            clmad_tensor_release(term);
            loss = sum;
        } else {
            loss = term;
        }
        clmad_tensor_release(w);
    }
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    for (int o = 0; o < no; o++)
        keep(ctx, r, out[o], "tape y%d", o, 0);
    keep(ctx, r, loss, "loss", 0, 0);
    for (int j = 0; j < ni; j++) {
        clmad_tensor *g = NULL;
        CHECK_OK(ctx, clmad_tensor_grad(in[j], &g));
        keep(ctx, r, g, "grad x%d", j, 0);
        clmad_tensor_release(in[j]);
    }
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* The lowered plain source, for messages (static; "(lowering failed)" if so). */
static const char *lowered_plain(const plain_pair *p)
{
    static char buf[16384];
    char *low = NULL;
    if (clmad_lower_source(p->plain, &low) != CLMAD_OK)
        return "(lowering failed)";
    snprintf(buf, sizeof buf, "%s", low);
    clmad_string_free(low);
    return buf;
}

static void check_lowering(const plain_pair *p)
{
    char *low = NULL;
    clmad_status st = clmad_lower_source(p->ad, &low);
    cr_assert_eq(st, CLMAD_OK, "%s: lowering the ad_ form: %s", p->name, clmad_last_error(NULL));
    cr_assert_str_eq(low, p->ad, "%s: the ad_ form is not returned byte for byte", p->name);
    clmad_string_free(low);
    low = NULL;
    st = clmad_lower_source(p->plain, &low);
    cr_assert_eq(st, CLMAD_OK, "%s: lowering the plain form: %s", p->name, clmad_last_error(NULL));
    cr_assert_eq(count_lines(low), count_lines(p->plain), "%s: the lowering changed the line count:\n%s", p->name,
                 low);
    clmad_string_free(low);
}

/* Compares the plain form's results with the ad_ form's, bitwise; the ad_
 * form's must be finite (a sanity check of the pair's domain). */
static void compare(const plain_pair *p, const results *plain, const results *ad, const char *config)
{
    cr_assert_eq(plain->n, ad->n, "%s, %s: %d results in the plain form, %d in the ad_ form", p->name, config,
                 plain->n, ad->n);
    for (int i = 0; i < ad->n; i++) {
        cr_assert_eq(plain->size[i], ad->size[i], "%s, %s: %s has %zu bytes in the plain form, %zu in the ad_ form",
                     p->name, config, ad->what[i], plain->size[i], ad->size[i]);
        size_t es = clmad_dtype_size(ad->dtype), n = ad->size[i] / es;
        for (size_t e = 0; e < n; e++)
            cr_assert(isfinite(element(ad, i, e)), "%s, %s: %s[%zu] = %g in the ad_ form: a domain too wide?",
                      p->name, config, ad->what[i], e, element(ad, i, e));
        if (memcmp(plain->bytes[i], ad->bytes[i], ad->size[i]) == 0)
            continue;
        size_t e = 0;
        while (memcmp(plain->bytes[i] + e * es, ad->bytes[i] + e * es, es) == 0)
            e++;
        cr_assert_fail("%s, %s: %s differs at element %zu: plain %.17g, ad_ %.17g\n"
                       "plain source:\n%s\nlowered:\n%s\nad_ source:\n%s",
                       p->name, config, ad->what[i], e, element(plain, i, e), element(ad, i, e), p->plain,
                       lowered_plain(p), p->ad);
    }
}

/* One pair in one dtype, in ctx: both forms, STORE and RECOMPUTE. */
static void run_pair(clmad_context *ctx, int index, clmad_dtype dtype)
{
    const plain_pair *p = &PAIRS[index];
    test_set_case("%s", p->name);
    if (dtype == CLMAD_F32) /* once per pair: it needs no device */
        check_lowering(p);
    /* The policy of a fresh context: clmad_kernel_create compiles ahead the
     * dual variant of the policy in force, and the last pair left RECOMPUTE. */
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, CLMAD_PARTIALS_AUTO));
    clmad_kernel *k[2] = {NULL, NULL}; /* plain, ad_ */
    const char *src[2] = {p->plain, p->ad};
    for (int f = 0; f < 2; f++) {
        clmad_status st = clmad_kernel_create(ctx, src[f], p->fn, p->n_in, p->n_out, &k[f]);
        cr_assert_eq(st, CLMAD_OK, "%s: the %s form does not build: %s\nlowered:\n%s", p->name, f ? "ad_" : "plain",
                     clmad_last_error(ctx), f ? p->ad : lowered_plain(p));
    }
    draw d = make_draw(p, index);
    for (int pol = CLMAD_PARTIALS_STORE; pol <= CLMAD_PARTIALS_RECOMPUTE; pol++) {
        char config[32];
        snprintf(config, sizeof config, "%s %s", dtype == CLMAD_F64 ? "f64" : "f32",
                 pol == CLMAD_PARTIALS_STORE ? "STORE" : "RECOMPUTE");
        results r[2];
        for (int f = 0; f < 2; f++)
            run_form(ctx, p, k[f], &d, dtype, (clmad_partials_policy)pol, &r[f]);
        compare(p, &r[0], &r[1], config);
        free_results(&r[0]);
        free_results(&r[1]);
    }
    free_draw(&d);
    clmad_kernel_release(k[0]);
    clmad_kernel_release(k[1]);
    test_set_case(NULL);
}

/* Every pair, all in f32 first: a device without fp64 skips the rest at the
 * first f64 call, having checked every pair in f32. One context: its
 * caches serve what pairs share. */
Test(plain_syntax, pairs)
{
    /* The table itself: every name is unique (messages name pairs). */
    for (int i = 0; i < N_PAIRS; i++)
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(PAIRS[i].name, PAIRS[j].name, "pairs %d and %d are both named %s", j, i, PAIRS[i].name);
    if (!VOCAB_AD[0])
        vocab_sources();
    clmad_context *ctx = test_context();
    for (int dt = 0; dt < 2; dt++)
        for (int i = 0; i < N_PAIRS; i++)
            run_pair(ctx, i, dt ? CLMAD_F64 : CLMAD_F32);
    clmad_context_release(ctx);
}
