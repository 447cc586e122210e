/* SPDX-License-Identifier: Apache-2.0 */
/* The HM-LSTM cell update (DESIGN.md section 4) through clmad_broadcast_partials:
 * three branches chosen per element by the controls z and zb, which broadcast
 * as rows (1, cols), columns (rows, 1) or full (rows, cols). Values and the
 * partials of c, f, i, g are checked against a hand-derived host reference in
 * double, with the exact zeros and ones of the branch structure; the primal
 * kernel and chunked dual kernels must agree bitwise with the unchunked one.
 * The cases run in three Criterion tests (end of file): a test is a
 * process, and a process per case cost seconds each under valgrind. */
#include "bcast_support.h"

static const char *CELL_SRC =
    "T cell_update(T z, T zb, T c, T f, T i, T g)\n"
    "{\n"
    "    if (ad_val(z) == 1)  return ad_mul(ad_sigmoid(i), ad_tanh(g));                 /* FLUSH  */\n"
    "    if (ad_val(zb) == 0) return c;                                                    /* COPY   */\n"
    "    return ad_add(ad_mul(ad_sigmoid(f), c), ad_mul(ad_sigmoid(i), ad_tanh(g)));       /* UPDATE */\n"
    "}\n";

enum { IN_Z, IN_ZB, IN_C, IN_F, IN_I, IN_G, N_IN };
enum { FLUSH, COPY, UPDATE };

#define ROWS 37
#define COLS 53

/* Shape kinds of a control input. */
typedef enum { CTRL_ROW, CTRL_COL, CTRL_FULL } ctrl_kind;

static void ctrl_shape(ctrl_kind kind, size_t *shape)
{
    shape[0] = kind == CTRL_ROW ? 1 : ROWS;
    shape[1] = kind == CTRL_COL ? 1 : COLS;
}

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The host reference of one element: value and d/d{c,f,i,g}; returns the branch. */
static int cell_ref(double z, double zb, double c, double f, double i, double g, double *y, double d[4])
{
    double si = sig(i), th = tanh(g);
    double dsi = si * (1 - si), dth = 1 - th * th;
    if (z == 1) {
        *y = si * th;
        d[0] = 0, d[1] = 0, d[2] = dsi * th, d[3] = si * dth;
        return FLUSH;
    }
    if (zb == 0) {
        *y = c;
        d[0] = 1, d[1] = 0, d[2] = 0, d[3] = 0;
        return COPY;
    }
    double sf = sig(f);
    *y = sf * c + si * th;
    d[0] = sf, d[1] = sf * (1 - sf) * c, d[2] = dsi * th, d[3] = si * dth;
    return UPDATE;
}

typedef struct cell_case {
    clmad_context *ctx;
    clmad_kernel *k;
    clmad_dtype dtype;
    size_t shapes[N_IN][CLMAD_MAX_DIMS];
    double *host[N_IN];
    clmad_tensor *in[N_IN];
} cell_case;

static void case_init(cell_case *cc, clmad_context *ctx, clmad_kernel *k, clmad_dtype dtype,
                      ctrl_kind zk, ctrl_kind zbk, uint64_t seed)
{
    memset(cc, 0, sizeof *cc);
    cc->ctx = ctx;
    cc->k = k;
    cc->dtype = dtype;
    ctrl_shape(zk, cc->shapes[IN_Z]);
    ctrl_shape(zbk, cc->shapes[IN_ZB]);
    for (int j = IN_C; j < N_IN; j++)
        ctrl_shape(CTRL_FULL, cc->shapes[j]);
    for (int j = 0; j < N_IN; j++) {
        size_t n = bs_numel(2, cc->shapes[j]);
        cc->host[j] = malloc(n * sizeof(double));
        cr_assert_not_null(cc->host[j]);
        for (size_t e = 0; e < n; e++)
            cc->host[j][e] = j < IN_C ? (double)(bs_next(&seed) & 1) : bs_uniform(&seed, -4, 4);
        cc->in[j] = bs_tensor(ctx, dtype, 2, cc->shapes[j], cc->host[j]);
    }
}

static void case_free(cell_case *cc)
{
    for (int j = 0; j < N_IN; j++) {
        clmad_tensor_release(cc->in[j]);
        free(cc->host[j]);
    }
}

static double input_at(const cell_case *cc, int j, size_t e)
{
    static const size_t out_shape[2] = {ROWS, COLS};
    return cc->host[j][bs_bindex(e, 2, out_shape, 2, cc->shapes[j])];
}

/* Runs clmad_broadcast_partials with `active` and checks values and partials
 * against the reference. Returns the tensors through y and parts (caller
 * releases). */
static void run_and_check(cell_case *cc, const int *active, double tol, clmad_tensor **y,
                          clmad_tensor *parts[N_IN])
{
    static const size_t out_shape[2] = {ROWS, COLS};
    clmad_context *ctx = cc->ctx;
    for (int j = 0; j < N_IN; j++)
        parts[j] = (clmad_tensor *)&parts; /* poison: must be overwritten */
    *y = NULL;
    CHECK_OK(ctx, clmad_broadcast_partials(ctx, cc->k, cc->in, active, y, parts));
    double *val = bs_read(ctx, *y, cc->dtype, 2, out_shape);
    double *d[N_IN] = {0};
    for (int j = 0; j < N_IN; j++) {
        int act = !active || active[j];
        if (!act) {
            cr_assert_null(parts[j], "%spartial of inactive input %d must be NULL", test_case(), j);
            continue;
        }
        d[j] = bs_read(ctx, parts[j], cc->dtype, 2, out_shape);
    }

    int count[3] = {0, 0, 0};
    for (size_t e = 0; e < (size_t)ROWS * COLS; e++) {
        double x[N_IN];
        for (int j = 0; j < N_IN; j++)
            x[j] = input_at(cc, j, e);
        double ry, rd[4];
        int br = cell_ref(x[IN_Z], x[IN_ZB], x[IN_C], x[IN_F], x[IN_I], x[IN_G], &ry, rd);
        count[br]++;
        const char *bname = br == FLUSH ? "FLUSH" : br == COPY ? "COPY" : "UPDATE";
        /* The controls are only branched on: their partials are exactly 0. */
        for (int j = IN_Z; j <= IN_ZB; j++)
            if (d[j])
                cr_assert_eq(d[j][e], 0.0, "%selement %zu (%s): d/d%s = %g, expected exactly 0", test_case(),
                             e, bname, j == IN_Z ? "z" : "zb", d[j][e]);
        if (br == COPY) {
            cr_assert_eq(val[e], x[IN_C], "%selement %zu (COPY): value %.17g, expected c = %.17g",
                         test_case(), e, val[e], x[IN_C]);
        } else {
            cr_assert(bs_close(val[e], ry, tol), "%selement %zu (%s): value %.17g, expected %.17g",
                      test_case(), e, bname, val[e], ry);
        }
        for (int j = IN_C; j < N_IN; j++) {
            if (!d[j])
                continue;
            double want = rd[j - IN_C];
            static const char *names[N_IN] = {"z", "zb", "c", "f", "i", "g"};
            if (want == 0.0 || want == 1.0)  /* structural zeros and COPY's 1 are exact */
                cr_assert_eq(d[j][e], want, "%selement %zu (%s): d/d%s = %.17g, expected exactly %g",
                             test_case(), e, bname, names[j], d[j][e], want);
            else
                cr_assert(bs_close(d[j][e], want, tol), "%selement %zu (%s): d/d%s = %.17g, expected %.17g",
                          test_case(), e, bname, names[j], d[j][e], want);
        }
    }
    /* The random controls must exercise every branch. */
    cr_assert_gt(count[FLUSH], 0, "%sno element takes FLUSH", test_case());
    cr_assert_gt(count[COPY], 0, "%sno element takes COPY", test_case());
    cr_assert_gt(count[UPDATE], 0, "%sno element takes UPDATE", test_case());
    free(val);
    for (int j = 0; j < N_IN; j++)
        free(d[j]);
}

/* Values and partials against the reference; the primal output is bitwise
 * the dual one; chunk caps 1, 2, 3 change nothing, bitwise. */
static void cell_full_check(clmad_dtype dtype, ctrl_kind zk, ctrl_kind zbk, uint64_t seed)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, CELL_SRC, "cell_update", N_IN, 1, &k));
    cell_case cc;
    case_init(&cc, ctx, k, dtype, zk, zbk, seed);
    double tol = dtype == CLMAD_F64 ? 1e-12 : 1e-6;
    static const int active[N_IN] = {0, 0, 1, 1, 1, 1};

    clmad_tensor *y, *parts[N_IN];
    run_and_check(&cc, active, tol, &y, parts);

    /* clmad_broadcast gives the same values, bitwise. */
    clmad_tensor *yp = NULL;
    CHECK_OK(ctx, clmad_broadcast(ctx, k, cc.in, &yp));
    cr_assert(bs_bitwise_equal(ctx, yp, y), "%sclmad_broadcast and clmad_broadcast_partials values differ",
              test_case());
    clmad_tensor_release(yp);

    /* Chunking: the same partials whatever the cap. */
    for (int cap = 1; cap <= 3; cap++) {
        CHECK_OK(ctx, clmad_set_chunk_cap(ctx, cap));
        cr_assert_eq(clmad_chunk_cap(ctx), cap);
        clmad_tensor *yc = NULL, *pc[N_IN];
        CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, cc.in, active, &yc, pc));
        cr_assert(bs_bitwise_equal(ctx, yc, y), "%scap %d: values differ from the unchunked run", test_case(), cap);
        for (int j = 0; j < N_IN; j++) {
            if (!active[j]) {
                cr_assert_null(pc[j], "%scap %d: partial of inactive input %d must be NULL", test_case(), cap, j);
                continue;
            }
            cr_assert(bs_bitwise_equal(ctx, pc[j], parts[j]),
                      "cap %d: partial of input %d differs from the unchunked run", cap, j);
        }
        clmad_tensor_release(yc);
        bs_release_all(pc, N_IN);
    }
    CHECK_OK(ctx, clmad_set_chunk_cap(ctx, 0));

    clmad_tensor_release(y);
    bs_release_all(parts, N_IN);
    case_free(&cc);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* active = NULL (every input, K = 6): the controls get partials too, and they
 * are exactly 0 because branching on ad_val has no delta term; the partials of
 * c, f, i, g equal those of the run with the controls inactive, bitwise. */
static void all_active_controls_have_zero_partials(void)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, CELL_SRC, "cell_update", N_IN, 1, &k));
    for (int dt = 0; dt < 2; dt++) {
        clmad_dtype dtype = dt ? CLMAD_F64 : CLMAD_F32;
        cell_case cc;
        case_init(&cc, ctx, k, dtype, CTRL_ROW, CTRL_FULL, 31 + (uint64_t)dt);
        clmad_tensor *y, *parts[N_IN], *y4, *parts4[N_IN];
        run_and_check(&cc, NULL, dtype == CLMAD_F64 ? 1e-12 : 1e-6, &y, parts);
        static const int active[N_IN] = {0, 0, 1, 1, 1, 1};
        CHECK_OK(ctx, clmad_broadcast_partials(ctx, k, cc.in, active, &y4, parts4));
        cr_assert(bs_bitwise_equal(ctx, y, y4));
        for (int j = IN_C; j < N_IN; j++)
            cr_assert(bs_bitwise_equal(ctx, parts[j], parts4[j]), "%s%s: partial %d differs between K = 6 and K = 4",
                      test_case(), dt ? "f64" : "f32", j);
        clmad_tensor_release(y);
        clmad_tensor_release(y4);
        bs_release_all(parts, N_IN);
        bs_release_all(parts4, N_IN);
        case_free(&cc);
    }
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* Only some of c, f, i, g active, in f64: each active partial still matches
 * the reference and the others are NULL. */
static void partial_activity_f64(void)
{
    clmad_context *ctx = test_context();
    clmad_kernel *k = NULL;
    CHECK_OK(ctx, clmad_kernel_create(ctx, CELL_SRC, "cell_update", N_IN, 1, &k));
    static const int masks[3][N_IN] = {{0, 0, 1, 0, 0, 0}, {0, 0, 0, 1, 0, 1}, {0, 1, 0, 0, 1, 0}};
    for (int m = 0; m < 3; m++) {
        cell_case cc;
        case_init(&cc, ctx, k, CLMAD_F64, CTRL_COL, CTRL_ROW, 41 + (uint64_t)m);
        clmad_tensor *y, *parts[N_IN];
        run_and_check(&cc, masks[m], 1e-12, &y, parts);
        clmad_tensor_release(y);
        bs_release_all(parts, N_IN);
        case_free(&cc);
    }
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}

/* ---- the tests ------------------------------------------------------------ */

Test(broadcast_cell, f32_cases)
{
    RUN_CASE_AS("f32_row_controls", cell_full_check(CLMAD_F32, CTRL_ROW, CTRL_ROW, 11));
    RUN_CASE_AS("f32_column_controls", cell_full_check(CLMAD_F32, CTRL_COL, CTRL_COL, 12));
    RUN_CASE_AS("f32_full_controls", cell_full_check(CLMAD_F32, CTRL_FULL, CTRL_FULL, 13));
    RUN_CASE_AS("f32_row_and_column_controls", cell_full_check(CLMAD_F32, CTRL_ROW, CTRL_COL, 14));
}

/* A test of its own, with no case name: test_broadcast_cell_no_fp64
 * (tests/CMakeLists.txt) looks for its skip, "[SKIP]
 * broadcast_cell::f64_full_controls: the test device has no fp64". */
Test(broadcast_cell, f64_full_controls) { cell_full_check(CLMAD_F64, CTRL_FULL, CTRL_FULL, 23); }

/* all_active_controls_have_zero_partials first: a device without fp64
 * runs its f32 half, then skips the rest at its f64 half. */
Test(broadcast_cell, f64_cases)
{
    RUN_CASE_AS("all_active_controls_have_zero_partials", all_active_controls_have_zero_partials());
    RUN_CASE_AS("f64_row_controls", cell_full_check(CLMAD_F64, CTRL_ROW, CTRL_ROW, 21));
    RUN_CASE_AS("f64_column_controls", cell_full_check(CLMAD_F64, CTRL_COL, CTRL_COL, 22));
    RUN_CASE_AS("partial_activity_f64", partial_activity_f64());
}
