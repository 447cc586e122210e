/* SPDX-License-Identifier: Apache-2.0 */
/* The header's layout and constants as this library was built with them
 * (clmad.h: clmad_abi_struct_size, clmad_abi_field, clmad_abi_constant),
 * for bindings that copy them by hand and check their copies. */
#include <stddef.h>
#include <string.h>

#include "clmad.h"
#include "runtime/error.h"

typedef struct {
    const char *name;
    size_t size;
} abi_struct;

#define STRUCT(type) {#type, sizeof(type)},
static const abi_struct structs[] = {
    STRUCT(clmad_device_info) STRUCT(clmad_options) STRUCT(clmad_tuning) STRUCT(clmad_stats)
    STRUCT(clmad_optimizer_options) STRUCT(clmad_grad_scaler_options) STRUCT(clmad_safetensors_entry)
};

typedef struct {
    const char *type, *name;
    size_t offset, size;
} abi_field;

#define FIELD(type, field) {#type, #field, offsetof(type, field), sizeof(((type *)0)->field)},
#define DEVICE_INFO(f) FIELD(clmad_device_info, f)
#define OPTIONS(f) FIELD(clmad_options, f)
#define TUNING(f) FIELD(clmad_tuning, f)
#define STATS(f) FIELD(clmad_stats, f)
#define OPTIMIZER(f) FIELD(clmad_optimizer_options, f)
#define SCALER(f) FIELD(clmad_grad_scaler_options, f)
#define ENTRY(f) FIELD(clmad_safetensors_entry, f)
static const abi_field fields[] = {
    DEVICE_INFO(platform_index) DEVICE_INFO(device_index) DEVICE_INFO(platform_name) DEVICE_INFO(name)
    DEVICE_INFO(vendor) DEVICE_INFO(version) DEVICE_INFO(driver_version) DEVICE_INFO(type)
    DEVICE_INFO(compute_units) DEVICE_INFO(global_mem_bytes) DEVICE_INFO(max_alloc_bytes)
    DEVICE_INFO(max_work_group_size) DEVICE_INFO(fp64) DEVICE_INFO(host_unified_memory)

    OPTIONS(device) OPTIONS(cache_dir) OPTIONS(disable_fp64) OPTIONS(pool_limit_bytes) OPTIONS(chunk_cap)
    OPTIONS(retain_tape) OPTIONS(disable_grad) OPTIONS(partials_policy) OPTIONS(disable_fusion)

    TUNING(items_per_work_item) TUNING(chunk_cap) TUNING(inline_pragma) TUNING(origin)

    STATS(programs_compiled) STATS(programs_from_disk) STATS(program_memory_hits) STATS(disk_cache_rejected)
    STATS(live_tensor_bytes) STATS(pool_bytes) STATS(pool_hits) STATS(pool_misses) STATS(tape_nodes)
    STATS(tape_saved_bytes) STATS(kernels_launched) STATS(bytes_moved) STATS(disk_cache_write_failures)
    STATS(disk_cache_problem) STATS(programs_live) STATS(fused_losses) STATS(fusion_fallbacks)
    STATS(fused_regions)

    OPTIMIZER(kind) OPTIMIZER(lr) OPTIMIZER(momentum) OPTIMIZER(nesterov) OPTIMIZER(beta1) OPTIMIZER(beta2)
    OPTIMIZER(eps) OPTIMIZER(weight_decay)

    SCALER(init_scale) SCALER(growth_factor) SCALER(backoff_factor) SCALER(growth_interval)

    ENTRY(name) ENTRY(file_dtype) ENTRY(supported) ENTRY(dtype) ENTRY(ndim) ENTRY(shape)
};

typedef struct {
    const char *name;
    int64_t value;
} abi_constant;

#define CONSTANT(name) {#name, (int64_t)(name)},
#define STATUS(name, value, text) CONSTANT(name)
#define PARAM(id, value, field, lowest, highest) CONSTANT(id)
static const abi_constant constants[] = {
    CLMAD_STATUS_LIST(STATUS)
    CLMAD_CONTEXT_PARAMS(PARAM)
    CONSTANT(CLMAD_DEVICE_OTHER) CONSTANT(CLMAD_DEVICE_CPU) CONSTANT(CLMAD_DEVICE_GPU)
    CONSTANT(CLMAD_DEVICE_ACCELERATOR)
    CONSTANT(CLMAD_PARTIALS_AUTO) CONSTANT(CLMAD_PARTIALS_STORE) CONSTANT(CLMAD_PARTIALS_RECOMPUTE)
    CONSTANT(CLMAD_F32) CONSTANT(CLMAD_F64) CONSTANT(CLMAD_I32) CONSTANT(CLMAD_I64) CONSTANT(CLMAD_U8)
    CONSTANT(CLMAD_F16) CONSTANT(CLMAD_BF16)
    CONSTANT(CLMAD_LT) CONSTANT(CLMAD_LE) CONSTANT(CLMAD_GT) CONSTANT(CLMAD_GE) CONSTANT(CLMAD_EQ)
    CONSTANT(CLMAD_NE)
    CONSTANT(CLMAD_OPTIM_SGD) CONSTANT(CLMAD_OPTIM_ADAM) CONSTANT(CLMAD_OPTIM_ADAMW)
    CONSTANT(CLMAD_MAX_DIMS) CONSTANT(CLMAD_VERSION_HEX)
    CONSTANT(CLMAD_WARM_UP_PROGRAMS) CONSTANT(CLMAD_WARM_UP_GEMM) CONSTANT(CLMAD_WARM_UP_TRAINING)
    CONSTANT(CLMAD_WARM_UP_ALL)
};

#define COUNT(array) (sizeof(array) / sizeof(array[0]))

clmad_status clmad_abi_struct_size(const char *struct_name, size_t *size)
{
    if (!struct_name || !size)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_abi_struct_size: NULL argument");
    for (size_t i = 0; i < COUNT(structs); i++)
        if (strcmp(structs[i].name, struct_name) == 0) {
            *size = structs[i].size;
            return CLMAD_OK;
        }
    return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_abi_struct_size: no struct %s in clmad.h",
                       struct_name);
}

clmad_status clmad_abi_field(const char *struct_name, const char *field, size_t *offset, size_t *size)
{
    if (!struct_name || !field || !offset || !size)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_abi_field: NULL argument");
    for (size_t i = 0; i < COUNT(fields); i++)
        if (strcmp(fields[i].type, struct_name) == 0 && strcmp(fields[i].name, field) == 0) {
            *offset = fields[i].offset;
            *size = fields[i].size;
            return CLMAD_OK;
        }
    return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_abi_field: no field %s.%s in clmad.h",
                       struct_name, field);
}

clmad_status clmad_abi_constant(const char *name, int64_t *value)
{
    if (!name || !value)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_abi_constant: NULL argument");
    for (size_t i = 0; i < COUNT(constants); i++)
        if (strcmp(constants[i].name, name) == 0) {
            *value = constants[i].value;
            return CLMAD_OK;
        }
    return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_abi_constant: no constant %s in clmad.h", name);
}
