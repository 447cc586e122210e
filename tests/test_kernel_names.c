/* SPDX-License-Identifier: Apache-2.0 */
/* The names of the generated code never meet the user's: the wrapper
 * kernel that follows the user's source names its parameters and locals
 * clmad__*, so that user macros (#define e 2.718f) and functions (a kernel
 * function named e, n or r) compile and run. */
#include "bcast_support.h"
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* ---- every identifier after the user's source ------------------------------ */

/* Words the wrapper may use besides clmad__* and clmad_bcast_* names:
 * OpenCL C keywords and types, the vocabulary's types, one builtin. */
static int allowed_word(const char *w, size_t n, const char *fn)
{
    static const char *const words[] = {"__kernel", "void", "ulong", "__global", "const", "restrict",
                                        "real", "T", "int", "if", "return", "for", "get_global_id"};
    if ((n >= 7 && strncmp(w, "clmad__", 7) == 0) || (n >= 12 && strncmp(w, "clmad_bcast_", 12) == 0))
        return 1;
    if (strlen(fn) == n && strncmp(w, fn, n) == 0)
        return 1;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i]) == n && strncmp(w, words[i], n) == 0)
            return 1;
    return 0;
}

/* Fails the test at the first identifier of the program after the user's
 * source (outside preprocessor lines) that a user macro could replace. */
static void check_wrapper_names(const clmad_variant *v, const char *what)
{
    const char *user = "T fn(T a) { return a; }\n";
    clmad_strbuf sb = {0};
    clmad__generate_program(&sb, v, user, "fn", 1);
    cr_assert(!sb.failed && sb.data, "%s: generation failed", what);
    const char *p = v->mode == CLMAD_MODE_STORED ? strstr(sb.data, "#line 1 \"clmad-generated\"")
                                                 : strstr(sb.data, user);
    cr_assert_not_null(p, "%s: no user source / generated marker in the program", what);
    if (v->mode != CLMAD_MODE_STORED)
        p += strlen(user);
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
            cr_assert(allowed_word(w, (size_t)(p - w), "fn"), "%s: the wrapper uses the name \"%.*s\":\n%s",
                      what, (int)(p - w), w, strstr(sb.data, "#line 1 \"clmad-generated\""));
            continue;
        }
        p++;
    }
    clmad__sb_free(&sb);
}

Test(kernel_names, every_generated_identifier_is_reserved)
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
        cr_assert(bs_close(vy[i], want, 1e-5), "%s, %zux%zu, policy %d: f at %zu = %.9g, expected %.9g", s->fn,
                  rows, cols, (int)policy, i, vy[i], want);
    }
    CHECK_OK(ctx, clmad_sum(ctx, y, 0, NULL, 0, &loss));
    CHECK_OK(ctx, clmad_backward(ctx, loss, NULL));
    CHECK_OK(ctx, clmad_tensor_grad(in[0], &gx));
    CHECK_OK(ctx, clmad_tensor_grad(in[1], &gy));
    double *vgx = bs_read(ctx, gx, CLMAD_F32, 2, sx), *vgy = bs_read(ctx, gy, CLMAD_F32, 1, sy);
    for (size_t i = 0; i < nx; i++)
        cr_assert(bs_close(vgx[i], 3 * hy[i % cols], 1e-5), "%s, policy %d: d/dx at %zu = %.9g, expected %.9g",
                  s->fn, (int)policy, i, vgx[i], 3 * hy[i % cols]);
    for (size_t c = 0; c < cols; c++) {
        double want = 0;
        for (size_t r = 0; r < rows; r++)
            want += 3 * hx[r * cols + c];
        cr_assert(bs_close(vgy[c], want, 1e-5), "%s, policy %d: d/dy at %zu = %.9g, expected %.9g", s->fn,
                  (int)policy, c, vgy[c], want);
    }
    free(vgx), free(vgy), free(vy), free(hx), free(hy);
    clmad_tensor *all[] = {y, loss, gx, gy, in[0], in[1]};
    bs_release_all(all, 6);
}

/* Shapes (3, 5) + (5,): coordinates per element; (3, 40) + (40,): runs of
 * elements that cross rows (POCL runs 32 elements per work-item). */
Test(kernel_names, user_names_like_the_old_generated_ones)
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
