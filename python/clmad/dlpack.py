# SPDX-License-Identifier: Apache-2.0
"""DLPack and NumPy views without copies where the device's memory is the
host's (CL_DEVICE_HOST_UNIFIED_MEMORY: CPU devices such as POCL and Intel's
runtime); copies elsewhere (GPUs), which the callers do themselves.

Export: the tensor's buffer mapped into the host (clEnqueueMapBuffer, which
on such devices returns the buffer's own memory), wrapped as a NumPy array
whose owner keeps the tensor and unmaps when the last view goes.

Import: the producer's host memory as the tensor's buffer
(CL_MEM_USE_HOST_PTR, clmad_tensor_wrap_cl); the producer's array is kept
until OpenCL frees the buffer (a destructor callback), which may be after
the Python tensor is gone, since the tape or other tensors may hold it.
"""
import itertools
import threading
from ctypes import byref, c_int32, c_size_t, c_void_p

import numpy as np

from . import _lib, _opencl as ocl
from .errors import OpenCLError, raise_for

L = _lib.lib


class _Mapping:
    """A tensor's buffer mapped into the host; NumPy arrays made from it
    (np.asarray) keep it as their base. The tensor is retained meanwhile."""

    def __init__(self, tensor, queue):
        self._queue = queue
        self._tensor = L.clmad_tensor_retain(tensor._handle)
        self._ptr = None
        mem, offset = c_void_p(), c_size_t()
        L.clmad_tensor_get_cl(self._tensor, byref(mem), byref(offset))
        self._mem = mem.value
        shape, dtype = tensor.shape, tensor.dtype
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        # clmad's queue runs in order: the map waits for the kernels that write the tensor.
        err = c_int32()
        self._ptr = ocl.cl.clEnqueueMapBuffer(queue, self._mem, ocl.CL_TRUE, ocl.CL_MAP_READ | ocl.CL_MAP_WRITE,
                                              offset.value, nbytes, 0, None, None, byref(err))
        if err.value:
            self._ptr = None
            raise OpenCLError(f"clEnqueueMapBuffer failed ({err.value}) for a zero-copy view")
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str, "data": (self._ptr, False),
                                    "version": 3}

    def __del__(self):
        if getattr(self, "_ptr", None):
            ocl.cl.clEnqueueUnmapMemObject(self._queue, self._mem, self._ptr, 0, None, None)
            ocl.cl.clFinish(self._queue)
            self._ptr = None
        if getattr(self, "_tensor", None):
            L.clmad_tensor_release(self._tensor)
            self._tensor = None


def _objects(ctx):
    """(cl_context, cl_device_id, cl_command_queue) where the device's memory is the host's, else None."""
    if not ctx.device.host_unified_memory:
        return None
    return ocl.context_objects(ctx._live)


def host_view(tensor):
    """A NumPy array sharing tensor's memory, or None where the device's memory
    is not the host's (then a copy is the only way)."""
    objects = _objects(tensor._ctx)
    if objects is None or not tensor.shape or 0 in tensor.shape:
        return None  # (an empty or 0-d tensor: a copy costs nothing)
    return np.asarray(_Mapping(tensor, objects[2]))


# The arrays whose memory backs a wrapped buffer, until OpenCL frees it.
_lent = {}
_keys = itertools.count(1)
_lent_lock = threading.Lock()


@ocl.MEM_DESTRUCTOR
def _buffer_freed(mem, key):
    with _lent_lock:
        _lent.pop(key, None)


def wrap_host_array(ctx, array, code):
    """A tensor whose buffer is array's memory (C-contiguous, aligned, writable),
    or None where the device's memory is not the host's."""
    objects = _objects(ctx)
    if objects is None or array.size == 0 or not array.flags.c_contiguous or not array.flags.aligned \
            or not array.flags.writeable:
        return None
    err = c_int32()
    mem = ocl.cl.clCreateBuffer(objects[0], ocl.CL_MEM_READ_WRITE | ocl.CL_MEM_USE_HOST_PTR, array.nbytes,
                                array.ctypes.data, byref(err))
    if err.value or not mem:
        return None
    with _lent_lock:
        key = next(_keys)
        _lent[key] = array
    if ocl.cl.clSetMemObjectDestructorCallback(mem, _buffer_freed, c_void_p(key)):
        with _lent_lock:
            _lent.pop(key, None)
        ocl.cl.clReleaseMemObject(mem)
        return None
    out = c_void_p()
    status = L.clmad_tensor_wrap_cl(ctx._live, mem, 0, code, array.ndim, _lib.size_array(array.shape), byref(out))
    ocl.cl.clReleaseMemObject(mem)  # the tensor holds its own reference (or none, on failure)
    if status:
        raise_for(status, ctx._raw)
    from .tensor import Tensor
    return Tensor(ctx, out.value)
