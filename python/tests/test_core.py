# SPDX-License-Identifier: Apache-2.0
"""Tensors, kernels, forward mode, lifetimes, errors, memory, optimizers, DLPack."""
import gc

import numpy as np
import pytest

import clmad
from conftest import new_context, released, rtol

NEWTON = """
/* y^3 + a y = x by Newton's method from y = x / (1 + a); a > 0 */
T cubic(T x, T a)
{
    T y = x / (1 + a);
    for (int it = 0; it < 60; it++) {
        T f = y * y * y + a * y - x;
        T dy = f / (3 * y * y + a);
        y -= dy;
        if (fabs(dy) < (real)1e-15)
            break;
    }
    return y;
}
"""


def test_roundtrip_shapes_and_dtypes(ctx, dtype, rng):
    a = rng.normal(size=(2, 3, 4)).astype(dtype)
    t = ctx.tensor(a)
    assert t.shape == (2, 3, 4) and t.dtype == dtype and t.ndim == 3 and t.size == 24
    np.testing.assert_array_equal(t.numpy(), a)
    assert not t.requires_grad
    s = ctx.tensor(dtype.type(2.5))
    assert s.shape == () and s.dtype == dtype and s.item() == 2.5
    e = ctx.tensor(np.zeros((0, 3), dtype))
    assert e.shape == (0, 3) and e.numpy().shape == (0, 3)


def test_creation_helpers(ctx, dtype):
    np.testing.assert_array_equal(ctx.zeros((2, 2), dtype).numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(ctx.full(3, 7.0, dtype).numpy(), [7, 7, 7])
    u = ctx.rand_uniform((1000,), -2, 3, seed=5, dtype=dtype).numpy()
    assert u.dtype == dtype and u.min() >= -2 and u.max() <= 3 and abs(u.mean() - 0.5) < 0.2
    np.testing.assert_array_equal(u, ctx.rand_uniform((1000,), -2, 3, seed=5, dtype=dtype).numpy())
    n = ctx.rand_normal((4000,), 1.0, 2.0, seed=1, dtype=dtype).numpy()
    assert abs(n.mean() - 1) < 0.15 and abs(n.std() - 2) < 0.15


def test_kernel_one_and_several_outputs(ctx, dtype, rng):
    x, a = rng.uniform(-1, 1, (3, 4)).astype(dtype), rng.uniform(0, 1, (4,)).astype(dtype)
    k = ctx.kernel("T f(T x, T a) { return a * sin(x) + x * x; }", "f")
    assert (k.n_inputs, k.n_outputs) == (2, 1)
    # (atol: where the two terms nearly cancel, the spec's 4 ulps of sin are a large relative error)
    close = dict(rtol=rtol(dtype, 1e-14), atol=1e-15 if dtype == np.float64 else 1e-6)
    np.testing.assert_allclose(k(ctx.tensor(x), ctx.tensor(a)).numpy(), a * np.sin(x) + x * x, **close)
    np.testing.assert_allclose(k(ctx.tensor(x), 0.5).numpy(), 0.5 * np.sin(x) + x * x, **close)
    k2 = ctx.kernel("void g(T x, T y, T *s, T *p) { *s = x + y; *p = x * y; }", "g")
    s, p = k2(ctx.tensor(x), ctx.tensor(a))
    np.testing.assert_allclose(s.numpy(), x + a)
    np.testing.assert_allclose(p.numpy(), x * a)


def test_kernel_reverse_and_forward_mode(ctx, dtype, rng):
    x, a = rng.uniform(-1, 1, (3, 4)).astype(dtype), rng.uniform(0.5, 1, (3, 4)).astype(dtype)
    k = ctx.kernel("T f(T x, T a) { return a * exp(x) / (1 + x * x); }", "f")
    tx, ta = ctx.tensor(x, requires_grad=True), ctx.tensor(a, requires_grad=True)
    k(tx, ta).sum().backward()
    x, a = x.astype(np.float64), a.astype(np.float64)
    dx = a * np.exp(x) * (1 / (1 + x * x) - 2 * x / (1 + x * x) ** 2)
    da = np.exp(x) / (1 + x * x)
    tol = dict(rtol=rtol(dtype, 1e-13), atol=0 if dtype == np.float64 else 1e-6)
    np.testing.assert_allclose(tx.grad.numpy(), dx, **tol)
    np.testing.assert_allclose(ta.grad.numpy(), da, **tol)
    outs, parts = k.partials(ctx.tensor(x, dtype=dtype), ctx.tensor(a, dtype=dtype), active=[1, 0])
    np.testing.assert_allclose(parts[0][0].numpy(), dx, **tol)
    assert parts[0][1] is None
    tangent = rng.normal(size=(3, 4)).astype(dtype)
    _, (jv,) = k.jvp([ctx.tensor(x, dtype=dtype), ctx.tensor(a, dtype=dtype)], [ctx.tensor(tangent), None])
    np.testing.assert_allclose(jv.numpy(), dx * tangent, **tol)


def test_kernel_gradcheck(ctx64, rng):
    """gradcheck compares the partials with central differences in float64."""
    k = ctx64.kernel("T f(T x, T a) { return a * exp(x) / (1 + x * x); }", "f")
    assert np.all(k.gradcheck(rng.uniform(0.5, 1, (16, 2))) < 1e-7)
    assert np.all(clmad.gradcheck(k, rng.uniform(-1, 1, (8, 2))) < 1e-7)


def test_newton_kernel_gradient_is_the_implicit_functions(ctx64, rng):
    """y(x, a) solves y^3 + a y = x: dy/dx = 1 / (3y^2 + a), dy/da = -y / (3y^2 + a)."""
    ctx = ctx64
    x, a = rng.uniform(-3, 3, (5, 6)), rng.uniform(0.5, 2, (1, 6))
    k = ctx.kernel(NEWTON, "cubic")
    tx, ta = ctx.tensor(x, requires_grad=True), ctx.tensor(a, requires_grad=True)
    y = k(tx, ta)
    yv = y.numpy()
    np.testing.assert_allclose(yv ** 3 + a * yv, x, atol=1e-12)
    w = rng.normal(size=(5, 6))
    clmad.dot(y, ctx.tensor(w)).backward()
    denom = 3 * yv ** 2 + a
    np.testing.assert_allclose(tx.grad.numpy(), w / denom, rtol=1e-10)
    np.testing.assert_allclose(ta.grad.numpy(), (-w * yv / denom).sum(axis=0, keepdims=True), rtol=1e-10)
    _, parts = k.partials(ctx.tensor(x), ctx.tensor(a))
    np.testing.assert_allclose(parts[0][1].numpy(), -yv / denom, rtol=1e-10)


def test_optimizers_follow_the_formulas(ctx, dtype, rng):
    p_start, g_used = rng.normal(size=4).astype(dtype), rng.normal(size=4).astype(dtype)
    p0, g = p_start.astype(np.float64), g_used.astype(np.float64)  # the formulas, in float64
    tol = rtol(dtype, 1e-12)

    def run(make, steps=2):
        p = ctx.tensor(p_start, requires_grad=True)
        opt = make([p])
        for _ in range(steps):
            opt.zero_grad()
            clmad.dot(p, ctx.tensor(g_used)).backward()  # gradient g
            opt.step()
        assert opt.steps == steps
        return p.numpy()

    np.testing.assert_allclose(run(lambda ps: clmad.optim.SGD(ps, lr=0.1)), p0 - 0.2 * g, rtol=tol)
    v = g + 0.9 * g  # momentum: v1 = g, v2 = 0.9 g + g
    np.testing.assert_allclose(run(lambda ps: clmad.optim.SGD(ps, lr=0.1, momentum=0.9)), p0 - 0.1 * (g + v),
                               rtol=tol)
    for cls, wd in ((clmad.optim.Adam, 0.0), (clmad.optim.AdamW, 0.1)):
        p, m, s = p0.copy(), np.zeros(4), np.zeros(4)
        for t in (1, 2):
            p = p * (1 - 0.01 * wd)
            m = 0.9 * m + 0.1 * g
            s = 0.999 * s + 0.001 * g * g
            p = p - 0.01 / (1 - 0.9 ** t) * m / (np.sqrt(s) / np.sqrt(1 - 0.999 ** t) + 1e-8)
        np.testing.assert_allclose(run(lambda ps: cls(ps, lr=0.01, weight_decay=wd)), p, rtol=tol)


def test_errors_carry_the_library_message(ctx):
    a, b = ctx.tensor(np.ones((2, 3), np.float32)), ctx.tensor(np.ones((4, 5), np.float32))
    with pytest.raises(clmad.ShapeError) as e:
        a + b
    assert "(2, 3)" in str(e.value) or "2, 3" in str(e.value) or "2x3" in str(e.value)
    assert e.value.status == 7 and e.value.status_name == "CLMAD_ERR_SHAPE"
    assert isinstance(e.value, ValueError) and isinstance(e.value, clmad.Error)
    with pytest.raises(clmad.DtypeError):
        a + ctx.tensor(np.ones((2, 3), np.int32))
    with pytest.raises(clmad.DtypeError):
        ctx.tensor(np.ones(3, dtype=np.int16))
    with pytest.raises(clmad.DtypeError, match="uint8"):
        ctx.tensor(np.ones(3, dtype=bool))
    with pytest.raises(clmad.DtypeError, match="integer tensor"):
        ctx.tensor(np.ones(3, dtype=np.int32), requires_grad=True)
    with pytest.raises(clmad.BuildError) as e:
        ctx.kernel("T f(T x) {\n  return x + undefined_name;\n}", "f")
    assert "source:2:" in str(e.value) and "undefined_name" in str(e.value)
    with pytest.raises(clmad.BuildError, match="no function g"):
        ctx.kernel("T f(T x) { return x; }", "g", n_inputs=1, n_outputs=1)
    with pytest.raises(clmad.InvalidArgumentError):
        ctx.kernel("T f(T x) { return x; }", "nothere")
    with pytest.raises(clmad.ShapeError):
        (ctx.tensor(np.ones(3, np.float32), requires_grad=True) * 2).backward()  # no seed for a vector
    with pytest.raises(clmad.StateError):
        (ctx.tensor(np.ones(3, np.float32), requires_grad=True) * 2).requires_grad = False
    with pytest.raises(clmad.NoDeviceError):
        clmad.Context(device="no such device anywhere")
    with pytest.raises(TypeError):
        a + "text"
    with pytest.raises(IndexError):
        a[::2]


def test_released_and_foreign_objects_raise(ctx):
    t = ctx.tensor(np.ones(3, np.float32))
    t.release()
    t.release()  # twice is fine
    for use in (t.numpy, t.item, lambda: t + 1, lambda: t.shape, lambda: t.grad):
        with pytest.raises(clmad.ReleasedError):
            use()
    other = new_context()
    u = other.tensor(np.ones(3, np.float32))
    with pytest.raises(clmad.InvalidArgumentError, match="another context"):
        ctx.tensor(np.ones(3, np.float32)) + u
    k = ctx.kernel("T f(T x) { return x; }", "f")
    with pytest.raises(clmad.InvalidArgumentError, match="another context"):
        k(u)
    k.release()
    with pytest.raises(clmad.ReleasedError):
        k(ctx.tensor(np.ones(3, np.float32)))
    other.close()
    np.testing.assert_array_equal(u.numpy(), np.ones(3))  # its tensors stay readable
    with pytest.raises(clmad.ReleasedError):
        u + 1
    with pytest.raises(clmad.ReleasedError):
        other.tensor(np.ones(2, np.float32))


def test_tensors_keep_their_context_alive():
    t = new_context().tensor(np.arange(4, dtype=np.float32))  # the context object has no other reference
    gc.collect()
    np.testing.assert_array_equal((t * 2).numpy(), np.arange(4, dtype=np.float32) * 2)


def test_scope_releases_what_it_made(ctx):
    a = ctx.tensor(np.ones(3, np.float32), requires_grad=True)
    with ctx.scope() as s:
        b = a * 2
        c = s.keep(b + 1)
        loss = c.sum()
        loss.backward()
    with pytest.raises(clmad.ReleasedError):
        b.numpy()
    np.testing.assert_array_equal(c.numpy(), [3, 3, 3])
    np.testing.assert_array_equal(a.grad.numpy(), [2, 2, 2])


def test_memory_is_flat_over_10000_cycles():
    c = new_context()
    x = c.tensor(np.ones(256, np.float32), requires_grad=True)

    def cycle():
        y = (x * 2 + 1).sum()
        y.backward()
        return y.item()

    cycle()
    x.zero_grad()
    gc.collect()
    before = c.stats()
    for _ in range(10000):
        cycle()
        x.zero_grad()
    gc.collect()
    after = c.stats()
    assert after["live_tensor_bytes"] == before["live_tensor_bytes"]
    assert after["tape_nodes"] == 0
    assert after["pool_bytes"] <= before["pool_bytes"] + 4096
    assert after["programs_live"] == before["programs_live"]


@pytest.fixture(params=["as the device is", "as on a discrete GPU"])
def shared(request, ctx, monkeypatch):
    """Whether DLPack shares memory in this run: where the device's memory is
    the host's (its host_unified_memory), unless the run pretends otherwise
    (the copies of a discrete GPU, which make the same checks hold)."""
    from clmad import dlpack
    if request.param == "as on a discrete GPU":
        monkeypatch.setattr(dlpack, "_objects", lambda ctx: None)
        return False
    return ctx.device.host_unified_memory


def test_dlpack_shares_host_memory_and_copies_otherwise(ctx, shared):
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    t = ctx.tensor(a)
    assert t.__dlpack_device__() == (1, 0)
    b = np.from_dlpack(t)
    np.testing.assert_array_equal(b, a)
    b[0, 1] = 7.0
    u = ctx.from_dlpack(a)
    a[0, 0] = 100.0
    # On a device whose memory is the host's both ways share memory; elsewhere both copy.
    assert t.numpy()[0, 1] == (7.0 if shared else 1.0)
    assert u.numpy()[0, 0] == (100.0 if shared else 0.0) and u.shape == (2, 3)
    # An imported tensor is a tensor like any other: gradients through it.
    u.requires_grad = True
    (u * u).sum().backward()
    np.testing.assert_array_equal(u.grad.numpy(), 2 * u.numpy())  # (a's values where shared, its copy's else)


def test_dlpack_lifetimes(ctx, shared):
    from clmad import dlpack
    gc.collect()  # (what earlier tests left to the collector)
    before = ctx.stats()["live_tensor_bytes"]
    t = ctx.tensor(np.arange(1000, dtype=np.float32))
    b = np.from_dlpack(t)
    del t
    gc.collect()
    assert b[999] == 999.0  # the view (or the copy) outlives the tensor object
    del b
    gc.collect()
    assert ctx.stats()["live_tensor_bytes"] == before
    lent = len(dlpack._lent)
    u = ctx.from_dlpack(np.full(1000, 3.0, np.float32))
    assert len(dlpack._lent) == lent + (1 if shared else 0)  # the producer's memory is kept only when shared
    gc.collect()  # the array is gone on the Python side: the tensor keeps its memory
    assert u.numpy().sum() == 3000.0
    y = (u * 2.0).sum()
    del u
    gc.collect()
    assert y.item() == 6000.0
    del y
    gc.collect()
    # freed with the buffer's last reference (the cached kernels' too)
    assert released(ctx, lambda: len(dlpack._lent) == lent, lambda: (ctx.tensor(np.ones(1000, np.float32)) * 2.0).sum())
    # Many round trips leave nothing behind.
    t = ctx.tensor(np.ones(64, np.float32))
    mid = ctx.stats()["live_tensor_bytes"]
    for _ in range(2000):
        ctx.from_dlpack(np.from_dlpack(t)).numpy()
    gc.collect()
    assert ctx.stats()["live_tensor_bytes"] == mid
    assert released(ctx, lambda: len(dlpack._lent) == lent, lambda: ctx.tensor(np.ones(64, np.float32)).numpy())


def test_devices_and_context_settings(ctx):
    devs = clmad.devices()
    assert devs and all(d.type in ("cpu", "gpu", "accelerator", "other") for d in devs)
    assert ctx.device.spec in [d.spec for d in devs]
    with new_context(device=ctx.device) as c:
        assert c.device == ctx.device
        assert c.partials_policy == "auto"
        c.partials_policy = "recompute"
        assert c.partials_policy == "recompute"
        with pytest.raises(clmad.InvalidArgumentError):
            c.partials_policy = "sometimes"
        assert not c.retain_tape
        c.retain_tape = True
        t = c.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
        loss = (t * t).sum()
        loss.backward()
        loss.backward()  # the tape was kept
        np.testing.assert_array_equal(t.grad.numpy(), [4.0, 8.0])
    with pytest.raises(clmad.ReleasedError):
        c.stats()


def test_saved_tuning_is_taken_by_later_contexts(tmp_path):
    with new_context(cache_dir=tmp_path) as a:
        before = a.tuning()
        assert not before["origin"].startswith("tuned:")
        a.save_tuning(chunk_cap=3)
        assert a.tuning() == before  # the saving context keeps its own
        with pytest.raises(clmad.InvalidArgumentError, match="chunk_cap 65"):
            a.save_tuning(chunk_cap=65)
    with new_context(cache_dir=tmp_path) as b:
        got = b.tuning()
        assert got["chunk_cap"] == 3 and got["items_per_work_item"] == before["items_per_work_item"]
        assert got["origin"].startswith(f"tuned: {tmp_path}/tuning-"), got["origin"]


def test_disable_fp64_refuses_float64():
    with clmad.Context(disable_fp64=True) as c:
        assert not c.fp64
        with pytest.raises(clmad.UnsupportedError, match="f64"):
            c.tensor(np.ones(3))
        np.testing.assert_array_equal(c.tensor(np.ones(3, np.float32)).numpy(), np.ones(3))  # float32 works
    with clmad.Context() as c:
        assert c.fp64 == c.device.fp64


def test_integer_tensors_round_trip(ctx):
    for dt in (np.int32, np.int64, np.uint8):
        a = np.array([[0, 7, 255], [3, 1, 2]], dtype=dt)
        t = ctx.tensor(a)
        assert t.dtype == np.dtype(dt) and t.shape == (2, 3)
        np.testing.assert_array_equal(t.numpy(), a)
    big = np.array([2**53 + 1, -(2**62)], dtype=np.int64)
    np.testing.assert_array_equal(ctx.tensor(big).numpy(), big)


def test_cross_entropy_over_class_indices(ctx64):
    """Against NumPy in float64."""
    ctx = ctx64
    rng = np.random.default_rng(3)
    z = rng.standard_normal((4, 5))
    labels = np.array([0, 4, 2, 2], dtype=np.int64)
    logits = ctx.tensor(z, requires_grad=True)
    loss = clmad.cross_entropy(logits, ctx.tensor(labels))
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    assert abs(loss.item() + np.log(p[np.arange(4), labels]).mean()) < 1e-12
    loss.backward()
    want = p.copy()
    want[np.arange(4), labels] -= 1
    np.testing.assert_allclose(logits.grad.numpy(), want / 4, atol=1e-12)


def test_index_operations(ctx):
    rng = np.random.default_rng(5)
    z = rng.standard_normal((6, 4)).astype(np.float32)
    labels = np.array([1, 0, 3, 3, 2, 1], dtype=np.int64)
    t = ctx.tensor(z)
    am = clmad.argmax(t, axis=1)
    assert am.dtype == np.int64
    np.testing.assert_array_equal(am.numpy(), z.argmax(1))
    np.testing.assert_array_equal(clmad.argmin(t, axis=0).numpy(), z.argmin(0))
    assert clmad.accuracy(t, ctx.tensor(labels)) == (z.argmax(1) == labels).mean()
    np.testing.assert_array_equal(clmad.one_hot(ctx.tensor(labels), 4).numpy(), np.eye(4)[labels])
    # embedding: values, and the gradient (counts of each row) against the closed form
    w = ctx.tensor(z, requires_grad=True)
    idx = np.array([[0, 5], [5, 2]], dtype=np.int64)
    e = clmad.embedding(w, ctx.tensor(idx))
    np.testing.assert_array_equal(e.numpy(), z[idx])
    clmad.sum(e * e).backward()
    want = np.zeros_like(z)
    np.add.at(want, idx.reshape(-1), 2 * z[idx.reshape(-1)])
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-6)
    with pytest.raises(clmad.InvalidArgumentError, match="outside"):
        clmad.index_select(t, 0, ctx.tensor(np.array([0, 9], dtype=np.int64)))
