/* SPDX-License-Identifier: Apache-2.0 */
/* clmad_cl.h: contexts on the caller's OpenCL objects, the caller's buffers
 * as tensors, and the OpenCL objects behind clmad's. */
#include "runtime/device.h"
#include "runtime/tensor.h"
#include "runtime/context_guard.h"

#include <clmad_cl.h>

#include <stdio.h>
#include <stdlib.h>

/* CLMAD_ERR_INVALID_ARGUMENT for an OpenCL object the driver refused. */
static clmad_status bad_object(const clmad_context *ctx, const char *call, const char *what,
                               cl_int err)
{
    return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is not a valid OpenCL object (%s, %d)",
                       call, what, clmad__cl_error_name(err), (int)err);
}

/* *found = 1 if device is one of context's devices. */
static clmad_status context_has_device(cl_context context, cl_device_id device, int *found)
{
    static const char call[] = "clmad_context_create_cl";
    size_t bytes = 0;
    cl_int err = clGetContextInfo(context, CL_CONTEXT_DEVICES, 0, NULL, &bytes);
    if (err != CL_SUCCESS)
        return bad_object(NULL, call, "context", err);
    cl_device_id *ids = malloc(bytes ? bytes : 1);
    if (!ids)
        return clmad__fail(NULL, CLMAD_ERR_OUT_OF_MEMORY, "%s: out of host memory", call);
    err = clGetContextInfo(context, CL_CONTEXT_DEVICES, bytes, ids, NULL);
    *found = 0;
    for (size_t i = 0; err == CL_SUCCESS && i < bytes / sizeof *ids; i++)
        *found |= ids[i] == device;
    free(ids);
    return err == CL_SUCCESS ? CLMAD_OK : bad_object(NULL, call, "context", err);
}

/* The device's facts, with its "P:D" indices where the ICD loader lists it
 * (-1 for a device it does not list, such as a sub-device). */
static clmad_status describe_device(cl_platform_id platform, cl_device_id device,
                                    clmad_device_info *info)
{
    clmad__device_fill_info(platform, device, -1, -1, info);
    clmad_device_entry *entries = NULL;
    size_t n = 0;
    clmad_status st = clmad__enumerate_devices(&entries, &n);
    if (st != CLMAD_OK)
        return st;
    for (size_t i = 0; i < n; i++)
        if (entries[i].device == device) {
            info->platform_index = entries[i].info.platform_index;
            info->device_index = entries[i].info.device_index;
        }
    free(entries);
    return CLMAD_OK;
}

clmad_status clmad_context_create_cl(cl_context context, cl_device_id device,
                                     cl_command_queue queue, const clmad_options *options,
                                     clmad_context **out)
{
    static const char call[] = "clmad_context_create_cl";
    clmad__clear_thread_error();
    if (!out || !context || !device)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call,
                           !out ? "ctx" : !context ? "context" : "device");
    clmad_options defaults;
    clmad_options_init(&defaults);
    const clmad_options *opt = options ? options : &defaults;
    if (opt->device)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT,
                           "%s: opt->device must be NULL (the device is the one given)", call);
    clmad_status st = clmad__check_options(opt, call);
    if (st != CLMAD_OK)
        return st;

    clmad_device_entry dev = {0};
    dev.device = device;
    cl_int err = clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof dev.platform, &dev.platform, NULL);
    if (err != CL_SUCCESS)
        return bad_object(NULL, call, "device", err);
    int has = 0;
    st = context_has_device(context, device, &has);
    if (st != CLMAD_OK)
        return st;
    if (!has)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: device is not one of context's devices",
                           call);
    if (queue) {
        cl_context qc = NULL;
        cl_device_id qd = NULL;
        cl_command_queue_properties props = 0;
        err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qc, &qc, NULL);
        if (err == CL_SUCCESS)
            err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qd, &qd, NULL);
        if (err == CL_SUCCESS)
            err = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
        if (err != CL_SUCCESS)
            return bad_object(NULL, call, "queue", err);
        if (qc != context || qd != device)
            return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: queue belongs to another %s", call,
                               qc != context ? "context" : "device");
        if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
            return clmad__fail(NULL, CLMAD_ERR_UNSUPPORTED,
                               "%s: queue is out of order; clmad needs an in-order queue (its commands "
                               "rely on their order)",
                               call);
    }
    st = describe_device(dev.platform, device, &dev.info);
    if (st != CLMAD_OK)
        return st;
    return clmad__context_new(opt, &dev, context, queue, out);
}

clmad_status clmad_context_get_cl(const clmad_context *ctx, cl_context *context, cl_device_id *device,
                                  cl_command_queue *queue)
{
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_context_get_cl: ctx is NULL");
    if (context)
        *context = ctx->cl;
    if (device)
        *device = ctx->device;
    if (queue)
        *queue = ctx->queue;
    return CLMAD_OK;
}

/* Checks mem for a tensor of `bytes` bytes at offset; *base and *base_offset
 * receive the buffer a sub-buffer is to be made of and the offset in it. */
static clmad_status check_buffer(clmad_context *ctx, cl_mem mem, size_t offset, size_t bytes,
                                 cl_mem *base, size_t *base_offset, cl_mem_flags *flags)
{
    static const char call[] = "clmad_tensor_wrap_cl";
    cl_mem_object_type type = 0;
    cl_context owner = NULL;
    size_t size = 0;
    cl_int err = clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof type, &type, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof owner, &owner, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof *flags, flags, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof *base, base, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_OFFSET, sizeof *base_offset, base_offset, NULL);
    if (err != CL_SUCCESS)
        return bad_object(ctx, call, "mem", err);
    const cl_mem_flags kernel_access = CL_MEM_READ_WRITE | CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY;
    if (*base && !(*flags & kernel_access)) {
        /* A sub-buffer made without access flags has its parent's. */
        cl_mem_flags parent = 0;
        err = clGetMemObjectInfo(*base, CL_MEM_FLAGS, sizeof parent, &parent, NULL);
        if (err != CL_SUCCESS)
            return bad_object(ctx, call, "mem's parent buffer", err);
        *flags |= parent & kernel_access;
    }
    if (type != CL_MEM_OBJECT_BUFFER)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: mem is an image, not a buffer", call);
    if (owner != ctx->cl)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "%s: mem belongs to another OpenCL context than ctx's", call);
    if (*flags & CL_MEM_WRITE_ONLY)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "%s: mem is CL_MEM_WRITE_ONLY; clmad's kernels read tensors", call);
    if (offset > size || bytes > size - offset)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "%s: %zu bytes at offset %zu run past the end of mem (%zu bytes)", call,
                           bytes, offset, size);
    if (!*base) {
        *base = mem;
        *base_offset = 0;
    }
    *base_offset += offset;
    if (offset == 0 || bytes == 0)
        return CLMAD_OK;
    cl_uint align_bits = 0;
    err = clGetDeviceInfo(ctx->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    if (err != CL_SUCCESS)
        return clmad__fail_cl(ctx, err, "clGetDeviceInfo(CL_DEVICE_MEM_BASE_ADDR_ALIGN)");
    size_t align = align_bits / 8 ? align_bits / 8 : 1;
    if (*base_offset % align != 0) {
        char where[80] = "";
        if (*base != mem) /* mem is a sub-buffer: the offset counts in its parent */
            snprintf(where, sizeof where, " (%zu in mem's parent buffer)", *base_offset);
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT,
                           "%s: offset %zu%s is not a multiple of %zu bytes, the alignment of a "
                           "sub-buffer on device \"%s\" (CL_DEVICE_MEM_BASE_ADDR_ALIGN); wrap at an "
                           "aligned offset, or copy the elements to one",
                           call, offset, where, align, ctx->info.name);
    }
    return CLMAD_OK;
}

clmad_status clmad_tensor_wrap_cl(clmad_context *ctx, cl_mem mem, size_t offset, clmad_dtype dtype,
                                  int ndim, const size_t *shape, clmad_tensor **out)
{
    CLMAD_GUARD(ctx, "clmad_tensor_wrap_cl");
    static const char call[] = "clmad_tensor_wrap_cl";
    if (!ctx)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!mem || !out)
        return clmad__fail(ctx, CLMAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", call, !mem ? "mem" : "out");
    clmad_status st = clmad__check_open(ctx, call);
    if (st == CLMAD_OK)
        st = clmad__check_dtype(ctx, dtype);
    size_t numel = 0;
    if (st == CLMAD_OK)
        st = clmad__shape_numel(ctx, ndim, shape, clmad_dtype_size(dtype), &numel);
    if (st != CLMAD_OK)
        return st;
    size_t bytes = numel * clmad_dtype_size(dtype);
    cl_mem base = NULL;
    size_t base_offset = 0;
    cl_mem_flags flags = 0;
    st = check_buffer(ctx, mem, offset, bytes, &base, &base_offset, &flags);
    if (st != CLMAD_OK)
        return st;

    clmad_tensor *t = clmad__tensor_header(ctx, dtype, ndim, shape, numel);
    if (!t)
        return clmad__fail(ctx, CLMAD_ERR_OUT_OF_MEMORY, "out of host memory creating a tensor");
    t->mem = bytes ? mem : NULL;
    if (bytes && offset) {
        /* The sub-buffer is as accessible as mem itself, no more. */
        cl_mem_flags access = flags & (CL_MEM_READ_WRITE | CL_MEM_READ_ONLY | CL_MEM_HOST_WRITE_ONLY |
                                       CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS);
        cl_buffer_region region = {base_offset, bytes};
        cl_int err;
        t->mem = clCreateSubBuffer(base, access, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
        if (err != CL_SUCCESS) {
            free(t);
            return clmad__fail_cl(ctx, err, "clCreateSubBuffer");
        }
    }
    clRetainMemObject(mem);
    t->wrapped = mem;
    t->read_only = (flags & CL_MEM_READ_ONLY) != 0;
    t->wrapped_offset = offset;
    clmad__context_retain(ctx);
    *out = t;
    return CLMAD_OK;
}

clmad_status clmad_tensor_get_cl(const clmad_tensor *t, cl_mem *mem, size_t *offset)
{
    /* The guard writes held tensors (fusion): the caller's kernels may read
     * the buffer as soon as they have it. */
    CLMAD_GUARD(t ? t->ctx : NULL, "clmad_tensor_get_cl");
    if (!t)
        return clmad__fail(NULL, CLMAD_ERR_INVALID_ARGUMENT, "clmad_tensor_get_cl: t is NULL");
    if (mem)
        *mem = t->wrapped ? t->wrapped : t->mem;
    if (offset)
        *offset = t->wrapped ? t->wrapped_offset : 0;
    return CLMAD_OK;
}
