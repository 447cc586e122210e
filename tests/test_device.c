/* SPDX-License-Identifier: Apache-2.0 */
/* Device choice: every form of CLMAD_DEVICE, the option, and the errors. */
#include "support.h"

#include <clmad_cl.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static clmad_device_info first_device(void)
{
    clmad_device_info *list = NULL;
    size_t n = 0;
    cr_assert_eq(clmad_device_list(&list, &n), CLMAD_OK, "%s", clmad_last_error(NULL));
    cr_assert_gt(n, 0, "the test machine must have an OpenCL device (POCL)");
    clmad_device_info d = list[0];
    clmad_device_list_free(list);
    return d;
}

static clmad_device_info context_device(clmad_context *ctx)
{
    clmad_device_info d;
    CHECK_OK(ctx, clmad_context_device(ctx, &d));
    return d;
}

Test(device, facts_are_filled)
{
    clmad_device_info d = first_device();
    cr_expect_gt(strlen(d.name), 0);
    cr_expect_gt(strlen(d.vendor), 0);
    cr_expect(test_contains(d.version, "OpenCL"), "version: %s", d.version);
    cr_expect_gt(strlen(d.driver_version), 0);
    cr_expect_gt(d.compute_units, 0);
    cr_expect_gt(d.global_mem_bytes, 0);
    cr_expect_gt(d.max_alloc_bytes, 0);
    cr_expect_leq(d.max_alloc_bytes, d.global_mem_bytes);
    cr_expect_gt(d.max_work_group_size, 0);
}

Test(device, default_choice_without_env)
{
    clmad_context *ctx = test_context();
    clmad_device_info d = context_device(ctx);
    clmad_device_info *list;
    size_t n, index;
    cr_assert_eq(clmad_device_list(&list, &n), CLMAD_OK);
    cr_assert_eq(clmad_device_choose(list, n, NULL, &index), CLMAD_OK);
    cr_expect_str_eq(d.name, list[index].name);
    clmad_device_list_free(list);
    clmad_context_release(ctx);
}

Test(device, env_index_pair)
{
    setenv("CLMAD_DEVICE", "0:0", 1);
    clmad_context *ctx = test_context();
    clmad_device_info d = context_device(ctx);
    cr_expect_eq(d.platform_index, 0);
    cr_expect_eq(d.device_index, 0);
    clmad_context_release(ctx);
}

/* On a machine whose only device is a GPU (the H100 behind the project's
 * device tool), "cpu" must be the same clear error as "gpu" without one. */
Test(device, env_cpu)
{
    clmad_device_info *list;
    size_t n;
    cr_assert_eq(clmad_device_list(&list, &n), CLMAD_OK);
    int has_cpu = 0;
    for (size_t i = 0; i < n; i++)
        has_cpu |= list[i].type == CLMAD_DEVICE_CPU;
    clmad_device_list_free(list);
    setenv("CLMAD_DEVICE", "CPU", 1); /* type names are case-insensitive */
    clmad_context *ctx = NULL;
    clmad_status st = clmad_context_create(NULL, &ctx);
    if (has_cpu) {
        cr_assert_eq(st, CLMAD_OK, "%s", clmad_last_error(NULL));
        cr_expect_eq(context_device(ctx).type, CLMAD_DEVICE_CPU);
        clmad_context_release(ctx);
    } else {
        cr_expect_eq(st, CLMAD_ERR_NO_DEVICE);
        cr_expect_null(ctx);
        cr_expect(test_contains(clmad_last_error(NULL), "\"CPU\""), "%s", clmad_last_error(NULL));
    }
}

Test(device, env_gpu_without_gpu_is_a_clear_error)
{
    clmad_device_info *list;
    size_t n;
    cr_assert_eq(clmad_device_list(&list, &n), CLMAD_OK);
    int has_gpu = 0;
    for (size_t i = 0; i < n; i++)
        has_gpu |= list[i].type == CLMAD_DEVICE_GPU;
    setenv("CLMAD_DEVICE", "gpu", 1);
    clmad_context *ctx = NULL;
    clmad_status st = clmad_context_create(NULL, &ctx);
    if (has_gpu) {
        cr_assert_eq(st, CLMAD_OK);
        cr_expect_eq(context_device(ctx).type, CLMAD_DEVICE_GPU);
        clmad_context_release(ctx);
    } else {
        cr_expect_eq(st, CLMAD_ERR_NO_DEVICE);
        cr_expect_null(ctx);
        cr_expect(test_contains(clmad_last_error(NULL), list[0].name), "%s", clmad_last_error(NULL));
    }
    clmad_device_list_free(list);
}

Test(device, env_name_substring_ignores_case)
{
    clmad_device_info d = first_device();
    /* A middle part of the name, upper-cased. */
    char part[64] = {0};
    size_t len = strlen(d.name), take = len > 8 ? 6 : len;
    size_t from = len > 8 ? 2 : 0;
    for (size_t i = 0; i < take; i++)
        part[i] = (char)toupper((unsigned char)d.name[from + i]);
    setenv("CLMAD_DEVICE", part, 1);
    clmad_context *ctx = test_context();
    cr_expect(test_contains(context_device(ctx).name, d.name + from));
    clmad_context_release(ctx);
}

Test(device, unknown_env_lists_devices)
{
    clmad_device_info d = first_device();
    setenv("CLMAD_DEVICE", "no-such-device-xyz", 1);
    clmad_context *ctx = NULL;
    clmad_status st = clmad_context_create(NULL, &ctx);
    cr_assert_eq(st, CLMAD_ERR_NO_DEVICE);
    cr_expect_null(ctx);
    const char *msg = clmad_last_error(NULL);
    cr_expect(test_contains(msg, "CLMAD_DEVICE"), "%s", msg);
    cr_expect(test_contains(msg, "no-such-device-xyz"), "%s", msg);
    cr_expect(test_contains(msg, d.name), "message should list the devices: %s", msg);
    cr_expect(test_contains(msg, "0:0"), "%s", msg);
}

Test(device, bad_index_pair_is_an_error)
{
    setenv("CLMAD_DEVICE", "7:3", 1);
    clmad_context *ctx = NULL;
    cr_expect_eq(clmad_context_create(NULL, &ctx), CLMAD_ERR_NO_DEVICE);
    cr_expect(test_contains(clmad_last_error(NULL), "7:3"));
}

Test(device, option_overrides_env)
{
    setenv("CLMAD_DEVICE", "no-such-device-xyz", 1);
    clmad_options opt;
    clmad_options_init(&opt);
    opt.device = "0:0";
    clmad_context *ctx = test_context_with(&opt);
    clmad_context_release(ctx);
}

Test(device, choose_prefers_gpu_then_first)
{
    clmad_device_info list[3];
    memset(list, 0, sizeof list);
    strcpy(list[0].name, "Some CPU");
    list[0].type = CLMAD_DEVICE_CPU;
    strcpy(list[1].name, "Fancy GPU");
    list[1].type = CLMAD_DEVICE_GPU;
    list[1].device_index = 1;
    strcpy(list[2].name, "Other GPU");
    list[2].type = CLMAD_DEVICE_GPU;
    list[2].platform_index = 1;
    size_t i = 99;
    cr_expect_eq(clmad_device_choose(list, 3, NULL, &i), CLMAD_OK);
    cr_expect_eq(i, 1);
    cr_expect_eq(clmad_device_choose(list, 3, "", &i), CLMAD_OK);
    cr_expect_eq(i, 1);
    cr_expect_eq(clmad_device_choose(list, 1, NULL, &i), CLMAD_OK);
    cr_expect_eq(i, 0);
    cr_expect_eq(clmad_device_choose(list, 3, "1:0", &i), CLMAD_OK);
    cr_expect_eq(i, 2);
    cr_expect_eq(clmad_device_choose(list, 3, "other", &i), CLMAD_OK);
    cr_expect_eq(i, 2);
    cr_expect_eq(clmad_device_choose(list, 3, "cpu", &i), CLMAD_OK);
    cr_expect_eq(i, 0);
    cr_expect_eq(clmad_device_choose(list, 3, "tpu", &i), CLMAD_ERR_NO_DEVICE);
    cr_expect(test_contains(clmad_last_error(NULL), "Fancy GPU"));
}

Test(device, status_strings)
{
    cr_expect_str_eq(clmad_status_string(CLMAD_OK), "CLMAD_OK");
    cr_expect_str_eq(clmad_status_string(CLMAD_ERR_BUILD), "CLMAD_ERR_BUILD");
    cr_expect_str_eq(clmad_status_string((clmad_status)999), "CLMAD_ERR_UNKNOWN");
}

Test(device, type_names)
{
    cr_expect_str_eq(clmad_device_type_name(CLMAD_DEVICE_CPU), "cpu");
    cr_expect_str_eq(clmad_device_type_name(CLMAD_DEVICE_GPU), "gpu");
    cr_expect_str_eq(clmad_device_type_name(CLMAD_DEVICE_ACCELERATOR), "accelerator");
    cr_expect_str_eq(clmad_device_type_name(CLMAD_DEVICE_OTHER), "other");
    cr_expect_str_eq(clmad_device_type_name((clmad_device_type)42), "other");
}

/* host_unified_memory is the device's CL_DEVICE_HOST_UNIFIED_MEMORY (the
 * Python package's DLPack tests take their expectations from it). */
Test(device, host_unified_memory_is_the_drivers)
{
    clmad_context *ctx = test_context();
    clmad_device_info d = context_device(ctx);
    cl_context context = NULL;
    cl_device_id device = NULL;
    cl_command_queue queue = NULL;
    CHECK_OK(ctx, clmad_context_get_cl(ctx, &context, &device, &queue));
    cl_bool unified = CL_FALSE;
    cr_assert_eq(clGetDeviceInfo(device, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL),
                 CL_SUCCESS);
    cr_expect_eq(d.host_unified_memory, unified ? 1 : 0);
    if (d.type == CLMAD_DEVICE_CPU)
        cr_expect_eq(d.host_unified_memory, 1, "a CPU device's memory is the host's");
    clmad_context_release(ctx);
}
