# SPDX-License-Identifier: Apache-2.0
"""libclmad.so through ctypes: loading, the C structs and every prototype.

The library is the one shipped in this package (clmad/libclmad.so), or the
file named by the environment variable CLMAD_LIBRARY (for development
against a build folder). Before it loads, _icd points the OpenCL loader at
the POCL from pip when no other OpenCL implementation is installed.
"""
import ctypes
import os
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int64, c_size_t,
                    c_uint, c_uint64, c_void_p)

from . import _icd  # noqa: F401  (before the first OpenCL call)

MAX_DIMS = 8


path = os.environ.get("CLMAD_LIBRARY") or os.path.join(os.path.dirname(__file__), "libclmad.so")
try:
    lib = ctypes.CDLL(path)
except OSError as e:
    raise ImportError(f"clmad: cannot load the C library {path}: {e}") from e

# Opaque handles: plain pointers (never dereferenced in Python).
ctx_p = c_void_p
tensor_p = c_void_p
kernel_p = c_void_p
optim_p = c_void_p
scaler_p = c_void_p


class DeviceInfo(Structure):
    _fields_ = [("platform_index", c_int), ("device_index", c_int),
                ("platform_name", c_char * 128), ("name", c_char * 256),
                ("vendor", c_char * 128), ("version", c_char * 128),
                ("driver_version", c_char * 128), ("type", c_int),
                ("compute_units", c_uint), ("global_mem_bytes", c_uint64),
                ("max_alloc_bytes", c_uint64), ("max_work_group_size", c_size_t),
                ("fp64", c_int), ("host_unified_memory", c_int)]


class Options(Structure):
    _fields_ = [("device", c_char_p), ("cache_dir", c_char_p), ("disable_fp64", c_int),
                ("pool_limit_bytes", c_uint64), ("chunk_cap", c_int), ("retain_tape", c_int),
                ("disable_grad", c_int), ("partials_policy", c_int), ("disable_fusion", c_int)]


class Stats(Structure):
    _fields_ = [("programs_compiled", c_uint64), ("programs_from_disk", c_uint64),
                ("program_memory_hits", c_uint64), ("disk_cache_rejected", c_uint64),
                ("live_tensor_bytes", c_uint64), ("pool_bytes", c_uint64),
                ("pool_hits", c_uint64), ("pool_misses", c_uint64), ("tape_nodes", c_uint64),
                ("tape_saved_bytes", c_uint64), ("kernels_launched", c_uint64),
                ("bytes_moved", c_uint64), ("disk_cache_write_failures", c_uint64),
                ("disk_cache_problem", c_char * 256), ("programs_live", c_uint64),
                ("fused_losses", c_uint64), ("fusion_fallbacks", c_uint64),
                ("fused_regions", c_uint64)]


class Tuning(Structure):
    _fields_ = [("items_per_work_item", c_int), ("chunk_cap", c_int), ("inline_pragma", c_int),
                ("origin", c_char * 256)]


class SafetensorsEntry(Structure):
    _fields_ = [("name", c_char_p), ("file_dtype", c_char_p), ("supported", c_int), ("dtype", c_int),
                ("ndim", c_int), ("shape", c_size_t * MAX_DIMS)]


class OptimizerOptions(Structure):
    _fields_ = [("kind", c_int), ("lr", c_double), ("momentum", c_double), ("nesterov", c_int),
                ("beta1", c_double), ("beta2", c_double), ("eps", c_double),
                ("weight_decay", c_double)]


class GradScalerOptions(Structure):
    _fields_ = [("init_scale", c_double), ("growth_factor", c_double), ("backoff_factor", c_double),
                ("growth_interval", c_int)]


T = tensor_p
PT = POINTER(tensor_p)
SZ = POINTER(c_size_t)
st = c_int  # clmad_status

_PROTOTYPES = {
    "clmad_version": (c_uint, []),
    "clmad_version_string": (c_char_p, []),
    "clmad_status_string": (c_char_p, [c_int]),
    "clmad_abi_struct_size": (st, [c_char_p, SZ]),
    "clmad_abi_field": (st, [c_char_p, c_char_p, SZ, SZ]),
    "clmad_abi_constant": (st, [c_char_p, POINTER(c_int64)]),
    "clmad_device_list": (st, [POINTER(POINTER(DeviceInfo)), SZ]),
    "clmad_device_list_free": (None, [POINTER(DeviceInfo)]),
    "clmad_device_choose": (st, [POINTER(DeviceInfo), c_size_t, c_char_p, SZ]),
    "clmad_options_init": (None, [POINTER(Options)]),
    "clmad_context_create": (st, [POINTER(Options), POINTER(ctx_p)]),
    "clmad_context_release": (None, [ctx_p]),
    "clmad_context_set_param": (st, [ctx_p, c_int, c_int64]),
    "clmad_context_get_param": (st, [ctx_p, c_int, POINTER(c_int64)]),
    "clmad_context_device": (st, [ctx_p, POINTER(DeviceInfo)]),
    "clmad_context_tuning": (st, [ctx_p, POINTER(Tuning)]),
    "clmad_tuning_save": (st, [ctx_p, POINTER(Tuning)]),
    "clmad_last_error": (c_char_p, [ctx_p]),
    "clmad_context_stats": (st, [ctx_p, POINTER(Stats)]),
    "clmad_finish": (st, [ctx_p]),
    "clmad_tensor_create": (st, [ctx_p, c_int, c_int, SZ, c_void_p, PT]),
    "clmad_tensor_zeros": (st, [ctx_p, c_int, c_int, SZ, PT]),
    "clmad_tensor_fill": (st, [ctx_p, c_int, c_int, SZ, c_double, PT]),
    "clmad_tensor_read": (st, [T, c_void_p, c_size_t]),
    "clmad_tensor_write": (st, [T, c_void_p, c_size_t]),
    "clmad_tensor_copy": (st, [T, T]),
    "clmad_tensor_retain": (T, [T]),
    "clmad_tensor_release": (None, [T]),
    "clmad_tensor_ndim": (c_int, [T]),
    "clmad_tensor_dim": (c_size_t, [T, c_int]),
    "clmad_tensor_numel": (c_size_t, [T]),
    "clmad_tensor_dtype": (c_int, [T]),
    "clmad_kernel_create": (st, [ctx_p, c_char_p, c_char_p, c_int, c_int, POINTER(kernel_p)]),
    "clmad_kernel_release": (None, [kernel_p]),
    "clmad_broadcast": (st, [ctx_p, kernel_p, PT, PT]),
    "clmad_broadcast_partials": (st, [ctx_p, kernel_p, PT, POINTER(c_int), PT, PT]),
    "clmad_broadcast_jvp": (st, [ctx_p, kernel_p, PT, PT, PT, PT]),
    "clmad_broadcast_second": (st, [ctx_p, kernel_p, PT, PT, POINTER(c_int), PT, PT, PT, PT]),
    "clmad_hvp": (st, [ctx_p, T, T, c_int, PT, PT]),
    "clmad_gradcheck": (st, [ctx_p, kernel_p, c_int, c_size_t, POINTER(c_double), POINTER(c_double)]),
    "clmad_tensor_set_requires_grad": (st, [T, c_int]),
    "clmad_tensor_requires_grad": (c_int, [T]),
    "clmad_tensor_grad": (st, [T, PT]),
    "clmad_tensor_zero_grad": (None, [T]),
    "clmad_backward": (st, [ctx_p, T, T]),
    "clmad_set_retain_tape": (st, [ctx_p, c_int]),
    "clmad_set_grad_enabled": (st, [ctx_p, c_int]),
    "clmad_tape_clear": (None, [ctx_p]),
    "clmad_set_partials_policy": (st, [ctx_p, c_int]),
    "clmad_compare": (st, [ctx_p, c_int, T, T, PT]),
    "clmad_where": (st, [ctx_p, T, T, T, PT]),
    "clmad_sum": (st, [ctx_p, T, c_int, POINTER(c_int), c_int, PT]),
    "clmad_mean": (st, [ctx_p, T, c_int, POINTER(c_int), c_int, PT]),
    "clmad_dot": (st, [ctx_p, T, T, PT]),
    "clmad_matmul": (st, [ctx_p, T, T, c_int, c_int, PT]),
    "clmad_bmm": (st, [ctx_p, T, T, c_int, c_int, PT]),
    "clmad_slice": (st, [ctx_p, T, c_int, c_size_t, c_size_t, PT]),
    "clmad_concat": (st, [ctx_p, c_int, PT, c_int, PT]),
    "clmad_reshape": (st, [ctx_p, T, c_int, SZ, PT]),
    "clmad_transpose": (st, [ctx_p, T, POINTER(c_int), PT]),
    "clmad_max": (st, [ctx_p, T, c_int, c_int, PT]),
    "clmad_logsumexp": (st, [ctx_p, T, c_int, c_int, PT]),
    "clmad_softmax": (st, [ctx_p, T, c_int, PT]),
    "clmad_log_softmax": (st, [ctx_p, T, c_int, PT]),
    "clmad_mse_loss": (st, [ctx_p, T, T, PT]),
    "clmad_cross_entropy": (st, [ctx_p, T, T, PT]),
    "clmad_argmax": (st, [ctx_p, T, c_int, c_int, PT]),
    "clmad_argmin": (st, [ctx_p, T, c_int, c_int, PT]),
    "clmad_index_select": (st, [ctx_p, T, c_int, T, PT]),
    "clmad_gather": (st, [ctx_p, T, c_int, T, PT]),
    "clmad_scatter_add": (st, [ctx_p, T, c_int, T, T, PT]),
    "clmad_embedding": (st, [ctx_p, T, T, PT]),
    "clmad_one_hot": (st, [ctx_p, T, c_size_t, c_int, PT]),
    "clmad_cast": (st, [ctx_p, T, c_int, PT]),
    "clmad_accuracy": (st, [ctx_p, T, T, POINTER(c_double)]),
    "clmad_tensor_scalar": (st, [ctx_p, c_int, c_double, PT]),
    "clmad_add_scalar": (st, [ctx_p, T, c_double, PT]),
    "clmad_mul_scalar": (st, [ctx_p, T, c_double, PT]),
    "clmad_pow_scalar": (st, [ctx_p, T, c_double, PT]),
    "clmad_tensor_item": (st, [T, POINTER(c_double)]),
    "clmad_tensor_rand_uniform": (st, [ctx_p, c_int, c_int, SZ, c_double, c_double, c_uint64, PT]),
    "clmad_tensor_rand_normal": (st, [ctx_p, c_int, c_int, SZ, c_double, c_double, c_uint64, PT]),
    "clmad_tensor_axpby": (st, [T, c_double, T, c_double]),
    "clmad_optimizer_options_init": (None, [POINTER(OptimizerOptions), c_int]),
    "clmad_optimizer_create": (st, [ctx_p, POINTER(OptimizerOptions), PT, c_int, POINTER(optim_p)]),
    "clmad_optimizer_step": (st, [optim_p]),
    "clmad_optimizer_zero_grad": (None, [optim_p]),
    "clmad_optimizer_set_lr": (st, [optim_p, c_double]),
    "clmad_optimizer_steps": (c_uint64, [optim_p]),
    "clmad_optimizer_release": (None, [optim_p]),
    "clmad_optimizer_save": (st, [optim_p, c_char_p]),
    "clmad_optimizer_load": (st, [optim_p, c_char_p]),
    "clmad_grad_scaler_options_init": (None, [POINTER(GradScalerOptions)]),
    "clmad_grad_scaler_create": (st, [ctx_p, POINTER(GradScalerOptions), POINTER(scaler_p)]),
    "clmad_grad_scaler_scale": (st, [scaler_p, T, PT]),
    "clmad_grad_scaler_step": (st, [scaler_p, optim_p, POINTER(c_int)]),
    "clmad_grad_scaler_get_scale": (c_double, [scaler_p]),
    "clmad_grad_scaler_release": (None, [scaler_p]),
    "clmad_save": (st, [c_char_p, POINTER(c_char_p), PT, c_size_t, POINTER(c_char_p)]),
    "clmad_load": (st, [ctx_p, c_char_p, POINTER(c_char_p), PT, c_size_t]),
    "clmad_safetensors_open": (st, [c_char_p, POINTER(c_void_p)]),
    "clmad_safetensors_count": (c_size_t, [c_void_p]),
    "clmad_safetensors_entry_at": (st, [c_void_p, c_size_t, POINTER(SafetensorsEntry)]),
    "clmad_safetensors_metadata": (c_char_p, [c_void_p, c_char_p]),
    "clmad_safetensors_read": (st, [ctx_p, c_void_p, c_char_p, PT]),
    "clmad_safetensors_close": (None, [c_void_p]),
}
for _name in ("add", "sub", "mul", "div", "pow"):
    _PROTOTYPES["clmad_" + _name] = (st, [ctx_p, T, T, PT])
for _name in ("neg", "exp", "log", "tanh", "sigmoid", "relu", "sqrt"):
    _PROTOTYPES["clmad_" + _name] = (st, [ctx_p, T, PT])

# Compile notices, the warm-up and the text of a tensor (clmad_context_set_notice,
# clmad_context_warm_up, clmad_tensor_format).
NOTICE_FN = ctypes.CFUNCTYPE(None, c_void_p, c_char_p)
WARM_UP_PROGRAMS, WARM_UP_GEMM, WARM_UP_TRAINING = 1, 2, 4
_PROTOTYPES.update({
    "clmad_context_set_notice": (st, [ctx_p, NOTICE_FN, c_void_p]),
    "clmad_context_warm_up": (st, [ctx_p, c_uint]),
    "clmad_tensor_format": (st, [T, c_char_p, c_size_t, SZ]),
})

for _name, (_res, _args) in _PROTOTYPES.items():
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        raise ImportError(f"clmad: the C library {path} has no function {_name}: it is older than this "
                          "package (rebuild it, or set CLMAD_LIBRARY to a current one)") from None
    _f.restype = _res
    _f.argtypes = _args

# clmad_dtype, clmad_compare_op, clmad_context_param, clmad_optimizer_kind
F32, F64, I32, I64, U8 = 0, 1, 2, 3, 4
F16, BF16 = 5, 6  # 16-bit floats: each element its uint16 bit pattern
LT, LE, GT, GE, EQ, NE = range(6)
PARAM_CHUNK_CAP, PARAM_POOL_LIMIT_BYTES, PARAM_RETAIN_TAPE, PARAM_DISABLE_GRAD, PARAM_PARTIALS_POLICY = range(5)
OPTIM_SGD, OPTIM_ADAM, OPTIM_ADAMW = range(3)


def tensor_array(handles):
    """A C array of tensor pointers (None for NULL)."""
    return (tensor_p * max(1, len(handles)))(*handles)


def size_array(shape):
    return (c_size_t * max(1, len(shape)))(*shape)


def string_array(strings, terminated=False):
    """A C array of char * (UTF-8), NULL-terminated when asked."""
    items = [x.encode() for x in strings] + ([None] if terminated else [])
    return (c_char_p * max(1, len(items)))(*items)


def int_array(values):
    return (c_int * max(1, len(values)))(*values)
