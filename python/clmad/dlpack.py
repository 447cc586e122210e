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

Dtypes: NumPy's (float16 is kDLFloat of 16 bits), and bfloat16 as kDLBfloat
of 16 bits, which NumPy neither exports nor imports: its bits go through
NumPy as kDLUInt of 16 bits, the capsule's DLDataType relabelled here.
"""
import ctypes
import itertools
import threading
from ctypes import Structure, byref, c_char_p, c_int32, c_int64, c_size_t, c_uint8, c_uint16, c_uint32, \
    c_uint64, c_void_p, POINTER

import numpy as np

from . import _lib, _opencl as ocl
from .errors import OpenCLError, raise_for
from .tensor import dtype_code, is_bfloat16

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
        shape, dtype = tensor.shape, tensor._host_dtype()
        if dtype.kind == "V":
            dtype = np.dtype(np.uint16)  # bfloat16's bits (an interface's typestr cannot name ml_dtypes' dtype)
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
    a = np.asarray(_Mapping(tensor, objects[2]))
    dtype = tensor._host_dtype()
    return a if a.dtype == dtype else a.view(dtype)


# --- DLPack capsules: the DLDataType, to relabel bfloat16 (dlpack.h) --------------------
KDL_UINT, KDL_FLOAT, KDL_BFLOAT = 1, 2, 4


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class _DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device_type", c_int32), ("device_id", c_int32), ("ndim", c_int32),
                ("dtype", DLDataType), ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)),
                ("byte_offset", c_uint64)]


class _DLManagedTensor(Structure):  # the capsule "dltensor"
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


class _DLManagedTensorVersioned(Structure):  # the capsule "dltensor_versioned" (DLPack 1.0)
    _fields_ = [("major", c_uint32), ("minor", c_uint32), ("manager_ctx", c_void_p), ("deleter", c_void_p),
                ("flags", c_uint64), ("dl_tensor", _DLTensor)]


_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype, _capsule_name.argtypes = c_char_p, [ctypes.py_object]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = c_void_p, [ctypes.py_object, c_char_p]


def capsule_dtype(capsule):
    """The DLDataType in an unconsumed DLPack capsule (the producer's memory: writing
    its fields relabels the tensor)."""
    name = _capsule_name(capsule)
    struct = {b"dltensor": _DLManagedTensor, b"dltensor_versioned": _DLManagedTensorVersioned}.get(name)
    if struct is None:
        raise ValueError(f"clmad: not an unconsumed DLPack capsule (named {name!r})")
    return struct.from_address(_capsule_pointer(capsule, name)).dl_tensor.dtype


def export(tensor, stream, kwargs):
    """Tensor.__dlpack__: host_view's array (or a copy) as NumPy exports it, a
    bfloat16 tensor's as kDLBfloat."""
    a = host_view(tensor)
    if a is None:
        a = tensor.numpy()
    bf16 = L.clmad_tensor_dtype(tensor._handle) == _lib.BF16
    if bf16:
        a = a.view(np.uint16)  # NumPy exports no bfloat16: its bits, relabelled below
    try:
        capsule = a.__dlpack__(stream=stream, **kwargs)
    except TypeError:
        capsule = a.__dlpack__(stream=stream)
    if bf16:
        capsule_dtype(capsule).code = KDL_BFLOAT
    return capsule


class _Made:
    """A DLPack producer that hands out one capsule made already."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def import_array(obj):
    """(array, clmad_dtype) of np.from_dlpack(obj); a bfloat16 producer's (kDLBfloat,
    which NumPy does not import) as a np.uint16 array of its bits, tagged bf16."""
    if isinstance(obj, np.ndarray) and is_bfloat16(obj.dtype):
        return obj.view(np.uint16), _lib.BF16  # (NumPy does not export it either)
    try:
        a = np.from_dlpack(obj)
    except (BufferError, RuntimeError, TypeError, ValueError):  # (NumPy's for kDLBfloat: RuntimeError)
        a = _bfloat16_bits(obj)
        if a is None:
            raise
        return a, _lib.BF16
    return a, dtype_code(a.dtype)


def _bfloat16_bits(obj):
    """A bfloat16 producer's tensor as np.uint16 (a capsule of its own, relabelled
    kDLUInt for NumPy), or None where obj is no such producer."""
    try:
        try:
            capsule = obj.__dlpack__(max_version=(1, 0))  # (NumPy takes an older one as read-only)
        except TypeError:
            capsule = obj.__dlpack__()
        dt = capsule_dtype(capsule)
    except Exception:
        return None
    if (dt.code, dt.bits, dt.lanes) != (KDL_BFLOAT, 16, 1):
        return None  # (the unconsumed capsule's destructor frees it)
    dt.code = KDL_UINT
    return np.from_dlpack(_Made(capsule, obj.__dlpack_device__()))


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
