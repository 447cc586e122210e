# SPDX-License-Identifier: Apache-2.0
"""clmad.hvp (clmad_hvp): Hessian-vector products in float64, against a closed
form and against central differences of gradients; bad input raises."""
import numpy as np
import pytest

import clmad
from conftest import F64_SKIP, new_context

SQUARE_TANH = "T f(T x, T a) { T t = tanh(a * x); return t * t + a * x * x * x; }"


@pytest.fixture
def retained(ctx64):
    """The session context with its tape kept through backward, restored afterwards."""
    ctx = ctx64
    before = ctx.retain_tape
    ctx.retain_tape = True
    yield ctx
    ctx.tape_clear()
    ctx.retain_tape = before


def test_closed_form_of_sum_tanh(retained, rng):
    """d2/dx2 sum(tanh x) is diagonal: H v = -2 tanh(x) (1 - tanh(x)^2) v."""
    x, v = rng.uniform(-2, 2, (3, 5)), rng.normal(size=(3, 5))
    tx = retained.tensor(x, requires_grad=True)
    loss = tx.tanh().sum()
    (hv,) = clmad.hvp(loss, [tx], [v])
    t = np.tanh(x)
    assert hv.shape == x.shape and hv.dtype == np.float64
    np.testing.assert_allclose(hv.numpy(), -2 * t * (1 - t * t) * v, rtol=1e-13, atol=1e-15)
    # The same through a user kernel, and as a method of the loss.
    k = retained.kernel("T th(T x) { return tanh(x); }", "th")
    (hv_kernel,) = k(tx).sum().hvp([tx], [retained.tensor(v)])
    np.testing.assert_allclose(hv_kernel.numpy(), -2 * t * (1 - t * t) * v, rtol=1e-13, atol=1e-15)


def _model(ctx, kernel, W, b, X):
    """mean over a batch of sum(kernel(X W, b)^2): a product, a broadcast with a
    row parameter, a reduction."""
    y = kernel(X @ W, b)
    return (y * y).mean()


def test_against_central_differences_of_gradients(retained, rng):
    """H v = (grad(p + h v) - grad(p - h v)) / 2h for every parameter at once."""
    k = retained.kernel(SQUARE_TANH, "f")
    X = retained.tensor(rng.uniform(-1, 1, (6, 4)))
    values = [rng.uniform(-1, 1, (4, 3)), rng.uniform(0.5, 1.5, (3,))]
    direction = [rng.normal(size=a.shape) for a in values]
    params = [retained.tensor(a, requires_grad=True) for a in values]
    loss = _model(retained, k, *params, X)
    hv = [t.numpy() for t in clmad.hvp(loss, params, direction)]
    again = [t.numpy() for t in clmad.hvp(loss, params, direction)]  # the tape is read, not consumed

    def grads(s):
        ps = [retained.tensor(a + s * d, requires_grad=True) for a, d in zip(values, direction)]
        _model(retained, k, *ps, X).backward()
        return [p.grad.numpy() for p in ps]

    h = 1e-5
    fd = [(gp - gm) / (2 * h) for gp, gm in zip(grads(h), grads(-h))]
    for a, b, c in zip(hv, again, fd):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, rtol=1e-7, atol=1e-8 * np.abs(c).max())


def test_parameter_not_in_the_loss_gets_zeros(retained, rng):
    x = retained.tensor(rng.normal(size=4), requires_grad=True)
    unused = retained.tensor(rng.normal(size=(2, 2)), requires_grad=True)
    hx, hu = clmad.hvp((x * x * x).sum(), [x, unused], [np.ones(4), np.ones((2, 2))])
    np.testing.assert_allclose(hx.numpy(), 6 * x.numpy(), rtol=1e-14)
    np.testing.assert_array_equal(hu.numpy(), np.zeros((2, 2)))


def test_needs_the_tape_after_backward(rng):
    """Before backward the tape is there; backward consumes it unless retained."""
    with new_context() as c:
        if not c.fp64:
            pytest.skip(F64_SKIP)
        x = c.tensor(rng.uniform(-1, 1, 5), requires_grad=True)
        loss = x.tanh().sum()
        clmad.hvp(loss, [x], [np.ones(5)])
        loss.backward()
        with pytest.raises(clmad.StateError, match="retain_tape"):
            clmad.hvp(loss, [x], [np.ones(5)])
        c.retain_tape = True
        loss = x.tanh().sum()
        loss.backward()
        (hv,) = clmad.hvp(loss, [x], [np.ones(5)])
        t = np.tanh(x.numpy())
        np.testing.assert_allclose(hv.numpy(), -2 * t * (1 - t * t), rtol=1e-13, atol=1e-15)


def test_bad_input_raises(retained, rng):
    x = retained.tensor(rng.uniform(-1, 1, (2, 3)), requires_grad=True)
    y = x.tanh()
    loss = y.sum()
    v = np.ones((2, 3))
    with pytest.raises(clmad.InvalidArgumentError, match="2 directions for 1 parameters"):
        clmad.hvp(loss, [x], [v, v])
    with pytest.raises(clmad.InvalidArgumentError):
        clmad.hvp(loss, [], [])
    with pytest.raises(TypeError):
        clmad.hvp(loss, [x.numpy()], [v])
    with pytest.raises(clmad.ShapeError, match="v\\[0\\] must have the shape"):
        clmad.hvp(loss, [x], [np.ones(3)])
    with pytest.raises(clmad.ShapeError, match="one"):
        clmad.hvp(y, [x], [v])
    with pytest.raises(clmad.InvalidArgumentError, match="leaf"):
        clmad.hvp(loss, [y], [v])
    with pytest.raises(clmad.InvalidArgumentError, match="repeats"):
        clmad.hvp(loss, [x, x], [v, v])
    # Nothing was lost: the tape still gives the right answer.
    t = np.tanh(x.numpy())
    (hv,) = clmad.hvp(loss, [x], [v])
    np.testing.assert_allclose(hv.numpy(), -2 * t * (1 - t * t), rtol=1e-13, atol=1e-15)
    # The axis operations have their rules: logsumexp's H v = s v - s (s . v) per row.
    s = np.exp(x.numpy()) / np.exp(x.numpy()).sum(axis=-1, keepdims=True)
    w = np.arange(6.0).reshape(2, 3) - 2.5  # (not ones: logsumexp is flat along them)
    (hv,) = clmad.hvp(x.logsumexp(-1).sum(), [x], [w])
    np.testing.assert_allclose(hv.numpy(), s * w - s * (s * w).sum(axis=-1, keepdims=True), rtol=1e-12,
                               atol=1e-15)
