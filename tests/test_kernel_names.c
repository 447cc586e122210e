/* SPDX-License-Identifier: Apache-2.0 */
/* The names of the generated code never meet the user's: the wrapper
 * kernel precedes the user's source (no user macro reaches it: #define
 * get_global_id, ulong, __kernel) and is named clmad__bcast_*; its
 * parameters and locals are clmad__*, so that user macros (#define e
 * 2.718f) and functions (a kernel function named e, n or r, helpers named
 * like the old kernels) compile and run, bit for bit as without them.
 * The cases run in one Criterion test (end of file): a test is a process,
 * and a process per case cost seconds each under valgrind. */
#include "bcast_support.h"
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* ---- every identifier after the user's source ------------------------------ */

/* The words the program may use after the user's source besides clmad__*
 * names and the user's function; each must be set aside from the user's
 * macros (#undef after a push_macro) before its first use. */
static const char *const AFTER_WORDS[] = {"T", "void", "return", "__private"};

static int after_word(const char *w, size_t n, const char *fn)
{
    if ((n >= 7 && strncmp(w, "clmad__", 7) == 0) || (strlen(fn) == n && strncmp(w, fn, n) == 0))
        return 1;
    for (size_t i = 0; i < sizeof AFTER_WORDS / sizeof *AFTER_WORDS; i++)
        if (strlen(AFTER_WORDS[i]) == n && strncmp(w, AFTER_WORDS[i], n) == 0)
            return 2;
    return 0;
}

/* Fails the test unless the wrapper kernel precedes the user's source and
 * every identifier after it (outside preprocessor lines) is clmad__*, the
 * user's function or a word of AFTER_WORDS #undef'd before its use. STORED
 * programs hold no user source at all. */
static void check_wrapper_names(const clmad_variant *v, const char *what)
{
    const char *user = "T fn(T a) { return a; }\n";
    clmad_strbuf sb = {0};
    clmad__generate_program(&sb, v, user, "fn", 1);
    cr_assert(!sb.failed && sb.data, "%s: generation failed", what);
    const char *p = strstr(sb.data, user), *kernel = strstr(sb.data, "__kernel void clmad__bcast_");
    cr_assert_not_null(kernel, "%s: no clmad__bcast_ kernel:\n%s", what, sb.data);
    if (v->mode == CLMAD_MODE_STORED) {
        cr_assert_null(p, "%s: the STORED program holds the user's source", what);
        clmad__sb_free(&sb);
        return;
    }
    cr_assert(p && kernel < p, "%s: the kernel does not precede the user's source", what);
    p += strlen(user);
    const char *after = p;
    int line_start = 1;
    while (*p) {
        if (line_start && *p == '#') { /* a preprocessor line: #line, #pragma */
            while (*p && *p != '\n')
                p++;
            continue;
        }
        line_start = *p == '\n' ? 1 : line_start && isspace((unsigned char)*p);
        if (isdigit((unsigned char)*p)) { /* a number, suffix included (16UL) */
            while (isalnum((unsigned char)*p) || *p == '.')
                p++;
            continue;
        }
        if (isalpha((unsigned char)*p) || *p == '_') {
            const char *w = p;
            while (isalnum((unsigned char)*p) || *p == '_')
                p++;
            const int kind = after_word(w, (size_t)(p - w), "fn");
            cr_assert(kind, "%s: the program uses the name \"%.*s\" after the user's source:\n%s", what,
                      (int)(p - w), w, after);
            if (kind == 2) {
                char undef[32];
                snprintf(undef, sizeof undef, "#undef %.*s\n", (int)(p - w), w);
                const char *u = strstr(after, undef);
                cr_assert(u && u < w, "%s: \"%.*s\" is used after the user's source without %s:\n%s", what,
                          (int)(p - w), w, undef, after);
            }
            continue;
        }
        p++;
    }
    clmad__sb_free(&sb);
}

static void every_generated_identifier_is_reserved(void)
{
    const clmad_mode modes[] = {CLMAD_MODE_PRIMAL, CLMAD_MODE_PARTIALS, CLMAD_MODE_JVP, CLMAD_MODE_VJP,
                                CLMAD_MODE_STORED};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
        for (int items = 1; items <= 32; items += 31)
            for (int rows = 0; rows <= 2; rows++)
                for (int n_out = 1; n_out <= 2; n_out++) {
                    if (rows && items == 1)
                        continue;
                    clmad_variant v;
                    memset(&v, 0, sizeof v);
                    v.mode = modes[m];
                    v.dtype = CLMAD_F32;
                    v.n_inputs = 3;
                    v.n_outputs = n_out;
                    v.K = v.mode == CLMAD_MODE_PRIMAL ? 0 : v.mode == CLMAD_MODE_JVP ? 1 : 2;
                    v.nd = v.mode == CLMAD_MODE_STORED ? 0 : 3;
                    v.write_values = 1;
                    v.items = items;
                    v.row_runs = v.mode == CLMAD_MODE_STORED ? 0 : rows;
                    v.access[0] = CLMAD_ACCESS_FULL;
                    v.access[1] = CLMAD_ACCESS_STRIDED;
                    v.access[2] = CLMAD_ACCESS_SCALAR;
                    for (int j = 0; j < 3; j++)
                        v.slot[j] = (signed char)(v.mode == CLMAD_MODE_JVP ? 1 : j < v.K ? j : -1);
                    v.adj_mask = (1u << n_out) - 1;
                    v.adj_scalar = 1u << (n_out - 1);
                    v.adj_scaled = 1u;
                    v.accumulate[0] = 1;
                    char what[96];
                    snprintf(what, sizeof what, "mode %c, items %d, rows %d, %d outputs", (char)v.mode, items,
                             rows, n_out);
                    check_wrapper_names(&v, what);
                }
}

/* ---- user names that the wrapper used to take ------------------------------ */

/* Each source: f(x, y) = 3 x y + c (c a constant of the source), so that
 * df/dx = 3y and df/dy = 3x. */
typedef struct named_source {
    const char *fn;
    const char *src;
    double c;
} named_source;

static const named_source SOURCES[] = {
    /* Macros named like the old locals and parameters, min as a macro too,
     * and words of the pragmas that follow the user's source. */
    {"f",
     "#define e 2.718f\n"
     "#define r 3\n"
     "#define n 2\n"
     "#define v 0.5f\n"
     "#define k 1\n"
     "#define cl 4\n"
     "#define first 0\n"
     "#define last 1\n"
     "#define c0 1\n"
     "#define c1 1\n"
     "#define d0 1\n"
     "#define a0 1\n"
     "#define a1 1\n"
     "#define b0 1\n"
     "#define x0 1\n"
     "#define x1 1\n"
     "#define y0 1\n"
     "#define g0 1\n"
     "#define g1 1\n"
     "#define p0_0 1\n"
     "#define adj0 1\n"
     "#define dim0 1\n"
     "#define dim1 1\n"
     "#define s1_0 1\n"
     "#define s1_1 1\n"
     "#define col0 1\n"
     "#define next_row 1\n"
     "#define row0_1 1\n"
     "#define row1_1 1\n"
     "#define row0_r 1\n"
     "#define min(p, q) p_is_not_q\n"
     "#define pop 1\n"
     "#define vectorize 1\n"
     "#define vectorize_width 1\n"
     "#define assume_safety 1\n"
     "#define interleave 1\n"
     "#define disable 1\n"
     "T f(T x, T y) { return ad_addr(ad_mulr(ad_mul(x, y), (real)r), e * v * n); }\n",
     2.718 * 0.5 * 2},
    /* Kernel functions named like a local of every launch (e), of strided
     * launches only (r) and like a parameter (n), with helpers named like
     * other locals. */
    {"e",
     "real a0(real q) { return q * 2; }\n"
     "real first(real q) { return q + 1; }\n"
     "T e(T x, T y) { return ad_addr(ad_mulr(ad_mul(x, y), (real)3), first(a0((real)0.25))); }\n",
     1.5},
    {"r", "T r(T x, T y) { return ad_mulr(ad_mul(x, y), (real)3); }\n", 0},
    {"n", "T n(T x, T y) { return ad_addr(ad_mul(ad_mulr(x, (real)3), y), (real)-1); }\n", -1},
};

/* Broadcasts f over x (rows x cols) and y (cols,) (strided), then the
 * backward of sum(f) under policy; values and gradients against 3 x y + c. */
static void run_named(clmad_context *ctx, clmad_kernel *k, const named_source *s, size_t rows, size_t cols,
                      clmad_partials_policy policy)
{
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, policy));
    size_t sx[2] = {rows, cols}, sy[1] = {cols}, nx = rows * cols;
    double *hx = malloc(nx * sizeof *hx), *hy = malloc(cols * sizeof *hy);
    cr_assert(hx && hy);
    for (size_t i = 0; i < nx; i++)
        hx[i] = 0.5 + 0.25 * (double)(i % 7) - 0.125 * (double)(i % 3);
    for (size_t i = 0; i < cols; i++)
        hy[i] = -1 + 0.375 * (double)(i % 5);
    clmad_tensor *in[2] = {bs_tensor(ctx, CLMAD_F32, 2, sx, hx), bs_tensor(ctx, CLMAD_F32, 1, sy, hy)};
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(in[0], 1));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(in[1], 1));
    clmad_tensor *y = NULL, *loss = NULL, *gx = NULL, *gy = NULL;
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    double *vy = bs_read(ctx, y, CLMAD_F32, 2, sx);
    for (size_t i = 0; i < nx; i++) {
        double want = 3 * hx[i] * hy[i % cols] + s->c;
        cr_assert(bs_close(vy[i], want, 1e-5), "%s%s, %zux%zu, policy %d: f at %zu = %.9g, expected %.9g",
                  test_case(), s->fn, rows, cols, (int)policy, i, vy[i], want);
    }
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(in[0], &gx));
    CHECK_OK(ctx, clmad_tensor_grad(in[1], &gy));
    double *vgx = bs_read(ctx, gx, CLMAD_F32, 2, sx), *vgy = bs_read(ctx, gy, CLMAD_F32, 1, sy);
    for (size_t i = 0; i < nx; i++)
        cr_assert(bs_close(vgx[i], 3 * hy[i % cols], 1e-5), "%s%s, policy %d: d/dx at %zu = %.9g, expected %.9g",
                  test_case(), s->fn, (int)policy, i, vgx[i], 3 * hy[i % cols]);
    for (size_t c = 0; c < cols; c++) {
        double want = 0;
        for (size_t r = 0; r < rows; r++)
            want += 3 * hx[r * cols + c];
        cr_assert(bs_close(vgy[c], want, 1e-5), "%s%s, policy %d: d/dy at %zu = %.9g, expected %.9g",
                  test_case(), s->fn, (int)policy, c, vgy[c], want);
    }
    free(vgx), free(vgy), free(vy), free(hx), free(hy);
    clmad_tensor *all[] = {y, loss, gx, gy, in[0], in[1]};
    bs_release_all(all, 6);
}

/* Shapes (3, 5) + (5,): coordinates per element; (3, 40) + (40,): runs of
 * elements that cross rows (POCL runs 32 elements per work-item). */
static void user_names_like_the_old_generated_ones(void)
{
    clmad_context *ctx = test_context();
    for (size_t i = 0; i < sizeof SOURCES / sizeof *SOURCES; i++) {
        const named_source *s = &SOURCES[i];
        clmad_kernel *k = NULL;
        CHECK_OK(ctx, clmad_kernel_create(ctx, s->src, s->fn, 2, 1, &k));
        for (int p = CLMAD_PARTIALS_STORE; p <= CLMAD_PARTIALS_RECOMPUTE; p++) {
            run_named(ctx, k, s, 3, 5, (clmad_partials_policy)p);
            run_named(ctx, k, s, 3, 40, (clmad_partials_policy)p);
        }
        clmad_kernel_release(k);
    }
    clmad_context_release(ctx);
}

/* ---- names the wrapper used to define or use ------------------------------- */

/* 3 x y, as PLAIN computes it, through user helpers named like the old
 * kernels (a helper named clmad_bcast_vjp passed create and forward, then
 * failed at RECOMPUTE's backward) and like the old vector type real8, or
 * under user macros named like the builtins, types and qualifiers that the
 * wrapper kernel uses (#define get_global_id(d) 0 made every element read
 * element 0). */
static const char *const PLAIN = "T f(T x, T y) { return ad_mulr(ad_mul(x, y), (real)3); }\n";
static const char *const SHADOWING[] = {
    "real clmad_bcast_primal(real q) { return q; }\n"
    "real clmad_bcast_partials(real q) { return q; }\n"
    "real clmad_bcast_jvp(real q) { return q; }\n"
    "real clmad_bcast_vjp(real q) { return q; }\n"
    "real clmad_bcast_stored(real q) { return q; }\n"
    "real clmad_bcast_0(real q) { return q; }\n"
    "real real8(real q) { return q; }\n"
    "T f(T x, T y)\n"
    "{\n"
    "    real three = real8(clmad_bcast_0(clmad_bcast_vjp(clmad_bcast_stored((real)3))));\n"
    "    return ad_mulr(ad_mul(x, y), clmad_bcast_primal(clmad_bcast_partials(clmad_bcast_jvp(three))));\n"
    "}\n",
    "#define get_global_id(d) 0\n"
    "#define get_local_id(d) 0\n"
    "#define ulong uchar\n"
    "#define size_t uchar\n"
    "#define __kernel\n"
    "#define kernel\n"
    "#define __global __local\n"
    "#define restrict volatile\n"
    "#define real8 float\n"
    "#define __private __global\n"
    "#define clmad_bcast_vjp oops\n"
    "T f(T x, T y) { return ad_mulr(ad_mul(x, y), (real)3); }\n",
};

/* Shapes of x and y: coordinates per element (3, 5) + (5,); runs crossing
 * rows (3, 40) + (40,) (POCL runs 32 elements per work-item); a column
 * broadcast (3, 40) + (3, 1); full shape (40,) + (40,). */
static const struct {
    int nx, ny;
    size_t sx[2], sy[2];
} LAYOUTS[] = {
    {2, 1, {3, 5}, {5}}, {2, 1, {3, 40}, {40}}, {2, 2, {3, 40}, {3, 1}}, {1, 1, {40}, {40}},
};

/* f(x, y), d sum(f) / dx and d sum(f) / dy in f32 under policy, in out[0..2]
 * (numel of the output, x and y; doubles that are the f32 values exactly). */
static void run_bits(clmad_context *ctx, clmad_kernel *k, int layout, clmad_partials_policy policy, double **out,
                     size_t *n)
{
    CHECK_OK(ctx, clmad_set_partials_policy(ctx, policy));
    const int nx = LAYOUTS[layout].nx, ny = LAYOUTS[layout].ny;
    const size_t *sx = LAYOUTS[layout].sx, *sy = LAYOUTS[layout].sy;
    n[1] = bs_numel(nx, sx), n[2] = bs_numel(ny, sy), n[0] = n[1];
    double *hx = malloc(n[1] * sizeof *hx), *hy = malloc(n[2] * sizeof *hy);
    cr_assert(hx && hy);
    for (size_t i = 0; i < n[1]; i++)
        hx[i] = 0.1 + 0.37 * (double)(i % 7) - 0.125 * (double)(i % 3);
    for (size_t i = 0; i < n[2]; i++)
        hy[i] = -1.3 + 0.29 * (double)(i % 5);
    clmad_tensor *in[2] = {bs_tensor(ctx, CLMAD_F32, nx, sx, hx), bs_tensor(ctx, CLMAD_F32, ny, sy, hy)};
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(in[0], 1));
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(in[1], 1));
    clmad_tensor *y = NULL, *loss = NULL, *gx = NULL, *gy = NULL;
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &y));
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(in[0], &gx));
    CHECK_OK(ctx, clmad_tensor_grad(in[1], &gy));
    out[0] = bs_read(ctx, y, CLMAD_F32, nx, sx);
    out[1] = bs_read(ctx, gx, CLMAD_F32, nx, sx);
    out[2] = bs_read(ctx, gy, CLMAD_F32, ny, sy);
    /* The plain kernel itself is right: 3 x y at a few elements. */
    for (size_t i = 0; i < n[0]; i += 7) {
        double want = 3 * hx[i] * hy[layout == 2 ? i / 40 : i % n[2]];
        cr_assert(bs_close(out[0][i], want, 1e-5), "%slayout %d: f at %zu = %.9g, expected %.9g", test_case(),
                  layout, i, out[0][i], want);
    }
    free(hx), free(hy);
    clmad_tensor *all[] = {y, loss, gx, gy, in[0], in[1]};
    bs_release_all(all, 6);
}

/* The plain kernel runs for the first source only; the later ones are
 * compared with the bits it kept. */
static void user_names_like_the_wrappers_give_the_plain_bits(void)
{
    enum { N_LAYOUTS = sizeof LAYOUTS / sizeof *LAYOUTS };
    clmad_context *ctx = test_context();
    clmad_kernel *plain = NULL;
    double *want[N_LAYOUTS][2][3]; /* per layout and policy (STORE, RECOMPUTE) */
    size_t n[N_LAYOUTS][3];
    CHECK_OK(ctx, clmad_kernel_create(ctx, PLAIN, "f", 2, 1, &plain));
    for (size_t i = 0; i < sizeof SHADOWING / sizeof *SHADOWING; i++) {
        clmad_kernel *k = NULL;
        CHECK_OK(ctx, clmad_kernel_create(ctx, SHADOWING[i], "f", 2, 1, &k));
        for (int layout = 0; layout < N_LAYOUTS; layout++)
            for (int p = CLMAD_PARTIALS_STORE; p <= CLMAD_PARTIALS_RECOMPUTE; p++) {
                double **w = want[layout][p - CLMAD_PARTIALS_STORE], *got[3];
                if (i == 0)
                    run_bits(ctx, plain, layout, (clmad_partials_policy)p, w, n[layout]);
                run_bits(ctx, k, layout, (clmad_partials_policy)p, got, n[layout]);
                static const char *const what[] = {"f", "d/dx", "d/dy"};
                for (int a = 0; a < 3; a++) {
                    for (size_t e = 0; e < n[layout][a]; e++)
                        cr_assert(memcmp(&got[a][e], &w[a][e], sizeof(double)) == 0,
                                  "%ssource %zu, layout %d, policy %d: %s at %zu = %.9g, the plain kernel's %.9g",
                                  test_case(), i, layout, p, what[a], e, got[a][e], w[a][e]);
                    free(got[a]);
                }
            }
        clmad_kernel_release(k);
    }
    for (int layout = 0; layout < N_LAYOUTS; layout++)
        for (int p = 0; p < 2; p++)
            for (int a = 0; a < 3; a++)
                free(want[layout][p][a]);
    clmad_kernel_release(plain);
    clmad_context_release(ctx);
}

/* Names in the generated code's prefix are refused at create, at their
 * line: a user function clmad__call or clmad__bcast_vjp would collide with
 * the wrapper's, a macro CLMAD__R would redefine the vocabulary's. */
static void reserved_prefix_is_refused_at_its_line(void)
{
    static const struct {
        const char *src, *needle;
    } CASES[] = {
        {"real clmad__bcast_vjp(real q) { return q; }\nT f(T x, T y) { return ad_mul(x, y); }\n",
         "source:1:6: error: \"clmad__bcast_vjp\""},
        {"T f(T x, T y)\n{\n    return ad_mul(x, y);\n}\nT clmad__call(T x, T y) { return f(x, y); }\n",
         "source:5:3: error: \"clmad__call\""},
        {"\n#define CLMAD__R(x) x\nT f(T x, T y) { return ad_mul(x, y); }\n", "source:2:9: error: \"CLMAD__R\""},
        {"#define TWICE(a) clmad__const(2 * ad_val(a))\nT f(T x, T y) { return ad_mul(TWICE(x), y); }\n",
         "source:1:18: error: \"clmad__const\""},
    };
    clmad_context *ctx = test_context();
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        clmad_kernel *k = (clmad_kernel *)(uintptr_t)0x5e17;
        clmad_status st = clmad_kernel_create(ctx, CASES[i].src, "f", 2, 1, &k);
        const char *msg = clmad_last_error(ctx);
        cr_assert_eq(st, CLMAD_ERR_BUILD, "case %zu: %s: %s", i, clmad_status_string(st), msg);
        cr_assert_eq(k, (clmad_kernel *)(uintptr_t)0x5e17, "case %zu: *k was written on failure", i);
        cr_assert(test_contains(msg, CASES[i].needle) && test_contains(msg, "reserved"),
                  "case %zu: the message lacks \"%s\" and \"reserved\": %s", i, CASES[i].needle, msg);
    }
    clmad_context_release(ctx);
}

/* ---- the test ------------------------------------------------------------- */

/* Every case is f32: no order for a device without fp64. */
Test(kernel_names, generated_and_user_names)
{
    RUN_CASE(every_generated_identifier_is_reserved);
    RUN_CASE(user_names_like_the_old_generated_ones);
    RUN_CASE(user_names_like_the_wrappers_give_the_plain_bits);
    RUN_CASE(reserved_prefix_is_refused_at_its_line);
}
