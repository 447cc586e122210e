# SPDX-License-Identifier: Apache-2.0
"""Optimizers over clmad_optimizer: PyTorch's SGD, Adam and AdamW formulas."""
from ctypes import byref

from . import _lib
from .errors import InvalidArgumentError, raise_for
from .tensor import Tensor

L = _lib.lib


class Optimizer:
    """Updates its parameters in place from their gradients, one fused kernel each."""

    def __init__(self, params, opt):
        self.params = list(params)
        if not self.params or not all(isinstance(p, Tensor) for p in self.params):
            raise InvalidArgumentError("optimizer: params must be a non-empty list of clmad.Tensor")
        self._ctx = self.params[0]._ctx
        arr = _lib.tensor_array([p._handle for p in self.params])
        h = _lib.optim_p()
        status = L.clmad_optimizer_create(self._ctx._live, byref(opt), arr, len(self.params), byref(h))
        if status:
            raise_for(status, self._ctx._raw)
        self._h = h.value

    def __del__(self, _release=L.clmad_optimizer_release):
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            _release(h)

    @property
    def _handle(self):
        if not self._h:
            from .errors import ReleasedError
            raise ReleasedError("the optimizer was released")
        return self._h

    def step(self):
        status = L.clmad_optimizer_step(self._handle)
        if status:
            raise_for(status, self._ctx._raw)

    def zero_grad(self):
        L.clmad_optimizer_zero_grad(self._handle)

    @property
    def steps(self):
        return L.clmad_optimizer_steps(self._handle)

    def set_lr(self, lr):
        status = L.clmad_optimizer_set_lr(self._handle, float(lr))
        if status:
            raise_for(status, self._ctx._raw)


def _options(kind, **values):
    opt = _lib.OptimizerOptions()
    L.clmad_optimizer_options_init(byref(opt), kind)
    for k, v in values.items():
        if v is not None:
            setattr(opt, k, v)
    return opt


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0.0, nesterov=False, weight_decay=0.0):
        super().__init__(params, _options(_lib.OPTIM_SGD, lr=float(lr), momentum=float(momentum),
                                          nesterov=1 if nesterov else 0, weight_decay=float(weight_decay)))


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, _options(_lib.OPTIM_ADAM, lr=float(lr), beta1=float(betas[0]),
                                          beta2=float(betas[1]), eps=float(eps),
                                          weight_decay=float(weight_decay)))


class AdamW(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, _options(_lib.OPTIM_ADAMW, lr=float(lr), beta1=float(betas[0]),
                                          beta2=float(betas[1]), eps=float(eps),
                                          weight_decay=float(weight_decay)))
