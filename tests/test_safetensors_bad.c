/* SPDX-License-Identifier: Apache-2.0 */
/* Bad safetensors files and bad arguments: each is refused with its
 * status and a message that names the fault, and no tensor changes; a
 * failed save leaves the old file and no temporary. Random mutations of a
 * good file never crash the reader (ASan runs this too). */
#include "st_files.h"

#include <dirent.h>
#include <sys/stat.h>

static const unsigned char filler[64] = {0x11, 0x22, 0x33, 0x44};

typedef struct bad_case {
    const char *header;
    size_t data_size;
    clmad_status status;
    const char *message;
} bad_case;

#define W "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"
static const bad_case cases[] = {
    {"{" W, 8, CLMAD_ERR_IO, "not valid JSON"},
    {"hello", 8, CLMAD_ERR_IO, "not valid JSON: at byte 0: unexpected character 'h'"},
    {"", 0, CLMAD_ERR_IO, "unexpected end"},
    {"[1]", 0, CLMAD_ERR_IO, "not a JSON object"},
    {"{" W "} x", 8, CLMAD_ERR_IO, "text after the end"},
    {"{\"w\":{\"dtype\":\"F31\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, CLMAD_ERR_IO, "unknown dtype \"F31\""},
    {"{\"w\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, CLMAD_ERR_IO,
     "shape of F64 holds 16 bytes, data_offsets span 8"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, CLMAD_ERR_IO, "holds 12 bytes"},
    {"{" W "}", 4, CLMAD_ERR_IO, "need 8 bytes of data, the file holds 4"},
    {"{" W ",\"v\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, CLMAD_ERR_IO, "overlapping"},
    {"{" W ",\"v\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]}}", 16, CLMAD_ERR_IO, "hole"},
    {"{\"v\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, CLMAD_ERR_IO, "hole"},
    {"{" W "}", 12, CLMAD_ERR_IO, "4 bytes after the last tensor"},
    {"{" W "," W "}", 8, CLMAD_ERR_IO, "duplicate key \"w\""},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, CLMAD_ERR_IO, "no \"data_offsets\""},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":[]}}", 8, CLMAD_ERR_IO, "keys other than"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,-8]}}", 8, CLMAD_ERR_IO, "negative"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8, CLMAD_ERR_IO, "only integers"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[02],\"data_offsets\":[0,8]}}", 8, CLMAD_ERR_IO, "leading zero"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,99999999999999999999]}}", 8, CLMAD_ERR_IO,
     "integer too large"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
     CLMAD_ERR_IO, "holds more than"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, CLMAD_ERR_IO, "end before they begin"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, CLMAD_ERR_IO, "not [begin, end]"},
    {"{\"w\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, CLMAD_ERR_IO, "dtype is not a string"},
    {"{\"w\":[]}", 0, CLMAD_ERR_IO, "not an object"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}", 8, CLMAD_ERR_UNSUPPORTED,
     "rank 9"},
    {"{\"__metadata__\":{\"a\":1}," W "}", 8, CLMAD_ERR_IO, "value of \"a\" is not a string"},
    {"{\"__metadata__\":[]," W "}", 8, CLMAD_ERR_IO, "__metadata__ is not an object"},
    {"{\"\\ud800x\":{}}", 0, CLMAD_ERR_IO, "high surrogate"},
    {"{\"\\udc00\":{}}", 0, CLMAD_ERR_IO, "low surrogate"},
    {"{\"\\u12\":{}}", 0, CLMAD_ERR_IO, "four hex digits"},
    {"{\"\\q\":{}}", 0, CLMAD_ERR_IO, "unknown escape"},
    {"{\"\xff\":{}}", 0, CLMAD_ERR_IO, "invalid UTF-8"},
    {"{\"\xc0\xaf\":{}}", 0, CLMAD_ERR_IO, "invalid UTF-8"},
    {"{\"a\tb\":{}}", 0, CLMAD_ERR_IO, "control character 0x09"},
    {"{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, CLMAD_ERR_IO, "NUL"},
    {"{\"w\":true}", 0, CLMAD_ERR_IO, "unexpected character 't'"},
    {"{\"w\" {}}", 0, CLMAD_ERR_IO, "expected ':'"},
    {"{\"w\":{} \"v\":{}}", 0, CLMAD_ERR_IO, "expected ',' or '}'"},
    {"{\"unterminated", 0, CLMAD_ERR_IO, "unterminated string"},
    {"{\"__metadata__\":{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}", 0,
     CLMAD_ERR_IO, "nesting deeper than 32"},
};

/* A tensor "w" of shape (2,) holding 7, 8, to load into. */
static clmad_tensor *target(clmad_context *ctx)
{
    size_t s[] = {2};
    const float v[] = {7, 8};
    clmad_tensor *t = NULL;
    CHECK_OK(ctx, clmad_tensor_create(ctx, CLMAD_F32, 1, s, v, &t));
    return t;
}

static void expect_unchanged(clmad_context *ctx, clmad_tensor *t)
{
    float v[2];
    CHECK_OK(ctx, clmad_tensor_read(t, v, sizeof v));
    cr_assert(v[0] == 7 && v[1] == 8, "the tensor changed: %g %g", v[0], v[1]);
}

/* Opening and loading path fail with status and a message holding text. */
static void expect_refused(clmad_context *ctx, clmad_tensor *t, const char *path, clmad_status status,
                           const char *text, const char *what)
{
    clmad_safetensors *f = NULL;
    clmad_status st = clmad_safetensors_open(path, &f);
    cr_assert_eq(st, status, "%s: open gave %s: %s", what, clmad_status_string(st), clmad_last_error(NULL));
    cr_assert_null(f);
    cr_assert(test_contains(clmad_last_error(NULL), text), "%s: message \"%s\" lacks \"%s\"", what,
              clmad_last_error(NULL), text);
    cr_assert(test_contains(clmad_last_error(NULL), path), "%s: the message names no file", what);
    const char *names[] = {"w"};
    st = clmad_load(ctx, path, names, &t, 1);
    cr_assert_eq(st, status, "%s: load gave %s: %s", what, clmad_status_string(st), clmad_last_error(ctx));
    cr_assert(test_contains(clmad_last_error(ctx), text), "%s: %s", what, clmad_last_error(ctx));
    cr_assert(test_contains(clmad_last_error(ctx), "clmad_load"), "%s: %s", what, clmad_last_error(ctx));
    expect_unchanged(ctx, t);
}

Test(safetensors_bad, every_fault_is_refused_and_named)
{
    clmad_context *ctx = test_context();
    clmad_tensor *t = target(ctx);
    const char *dir = test_fresh_dir("st-bad");
    char path[1200];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "%s/case%zu.safetensors", dir, i);
        write_file(path, cases[i].header, filler, cases[i].data_size);
        char what[64];
        snprintf(what, sizeof what, "case %zu", i);
        expect_refused(ctx, t, path, cases[i].status, cases[i].message, what);
    }
    /* The header's length field: over the cap, past the end, too short. */
    snprintf(path, sizeof path, "%s/cap.safetensors", dir);
    write_raw(path, 100000001, "{}", NULL, 0);
    expect_refused(ctx, t, path, CLMAD_ERR_IO, "above the 100 MB cap", "cap");
    write_raw(path, 102, "{" W "}", filler, 8);
    expect_refused(ctx, t, path, CLMAD_ERR_IO, "runs past the end of the file", "past the end");
    write_bytes(path, "\x02\0\0\0", 4);
    expect_refused(ctx, t, path, CLMAD_ERR_IO, "too short for the 8-byte header length", "short");
    snprintf(path, sizeof path, "%s/absent.safetensors", dir);
    expect_refused(ctx, t, path, CLMAD_ERR_IO, "cannot open: No such file", "absent");
    expect_refused(ctx, t, dir, CLMAD_ERR_IO, "", "a folder");
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

Test(safetensors_bad, every_truncation_is_refused)
{
    clmad_context *ctx = test_context();
    clmad_tensor *t = target(ctx);
    const char *dir = test_fresh_dir("st-trunc");
    char good[1200], cut[1200];
    snprintf(good, sizeof good, "%s/good.safetensors", dir);
    snprintf(cut, sizeof cut, "%s/cut.safetensors", dir);
    clmad_tensor *u = target(ctx);
    const char *names[] = {"w"}, *meta[] = {"m", "x", NULL};
    CHECK_OK(ctx, clmad_save(good, names, &u, 1, meta));
    size_t size;
    unsigned char *bytes = read_bytes(good, &size);
    for (size_t n = 0; n < size; n++) {
        write_bytes(cut, bytes, n);
        char what[64];
        snprintf(what, sizeof what, "%zu of %zu bytes", n, size);
        expect_refused(ctx, t, cut, CLMAD_ERR_IO, "", what);
    }
    free(bytes);
    clmad_tensor_release(u);
    clmad_tensor_release(t);
    clmad_context_release(ctx);
}

Test(safetensors_bad, load_checks_names_shapes_and_dtypes_before_writing)
{
    clmad_context *ctx = test_context();
    const char *dir = test_fresh_dir("st-load");
    char path[1200];
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    write_file(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                     "\"v\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[8,16]},"
                     "\"d\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[16,32]}}", filler, 32);
    clmad_tensor *t[2] = {target(ctx), target(ctx)};
    const char *missing[] = {"w", "nope"}, *reshaped[] = {"w", "v"}, *retyped[] = {"w", "d"};
    cr_assert_eq(clmad_load(ctx, path, missing, t, 2), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "no tensor \"nope\" in the file"), "%s", clmad_last_error(ctx));
    cr_assert_eq(clmad_load(ctx, path, reshaped, t, 2), CLMAD_ERR_SHAPE);
    cr_assert(test_contains(clmad_last_error(ctx), "\"v\" has shape (1, 2) in the file, tensors[1] has (2,)"), "%s",
              clmad_last_error(ctx));
    cr_assert_eq(clmad_load(ctx, path, retyped, t, 2), CLMAD_ERR_DTYPE);
    cr_assert(test_contains(clmad_last_error(ctx), "\"d\" is F64 in the file, F32 in tensors[1]"), "%s",
              clmad_last_error(ctx));
    expect_unchanged(ctx, t[0]);
    expect_unchanged(ctx, t[1]);
    cr_assert_eq(clmad_load(ctx, path, NULL, t, 1), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_load(NULL, path, missing, t, 1), CLMAD_ERR_INVALID_ARGUMENT);
    /* A tensor of another context. */
    clmad_context *other = test_context();
    cr_assert_eq(clmad_load(other, path, missing, t, 1), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(other), "tensors[0] belongs to another context"), "%s",
              clmad_last_error(other));
    clmad_context_release(other);
    /* A tensor the tape holds. */
    CHECK_OK(ctx, clmad_tensor_set_requires_grad(t[0], 1));
    clmad_tensor *y = NULL;
    CHECK_OK(ctx, clmad_exp(ctx, t[0], &y));
    cr_assert_eq(clmad_load(ctx, path, missing, t, 1), CLMAD_ERR_STATE);
    clmad_tape_clear(ctx);
    CHECK_OK(ctx, clmad_load(ctx, path, missing, t, 1));
    float got[2];
    CHECK_OK(ctx, clmad_tensor_read(t[0], got, sizeof got));
    cr_assert_eq(memcmp(got, filler, 8), 0);
    clmad_tensor_release(y);
    clmad_tensor_release(t[0]);
    clmad_tensor_release(t[1]);
    clmad_context_release(ctx);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(safetensors_bad, save_refuses_bad_arguments_and_keeps_the_old_file)
{
    clmad_context *ctx = test_context();
    const char *dir0 = test_fresh_dir("st-save");
    char dir[1100], path[1200], sub[1200];
    snprintf(dir, sizeof dir, "%s", dir0);
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    clmad_tensor *t[2] = {target(ctx), target(ctx)};
    const char *names[] = {"w", "v"};
    CHECK_OK(ctx, clmad_save(path, names, t, 2, NULL));
    size_t size0;
    unsigned char *before = read_bytes(path, &size0);
    const char *twice[] = {"w", "w"}, *reserved[] = {"__metadata__", "v"}, *latin1[] = {"caf\xe9", "v"},
               *null_name[] = {"w", NULL};
    const char *odd_meta[] = {"k", NULL}, *meta_twice[] = {"k", "1", "k", "2", NULL};
    cr_assert_eq(clmad_save(path, twice, t, 2, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "names[0] and names[1] are both \"w\""), "%s",
              clmad_last_error(ctx));
    cr_assert_eq(clmad_save(path, reserved, t, 2, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "__metadata__"), "%s", clmad_last_error(ctx));
    cr_assert_eq(clmad_save(path, latin1, t, 2, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert(test_contains(clmad_last_error(ctx), "not UTF-8"), "%s", clmad_last_error(ctx));
    cr_assert_eq(clmad_save(path, null_name, t, 2, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_save(path, names, t, 1, odd_meta), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_save(path, names, t, 1, meta_twice), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clmad_save(NULL, names, t, 1, NULL), CLMAD_ERR_INVALID_ARGUMENT);
    /* A folder that does not exist; a target that is a folder (the rename fails). */
    snprintf(sub, sizeof sub, "%s/no/such/folder/m.safetensors", dir);
    cr_assert_eq(clmad_save(sub, names, t, 2, NULL), CLMAD_ERR_IO);
    cr_assert(test_contains(clmad_last_error(ctx), "cannot create a temporary file"), "%s", clmad_last_error(ctx));
    snprintf(sub, sizeof sub, "%s/folder", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    cr_assert_eq(clmad_save(sub, names, t, 2, NULL), CLMAD_ERR_IO);
    cr_assert(test_contains(clmad_last_error(ctx), "cannot rename"), "%s", clmad_last_error(ctx));
    /* Nothing left behind, the old file as it was. */
    cr_assert_eq(count_entries(dir), 2, "a temporary file was left in %s", dir);
    size_t size1;
    unsigned char *after = read_bytes(path, &size1);
    cr_assert(size0 == size1 && memcmp(before, after, size0) == 0);
    free(before);
    free(after);
    /* A file of metadata only. */
    const char *meta[] = {"k", "v", NULL};
    CHECK_OK(NULL, clmad_save(path, NULL, NULL, 0, meta));
    clmad_safetensors *f = NULL;
    CHECK_OK(NULL, clmad_safetensors_open(path, &f));
    cr_assert_eq(clmad_safetensors_count(f), 0);
    cr_assert_str_eq(clmad_safetensors_metadata(f, "k"), "v");
    clmad_safetensors_close(f);
    clmad_tensor_release(t[0]);
    clmad_tensor_release(t[1]);
    clmad_context_release(ctx);
}

static const char interesting[] = "{}[]\":,\\0123456789 eu-.\xff";

/* Random mutations of a good file: each open succeeds or fails cleanly,
 * and what opens reads. No crash, no leak, nothing read out of bounds. */
Test(safetensors_bad, random_mutations_never_crash)
{
    clmad_context *ctx = test_context();
    const char *dir = test_fresh_dir("st-fuzz");
    char good[1200], bad[1200];
    snprintf(good, sizeof good, "%s/good.safetensors", dir);
    snprintf(bad, sizeof bad, "%s/bad.safetensors", dir);
    clmad_tensor *t[3] = {target(ctx), target(ctx), NULL};
    CHECK_OK(ctx, clmad_tensor_scalar(ctx, CLMAD_F32, 1.5, &t[2]));
    const char *names[] = {"a.weight", "b\\u", "s"}, *meta[] = {"format", "pt", "x", "\xc3\xa9", NULL};
    CHECK_OK(ctx, clmad_save(good, names, t, 3, meta));
    size_t size;
    unsigned char *bytes = read_bytes(good, &size);
    unsigned char *m = malloc(2 * size + 64);
    uint64_t seed = 88172645463325252ULL;
    int opened = 0, refused = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(m, bytes, size);
        size_t n = size;
        int edits = 1 + (int)(seed % 3);
        for (int e = 0; e < edits; e++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            size_t at = (size_t)(seed >> 20) % n;
            switch ((seed >> 8) % 5) {
            case 0: m[at] ^= (unsigned char)(1u << ((seed >> 3) % 8)); break;
            case 1: m[at] = (unsigned char)interesting[(seed >> 11) % (sizeof interesting - 1)]; break;
            case 2: n = at; break;
            case 3: if (n + 8 < 2 * size) { memmove(m + at + 4, m + at, n - at); n += 4; } break;
            case 4: m[(seed >> 40) % 8] = (unsigned char)(seed >> 48); break; /* the length field */
            }
            if (n == 0)
                break;
        }
        write_bytes(bad, m, n);
        clmad_safetensors *f = NULL;
        clmad_status st = clmad_safetensors_open(bad, &f);
        cr_assert(st == CLMAD_OK || st == CLMAD_ERR_IO || st == CLMAD_ERR_UNSUPPORTED, "iteration %d: %s", iter,
                  clmad_status_string(st));
        if (st != CLMAD_OK) {
            cr_assert(clmad_last_error(NULL)[0], "iteration %d: no message", iter);
            refused++;
            continue;
        }
        opened++;
        for (size_t i = 0; i < clmad_safetensors_count(f); i++) {
            clmad_safetensors_entry e;
            CHECK_OK(NULL, clmad_safetensors_entry_at(f, i, &e));
            clmad_tensor *x = NULL;
            st = clmad_safetensors_read(ctx, f, e.name, &x);
            cr_assert(st == CLMAD_OK || !e.supported || st == CLMAD_ERR_OUT_OF_MEMORY, "iteration %d: %s", iter,
                      clmad_last_error(ctx));
            clmad_tensor_release(x);
        }
        clmad_safetensors_close(f);
    }
    cr_log_info("mutations: %d opened, %d refused", opened, refused);
    cr_assert(opened > 0 && refused > 0);
    free(m);
    free(bytes);
    for (int i = 0; i < 3; i++)
        clmad_tensor_release(t[i]);
    clmad_context_release(ctx);
}
