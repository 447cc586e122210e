/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clmad_cl.h: clmad inside an existing OpenCL program.
 *
 * An application that already has an OpenCL context, device, queue and
 * buffers hands them to clmad, the way it would to CLBlast or clFFT: clmad
 * computes on the application's context and enqueues every command
 * (kernels, copies, CLBlast's GEMMs) on the application's queue, so that
 * they are ordered with the application's own commands without events;
 * tensors can live in the application's buffers, without a copy.
 *
 * This header includes the OpenCL header; clmad.h does not, so that
 * programs that never touch OpenCL need none of it. Define
 * CL_TARGET_OPENCL_VERSION before including it, as with any OpenCL header
 * (clmad itself uses the OpenCL 1.2 API).
 *
 * Ownership: clmad retains the OpenCL objects it is given (a context,
 * device, queue, buffer) and releases exactly the references it took, when
 * the clmad object that holds them goes; it never releases a reference of
 * the caller. The objects clmad hands out (clmad_context_get_cl,
 * clmad_tensor_get_cl) are borrowed: valid while the clmad object lives,
 * retained by the caller who needs them longer.
 */
#ifndef CLMAD_CL_H
#define CLMAD_CL_H

#ifdef __APPLE__
#include <OpenCL/cl.h>
#else
#include <CL/cl.h>
#endif

#include "clmad.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Creates a clmad context on the caller's OpenCL objects: `context`, one of
 * its devices `device`, and `queue`, an in-order command queue of that
 * context and device, on which clmad enqueues all of its work (queue NULL:
 * clmad makes an in-order queue of its own on context and device). clmad
 * retains the three (the context, the device, the queue) and releases its
 * own references when the clmad context is destroyed (after
 * clmad_context_release and the release of its last tensor and kernel);
 * the caller keeps its references and may release them at any time after
 * this call. Blocking calls (clmad_tensor_read, clmad_finish,
 * clmad_context_release) wait for the queue, the caller's commands
 * included.
 * opt as for clmad_context_create, except opt->device, which must be NULL
 * (the device is the caller's; CLMAD_DEVICE is not read). The caller owns
 * *ctx and releases it with clmad_context_release.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL context, device or ctx; an
 * invalid object; a device that is not in context; a queue of another
 * context or device; opt->device set; chunk_cap outside 0..64),
 * CLMAD_ERR_UNSUPPORTED (an out-of-order queue: clmad relies on the order
 * of its commands), CLMAD_ERR_OPENCL, CLMAD_ERR_OUT_OF_MEMORY. The message
 * of a failure is in clmad_last_error(NULL).
 */
CLMAD_API clmad_status clmad_context_create_cl(cl_context context, cl_device_id device,
                                     cl_command_queue queue, const clmad_options *opt,
                                     clmad_context **ctx);

/**
 * The OpenCL context, device and command queue of ctx (made by clmad or
 * given to clmad_context_create_cl), to enqueue the caller's own work in
 * order with clmad's. Any out-pointer may be NULL. Borrowed: valid while
 * ctx lives; retain them to keep them longer.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL ctx).
 */
CLMAD_API clmad_status clmad_context_get_cl(const clmad_context *ctx, cl_context *context,
                                  cl_device_id *device, cl_command_queue *queue);

/**
 * Wraps the caller's buffer `mem` as a tensor, without copying: its
 * elements are the numel(shape) elements of dtype that start `offset`
 * bytes into mem, contiguous and row-major. mem must belong to ctx's
 * OpenCL context and hold offset + the tensor's size in bytes; kernels must
 * be allowed to read it (not CL_MEM_WRITE_ONLY). A nonzero offset goes
 * through clCreateSubBuffer (also of mem's parent when mem is itself a
 * sub-buffer), so it must be a multiple of the device's
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN (in bytes: the message gives it);
 * otherwise the call fails rather than copy.
 * The tensor retains mem and releases that reference with its last
 * reference; its buffer never goes to clmad's pool. It is a tensor like
 * any other (a leaf: set_requires_grad, read, write, clmad_tensor_copy into
 * it), with two rules: clmad reads mem when it uses the tensor, so the
 * caller's writes must be enqueued on ctx's queue (or be finished) before;
 * and while the tape holds the tensor (an input of a recorded operation,
 * until backward or clmad_tape_clear) the caller must not change mem's
 * bytes, or backward computes with the new values. Wrapped buffers count
 * in no clmad_stats field (they are the caller's memory).
 * A CL_MEM_READ_ONLY buffer (also a sub-buffer of one that inherits its
 * access) gives a read-only tensor: every call that would write into it
 * (clmad_tensor_write, clmad_tensor_copy and clmad_tensor_axpby into it,
 * clmad_staging_scatter, clmad_optimizer_create over it, and so
 * clmad_mpi_broadcast on the ranks that receive) fails with
 * CLMAD_ERR_INVALID_ARGUMENT, the message saying which argument is
 * read-only, and writes nothing. It may be read, be an input of any
 * operation, and have a gradient (clmad's own tensor).
 * The caller owns one reference to *out.
 * Errors: CLMAD_ERR_INVALID_ARGUMENT (NULL ctx, mem or out; an invalid
 * buffer; a buffer of another OpenCL context or a write-only one; offset
 * and size past the buffer's end; an offset that is not aligned; rank, NULL
 * shape), CLMAD_ERR_UNSUPPORTED (f64 without device fp64),
 * CLMAD_ERR_OUT_OF_MEMORY (a shape too big to describe),
 * CLMAD_ERR_STATE (ctx was released), CLMAD_ERR_OPENCL.
 */
CLMAD_API clmad_status clmad_tensor_wrap_cl(clmad_context *ctx, cl_mem mem, size_t offset, clmad_dtype dtype,
                                  int ndim, const size_t *shape, clmad_tensor **out);

/**
 * The buffer that holds t's elements and the byte offset of its first
 * element in it: for a wrapped tensor, the caller's buffer and offset as
 * given to clmad_tensor_wrap_cl; for clmad's own tensors, a buffer of
 * clmad's pool and 0 (the buffer may be larger than the tensor: only the
 * tensor's bytes are its). An empty tensor of clmad's gives NULL and 0.
 * Borrowed: valid until t's last reference is released (a pooled buffer
 * then serves other tensors). The caller's kernels may read and write the
 * elements when enqueued on the context's queue, but must not change a
 * tensor that the tape holds (see clmad_tensor_wrap_cl). mem or offset may
 * be NULL. The elements are there when it returns: work clmad held back
 * (docs/fusion.md) has been enqueued. Errors: CLMAD_ERR_INVALID_ARGUMENT
 * (NULL t), CLMAD_ERR_CONCURRENT_USE.
 */
CLMAD_API clmad_status clmad_tensor_get_cl(const clmad_tensor *t, cl_mem *mem, size_t *offset);

#ifdef __cplusplus
}
#endif
#endif /* CLMAD_CL_H */
