/* SPDX-License-Identifier: Apache-2.0 */
/* Staging areas: tensors' values gathered back to back into host-visible
 * memory and scattered back, and the misuse that must fail cleanly. */
#include "support.h"

#include <string.h>

static clmad_tensor *tensor_of(clmad_context *ctx, clmad_dtype dt, int ndim, const size_t *shape, double base)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    double d[64];
    float f[64];
    for (size_t e = 0; e < n; e++)
        d[e] = base + (double)e, f[e] = (float)(base + (double)e);
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, dt, ndim, shape, dt == CLMAD_F64 ? (void *)d : (void *)f, &t));
    return t;
}

Test(staging, gather_then_scatter)
{
    clmad_context *ctx = test_context();
    size_t s23[2] = {2, 3}, s4[1] = {4}, s0[1] = {0};
    clmad_tensor *ts[4] = {tensor_of(ctx, CLMAD_F32, 2, s23, 1), tensor_of(ctx, CLMAD_F64, 1, s4, 10),
                           tensor_of(ctx, CLMAD_F32, 1, s0, 0), tensor_of(ctx, CLMAD_F64, 0, NULL, 100)};
    const size_t bytes = 6 * 4 + 4 * 8 + 0 + 8;
    clmad_staging *st = NULL;
    CHECK_OK(ctx, clmad_staging_create(ctx, bytes + 16, &st));
    void *host = NULL;
    CHECK_OK(ctx, clmad_staging_gather(st, ts, 4, &host));
    const float *f = host;
    const double *d = (const double *)((const char *)host + 24);
    for (int e = 0; e < 6; e++)
        cr_expect_eq(f[e], (float)(1 + e));
    for (int e = 0; e < 4; e++)
        cr_expect_eq(d[e], 10.0 + e);
    cr_expect_eq(d[4], 100.0, "the 0-d tensor follows the empty one");

    /* Write through the mapping, scatter, read back. */
    CHECK_OK(ctx, clmad_staging_map(st, &host));
    float *fw = host;
    double *dw = (double *)((char *)host + 24);
    for (int e = 0; e < 6; e++)
        fw[e] = -(float)e;
    for (int e = 0; e < 5; e++)
        dw[e] = 0.5 * e;
    CHECK_OK(ctx, clmad_staging_scatter(st, ts, 4));
    float fr[6];
    double dr[4], scalar;
    CHECK_OK(ctx, clmad_tensor_read(ts[0], fr, sizeof fr));
    CHECK_OK(ctx, clmad_tensor_read(ts[1], dr, sizeof dr));
    CHECK_OK(ctx, clmad_tensor_read(ts[3], &scalar, sizeof scalar));
    for (int e = 0; e < 6; e++)
        cr_expect_eq(fr[e], -(float)e);
    for (int e = 0; e < 4; e++)
        cr_expect_eq(dr[e], 0.5 * e);
    cr_expect_eq(scalar, 2.0);
    /* A gather of fewer tensors reuses the front of the area. */
    CHECK_OK(ctx, clmad_staging_gather(st, ts + 1, 1, &host));
    cr_expect_eq(((const double *)host)[3], 1.5);

    clmad_staging_release(st);
    for (int k = 0; k < 4; k++)
        clmad_tensor_release(ts[k]);
    clmad_context_release(ctx);
}

Test(staging, misuse)
{
    clmad_context *ctx = test_context(), *other = test_context();
    size_t s4[1] = {4};
    clmad_tensor *t = tensor_of(ctx, CLMAD_F64, 1, s4, 0), *u = tensor_of(other, CLMAD_F64, 1, s4, 0);
    clmad_staging *st = NULL, *empty = NULL;
    void *host = NULL;
    cr_expect_eq(clmad_staging_create(NULL, 8, &st), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_staging_create(ctx, 8, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    CHECK_OK(ctx, clmad_staging_create(ctx, 16, &st));
    cr_expect_eq(clmad_staging_gather(st, &t, 1, &host), CLMAD_ERR_INVALID_ARGUMENT, "32 bytes into 16");
    cr_expect(test_contains(clmad_last_error(ctx), "hold 32 bytes, the area 16"), "%s", clmad_last_error(ctx));
    cr_expect_eq(clmad_staging_scatter(st, &t, 1), CLMAD_ERR_INVALID_ARGUMENT);
    CHECK_OK(ctx, clmad_staging_create(ctx, 64, &empty));
    cr_expect_eq(clmad_staging_gather(empty, &u, 1, &host), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect(test_contains(clmad_last_error(ctx), "belongs to another context"), "%s", clmad_last_error(ctx));
    cr_expect_eq(clmad_staging_gather(empty, &t, -1, &host), CLMAD_ERR_INVALID_ARGUMENT);
    clmad_tensor *none[1] = {NULL};
    cr_expect_eq(clmad_staging_scatter(empty, none, 1), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_staging_map(NULL, &host), CLMAD_ERR_INVALID_ARGUMENT);
    /* Zero tensors and a zero-byte area are fine. */
    clmad_staging *zero = NULL;
    CHECK_OK(ctx, clmad_staging_create(ctx, 0, &zero));
    CHECK_OK(ctx, clmad_staging_gather(zero, NULL, 0, &host));
    /* An area outlives a released context, as tensors do. */
    clmad_context_release(ctx);
    cr_expect_eq(clmad_staging_create(ctx, 8, &st), CLMAD_ERR_STATE);
    clmad_staging_release(zero);
    clmad_staging_release(empty);
    clmad_staging_release(st);
    clmad_tensor_release(t);
    clmad_tensor_release(u);
    clmad_context_release(other);
}

/* The context's own area: kept while large enough, grown geometrically,
 * never released by the caller, freed with the context. */
Test(staging, context_area)
{
    clmad_context *ctx = test_context();
    size_t s4[1] = {4};
    clmad_tensor *t = tensor_of(ctx, CLMAD_F64, 1, s4, 7);
    clmad_staging *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(ctx, clmad_context_staging(ctx, 16, &a));
    CHECK_OK(ctx, clmad_context_staging(ctx, 8, &b));
    cr_expect_eq(a, b, "a large enough area is kept");
    clmad_staging_release(b); /* a no-op for the context's own area */
    CHECK_OK(ctx, clmad_context_staging(ctx, 32, &c));
    void *host = NULL;
    CHECK_OK(ctx, clmad_staging_gather(c, &t, 1, &host));
    cr_expect_eq(((const double *)host)[3], 10.0);
    clmad_context_release(ctx); /* t keeps the context; its area is gone */
    cr_expect_eq(clmad_context_staging(ctx, 8, &a), CLMAD_ERR_STATE);
    clmad_tensor_release(t);
}
