/* SPDX-License-Identifier: Apache-2.0 */
/* The multiply-high that replaces each division by a dimension in the
 * coordinates of a generated kernel (clmad__divisor_magic, codegen.h): the
 * quotient and remainder it gives, against the host's division, over every
 * small divisor and numerator and at the edges of the 31-bit range; and a
 * broadcast over four dimensions with one element per work-item (the
 * kernels that use it) against the host. */
#include "internal.h"
#include "support.h"

#include <stdint.h>
#include <stdlib.h>

/* (r * m) >> shift with the packed argument, as the generated code does. */
static uint32_t quotient(uint32_t r, uint64_t magic)
{
    return (uint32_t)(((uint64_t)r * (uint32_t)magic) >> (uint32_t)(magic >> 32));
}

static void expect_divides(uint64_t d, uint32_t r)
{
    uint64_t magic = clmad__divisor_magic(d);
    cr_assert_lt((uint32_t)magic, UINT64_C(1) << 32, "d %llu: m must fit 32 bits", (unsigned long long)d);
    cr_assert_eq(quotient(r, magic), r / d, "%u / %llu: %u", r, (unsigned long long)d, quotient(r, magic));
}

Test(index_arithmetic, every_small_divisor_and_numerator)
{
    for (uint64_t d = 1; d <= 1024; d++)
        for (uint32_t r = 0; r < (1u << 16); r++)
            expect_divides(d, r);
}

Test(index_arithmetic, the_edges_of_the_31_bit_range)
{
    const uint32_t top = (1u << 31) - 1;
    uint64_t divisors[] = {1, 2, 3, 5, 7, 641, 1000, 1024, 1025, 4095, 65537, 1u << 20, (1u << 20) + 1,
                           46341, 1u << 30, (1u << 30) + 1, top - 1, top};
    unsigned seed = 7;
    for (size_t i = 0; i < sizeof divisors / sizeof *divisors; i++) {
        uint64_t d = divisors[i];
        for (uint64_t k = 1; k * d <= top && k < 4096; k++) {
            expect_divides(d, (uint32_t)(k * d - 1));
            expect_divides(d, (uint32_t)(k * d));
        }
        for (uint32_t r = top; r > top - 4096; r--)
            expect_divides(d, r);
        for (int t = 0; t < 100000; t++)
            expect_divides(d, (uint32_t)(((uint64_t)rand_r(&seed) << 16 ^ (uint64_t)rand_r(&seed)) % (top + 1u)));
    }
    for (int t = 0; t < 200000; t++) {
        uint64_t d = 1 + (uint64_t)rand_r(&seed) % top;
        expect_divides(d, (uint32_t)(((uint64_t)rand_r(&seed) << 16 ^ (uint64_t)rand_r(&seed)) % (top + 1u)));
    }
}

/* y = a + b * c over (3, 5, 7, 11) from a (3, 1, 7, 1), b (1, 5, 1, 11)
 * and c (11): every coordinate of the output goes into some index. */
Test(index_arithmetic, a_broadcast_over_four_dimensions_one_element_per_work_item)
{
    cr_assert_eq(setenv("CLMAD_ITEMS_PER_WORK_ITEM", "1", 1), 0);
    clmad_context *ctx = test_context();
    clmad_kernel *k;
    CHECK_OK(ctx, clmad_kernel_create(ctx, "T f(T a, T b, T c) { return ad_add(a, ad_mul(b, c)); }", "f", 3,
                                      1, &k));
    size_t sa[4] = {3, 1, 7, 1}, sb[4] = {1, 5, 1, 11}, sc[1] = {11};
    double a[21], b[55], c[11], y[3 * 5 * 7 * 11];
    for (int i = 0; i < 21; i++)
        a[i] = i;
    for (int i = 0; i < 55; i++)
        b[i] = 100 + i;
    for (int i = 0; i < 11; i++)
        c[i] = 1000 + i;
    clmad_tensor *in[3], *out;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 4, sa, a, &in[0]));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 4, sb, b, &in[1]));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 1, sc, c, &in[2]));
    CHECK_OK(ctx, clmad_broadcast(ctx, k, in, &out));
    CHECK_OK(ctx, clmad_tensor_read(out, y, sizeof y));
    for (int i0 = 0; i0 < 3; i0++)
        for (int i1 = 0; i1 < 5; i1++)
            for (int i2 = 0; i2 < 7; i2++)
                for (int i3 = 0; i3 < 11; i3++) {
                    double want = a[i0 * 7 + i2] + b[i1 * 11 + i3] * c[i3];
                    double got = y[((i0 * 5 + i1) * 7 + i2) * 11 + i3];
                    cr_expect_eq(got, want, "y[%d, %d, %d, %d] = %g, expected %g", i0, i1, i2, i3, got, want);
                }
    clmad_tensor_release(out);
    for (int i = 0; i < 3; i++)
        clmad_tensor_release(in[i]);
    clmad_kernel_release(k);
    clmad_context_release(ctx);
}
