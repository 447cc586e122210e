# SPDX-License-Identifier: Apache-2.0
"""The few OpenCL calls the zero-copy DLPack paths make (dlpack.py), through
the ICD loader libOpenCL.so.1 that libclmad.so itself links, and the
clmad_cl.h functions that hand out clmad's OpenCL objects."""
import ctypes
from ctypes import POINTER, byref, c_int32, c_size_t, c_uint, c_uint64, c_void_p

from . import _lib

CL_TRUE = 1
CL_MEM_READ_WRITE = 1 << 0
CL_MEM_USE_HOST_PTR = 1 << 3
CL_MAP_READ, CL_MAP_WRITE = 1 << 0, 1 << 1

# Looked up through libclmad's handle, which searches its own dependencies:
# the loader it links (the wheel bundles one under another name), never a
# second one found by soname (a system's, or none on a machine without
# OpenCL, where import clmad then failed).
cl = _lib.lib
_err = POINTER(c_int32)
_PROTOTYPES = {
    "clEnqueueMapBuffer": (c_void_p, [c_void_p, c_void_p, c_uint, c_uint64, c_size_t, c_size_t, c_uint,
                                      c_void_p, c_void_p, _err]),
    "clEnqueueUnmapMemObject": (c_int32, [c_void_p, c_void_p, c_void_p, c_uint, c_void_p, c_void_p]),
    "clFinish": (c_int32, [c_void_p]),
    "clCreateBuffer": (c_void_p, [c_void_p, c_uint64, c_size_t, c_void_p, _err]),
    "clReleaseMemObject": (c_int32, [c_void_p]),
    "clSetMemObjectDestructorCallback": (c_int32, [c_void_p, c_void_p, c_void_p]),
}
for _name, (_res, _args) in _PROTOTYPES.items():
    _f = getattr(cl, _name)
    _f.restype, _f.argtypes = _res, _args

# void (CL_CALLBACK *)(cl_mem, void *)
MEM_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)

_L = _lib.lib
_L.clmad_context_get_cl.restype = c_int32
_L.clmad_context_get_cl.argtypes = [c_void_p, POINTER(c_void_p), POINTER(c_void_p), POINTER(c_void_p)]
_L.clmad_tensor_get_cl.restype = c_int32
_L.clmad_tensor_get_cl.argtypes = [c_void_p, POINTER(c_void_p), POINTER(c_size_t)]
_L.clmad_tensor_wrap_cl.restype = c_int32
_L.clmad_tensor_wrap_cl.argtypes = [c_void_p, c_void_p, c_size_t, c_int32, c_int32, POINTER(c_size_t),
                                    POINTER(c_void_p)]


def context_objects(ctx_handle):
    """(cl_context, cl_device_id, cl_command_queue) of a clmad context, borrowed."""
    context, device, queue = c_void_p(), c_void_p(), c_void_p()
    if _L.clmad_context_get_cl(ctx_handle, byref(context), byref(device), byref(queue)):
        return None
    return context.value, device.value, queue.value

