# SPDX-License-Identifier: Apache-2.0
"""The index operations of include/clmad.h (argmax, index_select, embedding,
gather, scatter_add, one_hot, accuracy) and t[key] (getitem). An index is an
int64 Tensor, or anything np.asarray makes an integer array of (copied, as
int64; a NumPy index may be negative, counted from the end as in NumPy).
Indices outside the axis fail in C, naming the first bad one."""
import builtins
import ctypes
import numbers

import numpy as np

from . import _lib
from .errors import ShapeError
from .functional import _like, _tensor, reshape, slice
from .tensor import Tensor, dtype_code, new_tensor

L = _lib.lib


def _index(x, index, size=None):
    """index as an int64 Tensor of x's context; a NumPy index below 0 counts from
    the end of an axis of `size` (as NumPy's), where size is given."""
    if isinstance(index, Tensor):
        return index
    a = np.asarray(index)
    if a.dtype == bool:
        raise IndexError("clmad: boolean masks do not index tensors (clmad.where selects by a mask)")
    if a.dtype.kind not in "iu" and a.size:
        raise IndexError(f"clmad: indices are integers, not {a.dtype}")
    a = a.astype(np.int64)
    if size is not None:
        a = np.where(a < 0, a + size, a)
    return x._ctx.tensor(a)


def argmax(x, axis=-1, keepdims=False):
    """The first index of the largest element along axis (int64; NaN wins, as NumPy)."""
    x = _tensor(x)
    return new_tensor(x._ctx, L.clmad_argmax, x._handle, int(axis), 1 if keepdims else 0)


def argmin(x, axis=-1, keepdims=False):
    x = _tensor(x)
    return new_tensor(x._ctx, L.clmad_argmin, x._handle, int(axis), 1 if keepdims else 0)


def index_select(x, axis, index):
    """The entries index (1-d) of x along axis; the gradient goes to x."""
    x = _tensor(x)
    index = _index(x, index)
    return new_tensor(x._ctx, L.clmad_index_select, x._handle, int(axis), index._handle)


def embedding(weight, index):
    """weight[index]: shape index.shape + (D,); the gradient goes to weight."""
    weight = _tensor(weight)
    index = _index(weight, index)
    return new_tensor(weight._ctx, L.clmad_embedding, weight._handle, index._handle)


def gather(x, axis, index):
    """out[i][j][k] = x[i][index[i][j][k]][k] for axis 1, as torch.gather: index has
    x's rank and its sizes outside axis; out has index's shape. The gradient goes
    to x (scattered back and summed)."""
    x = _tensor(x)
    index = _index(x, index)
    return new_tensor(x._ctx, L.clmad_gather, x._handle, int(axis), index._handle)


def scatter_add(x, axis, index, src):
    """x with src added at index along axis, as torch.scatter_add (out of place):
    for axis 1, out[i][index[i][j][k]][k] += src[i][j][k]. Gradients to x and src."""
    x = _tensor(x)
    index, src = _index(x, index), _like(src, x)
    return new_tensor(x._ctx, L.clmad_scatter_add, x._handle, int(axis), index._handle, src._handle)


def one_hot(index, classes, dtype=np.float32):
    index = _tensor(index)
    return new_tensor(index._ctx, L.clmad_one_hot, index._handle, int(classes), dtype_code(dtype))


def accuracy(logits, labels):
    """The fraction of rows whose argmax is the label (a Python float)."""
    logits = _tensor(logits)
    labels = _index(logits, labels)
    value = ctypes.c_double()
    logits._ctx._check(L.clmad_accuracy(logits._ctx._live, logits._handle, labels._handle, ctypes.byref(value)))
    return value.value


def _is_index_array(k):
    return isinstance(k, (Tensor, np.ndarray, list))


def getitem(x, key):
    """x[key] (a copy) for integers, slices of step 1 and one integer array (a
    Tensor, a NumPy array or a list) along one axis, which is index_select."""
    if not isinstance(key, tuple):
        key = (key,)
    if len(key) > x.ndim:
        raise IndexError(f"too many indices ({len(key)}) for a tensor of rank {x.ndim}")
    if builtins.sum(1 for k in key if _is_index_array(k)) > 1:
        raise IndexError("clmad: one index array per subscript (NumPy would pair several up)")
    out, shape = x, list(x.shape)
    keep, reshaped = [], False  # (the shape out must take, and whether it differs)
    for axis, k in enumerate(key):
        n = shape[axis]
        if _is_index_array(k):
            index = _index(x, k, n)
            keep.extend(index.shape)
            reshaped |= index.ndim != 1
            flat = reshape(index, -1) if index.ndim != 1 else index
            out = index_select(out, axis, flat)
            continue
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (numbers.Integral, builtins.slice)):
            raise IndexError(f"clmad: index by integers, slices and integer arrays, not {type(k).__name__}")
        if isinstance(k, numbers.Integral):
            i = int(k) + n if k < 0 else int(k)
            if not 0 <= i < n:
                raise IndexError(f"index {k} out of range for axis {axis} of size {n}")
            start, stop = i, i + 1
            reshaped = True
        else:
            start, stop, step = k.indices(n)
            if step != 1:
                raise IndexError("clmad: slices of step 1 only")
            stop = start if stop < start else stop
            keep.append(stop - start)
        if (start, stop) != (0, n):
            out = slice(out, axis, start, stop)
    keep.extend(shape[len(key):])
    if reshaped:
        out = reshape(out, *keep)
    return out
