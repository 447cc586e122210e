/* SPDX-License-Identifier: Apache-2.0 */
/* Safetensors files: bitwise round trips, the exact bytes of a small file
 * (written out by hand from the format's spec), and the bad files. */
#include "st_files.h"

#include <math.h>

static uint64_t bits_seed = 12345;
static uint32_t next_bits(void)
{
    bits_seed = bits_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(bits_seed >> 32);
}

Test(safetensors, round_trip_is_bitwise)
{
    clmad_context *ctx = test_context();
    const char *dir = test_fresh_dir("st-round");
    size_t s3[] = {2, 3, 4}, s0[] = {0, 3}, s1[] = {5};
    float a[24], c[5] = {-0.0f, INFINITY, -INFINITY, NAN, 1e-45f};
    for (int i = 0; i < 24; i++) {
        uint32_t u = next_bits() & 0x7f7fffffu; /* finite, any sign-free pattern */
        memcpy(&a[i], &u, 4);
    }
    float scalar = 3.25f;
    clmad_tensor *t[4];
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 3, s3, a, &t[0]));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 0, NULL, &scalar, &t[1]));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 2, s0, NULL, &t[2]));
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, s1, c, &t[3]));
    const char *names[] = {"layer.0.weight", "scale", "empty", "caf\xc3\xa9 \"quoted\"\n"};
    const char *meta[] = {"format", "pt", "note", "\xe2\x82\xac", NULL};
    char *path = path_in(dir, "model.safetensors");
    CHECK_OK(ctx, clmad_save(path, names, t, 4, meta));

    clmad_safetensors *f = NULL;
    CHECK_OK(NULL, clmad_safetensors_open(path, &f));
    cr_assert_eq(clmad_safetensors_count(f), 4);
    cr_assert_str_eq(clmad_safetensors_metadata(f, "format"), "pt");
    cr_assert_str_eq(clmad_safetensors_metadata(f, "note"), "\xe2\x82\xac");
    cr_assert_null(clmad_safetensors_metadata(f, "absent"));
    for (size_t i = 0; i < 4; i++) {
        clmad_safetensors_entry e;
        CHECK_OK(NULL, clmad_safetensors_entry_at(f, i, &e));
        cr_assert_str_eq(e.name, names[i], "entry %zu in the order of the data", i);
        cr_assert_str_eq(e.file_dtype, "F32");
        cr_assert(e.supported && e.dtype == CLMAD_F32);
        cr_assert_eq(e.ndim, clmad_tensor_ndim(t[i]));
        for (int d = 0; d < e.ndim; d++)
            cr_assert_eq(e.shape[d], clmad_tensor_dim(t[i], d));
        clmad_tensor *back = NULL;
        CHECK_OK(ctx, clmad_safetensors_read(ctx, f, e.name, &back));
        size_t n = clmad_tensor_numel(t[i]);
        float want[24], got[24];
        CHECK_OK(ctx, clmad_tensor_read(t[i], want, sizeof want));
        CHECK_OK(ctx, clmad_tensor_read(back, got, sizeof got));
        cr_assert_eq(memcmp(want, got, n * 4), 0, "tensor %zu differs", i);
        clmad_tensor_release(back);
    }
    clmad_safetensors_entry e;
    cr_assert_eq(clmad_safetensors_entry_at(f, 4, &e), CLMAD_ERR_INVALID_ARGUMENT);
    clmad_safetensors_close(f);

    /* load_state_dict: into existing tensors, by name, in another order. */
    clmad_tensor *dst[2];
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 1, s1, &dst[0]));
    CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F32, 3, s3, &dst[1]));
    const char *wanted[] = {names[3], names[0]};
    CHECK_OK(ctx, clmad_load(ctx, path, wanted, dst, 2));
    float got[24];
    CHECK_OK(ctx, clmad_tensor_read(dst[0], got, sizeof got));
    cr_assert_eq(memcmp(got, c, sizeof c), 0);
    CHECK_OK(ctx, clmad_tensor_read(dst[1], got, sizeof got));
    cr_assert_eq(memcmp(got, a, sizeof a), 0);

    /* f64 too, when the device has it. */
    if (test_device_fp64()) {
        double d[6];
        for (int i = 0; i < 6; i++) {
            uint64_t u = ((uint64_t)next_bits() << 32 | next_bits()) & 0x7fefffffffffffffULL;
            memcpy(&d[i], &u, 8);
        }
        size_t s23[] = {2, 3};
        clmad_tensor *x = NULL, *y = NULL;
        CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F64, 2, s23, d, &x));
        const char *xn[] = {"x"};
        CHECK_OK(ctx, clmad_save(path, xn, &x, 1, NULL));
        CHECK_OK(ctx, clmad_tensor_zeros(ctx, CLMAD_F64, 2, s23, &y));
        CHECK_OK(ctx, clmad_load(ctx, path, xn, &y, 1));
        double back[6];
        CHECK_OK(ctx, clmad_tensor_read(y, back, sizeof back));
        cr_assert_eq(memcmp(back, d, sizeof d), 0);
        clmad_tensor_release(x);
        clmad_tensor_release(y);
    }
    for (int i = 0; i < 4; i++)
        clmad_tensor_release(t[i]);
    clmad_tensor_release(dst[0]);
    clmad_tensor_release(dst[1]);
    clmad_context_release(ctx);
}

/* The bytes of a file written from the spec by hand. */
Test(safetensors, writes_the_format_byte_for_byte)
{
    clmad_context *ctx = test_context();
    const char *dir = test_fresh_dir("st-bytes");
    size_t s[] = {2};
    float v[] = {1.0f, -2.0f};
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, s, v, &t));
    const char *names[] = {"w"};
    const char *meta[] = {"k", "v", NULL};
    char *path = path_in(dir, "w.safetensors");
    CHECK_OK(ctx, clmad_save(path, names, &t, 1, meta));
    const char header[] = "{\"__metadata__\":{\"k\":\"v\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2],"
                          "\"data_offsets\":[0,8]}}";
    size_t h = strlen(header), padded = (h + 7) / 8 * 8, size;
    unsigned char *got = read_bytes(path, &size);
    cr_assert_eq(size, 8 + padded + 8);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(got[i], (unsigned char)((uint64_t)padded >> (8 * i)), "length byte %d", i);
    cr_assert_eq(memcmp(got + 8, header, h), 0, "header: %.*s", (int)padded, got + 8);
    for (size_t i = h; i < padded; i++)
        cr_assert_eq(got[8 + i], ' ');
    /* 1.0f = 0x3f800000, -2.0f = 0xc0000000, little-endian. */
    const unsigned char data[] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0};
    cr_assert_eq(memcmp(got + 8 + padded, data, 8), 0);
    free(got);
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

/* JSON escapes in names decode as the spec says; the header's whitespace
 * and member order are free. */
Test(safetensors, reads_escapes_and_any_member_order)
{
    const char *dir = test_fresh_dir("st-escapes");
    char *path = path_in(dir, "e.safetensors");
    const float data[] = {1, 2, 3};
    write_file(path,
               " {\n \"a\\u00e9\\ud83d\\ude00\\n\\\"\\\\\\/\" : {\"shape\":[], \"data_offsets\":[4,8], \"dtype\":\"F32\"},"
               "\t\"b\":{\"data_offsets\":[0,4],\"dtype\":\"F32\",\"shape\":[1]}, "
               "\"c\":{\"dtype\":\"I16\",\"shape\":[2],\"data_offsets\":[8,12]}}  ",
               data, sizeof data);
    clmad_safetensors *f = NULL;
    CHECK_OK(NULL, clmad_safetensors_open(path, &f));
    cr_assert_eq(clmad_safetensors_count(f), 3);
    clmad_safetensors_entry e;
    CHECK_OK(NULL, clmad_safetensors_entry_at(f, 0, &e));
    cr_assert_str_eq(e.name, "b");
    CHECK_OK(NULL, clmad_safetensors_entry_at(f, 1, &e));
    cr_assert_str_eq(e.name, "a\xc3\xa9\xf0\x9f\x98\x80\n\"\\/");
    cr_assert_eq(e.ndim, 0);
    CHECK_OK(NULL, clmad_safetensors_entry_at(f, 2, &e));
    cr_assert_str_eq(e.file_dtype, "I16");
    cr_assert_eq(e.supported, 0);
    clmad_context *ctx = test_context();
    clmad_tensor *t = NULL;
    cr_assert_eq(clmad_safetensors_read(ctx, f, "c", &t), CLMAD_ERR_UNSUPPORTED);
    cr_assert(test_contains(clmad_last_error(ctx), "I16"), "%s", clmad_last_error(ctx));
    cr_assert_eq(clmad_safetensors_read(ctx, f, "nope", &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "no tensor \"nope\""), "%s", clmad_last_error(ctx));
    cr_assert_null(t);
    CHECK_OK(ctx, clmad_safetensors_read(ctx, f, e.name[0] == 'c' ? "b" : "b", &t));
    float got;
    CHECK_OK(ctx, clmad_tensor_read(t, &got, 4));
    cr_assert_eq(got, 1.0f);
    clmad_tensor_release(t);
    clmad_safetensors_close(f);
    clmad_context_release(ctx);
}
