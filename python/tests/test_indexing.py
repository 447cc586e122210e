# SPDX-License-Identifier: Apache-2.0
"""gather, scatter_add, argmax/argmin as methods, t[index array] (index_select),
NumPy arrays wherever a tensor goes, np.asarray(t) by NumPy 2's protocol, and
second-order forward mode of kernels (Kernel.second)."""
import numpy as np
import pytest

import clmad


@pytest.fixture
def x(rng):
    return rng.normal(size=(3, 5)).astype(np.float32)


def test_gather_and_its_gradient(ctx, x):
    index = np.array([[0, 4, 4], [1, 1, 2], [3, 0, 0]], np.int64)
    t = ctx.tensor(x, requires_grad=True)
    for idx in (index, ctx.tensor(index)):
        g = clmad.gather(t, 1, idx)
        np.testing.assert_array_equal(g.numpy(), np.take_along_axis(x, index, axis=1))
    w = np.arange(9, dtype=np.float32).reshape(3, 3)
    clmad.sum(g * w).backward()
    want = np.zeros_like(x)
    np.add.at(want, (np.arange(3)[:, None], index), w)  # repeats add up
    np.testing.assert_array_equal(t.grad.numpy(), want)
    with pytest.raises(clmad.InvalidArgumentError, match="outside"):
        clmad.gather(t, 1, np.array([[5], [0], [0]]))


def test_scatter_add_and_its_gradients(ctx, x, rng):
    index = np.array([[0, 0, 2], [4, 1, 4], [3, 3, 3]], np.int64)
    src = rng.normal(size=(3, 3)).astype(np.float32)
    tx, ts = ctx.tensor(x, requires_grad=True), ctx.tensor(src, requires_grad=True)
    out = clmad.scatter_add(tx, 1, index, ts)
    want = x.copy()
    np.add.at(want, (np.arange(3)[:, None], index), src)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    w = rng.normal(size=(3, 5)).astype(np.float32)
    clmad.sum(out * w).backward()
    np.testing.assert_array_equal(tx.grad.numpy(), w)
    np.testing.assert_array_equal(ts.grad.numpy(), np.take_along_axis(w, index, axis=1))
    np.testing.assert_allclose(clmad.scatter_add(tx, 1, index, src).numpy(), want, rtol=1e-6)  # an array src


def test_argmax_argmin_methods(ctx, x):
    t = ctx.tensor(x)
    np.testing.assert_array_equal(t.argmax().numpy(), x.argmax(-1))
    np.testing.assert_array_equal(t.argmin(axis=0).numpy(), x.argmin(0))
    assert t.argmax(axis=1, keepdims=True).shape == (3, 1) and t.argmax().dtype == np.int64


@pytest.mark.parametrize("key", [
    [2, 0, 2], np.array([1, -1]), (slice(1, None), [0, 2, 4]), ([2, 0], 1), (1, np.array([[0, 1], [4, 3]])),
    np.array([], np.int64), (slice(None), np.array([-5, 4])),
], ids=["list", "negative", "slice-array", "array-int", "int-2d", "empty", "axis1-negative"])
def test_getitem_by_index_arrays_is_numpys(ctx, x, key):
    np.testing.assert_array_equal(ctx.tensor(x)[key].numpy(), x[key])


def test_getitem_by_an_index_tensor_and_its_gradient(ctx, x):
    t = ctx.tensor(x, requires_grad=True)
    idx = np.array([2, 0, 2, 2], np.int64)
    y = t[ctx.tensor(idx)]
    np.testing.assert_array_equal(y.numpy(), x[idx])
    clmad.sum(y).backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.array([1, 0, 3])[:, None] * np.ones((1, 5)))
    for bad, error in (((np.array([0]), np.array([1])), IndexError), (np.array([True, False, True]), IndexError),
                       (np.array([0.5]), IndexError), (np.array([3]), clmad.InvalidArgumentError),
                       (np.array([-4]), clmad.InvalidArgumentError), ("a", IndexError)):
        with pytest.raises(error):
            t[bad]


def test_numpy_arrays_wherever_a_tensor_goes(ctx, x, rng):
    t = ctx.tensor(x, requires_grad=True)
    y = rng.normal(size=(3, 5)).astype(np.float32)
    np.testing.assert_allclose(clmad.dot(t, y).item(), (x * y).sum(), rtol=1e-5)
    np.testing.assert_allclose(clmad.dot(y, t).item(), (x * y).sum(), rtol=1e-5)
    np.testing.assert_allclose(clmad.mse_loss(y, t).item(), ((x - y) ** 2).mean(), rtol=1e-5)
    labels = np.array([1, 0, 4])
    loss = clmad.cross_entropy(t, labels)  # integer classes, as int64
    z = x - x.max(1, keepdims=True)
    np.testing.assert_allclose(loss.item(), -(z - np.log(np.exp(z).sum(1, keepdims=True)))[np.arange(3), labels].mean(),
                               rtol=1e-5)
    assert clmad.accuracy(t, labels) == (x.argmax(1) == labels).mean()
    np.testing.assert_array_equal(clmad.where(x > 0, t, 0.0).numpy(), np.where(x > 0, x, 0))
    np.testing.assert_array_equal(clmad.concat([y, t], axis=0).numpy(), np.concatenate([y, x]))
    np.testing.assert_array_equal(clmad.index_select(t, 1, [4, 0]).numpy(), x[:, [4, 0]])
    np.testing.assert_array_equal(clmad.embedding(t, np.array([[2], [0]])).numpy(), x[[[2], [0]]])
    np.testing.assert_array_equal((t + y).numpy(), x + y)
    np.testing.assert_array_equal((y - t).numpy(), y - x)
    np.testing.assert_allclose((t @ y.T).numpy(), x @ y.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((y.T @ t).numpy(), y.T @ x, rtol=1e-5, atol=1e-6)
    k = ctx.kernel("T f(T x, T a) { return a * x; }", "f")
    np.testing.assert_allclose(k(y, t).numpy(), x * y, rtol=1e-6)
    np.testing.assert_allclose(k(y, 2.0).numpy(), 2 * y, rtol=1e-6)  # arrays alone: the kernel's context
    assert k(y, 2.0).dtype == np.float32
    with pytest.raises(TypeError, match="ctx.tensor"):
        clmad.exp(y)  # an array alone has no context


def test_array_protocol_of_numpy_2(ctx, x, monkeypatch):
    t = ctx.tensor(x)
    a = np.asarray(t)
    assert a.dtype == np.float32 and np.array_equal(a, x)
    d = np.array(t, dtype=np.float64)
    assert d.dtype == np.float64 and np.array_equal(d, x)
    c = np.array(t, copy=True)
    c[0, 0] = 99.0
    assert t.numpy()[0, 0] == x[0, 0]
    if ctx.device.host_unified_memory:
        view = np.asarray(t, copy=False)  # the tensor's memory itself
        view[0, 0] = 42.0
        assert t.numpy()[0, 0] == 42.0
        del view
    else:
        with pytest.raises(ValueError, match="copy"):
            np.asarray(t, copy=False)
    from clmad import dlpack
    monkeypatch.setattr(dlpack, "_objects", lambda ctx: None)  # as on a discrete GPU
    with pytest.raises(ValueError, match="needs a copy"):
        np.asarray(t, copy=False)
    with pytest.raises(ValueError, match="needs a copy"):
        np.asarray(ctx.scalar(1.0), copy=False)


def test_second_order_forward_mode(ctx, rng):
    """f = a x^3: d f = 3 a x^2 tx + x^3 ta; d(df/dx) = 6 a x tx + 3 x^2 ta; d(df/da) = 3 x^2 tx."""
    x, a, tx, ta = (rng.uniform(0.5, 1.5, 4).astype(np.float32) for _ in range(4))
    k = ctx.kernel("T f(T x, T a) { return a * x * x * x; }", "f")
    (out,), (out_t,), parts, ptans = k.second([ctx.tensor(x), a], [tx, ctx.tensor(ta)])
    close = dict(rtol=1e-5)
    np.testing.assert_allclose(out.numpy(), a * x ** 3, **close)
    np.testing.assert_allclose(out_t.numpy(), 3 * a * x ** 2 * tx + x ** 3 * ta, **close)
    np.testing.assert_allclose(parts[0][0].numpy(), 3 * a * x ** 2, **close)
    np.testing.assert_allclose(parts[0][1].numpy(), x ** 3, **close)
    np.testing.assert_allclose(ptans[0][0].numpy(), 6 * a * x * tx + 3 * x ** 2 * ta, **close)
    np.testing.assert_allclose(ptans[0][1].numpy(), 3 * x ** 2 * tx, **close)
    # only x active: a takes no tangent, its partials are None
    _, (out_t,), parts, ptans = k.second([x, a], [tx, None], active=[1, 0])
    assert parts[0][1] is None and ptans[0][1] is None
    np.testing.assert_allclose(ptans[0][0].numpy(), 6 * a * x * tx, **close)
    np.testing.assert_allclose(out_t.numpy(), 3 * a * x ** 2 * tx, **close)
    with pytest.raises(clmad.InvalidArgumentError, match="tangent"):
        k.second([x, a], [tx, ta], active=[1, 0])
    with pytest.raises(clmad.InvalidArgumentError, match="1 tangents for 2 inputs"):
        k.second([x, a], [tx])
