# SPDX-License-Identifier: Apache-2.0
"""`@` and clmad.matmul follow np.matmul for every rank (clmad_matmul): 1-d
operands as a row or a column, batch axes broadcast; gradients in each
operand's shape."""
import numpy as np
import pytest

import clmad
from conftest import fd_grad, rtol

SHAPES = [
    ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((5, 2, 3), (1, 3, 4)),
    ((3,), (5, 3, 4)), ((5, 2, 3), (3,)),
    ((2, 1, 2, 3), (4, 3, 2)), ((2, 1, 2, 3), (1, 4, 3, 2)), ((2, 4, 2, 3), (3, 2)), ((3,), (2, 2, 3, 4)),
    ((2, 2, 2, 3), (3,)), ((2, 3), (2, 2, 3, 4)),
]


@pytest.mark.parametrize("shape_a, shape_b", SHAPES, ids=lambda s: "x".join(map(str, s)) or "0d")
def test_values_are_numpys(ctx, dtype, rng, shape_a, shape_b):
    a, b = rng.normal(size=shape_a).astype(dtype), rng.normal(size=shape_b).astype(dtype)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    for got in (ctx.tensor(a) @ ctx.tensor(b), clmad.matmul(ctx.tensor(a), ctx.tensor(b)),
                ctx.tensor(a) @ b, a @ ctx.tensor(b)):  # (a NumPy operand: copied)
        assert got.shape == want.shape and got.dtype == dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=rtol(dtype, 1e-12), atol=1e-5)


@pytest.mark.parametrize("shape_a, shape_b", [((3,), (3, 4)), ((2, 3), (3,)), ((5, 2, 3), (3, 4)),
                                              ((2, 1, 2, 3), (1, 4, 3, 2)), ((3,), (2, 2, 3, 4))])
def test_gradients_against_central_differences(ctx64, rng, shape_a, shape_b):
    a, b = rng.normal(size=shape_a), rng.normal(size=shape_b)
    g = rng.normal(size=np.matmul(a, b).shape)
    ta, tb = ctx64.tensor(a, requires_grad=True), ctx64.tensor(b, requires_grad=True)
    clmad.sum((ta @ tb) * ctx64.tensor(g)).backward()
    da, db = fd_grad(lambda x, y: (np.matmul(x, y) * g).sum(), [a, b])
    np.testing.assert_allclose(ta.grad.numpy(), da, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(tb.grad.numpy(), db, rtol=1e-7, atol=1e-8)


def test_transposed_operands(ctx, rng):
    a = rng.normal(size=(5, 3, 2)).astype(np.float32)
    b = rng.normal(size=(4, 3)).astype(np.float32)
    got = clmad.matmul(ctx.tensor(a), ctx.tensor(b), trans_a=True, trans_b=True)
    np.testing.assert_allclose(got.numpy(), np.swapaxes(a, -1, -2) @ b.T, rtol=1e-5, atol=1e-6)


def test_bad_operands_raise(ctx):
    x = ctx.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(clmad.ShapeError, match="2 x 3 and op\\(b\\) is 2 x 3"):
        x @ x
    with pytest.raises(clmad.ShapeError):
        x @ ctx.tensor(np.ones((2, 4, 5), np.float32))  # inner sizes differ
    with pytest.raises(clmad.ShapeError):
        ctx.tensor(np.ones((2, 2, 3), np.float32)) @ ctx.tensor(np.ones((3, 3, 4), np.float32))  # batches
    with pytest.raises(TypeError):
        x @ 2.0
    with pytest.raises(TypeError):
        clmad.matmul([[1.0]], x)
