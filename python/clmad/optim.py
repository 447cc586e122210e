# SPDX-License-Identifier: Apache-2.0
"""Optimizers over clmad_optimizer: PyTorch's SGD, Adam and AdamW formulas; GradScaler,
PyTorch's dynamic loss scaling for 16-bit activations, over clmad_grad_scaler."""
import os
import tempfile
from ctypes import byref, c_int

import numpy as np

from . import _lib
from .context import Context
from .errors import InvalidArgumentError, ReleasedError, raise_for
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

    # --- state (clmad_optimizer_save / clmad_optimizer_load) -------------------
    def save(self, path):
        """Writes the state (moments or velocities, step counts, options) as a
        safetensors file, PyTorch's names; the parameters are not in it (clmad.save)."""
        status = L.clmad_optimizer_save(self._handle, os.fsencode(os.fspath(path)))
        if status:
            raise_for(status, self._ctx._raw)

    def load(self, path):
        """Loads a state saved by save() into this optimizer, which must have the same
        kind, parameter count and parameter shapes (the same model): training goes
        on with the same bits. The options stay this optimizer's own."""
        status = L.clmad_optimizer_load(self._handle, os.fsencode(os.fspath(path)))
        if status:
            raise_for(status, self._ctx._raw)

    _OPTIONS = ("lr", "momentum", "nesterov", "beta1", "beta2", "eps", "weight_decay")

    def state_dict(self):
        """The state as PyTorch lays it out, in new tensors (a copy):
        {"state": {i: {"step": int, "exp_avg": Tensor, "exp_avg_sq": Tensor}},
        "param_groups": [{"lr": ..., "betas": ..., "params": [0, 1, ...]}],
        "kind": "sgd" | "adam" | "adamw", "steps": int} (SGD: "momentum_buffer"
        where it has momentum)."""
        from .files import _File
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "state.safetensors")
            self.save(path)
            with _File(path) as f:
                meta = {key: f.metadata(key) for key in ("clmad.optimizer", "clmad.steps") + self._OPTIONS}
                state = {i: {"step": int(f.metadata(f"param.{i}.step"))} for i in range(len(self.params))}
                for name in f.names():  # "param.<i>.<slot>"
                    _, i, slot = name.split(".", 2)
                    state[int(i)][slot] = f.read(self._ctx, name)
        group = {key: float(meta[key]) for key in ("lr", "momentum", "eps", "weight_decay")}
        group.update(nesterov=meta["nesterov"] != "0", betas=(float(meta["beta1"]), float(meta["beta2"])),
                     params=list(range(len(self.params))))
        return {"state": state, "param_groups": [group], "kind": meta["clmad.optimizer"],
                "steps": int(meta["clmad.steps"])}

    def load_state_dict(self, state_dict):
        """Loads a state_dict() of an optimizer of the same kind over parameters of the
        same shapes (tensors or NumPy arrays); as load(), the options stay this
        optimizer's own."""
        from .files import save
        try:
            state, kind, steps = state_dict["state"], state_dict["kind"], state_dict["steps"]
            tensors, meta = {}, {"clmad.optimizer": str(kind), "clmad.params": str(len(state)),
                                 "clmad.steps": str(int(steps))}
            for i, entry in state.items():
                meta[f"param.{int(i)}.step"] = str(int(entry["step"]))
                for slot, value in entry.items():
                    if slot != "step":
                        tensors[f"param.{int(i)}.{slot}"] = (value if isinstance(value, Tensor) else
                                                             self._ctx.tensor(np.asarray(value)))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise InvalidArgumentError(f"load_state_dict: not a state_dict() of a clmad optimizer ({e!r})") from None
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "state.safetensors")
            save(path, tensors, meta)
            self.load(path)


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


class GradScaler:
    """Dynamic loss scaling (torch.amp.GradScaler's rule), for float32 master weights
    cast to float16 for the forward: the loss is multiplied by the scale before
    backward, so that small gradients do not underflow in float16.

        scaler = clmad.optim.GradScaler(ctx)
        scaler.scale(loss).backward()
        scaler.step(opt)      # unscales, skips the step on inf/NaN, updates the scale
        opt.zero_grad()

    ctx takes the place of PyTorch's device argument: the scaler is made on it at
    once, so that the library checks the options here (InvalidArgumentError:
    growth_factor > 1, backoff_factor in (0, 1), growth_interval >= 1, init_scale
    finite and > 0 as a float32). step() also does PyTorch's update(); update() is
    kept, a no-op, so that PyTorch's loops run as they are. There is no unscale_()
    (the library unscales within step()) and no scale of several losses at once."""

    def __init__(self, ctx, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        if not isinstance(ctx, Context):
            raise InvalidArgumentError("GradScaler: ctx must be a clmad.Context (the losses' context)")
        opt = _lib.GradScalerOptions(float(init_scale), float(growth_factor), float(backoff_factor),
                                     int(growth_interval))
        self._ctx = ctx
        h = _lib.scaler_p()
        status = L.clmad_grad_scaler_create(ctx._live, byref(opt), byref(h))
        if status:
            raise_for(status, ctx._raw)
        self._h = h.value

    def __del__(self, _release=L.clmad_grad_scaler_release):
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            _release(h)

    @property
    def _handle(self):
        if not self._h:
            raise ReleasedError("the grad scaler was released")
        return self._h

    def scale(self, loss):
        """loss times the scale, recorded: call backward() on it. A 16-bit loss is
        widened to float32 first (as PyTorch's float32 scale promotes it)."""
        if not isinstance(loss, Tensor):
            raise InvalidArgumentError("GradScaler.scale: loss must be a clmad.Tensor")
        if not self._ctx._h:  # as the operations do (tensor.new_tensor)
            raise ReleasedError("the context was closed")
        out = _lib.tensor_p()
        status = L.clmad_grad_scaler_scale(self._handle, loss._handle, byref(out))
        if status:
            raise_for(status, self._ctx._raw)
        return Tensor(self._ctx, out.value)

    def step(self, optimizer):
        """Unscales the gradients of optimizer's parameters, takes its step unless one
        of them holds an inf or NaN, and updates the scale (PyTorch's step() and
        update() in one). True when the step was taken. StateError when no parameter
        has a gradient (the scale is then left as it was)."""
        if not isinstance(optimizer, Optimizer):
            raise InvalidArgumentError("GradScaler.step: optimizer must be a clmad.optim optimizer")
        stepped = c_int()
        status = L.clmad_grad_scaler_step(self._handle, optimizer._handle, byref(stepped))
        if status:
            raise_for(status, self._ctx._raw)
        return bool(stepped.value)

    def update(self):
        """Does nothing: step() has updated the scale already. Kept for PyTorch's
        scaler.step(opt); scaler.update() (a new_scale is not taken)."""

    def get_scale(self):
        """The current scale (a float32 value, as a float)."""
        return L.clmad_grad_scaler_get_scale(self._handle)

    def release(self):
        """Releases the C object now; any later use raises clmad.ReleasedError."""
        h, self._h = self._h, None
        if h:
            L.clmad_grad_scaler_release(h)
