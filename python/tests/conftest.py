# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import clmad


@pytest.fixture(scope="session")
def ctx():
    c = clmad.Context()
    if not c.device.fp64:
        pytest.skip("the device has no fp64: these tests check in float64")
    yield c
    c.close()


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
