# SPDX-License-Identifier: Apache-2.0
import os
import time

import numpy as np
import pytest

import clmad

# CLMAD_TEST_NO_FP64=1 makes every test context refuse float64, as on a device
# without fp64 (the C tests read it too): the float32 tests run, the float64
# ones skip.
NO_FP64 = os.environ.get("CLMAD_TEST_NO_FP64", "").startswith("1")
F64_SKIP = "the device has no fp64: this test checks in float64"


def new_context(**options):
    """A context of the tests' own, with fp64 off under CLMAD_TEST_NO_FP64=1."""
    return clmad.Context(disable_fp64=NO_FP64, **options)


def released(ctx, done, again=None, timeout=2.0):
    """Whether done() holds once a released buffer is deleted. OpenCL deletes
    it (and calls its destructor callbacks) only after the commands queued on
    it finish; and where a kernel keeps references to its arguments (rusticl),
    only once the kernels that last read it have run on other buffers:
    again() runs the same operations on fresh tensors, so clmad's cached
    kernels take those. Polls up to timeout seconds after each step."""

    def settles():
        ctx.finish()
        end = time.monotonic() + timeout
        while not done():
            if time.monotonic() > end:
                return False
            time.sleep(0.001)
        return True

    if settles():
        return True
    if again is None:
        return False
    again()
    return settles()


@pytest.fixture(scope="session")
def ctx():
    """The session's context, on any device: tests that need float64 take ctx64
    or the dtype fixture, which skip without fp64."""
    c = new_context()
    yield c
    c.close()


@pytest.fixture
def ctx64(ctx):
    """The session's context, for a test that checks in float64."""
    if not ctx.fp64:
        pytest.skip(F64_SKIP)
    return ctx


@pytest.fixture(params=[np.float32, np.float64], ids=["f32", "f64"])
def dtype(request, ctx):
    """Each float dtype in turn; float64 skips on a device without fp64."""
    if request.param is np.float64 and not ctx.fp64:
        pytest.skip(F64_SKIP)
    return np.dtype(request.param)


def rtol(dtype, f64):
    """A relative tolerance: f64's for float64, float32's for float32."""
    return f64 if dtype == np.float64 else 1e-5


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def fd_grad(f, arrays, h=1e-6):
    """Central differences of the scalar NumPy function f(*arrays) for every array."""
    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[k][i] += h
            minus[k][i] -= h
            g[i] = (f(*plus) - f(*minus)) / (2 * h)
        grads.append(g)
    return grads
