# SPDX-License-Identifier: Apache-2.0
"""Tensor: one clmad_tensor reference, released when the object is collected.

A Tensor keeps its Context alive (the context's C object is released only
after the Python context object is gone or closed, and the C library keeps
it until its last tensor anyway). Operators map onto the builtins of
include/clmad.h; see functional.py for the functions.
"""
from ctypes import byref, c_double

import numpy as np

from . import _lib
from .errors import ReleasedError, raise_for

L = _lib.lib
_tensor_p = _lib.tensor_p
_backward = L.clmad_backward
_zero_grad = L.clmad_tensor_zero_grad
_DTYPES = {_lib.F32: np.dtype(np.float32), _lib.F64: np.dtype(np.float64), _lib.I32: np.dtype(np.int32),
           _lib.I64: np.dtype(np.int64), _lib.U8: np.dtype(np.uint8), _lib.F16: np.dtype(np.float16)}
_CODES = {v: k for k, v in _DTYPES.items()}
BFLOAT16 = "bfloat16"  # the dtype of bf16 tensors where ml_dtypes is not installed (NumPy has no bfloat16)


def ml_bfloat16():
    """NumPy's dtype of ml_dtypes.bfloat16, or None where ml_dtypes is not installed.
    The import is tried on each call (sys.modules answers it after the first): the
    package is optional, and a test hides it with sys.modules["ml_dtypes"] = None."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def is_bfloat16(dtype):
    """Whether dtype names bf16: the string "bfloat16" or ml_dtypes' dtype (or one alike)."""
    if isinstance(dtype, str):
        return dtype == BFLOAT16
    try:
        d = np.dtype(dtype)
    except TypeError:
        return False
    return d.name == BFLOAT16 and d.itemsize == 2


def dtype_code(dtype):
    """The clmad_dtype of a NumPy dtype (float32, float64, int32, int64, uint8, float16)
    or of bfloat16 (the string "bfloat16", or ml_dtypes.bfloat16)."""
    try:
        return _CODES[np.dtype(dtype)]
    except (KeyError, TypeError):
        if is_bfloat16(dtype):
            return _lib.BF16
    from .errors import DtypeError
    raise DtypeError(f"clmad tensors are float32, float64, int32, int64, uint8, float16 or bfloat16 (dtype "
                     f'"bfloat16" or ml_dtypes.bfloat16), not {dtype}'
                     + (" (a bool mask: .astype(np.uint8))" if str(dtype) == "bool" else ""))


def host_dtype(code):
    """The NumPy dtype of the host copy of a tensor of clmad_dtype code: a bf16
    tensor's is ml_dtypes.bfloat16, or np.uint16 (its bit patterns) without it."""
    if code == _lib.BF16:
        bf16 = ml_bfloat16()  # (a dtype is falsy: no `or`)
        return np.dtype(np.uint16) if bf16 is None else bf16
    return _DTYPES[code]


def bf16_bits(data):
    """data as a C-contiguous np.uint16 array of bf16 bit patterns when it holds them
    (a np.uint16 array, or a bfloat16 one), else None: data holds values to round."""
    a = np.asarray(data)
    if a.dtype != np.uint16 and not is_bfloat16(a.dtype):
        return None
    if not a.flags.c_contiguous:
        a = a.copy(order="C")
    return a.view(np.uint16)


def new_tensor(ctx, fn, *args):
    """Calls fn(ctx, *args, &out) and wraps the new tensor (raises on failure).
    The hot path of every operation: one call into the library, nothing else
    (out goes by reference without byref: its argtype is a pointer to it)."""
    h = ctx._h
    if not h:
        raise ReleasedError("the context was closed")
    out = _tensor_p()
    status = fn(h, *args, out)
    if status:
        raise_for(status, ctx._raw)
    return Tensor(ctx, out.value)


class Tensor:
    """A tensor on the context's device (owns one reference to its clmad_tensor)."""
    __slots__ = ("_h", "_ctx", "_shape", "_dtype", "__weakref__")
    __array_priority__ = 1000  # ndarray <op> Tensor gives Tensor's reflected operator

    def __init__(self, ctx, handle):
        self._h = handle
        self._ctx = ctx
        self._shape = self._dtype = None  # asked once, when first needed (they never change)
        if ctx._scopes:
            ctx._scopes[-1].add(self)

    def __del__(self, _release=L.clmad_tensor_release):
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            _release(h)

    def release(self):
        """Releases the C object now; any later use raises clmad.ReleasedError."""
        h, self._h = self._h, None
        if h:
            L.clmad_tensor_release(h)

    @property
    def _handle(self):
        h = self._h
        if not h:
            raise ReleasedError("the tensor was released")
        return h

    @property
    def context(self):
        return self._ctx

    # --- facts ---------------------------------------------------------------
    @property
    def shape(self):
        h = self._handle  # (a released tensor raises, known shape or not)
        if self._shape is None:
            self._shape = tuple(L.clmad_tensor_dim(h, i) for i in range(L.clmad_tensor_ndim(h)))
        return self._shape

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return L.clmad_tensor_numel(self._handle)

    @property
    def dtype(self):
        """The NumPy dtype; a bfloat16 tensor's is np.dtype(ml_dtypes.bfloat16), or
        where ml_dtypes is not installed the string "bfloat16" (see BFLOAT16)."""
        h = self._handle
        if self._dtype is None:
            code = L.clmad_tensor_dtype(h)
            if code == _lib.BF16:
                bf16 = ml_bfloat16()
                self._dtype = BFLOAT16 if bf16 is None else bf16
            else:
                self._dtype = _DTYPES[code]
        return self._dtype

    def _host_dtype(self):
        """The NumPy dtype of the tensor's host copy (see host_dtype)."""
        return host_dtype(L.clmad_tensor_dtype(self._handle))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self):
        """clmad_tensor_format's text (values as PyTorch prints them, a long tensor
        cut to its ends, the shape, the dtype), then the device and requires_grad:
        clmad.Tensor([1.0000, 2.0000], shape=(2,), dtype=f32, device="...")."""
        if not self._h:
            return "<clmad.Tensor (released)>"
        from ctypes import c_size_t, create_string_buffer
        n = c_size_t()
        status = L.clmad_tensor_format(self._h, None, 0, byref(n))
        buf = create_string_buffer(n.value + 1)
        if not status:
            status = L.clmad_tensor_format(self._h, buf, n.value + 1, byref(n))
        if status:
            raise_for(status, self._ctx._raw)
        text = buf.value.decode(errors="replace")  # "tensor(VALUES, shape=..., dtype=...)"
        body = text[len("tensor("):-1].replace("\n" + " " * len("tensor("), "\n" + " " * len("clmad.Tensor("))
        try:
            device = f', device="{self._ctx.device.name}"'
        except ReleasedError:
            device = ""
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"clmad.Tensor({body}{device}{grad})"

    # --- values ----------------------------------------------------------------
    def numpy(self):
        """A new NumPy array holding the tensor's values (a copy; waits for the device).
        A bfloat16 tensor's is an ml_dtypes.bfloat16 array, or where ml_dtypes is not
        installed a np.uint16 array of its bit patterns."""
        h = self._handle
        out = np.empty(self.shape, self._host_dtype())
        status = L.clmad_tensor_read(h, out.ctypes.data, out.nbytes)
        if status:
            raise_for(status, self._ctx._raw)
        return out

    def __array__(self, dtype=None, copy=None):
        """np.asarray(t): a copy of the values (NumPy 2's protocol). copy=False gives
        the tensor's memory itself where the device's memory is the host's (a view
        as np.from_dlpack's), and raises ValueError where that needs a copy."""
        if copy is False:
            from .dlpack import host_view
            a = host_view(self)
            if a is None or (dtype is not None and np.dtype(dtype) != a.dtype):
                raise ValueError("clmad: np.asarray(t, copy=False) needs a copy here (the device's memory is "
                                 "not the host's, the tensor is empty or 0-d, or the dtype differs)")
            return a
        a = self.numpy()
        if dtype is not None and a.dtype == np.uint16 and L.clmad_tensor_dtype(self._h) == _lib.BF16 \
                and np.dtype(dtype) != np.uint16:
            a = F.cast(self, np.float32).numpy()  # bfloat16's values, not its bits (ml_dtypes absent)
        return a if dtype is None else a.astype(dtype, copy=False)

    def item(self):
        value = c_double()
        status = L.clmad_tensor_item(self._handle, byref(value))
        if status:
            raise_for(status, self._ctx._raw)
        return float(value.value)

    def __float__(self):
        return self.item()

    def __bool__(self):
        return bool(self.item())

    def write(self, array):
        """Overwrites the values from a NumPy array of the same shape (converted to the
        dtype; for a bfloat16 tensor as ctx.tensor(array, dtype="bfloat16") converts)."""
        h = self._handle
        if L.clmad_tensor_dtype(h) == _lib.BF16:
            a = bf16_bits(array)
            if a is None:  # values: rounded on the device (a tensor of its own, copied)
                values = self._ctx.tensor(array, dtype=BFLOAT16)
                self._check_shape(values)
                self.copy_(values)
                return
        else:
            a = np.asarray(array, dtype=self.dtype)
            if not a.flags.c_contiguous:
                a = a.copy(order="C")
        self._check_shape(a)
        status = L.clmad_tensor_write(h, a.ctypes.data, a.nbytes)
        if status:
            raise_for(status, self._ctx._raw)

    def _check_shape(self, a):
        if a.shape != self.shape:
            from .errors import ShapeError
            raise ShapeError(f"write: array of shape {a.shape} into a tensor of shape {self.shape}")

    def copy_(self, src):
        """Copies src's values into this tensor on the device (not recorded)."""
        status = L.clmad_tensor_copy(self._handle, src._handle)
        if status:
            raise_for(status, self._ctx._raw)
        return self

    # --- DLPack (zero-copy on host-memory devices: dlpack.py) -------------------
    def __dlpack__(self, stream=None, **kwargs):
        """The tensor's memory itself where the device's memory is the host's (CPU
        devices), else a host copy; see the README's DLPack notes."""
        from .dlpack import export
        return export(self, stream, kwargs)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU: the memory exported is host memory (the buffer, or a copy)

    # --- PyOpenCL (pyopencl_interop.py) ---------------------------------------------
    def to_pyopencl(self, queue=None):
        """A pyopencl.array.Array over the tensor's buffer, without a copy, on queue (a
        pyopencl.CommandQueue of the tensor's OpenCL context; None: clmad's own queue).
        The Array keeps the tensor's memory while it or a command on it lives."""
        from .pyopencl_interop import to_array
        return to_array(self, queue)

    # --- gradients -------------------------------------------------------------
    @property
    def requires_grad(self):
        return bool(L.clmad_tensor_requires_grad(self._handle))

    @requires_grad.setter
    def requires_grad(self, on):
        status = L.clmad_tensor_set_requires_grad(self._handle, 1 if on else 0)
        if status:
            raise_for(status, self._ctx._raw)

    def requires_grad_(self, on=True):
        self.requires_grad = on
        return self

    @property
    def grad(self):
        """The gradient accumulated by backward (a new Tensor), or None."""
        out = _lib.tensor_p()
        status = L.clmad_tensor_grad(self._handle, byref(out))
        if status:
            raise_for(status, self._ctx._raw)
        return Tensor(self._ctx, out.value) if out.value else None

    def zero_grad(self):
        _zero_grad(self._handle)

    def backward(self, seed=None):
        """Backward pass from this tensor (one element, or give seed of its shape)."""
        ctx = self._ctx
        if seed is not None and not isinstance(seed, Tensor):
            seed = ctx.tensor(seed, dtype=self.dtype)
        status = _backward(ctx._live, self._handle, seed._handle if seed is not None else None)
        if status:
            raise_for(status, ctx._raw)

    def hvp(self, params, v):
        """clmad.hvp(self, params, v): H·v of this one-element loss (see second_order.py)."""
        return hvp(self, params, v)

    # --- operators -------------------------------------------------------------
    def __add__(self, other):
        return F.add(self, other)

    def __radd__(self, other):
        return F.add(self, other)

    def __sub__(self, other):
        return F.sub(self, other)

    def __rsub__(self, other):
        return F.sub(other, self)

    def __mul__(self, other):
        return F.mul(self, other)

    def __rmul__(self, other):
        return F.mul(self, other)

    def __truediv__(self, other):
        return F.div(self, other)

    def __rtruediv__(self, other):
        return F.div(other, self)

    def __pow__(self, other):
        return F.pow(self, other)

    def __rpow__(self, other):
        return F.pow(other, self)

    # --- in place: the tensor's own storage, not recorded (clmad_tensor_axpby) ---
    def __iadd__(self, other):
        return self._in_place("+", other, 1.0)

    def __isub__(self, other):
        return self._in_place("-", other, -1.0)

    def __imul__(self, other):
        return self._in_place("*", other, None)

    def __itruediv__(self, other):
        return self._in_place("/", other, None)

    def _in_place(self, op, other, alpha):
        """self op= other on this tensor's storage, outside the tape (the tensor keeps
        its identity, requires_grad and gradient: w -= lr * w.grad updates a leaf).
        other: a Tensor, a NumPy array or a number, broadcast to self's shape.
        Refused while the tape holds self, whose values backward needs."""
        ctx = self._ctx
        h = self._handle
        if isinstance(other, np.ndarray):
            other = F._like(other, self)
        if alpha is not None and isinstance(other, Tensor) and other.shape == self.shape \
                and other.dtype == self.dtype:
            status = L.clmad_tensor_axpby(h, alpha, other._handle, 1.0)  # self = alpha other + self
        elif op == "*" and F._real(other) is not None:
            status = L.clmad_tensor_axpby(h, 0.0, None, F._real(other))  # self = value self
        else:
            with ctx.no_grad():
                result = {"+": F.add, "-": F.sub, "*": F.mul, "/": F.div}[op](self, other)
            if result.shape != self.shape:
                from .errors import ShapeError
                raise ShapeError(f"{op}=: the result has shape {result.shape}, the tensor {self.shape} "
                                 "(an in-place update keeps the tensor's shape)")
            status = L.clmad_tensor_copy(h, result._handle)
        if status:
            from .errors import StateError
            if status == StateError.status:
                raise StateError(f"{op}= in place: the tape holds this tensor (an input or the output of an "
                                 "operation recorded since the last backward), whose values backward needs; "
                                 "update it after loss.backward(), or drop the tape with ctx.tape_clear()",
                                 status)
            raise_for(status, ctx._raw)
        return self

    def __neg__(self):
        return F.neg(self)

    def __pos__(self):
        return self

    def __matmul__(self, other):
        return F.matmul(self, other)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __lt__(self, other):
        return F.compare(_lib.LT, self, other)

    def __le__(self, other):
        return F.compare(_lib.LE, self, other)

    def __gt__(self, other):
        return F.compare(_lib.GT, self, other)

    def __ge__(self, other):
        return F.compare(_lib.GE, self, other)

    def __eq__(self, other):
        return F.compare(_lib.EQ, self, other)

    def __ne__(self, other):
        return F.compare(_lib.NE, self, other)

    __hash__ = object.__hash__

    def __getitem__(self, key):
        return indexing.getitem(self, key)

    # --- methods that are functions of functional.py ----------------------------
    def sum(self, axis=None, keepdims=False):
        return F.sum(self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        return F.mean(self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        return F.max(self, axis, keepdims)

    def argmax(self, axis=-1, keepdims=False):
        return indexing.argmax(self, axis, keepdims)

    def argmin(self, axis=-1, keepdims=False):
        return indexing.argmin(self, axis, keepdims)

    def logsumexp(self, axis=-1, keepdims=False):
        return F.logsumexp(self, axis, keepdims)

    def softmax(self, axis=-1):
        return F.softmax(self, axis)

    def log_softmax(self, axis=-1):
        return F.log_softmax(self, axis)

    def reshape(self, *shape):
        return F.reshape(self, *shape)

    def transpose(self, *axes):
        return F.transpose(self, *axes)

    @property
    def T(self):
        return F.transpose(self)

    def exp(self):
        return F.exp(self)

    def log(self):
        return F.log(self)

    def tanh(self):
        return F.tanh(self)

    def sigmoid(self):
        return F.sigmoid(self)

    def relu(self):
        return F.relu(self)

    def sqrt(self):
        return F.sqrt(self)


from . import functional as F  # noqa: E402 (the operators call it at run time)
from . import indexing  # noqa: E402
from .second_order import hvp  # noqa: E402
