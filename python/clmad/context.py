# SPDX-License-Identifier: Apache-2.0
"""Context: one clmad_context (a device, its queue, caches and tape); devices()."""
import contextlib
import sys
import time
import weakref
from ctypes import byref, c_int64, c_size_t, POINTER
from dataclasses import dataclass

import numpy as np

from . import _lib
from .errors import ReleasedError, check, raise_for
from .tensor import BFLOAT16, Tensor, bf16_bits, dtype_code, is_bfloat16, new_tensor

L = _lib.lib


@dataclass(frozen=True)
class Device:
    """One OpenCL device as the driver reports it (clmad_device_info)."""
    spec: str              # "P:D", usable as Context(device=...)
    name: str
    platform: str
    vendor: str
    version: str
    driver_version: str
    type: str              # "cpu", "gpu", "accelerator" or "other"
    compute_units: int
    global_mem_bytes: int
    max_alloc_bytes: int
    fp64: bool
    host_unified_memory: bool  # the device's memory is the host's: DLPack shares it, without copies


_TYPES = {0: "other", 1: "cpu", 2: "gpu", 3: "accelerator"}


def _device(info):
    return Device(f"{info.platform_index}:{info.device_index}", info.name.decode(),
                  info.platform_name.decode(), info.vendor.decode(), info.version.decode(),
                  info.driver_version.decode(), _TYPES.get(info.type, "other"), info.compute_units,
                  info.global_mem_bytes, info.max_alloc_bytes, bool(info.fp64), bool(info.host_unified_memory))


def devices():
    """Every OpenCL device of every platform, as a list of Device."""
    lst = POINTER(_lib.DeviceInfo)()
    count = c_size_t()
    check(L.clmad_device_list(byref(lst), byref(count)))
    try:
        return [_device(lst[i]) for i in range(count.value)]
    finally:
        L.clmad_device_list_free(lst)


class Scope:
    """The tensors made while a `with ctx.scope()` block runs; released at its end
    unless kept (scope.keep(t)). Python frees unreferenced tensors by itself;
    a scope also frees those still referenced (later use raises ReleasedError)."""

    def __init__(self):
        # id(tensor) -> weak reference: a plain dict and C-level references,
        # cheaper per tensor than a WeakValueDictionary. A collected tensor's
        # entry is dead until its id is reused or _prune drops it.
        self._made = {}
        self._prune_above = 256

    def add(self, t):
        made = self._made
        made[id(t)] = weakref.ref(t)
        if len(made) > self._prune_above:
            self._prune()

    def _prune(self):
        """Drops the dead entries; the next prune waits until the live ones double
        (amortised: a long loop inside one scope keeps its memory flat)."""
        self._made = {k: r for k, r in self._made.items() if r() is not None}
        self._prune_above = 2 * len(self._made) + 256

    def keep(self, t):
        """Takes t out of the scope: it outlives the block."""
        r = self._made.get(id(t))
        if r is not None and r() is t:
            del self._made[id(t)]
        return t

    def _end(self):
        for r in list(self._made.values()):
            t = r()
            if t is not None:
                t.release()
        self._made.clear()


class RetainTape(int):
    """The value of ctx.retain_tape: 1 or 0, true or false as the setting was when
    read. Called, it is a block with the setting on (or `on`): backward keeps the
    tape inside it (for clmad.hvp after backward, or a second backward), and at its
    end the setting goes back; when it goes back to off the tape is cleared, as
    backward would have cleared it, so that updates in place may follow."""

    def __new__(cls, ctx, on):
        flag = super().__new__(cls, 1 if on else 0)
        flag._ctx = ctx
        return flag

    def __repr__(self):
        return repr(bool(self))

    def __call__(self, on=True):
        return self._ctx._retaining(on)


class Context:
    """A clmad context on one device (CLMAD_DEVICE or the first GPU, else the first
    device, when device is None). Also a context manager that closes it.
    fusion=False turns off fusion (CLMAD_PARAM_DISABLE_FUSION, docs/fusion.md):
    a loss over a kernel's output then runs eagerly, with the same results.
    disable_fp64=True makes the context refuse float64 as on a device without
    fp64 (to test that path; ctx.fp64 says whether it takes float64).
    quiet=True keeps the first run's compile notice ("clmad: compiling OpenCL
    programs for ...") off sys.stderr; see also clmad.warm_up."""

    def __init__(self, device=None, cache_dir=None, retain_tape=False, chunk_cap=0, fusion=True,
                 disable_fp64=False, quiet=False):
        opt = _lib.Options()
        L.clmad_options_init(byref(opt))
        if device is not None:
            opt.device = (device.spec if isinstance(device, Device) else str(device)).encode()
        if cache_dir is not None:
            opt.cache_dir = str(cache_dir).encode()
        opt.retain_tape = 1 if retain_tape else 0
        opt.chunk_cap = int(chunk_cap)
        opt.disable_fusion = 0 if fusion else 1
        opt.disable_fp64 = 1 if disable_fp64 else 0
        h = _lib.ctx_p()
        status = self._create(byref(opt), byref(h))
        if status:
            raise_for(status, None)
        self._h = self._raw = h.value
        self._scopes = []
        self._disable_fp64 = bool(disable_fp64)
        if not quiet:
            L.clmad_context_set_notice(h.value, _say_notice, None)

    def __del__(self, _release=L.clmad_context_release):
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            _release(h)

    def _create(self, opt, out):  # (from_pyopencl replaces it: clmad_context_create_cl)
        return L.clmad_context_create(opt, out)

    def close(self):
        """Releases the context: its tensors stay readable, no new work can be made
        on it (clmad.ReleasedError). Tensors keep the C object until they go."""
        h, self._h = self._h, None
        if h:
            L.clmad_context_release(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def _live(self):
        h = self._h
        if not h:
            raise ReleasedError("the context was closed")
        return h

    def _check(self, status):
        if status:
            raise_for(status, self._raw)

    # --- facts -----------------------------------------------------------------
    @property
    def device(self):
        info = _lib.DeviceInfo()
        self._check(L.clmad_context_device(self._live, byref(info)))
        return _device(info)

    @property
    def fp64(self):
        """Whether the context takes float64: the device has fp64 and disable_fp64 was not given."""
        return self.device.fp64 and not self._disable_fp64

    def tuning(self):
        """The tuning in force (clmad_context_tuning), as a dict."""
        t = _lib.Tuning()
        self._check(L.clmad_context_tuning(self._live, byref(t)))
        return {"items_per_work_item": t.items_per_work_item, "chunk_cap": t.chunk_cap,
                "inline_pragma": bool(t.inline_pragma), "origin": t.origin.decode()}

    def save_tuning(self, items_per_work_item=None, chunk_cap=None):
        """Stores the device's tuning in the cache folder (clmad_tuning_save): the
        values in force, with those given replaced. Contexts created afterwards
        on the device start from them; this one keeps its own. The file keeps
        its clblast_xgemm_f32 and loss_lanes lines (docs/api.md, "Tuning per
        device"); a later context's tuning()["origin"] names the file."""
        t = _lib.Tuning()
        self._check(L.clmad_context_tuning(self._live, byref(t)))
        if items_per_work_item is not None:
            t.items_per_work_item = items_per_work_item
        if chunk_cap is not None:
            t.chunk_cap = chunk_cap
        self._check(L.clmad_tuning_save(self._live, byref(t)))

    def stats(self):
        """The counters of clmad_context_stats, as a dict."""
        s = _lib.Stats()
        self._check(L.clmad_context_stats(self._live, byref(s)))
        return {name: (getattr(s, name).decode() if name == "disk_cache_problem" else getattr(s, name))
                for name, _ in s._fields_}

    def finish(self):
        self._check(L.clmad_finish(self._live))

    def _param(self, param):
        v = c_int64()
        self._check(L.clmad_context_get_param(self._live, param, byref(v)))
        return v.value

    @property
    def retain_tape(self):
        """Whether backward keeps the tape (true or false), settable; called, a block
        that keeps it: `with ctx.retain_tape():` (see RetainTape)."""
        return RetainTape(self, self._param(_lib.PARAM_RETAIN_TAPE))

    @retain_tape.setter
    def retain_tape(self, on):
        self._check(L.clmad_set_retain_tape(self._live, 1 if on else 0))

    @contextlib.contextmanager
    def _retaining(self, on):
        before = bool(self._param(_lib.PARAM_RETAIN_TAPE))
        self.retain_tape = on
        try:
            yield self
        finally:
            if self._h:
                self.retain_tape = before
                if on and not before:
                    L.clmad_tape_clear(self._h)

    @property
    def grad_enabled(self):
        return not self._param(_lib.PARAM_DISABLE_GRAD)

    @grad_enabled.setter
    def grad_enabled(self, on):
        self._check(L.clmad_set_grad_enabled(self._live, 1 if on else 0))

    _POLICIES = ("auto", "store", "recompute")

    @property
    def partials_policy(self):
        """When broadcasts evaluate their partials: "auto", "store" or "recompute"."""
        return self._POLICIES[self._param(_lib.PARAM_PARTIALS_POLICY)]

    @partials_policy.setter
    def partials_policy(self, policy):
        if policy not in self._POLICIES:
            from .errors import InvalidArgumentError
            raise InvalidArgumentError(f"partials_policy: one of {self._POLICIES}, not {policy!r}")
        self._check(L.clmad_set_partials_policy(self._live, self._POLICIES.index(policy)))

    @contextlib.contextmanager
    def no_grad(self):
        """Records nothing inside the block (clmad_set_grad_enabled(ctx, 0))."""
        before = self.grad_enabled
        self.grad_enabled = False
        try:
            yield
        finally:
            if self._h:
                self.grad_enabled = before

    @contextlib.contextmanager
    def scope(self):
        """Releases at the end every tensor made inside (see Scope); yields the Scope."""
        s = Scope()
        self._scopes.append(s)
        try:
            yield s
        finally:
            self._scopes.remove(s)
            s._end()

    def tape_clear(self):
        L.clmad_tape_clear(self._live)

    # --- tensors -----------------------------------------------------------------
    def tensor(self, data, requires_grad=False, dtype=None):
        """A tensor holding a copy of data (a NumPy array or anything np.asarray takes);
        dtype from the array (float32 or float64) unless given. A bfloat16 tensor
        (dtype "bfloat16" or ml_dtypes.bfloat16) takes a np.uint16 or bfloat16 array
        as its bit patterns, and other data as values, converted to float32 by NumPy
        and rounded to the nearest bfloat16 (ties to even) by clmad.cast."""
        if dtype is not None and is_bfloat16(dtype):
            a = bf16_bits(data)
            if a is None:  # values
                from .functional import cast
                with np.errstate(over="ignore"):  # (past float32's range is past bfloat16's: inf either way)
                    t = cast(self.tensor(data, dtype=np.float32), BFLOAT16)
                return t.requires_grad_(True) if requires_grad else t  # (which refuses: bf16 has no gradient)
            code = _lib.BF16
        else:
            a = np.asarray(data) if dtype is None else np.asarray(data, dtype=dtype)
            code = dtype_code(a.dtype)
        if not a.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
            a = a.copy(order="C")
        t = new_tensor(self, L.clmad_tensor_create, code, a.ndim, _lib.size_array(a.shape),
                       a.ctypes.data if a.size else None)
        t._shape = a.shape  # known here: no call to ask it later
        if requires_grad:
            t.requires_grad = True
        return t

    def from_dlpack(self, obj, requires_grad=False):
        """A tensor over a DLPack producer's host memory (np.from_dlpack): shared,
        without a copy, where the device's memory is the host's and the data is
        C-contiguous, aligned and writable; a copy otherwise."""
        from .dlpack import import_array, wrap_host_array
        a, code = import_array(obj)
        t = wrap_host_array(self, a, code)
        if t is None:
            return self.tensor(a, requires_grad, BFLOAT16 if code == _lib.BF16 else None)
        if requires_grad:
            t.requires_grad = True
        return t

    def zeros(self, shape, dtype=np.float32, requires_grad=False):
        shape = _shape(shape)
        t = new_tensor(self, L.clmad_tensor_zeros, dtype_code(dtype), len(shape), _lib.size_array(shape))
        t._shape = shape
        return t.requires_grad_(True) if requires_grad else t

    def full(self, shape, value, dtype=np.float32, requires_grad=False):
        shape = _shape(shape)
        t = new_tensor(self, L.clmad_tensor_fill, dtype_code(dtype), len(shape), _lib.size_array(shape),
                       float(value))
        t._shape = shape
        return t.requires_grad_(True) if requires_grad else t

    def scalar(self, value, dtype=np.float32):
        """A 0-d tensor holding value."""
        return new_tensor(self, L.clmad_tensor_scalar, dtype_code(dtype), float(value))

    def rand_uniform(self, shape, low=0.0, high=1.0, seed=0, dtype=np.float32, requires_grad=False):
        """Uniform on [low, high) by Philox (same values on every device for a seed)."""
        shape = _shape(shape)
        t = new_tensor(self, L.clmad_tensor_rand_uniform, dtype_code(dtype), len(shape),
                       _lib.size_array(shape), float(low), float(high), int(seed))
        t._shape = shape
        return t.requires_grad_(True) if requires_grad else t

    def rand_normal(self, shape, mean=0.0, std=1.0, seed=0, dtype=np.float32, requires_grad=False):
        shape = _shape(shape)
        t = new_tensor(self, L.clmad_tensor_rand_normal, dtype_code(dtype), len(shape),
                       _lib.size_array(shape), float(mean), float(std), int(seed))
        t._shape = shape
        return t.requires_grad_(True) if requires_grad else t

    def load(self, path, names=None):
        """The tensors of a safetensors file as new tensors of this context: a dict
        name -> Tensor in the file's order (names: only those). See clmad.load."""
        from .files import load
        return load(path, self, names)

    # --- kernels -----------------------------------------------------------------
    def kernel(self, source, name, n_inputs=None, n_outputs=None):
        """A broadcast kernel from plain OpenCL C over T (see clmad.Kernel)."""
        from .kernel import Kernel
        return Kernel(self, source, name, n_inputs, n_outputs)

    # --- PyOpenCL (pyopencl_interop.py) ---------------------------------------------
    # Context.from_pyopencl(queue): a context on the queue's OpenCL objects;
    # ctx.from_pyopencl(array): a tensor over a pyopencl.array.Array's buffer.
    from .pyopencl_interop import from_pyopencl

    # --- warm-up -----------------------------------------------------------------
    def warm_up(self, programs=True, gemm=True, training=True):
        """Builds ahead what a first run compiles on first use (clmad_context_warm_up):
        the library's own programs (programs=True), CLBlast's GEMM kernels (gemm=True)
        and the kernels of a small perceptron's training step in float32 (training=True:
        needs an empty tape), into the caches; later runs, in this process or another,
        then compile little. Returns a dict: programs_compiled, programs_from_disk, seconds."""
        before = self.stats()
        start = time.perf_counter()
        flags = ((_lib.WARM_UP_PROGRAMS if programs else 0) | (_lib.WARM_UP_GEMM if gemm else 0)
                 | (_lib.WARM_UP_TRAINING if training else 0))
        self._check(L.clmad_context_warm_up(self._live, flags))
        after = self.stats()
        return {"programs_compiled": after["programs_compiled"] - before["programs_compiled"],
                "programs_from_disk": after["programs_from_disk"] - before["programs_from_disk"],
                "seconds": time.perf_counter() - start}


@_lib.NOTICE_FN
def _say_notice(_user, text):
    """A context's notices (the first run's compiles, a warm-up's steps), on
    sys.stderr: in a notebook they show under the cell, where the C library's
    own stderr would not. One function for every context: it outlives them."""
    stream = sys.stderr
    if stream is not None and text:
        stream.write("clmad: " + text.decode(errors="replace") + "\n")
        stream.flush()


def warm_up(device=None, programs=True, gemm=True, training=True, quiet=False):
    """Context(device).warm_up(programs, gemm, training) on a context of its own,
    closed at the end: run once (after installing, or in a notebook's first cell) so
    that the first run's compiles happen here. Returns what Context.warm_up returns."""
    with Context(device=device, quiet=quiet) as ctx:
        return ctx.warm_up(programs, gemm, training)


def _shape(shape):
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(s) for s in shape)


__all__ = ["Context", "Device", "devices", "RetainTape", "Scope", "Tensor"]
