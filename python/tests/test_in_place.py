# SPDX-License-Identifier: Apache-2.0
"""In-place operators (+=, -=, *=, /=) write the tensor's own storage outside the
tape (clmad_tensor_axpby, clmad_tensor_copy): w -= lr * w.grad updates the leaf w,
which trains on; refused, in Python's terms, while the tape holds the tensor."""
import numpy as np
import pytest

import clmad


def test_gradient_descent_by_hand_updates_the_leaf(ctx, rng):
    a = rng.normal(size=(6, 3)).astype(np.float32)
    b = a @ np.array([1.0, -2.0, 0.5], np.float32)
    w = ctx.zeros(3, requires_grad=True)
    same, want = w, np.zeros(3)
    for _ in range(40):
        loss = clmad.mse_loss(ctx.tensor(a) @ w, b)
        loss.backward()
        w -= 0.1 * w.grad  # in place: w stays the leaf
        w.zero_grad()
        want -= 0.1 * 2 * a.T @ (a @ want - b) / len(b)  # the same steps in NumPy
    assert w is same and w.requires_grad and w.grad is None
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-4)
    assert clmad.mse_loss(ctx.tensor(a) @ w, b).item() < 0.5 * ((a @ np.zeros(3) - b) ** 2).mean()


def test_each_operator_against_numpy(ctx, rng):
    x = rng.uniform(1, 2, (3, 4)).astype(np.float32)
    y = rng.uniform(1, 2, (3, 4)).astype(np.float32)
    row = rng.uniform(1, 2, 4).astype(np.float32)
    t = ctx.tensor(x)
    want = x.copy()
    for op, other in (("+", ctx.tensor(y)), ("-", ctx.tensor(y)), ("+", 2.5), ("-", 0.5), ("*", 3.0),
                      ("*", ctx.tensor(y)), ("/", ctx.tensor(y)), ("/", 2.0), ("+", row), ("*", ctx.tensor(row)),
                      ("-", y)):
        value = other.numpy() if isinstance(other, clmad.Tensor) else other
        before = t
        if op == "+":
            t += other
            want += value
        elif op == "-":
            t -= other
            want -= value
        elif op == "*":
            t *= other
            want *= value
        else:
            t /= other
            want /= value
        assert t is before
        np.testing.assert_allclose(t.numpy(), want, rtol=1e-6, err_msg=f"{op}= {type(other).__name__}")


def test_refused_while_the_tape_holds_the_tensor(ctx):
    w = ctx.tensor(np.ones(3, np.float32), requires_grad=True)
    loss = (w * w).sum()  # the tape holds w until backward
    for update in ("w -= 1.0", "w += w", "w *= 2.0", "w /= 2.0"):
        with pytest.raises(clmad.StateError) as e:
            exec(update, {"w": w})
        message = str(e.value)
        assert "tape holds this tensor" in message and "loss.backward()" in message and "ctx.tape_clear()" in message
        assert "clmad_" not in message
    np.testing.assert_array_equal(w.numpy(), [1, 1, 1])  # unchanged
    loss.backward()
    w -= 0.5 * w.grad  # the tape is gone: fine
    np.testing.assert_array_equal(w.numpy(), [0, 0, 0])


def test_bad_updates_raise(ctx):
    v = ctx.tensor(np.ones(4, np.float32))
    with pytest.raises(clmad.ShapeError, match=r"result has shape \(3, 4\), the tensor \(4,\)"):
        v += ctx.tensor(np.ones((3, 4), np.float32))
    with pytest.raises(clmad.DtypeError):
        v += ctx.tensor(np.ones(4, np.int32))
    with pytest.raises(TypeError):
        v += "text"
    np.testing.assert_array_equal(v.numpy(), np.ones(4))
