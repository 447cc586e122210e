# SPDX-License-Identifier: Apache-2.0
"""The builtin operations of include/clmad.h as functions over Tensors.

Every function records its adjoint on the tape (as the C call does) except
compare, which gives a mask without a gradient. A Python number where a
tensor is expected becomes a 0-d tensor of the other operand's dtype, a NumPy array a tensor (a copy).
"""
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
        hint = " (an array alone has no context: ctx.tensor(array))" if isinstance(x, np.ndarray) else ""
        raise TypeError(f"clmad: expected a clmad.Tensor, got {type(x).__name__}{hint}")
    return x


def _like(x, other):
    """x as a Tensor beside the Tensor other: x itself, or a NumPy array copied into
    other's context, float arrays in other's dtype (integer ones keep theirs)."""
    if isinstance(x, np.ndarray):
        return other._ctx.tensor(x, dtype=other.dtype if x.dtype.kind == "f" else None)
    return _tensor(x)


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
    ctx, a, b = _pair(a, b)
    cond = _like(cond.astype(np.uint8) if isinstance(cond, np.ndarray) and cond.dtype == bool else cond, a)
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


def cast(x, dtype):
    """x converted to dtype (differentiable between float32 and float64)."""
    x = _tensor(x)
    return new_tensor(x._ctx, L.clmad_cast, x._handle, dtype_code(dtype))


def logsumexp(x, axis=-1, keepdims=False):
    return new_tensor(_tensor(x)._ctx, L.clmad_logsumexp, x._handle, int(axis), 1 if keepdims else 0)


def softmax(x, axis=-1):
    return new_tensor(_tensor(x)._ctx, L.clmad_softmax, x._handle, int(axis))


def log_softmax(x, axis=-1):
    return new_tensor(_tensor(x)._ctx, L.clmad_log_softmax, x._handle, int(axis))


def _tensors(fn, a, b):
    """fn(ctx, a, b, &out) for two Tensors, or a Tensor and a NumPy array (no numbers)."""
    if a.__class__ is not Tensor or b.__class__ is not Tensor:  # (the hot path checks less)
        if isinstance(a, Tensor):
            b = _like(b, a)
        else:
            a = _like(a, _tensor(b))
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
    """The tensors (NumPy arrays among them are copied) joined along axis."""
    tensors = list(tensors)
    first = next((t for t in tensors if isinstance(t, Tensor)), None)
    if first is None:
        raise InvalidArgumentError("concat: no tensors" if not tensors else "concat: no clmad.Tensor among them")
    tensors = [_like(t, first) for t in tensors]
    handles = _lib.tensor_array([t._handle for t in tensors])
    return new_tensor(tensors[0]._ctx, L.clmad_concat, len(tensors), handles, int(axis))


def slice(x, axis, start, stop):  # noqa: A001
    """Elements [start, stop) of x along axis (a copy)."""
    return new_tensor(_tensor(x)._ctx, L.clmad_slice, x._handle, int(axis), int(start), int(stop))
