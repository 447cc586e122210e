/* SPDX-License-Identifier: Apache-2.0 */
#include "runtime/device.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void info_string(cl_device_id d, cl_device_info what, char *dst, size_t cap)
{
    dst[0] = '\0';
    if (clGetDeviceInfo(d, what, cap, dst, NULL) != CL_SUCCESS)
        snprintf(dst, cap, "(unknown)");
    dst[cap - 1] = '\0';
}

void clmad__device_fill_info(cl_platform_id p, cl_device_id d, int pi, int di, clmad_device_info *out)
{
    memset(out, 0, sizeof *out);
    out->platform_index = pi;
    out->device_index = di;
    if (clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof out->platform_name, out->platform_name, NULL) != CL_SUCCESS)
        snprintf(out->platform_name, sizeof out->platform_name, "(unknown)");
    out->platform_name[sizeof out->platform_name - 1] = '\0';
    info_string(d, CL_DEVICE_NAME, out->name, sizeof out->name);
    info_string(d, CL_DEVICE_VENDOR, out->vendor, sizeof out->vendor);
    info_string(d, CL_DEVICE_VERSION, out->version, sizeof out->version);
    info_string(d, CL_DRIVER_VERSION, out->driver_version, sizeof out->driver_version);

    cl_device_type type = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    /* A device that claims more than one kind (Oclgrind, a simulator, says
     * CPU, GPU and accelerator at once) is none of them: "other", so that
     * the default choice (first GPU) does not fall on it. */
    const cl_device_type kinds = type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_ACCELERATOR);
    out->type = kinds == CL_DEVICE_TYPE_GPU           ? CLMAD_DEVICE_GPU
                : kinds == CL_DEVICE_TYPE_CPU         ? CLMAD_DEVICE_CPU
                : kinds == CL_DEVICE_TYPE_ACCELERATOR ? CLMAD_DEVICE_ACCELERATOR
                                                      : CLMAD_DEVICE_OTHER;
    cl_uint cu = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    out->compute_units = cu;
    cl_ulong mem = 0, alloc = 0;
    clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof alloc, &alloc, NULL);
    out->global_mem_bytes = mem;
    out->max_alloc_bytes = alloc;
    size_t wg = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    out->max_work_group_size = wg;
    /* CL_DEVICE_DOUBLE_FP_CONFIG is non-zero exactly when fp64 is supported. */
    cl_device_fp_config fp = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL) != CL_SUCCESS)
        fp = 0;
    out->fp64 = fp != 0;
    cl_bool unified = CL_FALSE;
    if (clGetDeviceInfo(d, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL) != CL_SUCCESS)
        unified = CL_FALSE;
    out->host_unified_memory = unified != CL_FALSE;
}

/* Device enumeration is serialised process-wide: POCL 3.1 initialises its
 * devices on the first clGetDeviceIDs and is not safe against a second
 * thread enumerating meanwhile (it crashes or reports no device). Contexts
 * on separate threads are promised to be independent, so clmad hides it. */
static pthread_mutex_t enumerate_lock = PTHREAD_MUTEX_INITIALIZER;

static clmad_status enumerate_devices_locked(clmad_device_entry **entries, size_t *count);

clmad_status clmad__enumerate_devices(clmad_device_entry **entries, size_t *count)
{
    pthread_mutex_lock(&enumerate_lock);
    clmad_status st = enumerate_devices_locked(entries, count);
    pthread_mutex_unlock(&enumerate_lock);
    return st;
}

static clmad_status enumerate_devices_locked(clmad_device_entry **entries, size_t *count)
{
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR: the loader found no ICD */ || np == 0) {
        *entries = NULL;
        *count = 0;
        return CLMAD_OK;
    }
    if (err != CL_SUCCESS)
        return clmad__fail_cl(NULL, err, "clGetPlatformIDs");

    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats)
        return clmad__fail(NULL, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory listing platforms");
    clGetPlatformIDs(np, plats, NULL);

    clmad_device_entry *list = NULL;
    size_t n = 0;
    clmad_status st = CLMAD_OK;
    for (cl_uint p = 0; p < np && st == CLMAD_OK; p++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0)
            continue; /* a platform without usable devices is skipped, not an error */
        cl_device_id *ids = calloc(nd, sizeof *ids);
        clmad_device_entry *grown = realloc(list, (n + nd) * sizeof *list);
        if (!ids || !grown) {
            free(ids);
            if (grown)
                list = grown;
            st = clmad__fail(NULL, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory listing devices");
            break;
        }
        list = grown;
        clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL);
        for (cl_uint d = 0; d < nd; d++) {
            list[n].platform = plats[p];
            list[n].device = ids[d];
            clmad__device_fill_info(plats[p], ids[d], (int)p, (int)d, &list[n].info);
            n++;
        }
        free(ids);
    }
    free(plats);
    if (st != CLMAD_OK) {
        free(list);
        return st;
    }
    *entries = list;
    *count = n;
    return CLMAD_OK;
}

const char *clmad_device_type_name(clmad_device_type t)
{
    switch (t) {
    case CLMAD_DEVICE_CPU: return "cpu";
    case CLMAD_DEVICE_GPU: return "gpu";
    case CLMAD_DEVICE_ACCELERATOR: return "accelerator";
    default: return "other";
    }
}

void clmad__describe_devices(const clmad_device_info *list, size_t count, char *buf, size_t cap)
{
    size_t used = strlen(buf);
    if (count == 0 && used < cap)
        snprintf(buf + used, cap - used, "\n  (the OpenCL ICD loader reports no device)");
    for (size_t i = 0; i < count && used < cap; i++) {
        snprintf(buf + used, cap - used, "\n  %d:%d %s (%s, %s)", list[i].platform_index,
                 list[i].device_index, list[i].name, clmad_device_type_name(list[i].type),
                 list[i].platform_name);
        used = strlen(buf);
    }
}

clmad_status clmad_device_list(clmad_device_info **list, size_t *count)
{
    if (!list || !count)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_device_list: NULL argument");
    clmad_device_entry *entries = NULL;
    size_t n = 0;
    clmad_status st = clmad__enumerate_devices(&entries, &n);
    if (st != CLMAD_OK)
        return st;
    clmad_device_info *infos = NULL;
    if (n > 0) {
        infos = malloc(n * sizeof *infos);
        if (!infos) {
            free(entries);
            return clmad__fail(NULL, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory listing devices");
        }
        for (size_t i = 0; i < n; i++)
            infos[i] = entries[i].info;
    }
    free(entries);
    *list = infos;
    *count = n;
    return CLMAD_OK;
}

void clmad_device_list_free(clmad_device_info *list)
{
    free(list);
}

static int contains_ignoring_case(const char *hay, const char *needle)
{
    size_t hn = strlen(hay), nn = strlen(needle);
    for (size_t i = 0; i + nn <= hn; i++) {
        size_t k = 0;
        while (k < nn && tolower((unsigned char)hay[i + k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == nn)
            return 1;
    }
    return 0;
}

static int equals_ignoring_case(const char *a, const char *b)
{
    while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b))
        a++, b++;
    return *a == '\0' && *b == '\0';
}

/* Parses "P:D"; returns 1 and the two indices when spec has that form. */
static int parse_index_pair(const char *spec, int *p, int *d)
{
    char tail;
    return sscanf(spec, "%d:%d%c", p, d, &tail) == 2 && *p >= 0 && *d >= 0;
}

clmad_status clmad_device_choose(const clmad_device_info *list, size_t count, const char *spec,
                                 size_t *index)
{
    if ((!list && count > 0) || !index)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_device_choose: NULL argument");
    int p, d;
    for (size_t i = 0; i < count; i++) {
        int match;
        if (!spec || !spec[0])
            match = list[i].type == CLMAD_DEVICE_GPU;
        else if (parse_index_pair(spec, &p, &d))
            match = list[i].platform_index == p && list[i].device_index == d;
        else if (equals_ignoring_case(spec, "gpu"))
            match = list[i].type == CLMAD_DEVICE_GPU;
        else if (equals_ignoring_case(spec, "cpu"))
            match = list[i].type == CLMAD_DEVICE_CPU;
        else
            match = contains_ignoring_case(list[i].name, spec);
        if (match) {
            *index = i;
            return CLMAD_OK;
        }
    }
    if ((!spec || !spec[0]) && count > 0) {
        *index = 0; /* default: no GPU, so the first device */
        return CLMAD_OK;
    }
    char msg[4096];
    snprintf(msg, sizeof msg, "no OpenCL device matches \"%s\" (forms: P:D, gpu, cpu, or part of a device name); devices:",
             spec ? spec : "");
    clmad__describe_devices(list, count, msg, sizeof msg);
    return clmad__fail(NULL, CLMAD_ERR_NO_DEVICE, "%s", msg);
}
