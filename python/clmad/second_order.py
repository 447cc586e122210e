# SPDX-License-Identifier: Apache-2.0
"""Second order on the tape: Hessian-vector products (clmad_hvp)."""
import numpy as np

from . import _lib
from .errors import InvalidArgumentError, raise_for
from .tensor import Tensor

L = _lib.lib


def hvp(loss, params, v):
    """H·v for the one-element loss on the tape: a list with, for each parameter
    params[k], sum_i d2 loss / d params[k] d params[i] . v[i] (a new Tensor of its
    shape). params: leaf Tensors that require a gradient; v: one direction per
    parameter, a Tensor or an array (converted to the parameter's dtype).
    Reads the tape without consuming it (call it as often as needed); after
    loss.backward() the tape is gone unless the context retains it
    (Context(retain_tape=True) or ctx.retain_tape = True): clmad.StateError."""
    if not isinstance(loss, Tensor):
        raise TypeError(f"hvp: the loss must be a clmad.Tensor, not {type(loss).__name__}")
    params, v = list(params), list(v)
    if len(v) != len(params):
        raise InvalidArgumentError(f"hvp: {len(v)} directions for {len(params)} parameters")
    for k, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"hvp: params[{k}] must be a clmad.Tensor, not {type(p).__name__}")
    ctx = loss._ctx
    # Keep the converted directions alive until the call returns.
    directions = [d if isinstance(d, Tensor) else ctx.tensor(np.asarray(d, dtype=p.dtype))
                  for d, p in zip(v, params)]
    out = (_lib.tensor_p * max(1, len(params)))()
    status = L.clmad_hvp(ctx._live, loss._handle, _lib.tensor_array([p._handle for p in params]),
                         len(params), _lib.tensor_array([d._handle for d in directions]), out)
    if status:
        raise_for(status, ctx._raw)
    return [Tensor(ctx, out[k]) for k in range(len(params))]
