/* SPDX-License-Identifier: Apache-2.0 */
/* Enumeration of OpenCL platforms and devices, and device choice. */
#ifndef CLMAD_DEVICE_H
#define CLMAD_DEVICE_H

#include "runtime/error.h"

/* One enumerated device with its OpenCL handles. */
typedef struct clmad_device_entry {
    clmad_device_info info;
    cl_platform_id platform;
    cl_device_id device;
} clmad_device_entry;

/* Lists every device of every platform; *entries is malloc'ed. Errors are
 * reported on this thread (clmad_last_error(NULL)). */
clmad_status clmad__enumerate_devices(clmad_device_entry **entries, size_t *count);

/* The facts of device d of platform p, whose indices are pi and di. */
void clmad__device_fill_info(cl_platform_id p, cl_device_id d, int pi, int di,
                             clmad_device_info *out);

/* Appends "P:D name (type)" lines for every device to buf (for messages). */
void clmad__describe_devices(const clmad_device_info *list, size_t count,
                             char *buf, size_t cap);

#endif
