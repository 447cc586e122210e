# SPDX-License-Identifier: Apache-2.0
"""Kernel: a broadcast function written in OpenCL C over T (clmad_kernel)."""
import re
from ctypes import byref

import numpy as np

from . import _lib
from .errors import InvalidArgumentError, raise_for
from .tensor import Tensor, dtype_code

L = _lib.lib
_broadcast = L.clmad_broadcast


def signature(source, name):
    """(n_inputs, n_outputs) of function `name` in source: T parameters are inputs,
    T * parameters outputs (a void function), else one output. None if not found."""
    code = re.sub(r"/\*.*?\*/|//[^\n]*", " ", source, flags=re.S)  # without comments
    m = re.search(r"\b(\w+)\s+" + re.escape(name) + r"\s*\(([^)]*)\)\s*\{", code)
    if not m:
        return None
    params = [p.strip() for p in m.group(2).split(",") if p.strip() and p.strip() != "void"]
    outputs = sum(1 for p in params if "*" in p)
    if m.group(1) == "void":
        return len(params) - outputs, outputs
    return len(params), 1


class Kernel:
    """k(x, a, ...) evaluates the function elementwise over the broadcast of its
    inputs (Tensors, or numbers as 0-d tensors) and records it on the tape; it
    returns a Tensor, or a tuple for several outputs."""

    def __init__(self, ctx, source, name, n_inputs=None, n_outputs=None):
        if n_inputs is None or n_outputs is None:
            sig = signature(source, name)
            if sig is None:
                raise InvalidArgumentError(
                    f"kernel: no definition of {name} found in the source; give n_inputs and n_outputs")
            n_inputs = sig[0] if n_inputs is None else n_inputs
            n_outputs = sig[1] if n_outputs is None else n_outputs
        self._ctx = ctx
        self.name = name
        self.n_inputs = int(n_inputs)
        self.n_outputs = int(n_outputs)
        h = _lib.kernel_p()
        status = L.clmad_kernel_create(ctx._live, source.encode(), name.encode(), self.n_inputs,
                                       self.n_outputs, byref(h))
        if status:
            raise_for(status, ctx._raw)
        self._h = h.value
        # The C arrays of a call, as types made once (ctypes makes an array type per call otherwise).
        self._inputs_array = _lib.tensor_p * max(1, self.n_inputs)
        self._outputs_array = _lib.tensor_p * max(1, self.n_outputs)

    def __del__(self, _release=L.clmad_kernel_release):
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            _release(h)

    def release(self):
        h, self._h = self._h, None
        if h:
            L.clmad_kernel_release(h)

    @property
    def _handle(self):
        if not self._h:
            from .errors import ReleasedError
            raise ReleasedError("the kernel was released")
        return self._h

    def _inputs(self, inputs):
        if len(inputs) != self.n_inputs:
            raise InvalidArgumentError(f"{self.name} takes {self.n_inputs} inputs, got {len(inputs)}")
        dtype = next((x.dtype for x in inputs if isinstance(x, Tensor) and getattr(x.dtype, "kind", "") == "f"),
                     np.dtype(np.float32))
        return self._as_tensors(inputs, dtype)

    def _as_tensors(self, values, dtype):
        """(Tensors, their C array): numbers as 0-d tensors and float NumPy arrays as
        copies of dtype, integer arrays as copies of their own; None stays NULL."""
        ts = [x if x is None or isinstance(x, Tensor) else
              self._ctx.tensor(x, dtype=dtype if x.dtype.kind == "f" else None) if isinstance(x, np.ndarray) else
              self._ctx.scalar(x, dtype) for x in values]
        return ts, _lib.tensor_array([None if t is None else t._handle for t in ts])

    def _wrap(self, arr, n):
        return [Tensor(self._ctx, arr[i]) if arr[i] else None for i in range(n)]

    def _run(self, fn, *args):
        status = fn(self._ctx._live, self._handle, *args)
        if status:
            raise_for(status, self._ctx._raw)

    def __call__(self, *inputs):
        # The hot path: Tensors only (no subclass), all live, the right count;
        # anything else goes the general way, which converts and raises.
        handles = [x._h for x in inputs if x.__class__ is Tensor]
        ctx = self._ctx
        ctx_h, h = ctx._h, self._h
        if len(handles) != len(inputs) or len(inputs) != self.n_inputs or None in handles or not ctx_h or not h:
            return self._call(inputs)
        outs = self._outputs_array()
        status = _broadcast(ctx_h, h, self._inputs_array(*handles), outs)
        if status:
            raise_for(status, ctx._raw)
        if self.n_outputs == 1:
            return Tensor(ctx, outs[0])
        return tuple(self._wrap(outs, self.n_outputs))

    def _call(self, inputs):
        _keep, arr = self._inputs(inputs)
        outs = self._outputs_array()
        self._run(_broadcast, arr, outs)
        res = self._wrap(outs, self.n_outputs)
        return res[0] if self.n_outputs == 1 else tuple(res)

    def partials(self, *inputs, active=None):
        """Forward mode: (outputs, partials), partials[o][j] = d out_o / d in_j
        elementwise (a Tensor of the output shape), None for an inactive input."""
        _keep, arr = self._inputs(inputs)
        act = _lib.int_array([1 if a else 0 for a in active]) if active is not None else None
        if active is not None and len(active) != self.n_inputs:
            raise InvalidArgumentError(f"partials: active has {len(active)} entries, not {self.n_inputs}")
        outs = (_lib.tensor_p * self.n_outputs)()
        parts = (_lib.tensor_p * (self.n_outputs * self.n_inputs))()
        self._run(L.clmad_broadcast_partials, arr, act, outs, parts)
        outputs = self._wrap(outs, self.n_outputs)
        flat = self._wrap(parts, self.n_outputs * self.n_inputs)
        n = self.n_inputs
        return tuple(outputs), [flat[o * n:(o + 1) * n] for o in range(self.n_outputs)]

    def jvp(self, inputs, tangents):
        """Forward mode: (outputs, out_tangents), out_tangents[o] = sum_j d out_o/d in_j t_j;
        a tangent None is zero."""
        ins, arr = self._inputs(tuple(inputs))
        _keep, tarr = self._tangents(ins, tangents, "jvp")
        outs = (_lib.tensor_p * self.n_outputs)()
        otan = (_lib.tensor_p * self.n_outputs)()
        self._run(L.clmad_broadcast_jvp, arr, tarr, outs, otan)
        return tuple(self._wrap(outs, self.n_outputs)), tuple(self._wrap(otan, self.n_outputs))

    def _tangents(self, ins, tangents, call):
        if len(tangents) != self.n_inputs:
            raise InvalidArgumentError(f"{call}: {len(tangents)} tangents for {self.n_inputs} inputs")
        return self._as_tensors([None if t is None else np.asarray(t) if not isinstance(t, Tensor) else t
                                 for t in tangents], ins[0].dtype)

    def second(self, inputs, tangents, active=None):
        """Forward mode to second order along one direction (clmad_broadcast_second):
        (outputs, out_tangents, partials, partial_tangents) with
        out_tangents[o] = sum_j d out_o/d in_j t_j, partials[o][j] = d out_o/d in_j and
        partial_tangents[o][j] = sum_i d2 out_o/d in_j d in_i t_i, elementwise (None
        for an inactive input). A tangent None is zero; active: which inputs are
        differentiated (all when None; an inactive one takes no tangent)."""
        ins, arr = self._inputs(tuple(inputs))
        _keep, tarr = self._tangents(ins, tangents, "second")
        if active is not None and len(active) != self.n_inputs:
            raise InvalidArgumentError(f"second: active has {len(active)} entries, not {self.n_inputs}")
        act = _lib.int_array([1 if a else 0 for a in active]) if active is not None else None
        n, m = self.n_inputs, self.n_outputs
        outs, otan = (_lib.tensor_p * m)(), (_lib.tensor_p * m)()
        parts, ptan = (_lib.tensor_p * (m * n))(), (_lib.tensor_p * (m * n))()
        self._run(L.clmad_broadcast_second, arr, tarr, act, outs, otan, parts, ptan)
        flat_parts, flat_ptan = self._wrap(parts, m * n), self._wrap(ptan, m * n)
        return (tuple(self._wrap(outs, m)), tuple(self._wrap(otan, m)),
                [flat_parts[o * n:(o + 1) * n] for o in range(m)], [flat_ptan[o * n:(o + 1) * n] for o in range(m)])

    def gradcheck(self, points, dtype=np.float64):
        """Worst relative error per input of the forward-mode partials against central
        differences at points (an array of shape (n_points, n_inputs))."""
        pts = np.ascontiguousarray(points, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != self.n_inputs:
            raise InvalidArgumentError(f"gradcheck: points must have shape (n, {self.n_inputs}), not {pts.shape}")
        worst = np.zeros(self.n_inputs)
        from ctypes import POINTER, c_double
        self._run(L.clmad_gradcheck, dtype_code(dtype), pts.shape[0], pts.ctypes.data_as(POINTER(c_double)),
                  worst.ctypes.data_as(POINTER(c_double)))
        return worst


def gradcheck(kernel, points, dtype=np.float64):
    """clmad_gradcheck: see Kernel.gradcheck."""
    return kernel.gradcheck(points, dtype)
