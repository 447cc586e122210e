# SPDX-License-Identifier: Apache-2.0
"""Every gradient: against central differences of an independent NumPy forward
in float64, and against NumPy's closed form where one is short (in each dtype)."""
import numpy as np
import pytest

import clmad
from conftest import fd_grad, rtol


def softmax_np(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def lse_np(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).squeeze(axis)


# name: (clmad loss, NumPy loss, input shapes, input range)
W = np.linspace(-1, 1, 12).reshape(3, 4)  # weights so that sum(f * W) tests each element
CASES = {
    "add": (lambda a, b: ((a + b) * W).sum(), lambda a, b: ((a + b) * W).sum(), [(3, 4), (4,)], (-2, 2)),
    "sub": (lambda a, b: ((a - b) * W).sum(), lambda a, b: ((a - b) * W).sum(), [(3, 4), (3, 1)], (-2, 2)),
    "mul": (lambda a, b: ((a * b) * W).sum(), lambda a, b: ((a * b) * W).sum(), [(3, 4), (3, 4)], (-2, 2)),
    "div": (lambda a, b: ((a / b) * W).sum(), lambda a, b: ((a / b) * W).sum(), [(3, 4), (3, 4)], (0.5, 2)),
    "pow": (lambda a, b: ((a ** b) * W).sum(), lambda a, b: ((a ** b) * W).sum(), [(3, 4), (3, 4)], (0.5, 2)),
    "scalars": (lambda a: (((2 - a) * 3 + 1) / 4 * W).sum() + (a ** 3).sum(),
                lambda a: (((2 - a) * 3 + 1) / 4 * W).sum() + (a ** 3).sum(), [(3, 4)], (-2, 2)),
    "neg": (lambda a: (-a * W).sum(), lambda a: (-a * W).sum(), [(3, 4)], (-2, 2)),
    "exp": (lambda a: (a.exp() * W).sum(), lambda a: (np.exp(a) * W).sum(), [(3, 4)], (-2, 2)),
    "log": (lambda a: (a.log() * W).sum(), lambda a: (np.log(a) * W).sum(), [(3, 4)], (0.5, 2)),
    "tanh": (lambda a: (a.tanh() * W).sum(), lambda a: (np.tanh(a) * W).sum(), [(3, 4)], (-2, 2)),
    "sigmoid": (lambda a: (a.sigmoid() * W).sum(), lambda a: (1 / (1 + np.exp(-a)) * W).sum(), [(3, 4)], (-2, 2)),
    "relu": (lambda a: (a.relu() * W).sum(), lambda a: (np.maximum(a, 0) * W).sum(), [(3, 4)], (0.1, 2)),
    "sqrt": (lambda a: (a.sqrt() * W).sum(), lambda a: (np.sqrt(a) * W).sum(), [(3, 4)], (0.5, 2)),
    "sum_axis": (lambda a: (a.sum(axis=0) ** 2).sum(), lambda a: (a.sum(axis=0) ** 2).sum(), [(3, 4)], (-2, 2)),
    "mean_keep": (lambda a: (a.mean(axis=1, keepdims=True) ** 2).sum(),
                  lambda a: (a.mean(axis=1, keepdims=True) ** 2).sum(), [(3, 4)], (-2, 2)),
    "max": (lambda a: (a.max(axis=1) ** 2).sum() + a.max(), lambda a: (a.max(axis=1) ** 2).sum() + a.max(),
            [(3, 4)], (-2, 2)),
    "matmul": (lambda a, b: ((a @ b) ** 2).sum(), lambda a, b: ((a @ b) ** 2).sum(), [(3, 5), (5, 2)], (-1, 1)),
    "bmm": (lambda a, b: ((a @ b) ** 2).sum(), lambda a, b: ((a @ b) ** 2).sum(), [(2, 3, 4), (2, 4, 2)], (-1, 1)),
    "reshape_T": (lambda a: (a.reshape(4, 3).T * W).sum(), lambda a: (a.reshape(4, 3).T * W).sum(),
                  [(2, 6)], (-2, 2)),
    "transpose": (lambda a: (a.transpose(2, 0, 1).reshape(3, 4) * W).sum(),
                  lambda a: (a.transpose(2, 0, 1).reshape(3, 4) * W).sum(), [(2, 2, 3)], (-2, 2)),
    "index": (lambda a: (a[1:, 2] ** 2).sum() + a[0, -1], lambda a: (a[1:, 2] ** 2).sum() + a[0, -1],
              [(3, 4)], (-2, 2)),
    "concat": (lambda a, b: (clmad.concat([a, b], axis=0) * W).sum(),
               lambda a, b: (np.concatenate([a, b], axis=0) * W).sum(), [(1, 4), (2, 4)], (-2, 2)),
    "softmax": (lambda a: (a.softmax() * W).sum(), lambda a: (softmax_np(a) * W).sum(), [(3, 4)], (-2, 2)),
    "log_softmax": (lambda a: (a.log_softmax(axis=0) * W).sum(),
                    lambda a: (np.log(softmax_np(a, 0)) * W).sum(), [(3, 4)], (-2, 2)),
    "logsumexp": (lambda a: (a.logsumexp() ** 2).sum(), lambda a: (lse_np(a) ** 2).sum(), [(3, 4)], (-2, 2)),
    "mse_loss": (lambda a, b: clmad.mse_loss(a, b), lambda a, b: ((a - b) ** 2).mean(), [(3, 4), (3, 4)], (-2, 2)),
    "cross_entropy": (lambda a, b: clmad.cross_entropy(a, b.softmax()),
                      lambda a, b: -(softmax_np(b) * np.log(softmax_np(a))).sum(axis=-1).mean(),
                      [(3, 4), (3, 4)], (-2, 2)),
    "where": (lambda a, b: (clmad.where(a > b, a * a, b) * W).sum(),
              lambda a, b: (np.where(a > b, a * a, b) * W).sum(), [(3, 4), (3, 4)], (-2, 2)),
    "dot": (lambda a, b: clmad.dot(a, b), lambda a, b: (a * b).sum(), [(3, 4), (3, 4)], (-2, 2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_against_finite_differences(ctx64, rng, name):
    ctx = ctx64
    f, f_np, shapes, (lo, hi) = CASES[name]
    arrays = [rng.uniform(lo, hi, s) for s in shapes]
    ts = [ctx.tensor(a, requires_grad=True) for a in arrays]
    loss = f(*ts)
    assert loss.dtype == np.float64
    np.testing.assert_allclose(loss.item(), f_np(*arrays), rtol=1e-12, atol=1e-12)
    loss.backward()
    for t, g in zip(ts, fd_grad(f_np, arrays)):
        np.testing.assert_allclose(t.grad.numpy(), g, rtol=1e-6, atol=1e-7)


def test_closed_forms(ctx, dtype, rng):
    """d/dx of sum(x*y + exp(x) / y) is y + exp(x) / y; d/dy is x - exp(x) / y^2."""
    x, y = rng.uniform(-1, 1, (4, 3)).astype(dtype), rng.uniform(1, 2, (4, 3)).astype(dtype)
    tx, ty = ctx.tensor(x, requires_grad=True), ctx.tensor(y, requires_grad=True)
    (tx * ty + tx.exp() / ty).sum().backward()
    x, y = x.astype(np.float64), y.astype(np.float64)
    np.testing.assert_allclose(tx.grad.numpy(), y + np.exp(x) / y, rtol=rtol(dtype, 1e-13))
    np.testing.assert_allclose(ty.grad.numpy(), x - np.exp(x) / y ** 2, rtol=rtol(dtype, 1e-13), atol=1e-6)


def test_matmul_closed_form(ctx, dtype, rng):
    """loss = sum(A @ B * G): dA = G B^T, dB = A^T G."""
    a, b, g = (rng.normal(size=s).astype(dtype) for s in ((3, 5), (5, 2), (3, 2)))
    ta, tb = ctx.tensor(a, requires_grad=True), ctx.tensor(b, requires_grad=True)
    (ta @ tb * ctx.tensor(g)).sum().backward()
    a, b, g = a.astype(np.float64), b.astype(np.float64), g.astype(np.float64)
    np.testing.assert_allclose(ta.grad.numpy(), g @ b.T, rtol=rtol(dtype, 1e-12), atol=1e-5)
    np.testing.assert_allclose(tb.grad.numpy(), a.T @ g, rtol=rtol(dtype, 1e-12), atol=1e-5)


def test_seeded_backward_of_a_vector(ctx, dtype, rng):
    x = rng.uniform(-1, 1, 5).astype(dtype)
    t = ctx.tensor(x, requires_grad=True)
    seed = rng.normal(size=5).astype(dtype)
    t.tanh().backward(seed)
    x = x.astype(np.float64)
    np.testing.assert_allclose(t.grad.numpy(), seed * (1 - np.tanh(x) ** 2), rtol=rtol(dtype, 1e-13))


def test_gradients_accumulate_and_zero(ctx):
    t = ctx.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    (t * 3).sum().backward()
    (t * 3).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [6.0, 6.0])
    t.zero_grad()
    assert t.grad is None


def test_comparisons_are_masks_without_gradient(ctx):
    a = ctx.tensor(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
    np.testing.assert_array_equal((a < 2).numpy(), [1, 0, 0])
    np.testing.assert_array_equal((a <= 2).numpy(), [1, 1, 0])
    np.testing.assert_array_equal((a > 2).numpy(), [0, 0, 1])
    np.testing.assert_array_equal((a >= 2).numpy(), [0, 1, 1])
    np.testing.assert_array_equal((a == 2).numpy(), [0, 1, 0])
    np.testing.assert_array_equal((a != 2).numpy(), [1, 0, 1])
    assert not (a < 2).requires_grad


def test_no_grad_records_nothing(ctx):
    a = ctx.tensor(np.ones(3, np.float32), requires_grad=True)
    with ctx.no_grad():
        b = a * 2
        assert ctx.stats()["tape_nodes"] == 0
    assert not b.requires_grad
    assert ctx.grad_enabled
    assert (a * 2).requires_grad
    ctx.tape_clear()
