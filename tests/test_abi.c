/* SPDX-License-Identifier: Apache-2.0 */
/* The public ABI (issue 14, item 4): clmad_set_error, through which
 * components built on clmad (clmad_mpi) report their failures without
 * clmad's internals, and the version at run time. tests/abi_exports.sh
 * checks what the shared libraries export. */
#include "support.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

Test(abi, set_error_on_a_context)
{
    clmad_context *ctx = test_context();
    cr_assert_eq(clmad_set_error(ctx, CLMAD_ERR_SHAPE, "mylib_step: %d of %s", 3, "x"), CLMAD_ERR_SHAPE);
    cr_assert_str_eq(clmad_last_error(ctx), "mylib_step: 3 of x");
    /* The next failure, clmad's own or another component's, replaces it. */
    size_t shape[1] = {2};
    clmad_tensor *t = NULL;
    cr_assert_eq(clmad_tensor_create(ctx, (clmad_dtype)7, 1, shape, NULL, &t), CLMAD_ERR_INVALID_ARGUMENT);
    cr_assert_null(t);
    cr_assert(!test_contains(clmad_last_error(ctx), "mylib_step"), "%s", clmad_last_error(ctx));
    cr_assert_eq(clmad_set_error(ctx, CLMAD_ERR_IO, "%s", "again"), CLMAD_ERR_IO);
    cr_assert_str_eq(clmad_last_error(ctx), "again");
    cr_assert_eq(clmad_set_error(ctx, CLMAD_ERR_IO, NULL), CLMAD_ERR_IO);
    cr_assert_str_eq(clmad_last_error(ctx), "(no message)");
    clmad_context_release(ctx);
}

Test(abi, set_error_on_the_thread)
{
    clmad_context *ctx = test_context();
    clmad_set_error(ctx, CLMAD_ERR_STATE, "on the context");
    /* A message longer than any before it is kept whole. */
    char long_text[4000];
    memset(long_text, 'y', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    cr_assert_eq(clmad_set_error(NULL, CLMAD_ERR_NO_DEVICE, "thread: %s", long_text), CLMAD_ERR_NO_DEVICE);
    cr_assert_eq(strlen(clmad_last_error(NULL)), strlen("thread: ") + sizeof long_text - 1);
    /* The newer failure is the one clmad_last_error(ctx) gives (issue 24):
     * a message without a context, until ctx fails again. */
    cr_assert_str_eq(clmad_last_error(ctx), clmad_last_error(NULL));
    clmad_set_error(ctx, CLMAD_ERR_STATE, "on the context");
    cr_assert_str_eq(clmad_last_error(ctx), "on the context");
    cr_assert_str_eq(clmad_last_error(NULL), "on the context");
    clmad_context_release(ctx);
}

Test(abi, version_at_run_time)
{
    cr_assert_eq(clmad_version(), (unsigned)CLMAD_VERSION_HEX);
    cr_assert_eq(clmad_version(), (CLMAD_VERSION_MAJOR << 16u) | (CLMAD_VERSION_MINOR << 8u) | CLMAD_VERSION_PATCH);
    char text[64];
    snprintf(text, sizeof text, "%d.%d.%d", CLMAD_VERSION_MAJOR, CLMAD_VERSION_MINOR, CLMAD_VERSION_PATCH);
    cr_assert_str_eq(clmad_version_string(), text);
    cr_assert_str_eq(CLMAD_VERSION_STRING, text);
}

/* clmad_abi_*: the layout and constants bindings check their copies
 * against (the Python package does, at import). Each struct's size and
 * every field's offset and size are this header's, as this test was
 * compiled with it. */
#define EXPECT_STRUCT(type)                                                                   \
    do {                                                                                      \
        size_t size_ = 0;                                                                     \
        cr_expect_eq(clmad_abi_struct_size(#type, &size_), CLMAD_OK, "%s", clmad_last_error(NULL)); \
        cr_expect_eq(size_, sizeof(type), #type ": %zu, not %zu", size_, sizeof(type));      \
    } while (0)
#define EXPECT_FIELD(type, field)                                                             \
    do {                                                                                      \
        size_t offset_ = 0, size_ = 0;                                                        \
        cr_expect_eq(clmad_abi_field(#type, #field, &offset_, &size_), CLMAD_OK, "%s",        \
                     clmad_last_error(NULL));                                                 \
        cr_expect_eq(offset_, offsetof(type, field), #type "." #field ": offset %zu", offset_); \
        cr_expect_eq(size_, sizeof(((type *)0)->field), #type "." #field ": size %zu", size_); \
    } while (0)

Test(abi, struct_layouts)
{
    EXPECT_STRUCT(clmad_device_info);
    EXPECT_STRUCT(clmad_options);
    EXPECT_STRUCT(clmad_tuning);
    EXPECT_STRUCT(clmad_stats);
    EXPECT_STRUCT(clmad_optimizer_options);
    EXPECT_STRUCT(clmad_safetensors_entry);
    EXPECT_FIELD(clmad_device_info, platform_index);
    EXPECT_FIELD(clmad_device_info, name);
    EXPECT_FIELD(clmad_device_info, type);
    EXPECT_FIELD(clmad_device_info, max_work_group_size);
    EXPECT_FIELD(clmad_device_info, fp64);
    EXPECT_FIELD(clmad_device_info, host_unified_memory);
    EXPECT_FIELD(clmad_options, device);
    EXPECT_FIELD(clmad_options, pool_limit_bytes);
    EXPECT_FIELD(clmad_options, partials_policy);
    EXPECT_FIELD(clmad_options, disable_fusion);
    EXPECT_FIELD(clmad_tuning, inline_pragma);
    EXPECT_FIELD(clmad_tuning, origin);
    EXPECT_FIELD(clmad_stats, programs_compiled);
    EXPECT_FIELD(clmad_stats, disk_cache_problem);
    EXPECT_FIELD(clmad_stats, fusion_fallbacks);
    EXPECT_FIELD(clmad_optimizer_options, kind);
    EXPECT_FIELD(clmad_optimizer_options, nesterov);
    EXPECT_FIELD(clmad_optimizer_options, weight_decay);
    EXPECT_FIELD(clmad_safetensors_entry, file_dtype);
    EXPECT_FIELD(clmad_safetensors_entry, shape);
    /* Each struct's fields, in order, fill it but for padding: a gap before
     * a field is less than its alignment (at most 8, the largest power of
     * two dividing its size), so no field is missing from the table. */
    static const struct {
        const char *type;
        const char *fields[20];
    } all[] = {
        {"clmad_device_info", {"platform_index", "device_index", "platform_name", "name", "vendor", "version",
                               "driver_version", "type", "compute_units", "global_mem_bytes", "max_alloc_bytes",
                               "max_work_group_size", "fp64", "host_unified_memory"}},
        {"clmad_options", {"device", "cache_dir", "disable_fp64", "pool_limit_bytes", "chunk_cap", "retain_tape",
                           "disable_grad", "partials_policy", "disable_fusion"}},
        {"clmad_tuning", {"items_per_work_item", "chunk_cap", "inline_pragma", "origin"}},
        {"clmad_stats", {"programs_compiled", "programs_from_disk", "program_memory_hits", "disk_cache_rejected",
                         "live_tensor_bytes", "pool_bytes", "pool_hits", "pool_misses", "tape_nodes",
                         "tape_saved_bytes", "kernels_launched", "bytes_moved", "disk_cache_write_failures",
                         "disk_cache_problem", "programs_live", "fused_losses", "fusion_fallbacks", "fused_regions"}},
        {"clmad_optimizer_options", {"kind", "lr", "momentum", "nesterov", "beta1", "beta2", "eps",
                                     "weight_decay"}},
        {"clmad_safetensors_entry", {"name", "file_dtype", "supported", "dtype", "ndim", "shape"}},
    };
    for (size_t s = 0; s < sizeof all / sizeof all[0]; s++) {
        size_t struct_size = 0, end = 0;
        cr_assert_eq(clmad_abi_struct_size(all[s].type, &struct_size), CLMAD_OK);
        for (int f = 0; all[s].fields[f]; f++) {
            size_t offset = 0, size = 0;
            cr_assert_eq(clmad_abi_field(all[s].type, all[s].fields[f], &offset, &size), CLMAD_OK, "%s.%s",
                         all[s].type, all[s].fields[f]);
            size_t align = 8;
            while (size % align)
                align /= 2;
            cr_expect(offset >= end && offset - end < align, "%s.%s at %zu: the field before it ends at %zu",
                      all[s].type, all[s].fields[f], offset, end);
            end = offset + size;
        }
        cr_expect(end <= struct_size && struct_size - end < 8, "%s: fields end at %zu of %zu", all[s].type, end,
                  struct_size);
    }
}

Test(abi, constants)
{
    int64_t value = -1;
#define EXPECT_CONSTANT(name)                                                                 \
    cr_expect_eq(clmad_abi_constant(#name, &value), CLMAD_OK, "%s", clmad_last_error(NULL));  \
    cr_expect_eq(value, (int64_t)(name), #name ": %lld", (long long)value);
#define STATUS_ROW(name, v, text) EXPECT_CONSTANT(name)
#define PARAM_ROW(id, v, field, lowest, highest) EXPECT_CONSTANT(id)
    CLMAD_STATUS_LIST(STATUS_ROW)
    CLMAD_CONTEXT_PARAMS(PARAM_ROW)
    EXPECT_CONSTANT(CLMAD_DEVICE_OTHER)
    EXPECT_CONSTANT(CLMAD_DEVICE_ACCELERATOR)
    EXPECT_CONSTANT(CLMAD_PARTIALS_AUTO)
    EXPECT_CONSTANT(CLMAD_PARTIALS_RECOMPUTE)
    EXPECT_CONSTANT(CLMAD_F32)
    EXPECT_CONSTANT(CLMAD_F64)
    EXPECT_CONSTANT(CLMAD_I32)
    EXPECT_CONSTANT(CLMAD_I64)
    EXPECT_CONSTANT(CLMAD_U8)
    EXPECT_CONSTANT(CLMAD_LT)
    EXPECT_CONSTANT(CLMAD_NE)
    EXPECT_CONSTANT(CLMAD_OPTIM_SGD)
    EXPECT_CONSTANT(CLMAD_OPTIM_ADAMW)
    EXPECT_CONSTANT(CLMAD_MAX_DIMS)
    EXPECT_CONSTANT(CLMAD_VERSION_HEX)
}

Test(abi, unknown_names_are_refused_by_name)
{
    size_t size = 7, offset = 7;
    int64_t value = 7;
    cr_expect_eq(clmad_abi_struct_size("clmad_nothing", &size), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect(test_contains(clmad_last_error(NULL), "clmad_nothing"), "%s", clmad_last_error(NULL));
    cr_expect_eq(clmad_abi_field("clmad_stats", "pool_bites", &offset, &size), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect(test_contains(clmad_last_error(NULL), "clmad_stats.pool_bites"), "%s", clmad_last_error(NULL));
    cr_expect_eq(clmad_abi_field("clmad_options", "pool_bytes", &offset, &size), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_abi_constant("CLMAD_F8", &value), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect(test_contains(clmad_last_error(NULL), "CLMAD_F8"), "%s", clmad_last_error(NULL));
    cr_expect(size == 7 && offset == 7 && value == 7, "nothing written on a failure");
    cr_expect_eq(clmad_abi_struct_size(NULL, &size), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_abi_struct_size("clmad_stats", NULL), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_abi_field("clmad_stats", NULL, &offset, &size), CLMAD_ERR_INVALID_ARGUMENT);
    cr_expect_eq(clmad_abi_constant(NULL, &value), CLMAD_ERR_INVALID_ARGUMENT);
}
