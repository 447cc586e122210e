# SPDX-License-Identifier: Apache-2.0
"""The builtin operations of include/clmad.h as functions over Tensors.

Every function records its adjoint on the tape (as the C call does) except
compare, which gives a mask without a gradient. A Python number where a
tensor is expected becomes a 0-d tensor of the other operand's dtype, a NumPy array a tensor (a copy).
"""
import builtins
import ctypes
import numbers

import numpy as np

from . import _lib
from .errors import InvalidArgumentError, ShapeError
from .tensor import Tensor, dtype_code, new_tensor

L = _lib.lib


def _pair(a, b):
    """(context, a, b) with numbers turned into 0-d tensors of the other's dtype."""
    if isinstance(a, Tensor):
        ctx = a._ctx
        if not isinstance(b, Tensor):
            b = _constant(ctx, b, a.dtype)
    elif isinstance(b, Tensor):
        ctx = b._ctx
        a = _constant(ctx, a, b.dtype)
    else:
        raise TypeError("clmad: at least one operand must be a clmad.Tensor")
    return ctx, a, b


def _constant(ctx, x, dtype):
    """A number as a 0-d tensor, a NumPy array as a tensor (a copy), of dtype."""
    if isinstance(x, np.ndarray):
        return ctx.tensor(x, dtype=dtype)
    return ctx.scalar(_number(x), dtype)


def _number(x):
    if isinstance(x, numbers.Real):
        return float(x)
    raise TypeError(f"clmad: expected a clmad.Tensor or a number, got {type(x).__name__}")


def _real(x):
    """x as a float if it is a real number, else None (a Tensor is answered
    without the slow isinstance of the numbers ABC)."""
    cls = x.__class__
    if cls is float or cls is int:
        return float(x)
    if cls is not Tensor and isinstance(x, numbers.Real):
        return float(x)
    return None


def _tensor(x):
    if not isinstance(x, Tensor):
        raise TypeError(f"clmad: expected a clmad.Tensor, got {type(x).__name__}")
    return x


def _binary(fn, a, b):
    if a.__class__ is Tensor and b.__class__ is Tensor:  # the hot path: nothing to convert
        ha, hb = a._h, b._h
        if ha and hb:
            return new_tensor(a._ctx, fn, ha, hb)
    ctx, a, b = _pair(a, b)
    return new_tensor(ctx, fn, a._handle, b._handle)


def _unary(fn, x):
    x = _tensor(x)
    return new_tensor(x._ctx, fn, x._handle)


def _with_scalar(fn, x, value):
    return new_tensor(x._ctx, fn, x._handle, value)


def add(a, b):
    v = _real(b)
    if v is not None and isinstance(a, Tensor):
        return _with_scalar(L.clmad_add_scalar, a, v)
    return _binary(L.clmad_add, a, b)


def sub(a, b):
    v = _real(b)
    if v is not None and isinstance(a, Tensor):
        return _with_scalar(L.clmad_add_scalar, a, -v)
    return _binary(L.clmad_sub, a, b)


def mul(a, b):
    v = _real(b)
    if v is not None and isinstance(a, Tensor):
        return _with_scalar(L.clmad_mul_scalar, a, v)
    return _binary(L.clmad_mul, a, b)


def div(a, b):
    return _binary(L.clmad_div, a, b)


def pow(a, b):  # noqa: A001
    v = _real(b)
    if v is not None and isinstance(a, Tensor):
        return _with_scalar(L.clmad_pow_scalar, a, v)
    return _binary(L.clmad_pow, a, b)


def neg(x):
    return _unary(L.clmad_neg, x)


def exp(x):
    return _unary(L.clmad_exp, x)


def log(x):
    return _unary(L.clmad_log, x)


def tanh(x):
    return _unary(L.clmad_tanh, x)


def sigmoid(x):
    return _unary(L.clmad_sigmoid, x)


def relu(x):
    return _unary(L.clmad_relu, x)


def sqrt(x):
    return _unary(L.clmad_sqrt, x)


def where(cond, a, b):
    """a where cond != 0, else b (no gradient to cond)."""
    cond = _tensor(cond)
    ctx, a, b = _pair(a, b)
    return new_tensor(ctx, L.clmad_where, cond._handle, a._handle, b._handle)


def compare(op, a, b):
    ctx, a, b = _pair(a, b)
    return new_tensor(ctx, L.clmad_compare, op, a._handle, b._handle)


def _axes(axis):
    if axis is None:
        return 0, None
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return len(axes), _lib.int_array(axes)


def sum(x, axis=None, keepdims=False):  # noqa: A001
    n, axes = _axes(axis)
    return new_tensor(_tensor(x)._ctx, L.clmad_sum, x._handle, n, axes, 1 if keepdims else 0)


def mean(x, axis=None, keepdims=False):
    n, axes = _axes(axis)
    return new_tensor(_tensor(x)._ctx, L.clmad_mean, x._handle, n, axes, 1 if keepdims else 0)


def max(x, axis=None, keepdims=False):  # noqa: A001
    """The max along one axis, or over every element (axis None)."""
    x = _tensor(x)
    if axis is None:
        flat = reshape(x, -1)  # held until the call returns
        m = new_tensor(x._ctx, L.clmad_max, flat._handle, 0, 0)
        return reshape(m, *([1] * _rank(x))) if keepdims else m
    return new_tensor(x._ctx, L.clmad_max, x._handle, int(axis), 1 if keepdims else 0)


def argmax(x, axis=-1, keepdims=False):
    """The first index of the largest element along axis (int64; NaN wins, as NumPy)."""
    x = _tensor(x)
    return new_tensor(x._ctx, L.clmad_argmax, x._handle, int(axis), 1 if keepdims else 0)


def argmin(x, axis=-1, keepdims=False):
    x = _tensor(x)
    return new_tensor(x._ctx, L.clmad_argmin, x._handle, int(axis), 1 if keepdims else 0)


def index_select(x, axis, index):
    """The entries index (1-d int64) of x along axis; the gradient goes to x."""
    x, index = _tensor(x), _tensor(index)
    return new_tensor(x._ctx, L.clmad_index_select, x._handle, int(axis), index._handle)


def embedding(weight, index):
    """weight[index]: shape index.shape + (D,); the gradient goes to weight."""
    weight, index = _tensor(weight), _tensor(index)
    return new_tensor(weight._ctx, L.clmad_embedding, weight._handle, index._handle)


def one_hot(index, classes, dtype=np.float32):
    index = _tensor(index)
    return new_tensor(index._ctx, L.clmad_one_hot, index._handle, int(classes), dtype_code(dtype))


def cast(x, dtype):
    """x converted to dtype (differentiable between float32 and float64)."""
    x = _tensor(x)
    return new_tensor(x._ctx, L.clmad_cast, x._handle, dtype_code(dtype))


def accuracy(logits, labels):
    """The fraction of rows whose argmax is the label (a Python float)."""
    logits, labels = _tensor(logits), _tensor(labels)
    value = ctypes.c_double()
    logits._ctx._check(L.clmad_accuracy(logits._ctx._live, logits._handle, labels._handle, ctypes.byref(value)))
    return value.value


def logsumexp(x, axis=-1, keepdims=False):
    return new_tensor(_tensor(x)._ctx, L.clmad_logsumexp, x._handle, int(axis), 1 if keepdims else 0)


def softmax(x, axis=-1):
    return new_tensor(_tensor(x)._ctx, L.clmad_softmax, x._handle, int(axis))


def log_softmax(x, axis=-1):
    return new_tensor(_tensor(x)._ctx, L.clmad_log_softmax, x._handle, int(axis))


def _tensors(fn, a, b):
    """fn(ctx, a, b, &out) for two Tensors (no numbers)."""
    if a.__class__ is not Tensor or b.__class__ is not Tensor:  # (the hot path checks less)
        _tensor(a), _tensor(b)
    return _binary(fn, a, b)


def dot(a, b):
    """sum(a * b) as a 0-d tensor, without the product as a temporary."""
    return _tensors(L.clmad_dot, a, b)


def mse_loss(pred, target):
    return _tensors(L.clmad_mse_loss, pred, target)


def cross_entropy(logits, target):
    """Softmax cross-entropy over the last axis; target: probabilities or class indices."""
    return _tensors(L.clmad_cross_entropy, logits, target)


def _rank(x):
    """x.ndim, in one call when the shape is not known yet (not one more per axis)."""
    shape = x._shape
    return len(shape) if shape is not None else L.clmad_tensor_ndim(x._handle)


def matmul(a, b, trans_a=False, trans_b=False):
    """a @ b by NumPy's np.matmul rules (clmad_matmul, CLBlast): 2-d @ 2-d; a 1-d
    operand is a row (a) or a column (b), its axis dropped from the result; the
    axes before the last two are batch axes, broadcast. trans_a / trans_b
    transpose the last two axes of a matrix operand. A NumPy array operand is
    copied into a tensor of the other's dtype."""
    ta, tb = 1 if trans_a else 0, 1 if trans_b else 0
    if a.__class__ is Tensor and b.__class__ is Tensor:  # the hot path
        ha, hb = a._h, b._h
        if ha and hb:
            return new_tensor(a._ctx, L.clmad_matmul, ha, hb, ta, tb)
    if not isinstance(a, (Tensor, np.ndarray)) or not isinstance(b, (Tensor, np.ndarray)):
        raise TypeError(f"matmul: operands are clmad.Tensor or NumPy arrays, not {type(a).__name__} and "
                        f"{type(b).__name__}")
    ctx, a, b = _pair(a, b)
    return new_tensor(ctx, L.clmad_matmul, a._handle, b._handle, ta, tb)


def reshape(x, *shape):
    x = _tensor(x)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise ShapeError("reshape: at most one size may be -1")
    if -1 in shape:
        known = 1
        for s in shape:
            known *= s if s != -1 else 1
        if known == 0 or x.size % known:
            raise ShapeError(f"reshape: cannot reshape {x.shape} into {tuple(shape)}")
        shape[shape.index(-1)] = x.size // known
    if any(s < 0 for s in shape):
        raise ShapeError(f"reshape: negative size in {tuple(shape)}")
    return new_tensor(x._ctx, L.clmad_reshape, x._handle, len(shape), _lib.size_array(shape))


def transpose(x, *axes):
    x = _tensor(x)
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    if not axes:
        return new_tensor(x._ctx, L.clmad_transpose, x._handle, None)
    if len(axes) != _rank(x):
        raise ShapeError(f"transpose: {len(axes)} axes for a tensor of rank {x.ndim}")
    return new_tensor(x._ctx, L.clmad_transpose, x._handle, _lib.int_array(axes))


def concat(tensors, axis=0):
    tensors = [_tensor(t) for t in tensors]
    if not tensors:
        raise InvalidArgumentError("concat: no tensors")
    handles = _lib.tensor_array([t._handle for t in tensors])
    return new_tensor(tensors[0]._ctx, L.clmad_concat, len(tensors), handles, int(axis))


def slice(x, axis, start, stop):  # noqa: A001
    """Elements [start, stop) of x along axis (a copy)."""
    return new_tensor(_tensor(x)._ctx, L.clmad_slice, x._handle, int(axis), int(start), int(stop))


def getitem(x, key):
    """x[key] for integers and slices of step 1 (a copy)."""
    if not isinstance(key, tuple):
        key = (key,)
    if len(key) > x.ndim:
        raise IndexError(f"too many indices ({len(key)}) for a tensor of rank {x.ndim}")
    out, shape = x, list(x.shape)
    keep = []
    for axis, k in enumerate(key):
        n = shape[axis]
        if isinstance(k, numbers.Integral):
            i = int(k) + n if k < 0 else int(k)
            if not 0 <= i < n:
                raise IndexError(f"index {k} out of range for axis {axis} of size {n}")
            start, stop = i, i + 1
        elif isinstance(k, builtins.slice):
            start, stop, step = k.indices(n)
            if step != 1:
                raise IndexError("clmad: slices of step 1 only")
            stop = start if stop < start else stop
            keep.append(stop - start)
        else:
            raise IndexError(f"clmad: index by integers and slices only, not {type(k).__name__}")
        if (start, stop) != (0, n):
            out = slice(out, axis, start, stop)
    keep.extend(shape[len(key):])
    if len(keep) != x.ndim:
        out = reshape(out, *keep)
    return out
