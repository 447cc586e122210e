# SPDX-License-Identifier: Apache-2.0
"""PyOpenCL interop without copies (clmad_cl.h):

- Context.from_pyopencl(queue): a clmad context on the caller's OpenCL
  context, device and queue (clmad_context_create_cl): clmad enqueues all of
  its work on that queue, in order with the caller's;
- ctx.from_pyopencl(array): a tensor over a pyopencl.array.Array's buffer
  (clmad_tensor_wrap_cl);
- t.to_pyopencl(queue=None): a pyopencl.array.Array over the tensor's buffer
  (clmad_tensor_get_cl).

Both sides keep what they use. clmad retains the OpenCL objects it is given.
A wrapped array is a sub-buffer of the array's memory made here, which
keeps the array's memory object (base_data, maybe a pyopencl memory pool's)
until OpenCL destroys the sub-buffer. An exported Array's buffer is a
sub-buffer of the tensor's, which holds a clmad reference to the tensor (so
that clmad's pool does not hand the memory to another tensor) until OpenCL
destroys that sub-buffer: after the last Array over it and the last command
that uses it. That reference is released outside the OpenCL callback, at
the next garbage collection or call of this module (a callback must not
call back into OpenCL: the release may finish a queue or free a context).

PyOpenCL's wheel has an ICD loader of its own; libclmad links the system's
(libOpenCL.so.1). The objects of one are the objects of the other only when
both loaded the same OpenCL driver (the same ICD files, e.g. the same
OCL_ICD_VENDORS): a queue, device or tensor of a platform that the other
loader does not list is refused (UnsupportedError), before any call.
"""
import atexit
import collections
import ctypes
import gc
import itertools
import threading
import types
from ctypes import POINTER, byref, c_int32, c_size_t, c_uint, c_uint64, c_void_p

import numpy as np

from . import _lib, _opencl as ocl
from .errors import InvalidArgumentError, OpenCLError, UnsupportedError, raise_for
from .tensor import Tensor, dtype_code

L = _lib.lib
_cl = ocl.cl

CL_DEVICE_PLATFORM = 0x1031
CL_DEVICE_MEM_BASE_ADDR_ALIGN = 0x1019
CL_MEM_ASSOCIATED_MEMOBJECT = 0x1107
CL_MEM_OFFSET = 0x1108
CL_BUFFER_CREATE_TYPE_REGION = 0x1220
CL_MISALIGNED_SUB_BUFFER_OFFSET = -13
CL_PLATFORM_NOT_FOUND_KHR = -1001


class _Region(ctypes.Structure):
    _fields_ = [("origin", c_size_t), ("size", c_size_t)]


_err = POINTER(c_int32)
for _name, (_res, _args) in {
    "clGetPlatformIDs": (c_int32, [c_uint, POINTER(c_void_p), POINTER(c_uint)]),
    "clGetMemObjectInfo": (c_int32, [c_void_p, c_uint, c_size_t, c_void_p, POINTER(c_size_t)]),
    "clCreateSubBuffer": (c_void_p, [c_void_p, c_uint64, c_uint, POINTER(_Region), _err]),
    "clGetDeviceInfo": (c_int32, [c_void_p, c_uint, c_size_t, c_void_p, POINTER(c_size_t)]),
}.items():
    _f = getattr(_cl, _name)
    _f.restype, _f.argtypes = _res, _args
L.clmad_context_create_cl.restype = c_int32
L.clmad_context_create_cl.argtypes = [c_void_p, c_void_p, c_void_p, POINTER(_lib.Options), POINTER(_lib.ctx_p)]


def _pyopencl():
    try:
        import pyopencl
        import pyopencl.array
    except ImportError as e:
        raise UnsupportedError(f"PyOpenCL interop needs the pyopencl package (pip install pyopencl): {e}") from None
    return pyopencl


# --- the two ICD loaders ----------------------------------------------------------
def _clmad_platforms():
    """The cl_platform_id handles that libclmad's ICD loader lists."""
    n = c_uint()
    err = _cl.clGetPlatformIDs(0, None, byref(n))
    if err == CL_PLATFORM_NOT_FOUND_KHR or n.value == 0:
        return set()
    ids = (c_void_p * n.value)()
    if _cl.clGetPlatformIDs(n.value, ids, None):
        return set()
    return set(ids)


_ADVICE = ("PyOpenCL's ICD loader and libclmad's (libOpenCL.so.1) loaded different OpenCL drivers; give both the "
           "same ICD files (the same OCL_ICD_VENDORS, or /etc/OpenCL/vendors for both), or install PyOpenCL built "
           "against the system's libOpenCL.so.1")


def _check_platform_for_clmad(device):
    """Refuses a PyOpenCL device whose platform libclmad's loader does not list."""
    platform = device.platform
    if platform.int_ptr not in _clmad_platforms():
        raise UnsupportedError(f"the OpenCL platform {platform.name!r} of PyOpenCL's device {device.name!r} is not "
                               f"one that clmad's ICD loader lists: {_ADVICE}")


def _check_platform_for_pyopencl(cl, ctx):
    """Refuses a clmad context whose platform PyOpenCL's loader does not list."""
    _, device_id, _ = ocl.context_objects(ctx._live)
    platform = c_void_p()
    err = _cl.clGetDeviceInfo(device_id, CL_DEVICE_PLATFORM, ctypes.sizeof(platform), byref(platform), None)
    if err:
        raise OpenCLError(f"clGetDeviceInfo(CL_DEVICE_PLATFORM) failed on clmad's device ({err})")
    try:
        listed = {p.int_ptr for p in cl.get_platforms()}
    except cl.Error:  # (none: CL_PLATFORM_NOT_FOUND_KHR)
        listed = set()
    if platform.value not in listed:
        device = ctx.device
        raise UnsupportedError(f"the OpenCL platform {device.platform!r} of clmad's device {device.name!r} is not "
                               f"one that PyOpenCL's ICD loader lists: {_ADVICE}")


# --- sub-buffers that keep an object until OpenCL destroys them ---------------------
_kept = {}                        # key -> what a live sub-buffer keeps
_keys = itertools.count(1)
_kept_lock = threading.Lock()
_to_release = collections.deque()  # clmad tensors whose exported sub-buffer is gone


@ocl.MEM_DESTRUCTOR
def _sub_buffer_destroyed(mem, key):
    # No OpenCL or clmad call here: only hand the object over (see the module's doc).
    with _kept_lock:
        kept = _kept.pop(key, None)
    if isinstance(kept, _TensorRef):
        _to_release.append(kept.handle)
    # (anything else, a PyOpenCL memory object, goes with the last Python reference)


class _TensorRef:
    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle


def release_pending(*_gc_info):
    """Releases the clmad references of exported buffers that OpenCL destroyed
    (also run by every garbage collection and every call of this module)."""
    while _to_release:
        L.clmad_tensor_release(_to_release.popleft())


def _mem_info(mem, param, ctype):
    value = ctype()
    err = _cl.clGetMemObjectInfo(mem, param, ctypes.sizeof(value), byref(value), None)
    if err:
        raise OpenCLError(f"clGetMemObjectInfo({param:#x}) failed ({err})")
    return value.value


def _base_addr_align(device):
    """The device's CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes."""
    bits = c_uint()
    err = _cl.clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, ctypes.sizeof(bits), byref(bits), None)
    if err:
        raise OpenCLError(f"clGetDeviceInfo(CL_DEVICE_MEM_BASE_ADDR_ALIGN) failed on clmad's device ({err})")
    return max(bits.value // 8, 1)


def _sub_buffer(mem, offset, nbytes, keep, device):
    """A new sub-buffer of nbytes at offset in mem (of mem's parent when mem is a
    sub-buffer), with access flags inherited, that keeps `keep` until OpenCL
    destroys it. The caller owns the one reference."""
    parent = _mem_info(mem, CL_MEM_ASSOCIATED_MEMOBJECT, c_void_p)
    if parent:
        offset += _mem_info(mem, CL_MEM_OFFSET, c_size_t)
        mem = parent
    err = c_int32()
    # Checked here, not left to clCreateSubBuffer: NVIDIA's driver accepts any
    # offset, POCL refuses, and the same program must behave the same on both.
    if offset % _base_addr_align(device):
        err.value = CL_MISALIGNED_SUB_BUFFER_OFFSET
        sub = None
    else:
        sub = _cl.clCreateSubBuffer(mem, 0, CL_BUFFER_CREATE_TYPE_REGION, byref(_Region(offset, nbytes)), byref(err))
    if err.value == CL_MISALIGNED_SUB_BUFFER_OFFSET:
        raise InvalidArgumentError(f"the array starts {offset} bytes into its buffer, which is not a multiple of "
                                   "the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN: a tensor cannot start there "
                                   "without a copy (copy the array to a new one)")
    if err.value or not sub:
        raise OpenCLError(f"clCreateSubBuffer failed ({err.value})")
    with _kept_lock:
        key = next(_keys)
        _kept[key] = keep
    if _cl.clSetMemObjectDestructorCallback(sub, _sub_buffer_destroyed, c_void_p(key)):
        with _kept_lock:
            _kept.pop(key, None)
        _cl.clReleaseMemObject(sub)
        raise OpenCLError("clSetMemObjectDestructorCallback failed")
    return sub


# --- Context.from_pyopencl(queue) -------------------------------------------------------
def _context_from_queue(cls, queue, **options):
    cl = _pyopencl()
    release_pending()
    if not isinstance(queue, cl.CommandQueue):
        raise InvalidArgumentError(f"Context.from_pyopencl takes a pyopencl.CommandQueue, not {type(queue).__name__}"
                                   " (an Array goes to a context's from_pyopencl: ctx.from_pyopencl(array))")
    if options.get("device") is not None:
        raise InvalidArgumentError("Context.from_pyopencl: the device is the queue's (no device=)")
    device = queue.device
    _check_platform_for_clmad(device)
    handles = (queue.context.int_ptr, device.int_ptr, queue.int_ptr)
    ctx = cls.__new__(cls)
    # Context.__init__ with clmad_context_create_cl in place of clmad_context_create.
    ctx._create = lambda opt, out: L.clmad_context_create_cl(*handles, opt, out)
    cls.__init__(ctx, **options)
    del ctx._create
    return ctx


# --- ctx.from_pyopencl(array) -----------------------------------------------------------
def _wrap_array(ctx, array, requires_grad=False):
    cl = _pyopencl()
    release_pending()
    if not isinstance(array, cl.array.Array):
        raise InvalidArgumentError(f"ctx.from_pyopencl takes a pyopencl.array.Array, not {type(array).__name__}"
                                   " (a CommandQueue goes to clmad.Context.from_pyopencl(queue))")
    code = dtype_code(array.dtype)
    if not array.flags.c_contiguous:
        raise InvalidArgumentError(f"ctx.from_pyopencl: the array (shape {array.shape}, strides {array.strides}) "
                                   "is not C-contiguous; a tensor is contiguous and row-major (copy it first)")
    context, device, queue = ocl.context_objects(ctx._live)
    if array.context.int_ptr != context:
        raise InvalidArgumentError("ctx.from_pyopencl: the array belongs to another OpenCL context than ctx's "
                                   "(make ctx with clmad.Context.from_pyopencl(queue) on the array's queue)")
    if array.size == 0 or array.base_data is None:
        t = ctx.zeros(array.shape, array.dtype)  # no elements: nothing to share
    else:
        if array.queue is None or array.queue.int_ptr != queue:
            array.finish()  # its pending commands (array.events), which clmad's queue would not wait for
        sub = _sub_buffer(array.base_data.int_ptr, array.offset, array.nbytes, array.base_data, device)
        out = _lib.tensor_p()
        status = L.clmad_tensor_wrap_cl(ctx._live, sub, 0, code, array.ndim, _lib.size_array(array.shape),
                                        byref(out))
        _cl.clReleaseMemObject(sub)  # the tensor holds its own reference (or none, on failure)
        if status:
            raise_for(status, ctx._raw)
        t = Tensor(ctx, out.value)
    if requires_grad:
        t.requires_grad = True
    return t


def _from_pyopencl(owner, obj, **options):
    """Context.from_pyopencl(queue, **options): a new clmad context on a
    pyopencl.CommandQueue's context, device and queue, shared: clmad enqueues
    all of its work on that queue (in order with the caller's commands on it),
    which must be in order. options as for Context(), except device.
    ctx.from_pyopencl(array, requires_grad=False): a tensor over a
    pyopencl.array.Array's memory, without a copy (C-contiguous; float32,
    float64, int32, int64, uint8, float16 or ml_dtypes.bfloat16; of ctx's OpenCL context; an offset in its
    buffer must be a multiple of the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN).
    See python/README.md, "PyOpenCL interop"."""
    if isinstance(owner, type):
        return _context_from_queue(owner, obj, **options)
    return _wrap_array(owner, obj, **options)


class FromPyOpenCL:
    """The descriptor of Context.from_pyopencl: on the class it makes a context
    from a queue, on a context it wraps an Array."""

    def __get__(self, ctx, cls):
        return types.MethodType(_from_pyopencl, cls if ctx is None else ctx)


from_pyopencl = FromPyOpenCL()


# --- t.to_pyopencl(queue) -----------------------------------------------------------------
def to_array(tensor, queue=None):
    """A pyopencl.array.Array over tensor's buffer (see Tensor.to_pyopencl)."""
    cl = _pyopencl()
    release_pending()
    ctx = tensor.context
    context, device, clmad_queue = ocl.context_objects(ctx._live)
    if queue is None:
        _check_platform_for_pyopencl(cl, ctx)
        queue = cl.CommandQueue.from_int_ptr(clmad_queue, retain=True)
    elif not isinstance(queue, cl.CommandQueue):
        raise InvalidArgumentError(f"to_pyopencl takes a pyopencl.CommandQueue or None, not {type(queue).__name__}")
    elif queue.context.int_ptr != context:
        raise InvalidArgumentError("to_pyopencl: the queue belongs to another OpenCL context than the tensor's")
    mem, offset = c_void_p(), c_size_t()
    status = L.clmad_tensor_get_cl(tensor._handle, byref(mem), byref(offset))  # (enqueues held-back work)
    if status:
        raise_for(status, ctx._raw)
    shape, dtype = tensor.shape, tensor._host_dtype()  # (bfloat16: ml_dtypes' or np.uint16, as numpy())
    if not mem.value:
        return cl.array.empty(queue, shape, dtype)  # an empty tensor has no buffer
    if queue.int_ptr != clmad_queue:
        ctx.finish()  # the commands that compute the tensor, which queue would not wait for
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    handle = L.clmad_tensor_retain(tensor._handle)
    try:
        sub = _sub_buffer(mem.value, offset.value, nbytes, _TensorRef(handle), device)
    except BaseException:
        L.clmad_tensor_release(handle)
        raise
    return cl.array.Array(queue, shape, dtype, data=cl.Buffer.from_int_ptr(sub, retain=False))


gc.callbacks.append(release_pending)
atexit.register(release_pending)
