# SPDX-License-Identifier: Apache-2.0
"""clmad for Python: mixed-mode automatic differentiation on OpenCL.

A thin ctypes layer over libclmad (include/clmad.h): Context, Tensor,
Kernel (broadcast functions in OpenCL C over T), the builtin operations,
reverse mode (Tensor.backward), Hessian-vector products (hvp),
forward mode (Kernel.partials, Kernel.jvp)
and the optimizers of clmad.optim. See python/README.md.
"""
from . import _abi, _lib, optim
from .context import Context, Device, Scope, devices, warm_up
from .errors import (BuildError, ConcurrentUseError, DtypeError, Error, InvalidArgumentError, IOError,
                     NoDeviceError, OpenCLError, OutOfMemoryError, ReleasedError, ShapeError, StateError,
                     UnsupportedError)
from .indexing import (accuracy, argmax, argmin, embedding, gather, getitem, index_select, one_hot,
                       scatter_add)
from .functional import (add, cast, compare, concat, cross_entropy, div, dot, exp, log, log_softmax,
                         logsumexp, matmul, max, mean, mse_loss, mul, neg, pow, relu, reshape, sigmoid,
                         slice, softmax, sqrt, sub, sum, tanh, transpose, where)
from .files import load, load_into, read_metadata, save
from .kernel import Kernel, gradcheck
from .second_order import hvp
from .tensor import Tensor

__version__ = _lib.lib.clmad_version_string().decode()

# What `from clmad import *` brings: every public name but those of Python's
# built-ins (max, sum, pow, slice, IOError), which it would shadow; they stay
# clmad.max, clmad.sum, ... (python/tests/test_names.py keeps this list complete).
__all__ = [
    "Context", "Device", "Scope", "devices", "Tensor", "Kernel", "gradcheck", "hvp", "optim",
    "Error", "BuildError", "ConcurrentUseError", "DtypeError", "InvalidArgumentError", "NoDeviceError",
    "OpenCLError", "OutOfMemoryError", "ReleasedError", "ShapeError", "StateError", "UnsupportedError",
    "accuracy", "add", "argmax", "argmin", "cast", "compare", "concat", "cross_entropy", "div", "dot",
    "embedding", "exp", "getitem", "index_select", "log", "log_softmax", "logsumexp", "matmul", "mean",
    "mse_loss", "mul", "neg", "one_hot", "relu", "reshape", "sigmoid", "softmax", "sqrt", "sub", "tanh",
    "transpose", "where", "gather", "scatter_add", "save", "load", "load_into", "read_metadata",
    "warm_up",
]

_abi.check()  # a library built from another clmad.h is refused here (ImportError)
