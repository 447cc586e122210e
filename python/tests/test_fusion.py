# SPDX-License-Identifier: Apache-2.0
"""Fusion from Python: a loss written the natural way over a kernel's output
((f * w).sum(), (f * w).mean(), ((f - t) ** 2).mean()) runs as one loss kernel
(ctx.stats()["fused_losses"]), and its loss and gradients are those of fusion
off, bit for bit (docs/fusion.md). So does a second kernel after the first
(g(f, w).sum(), g's function also named f): a user stage of the same loss
kernel, which launches no more kernels than (f * w).sum(), as do g(f, 0.5).sum()
and clmad.dot((-f).exp(), w); and so does a w that is a row or a column. A
regulariser added to the loss keeps the loss kernel's gradients in use. A chain
of elementwise calls before @ is a lazy region (ctx.stats()["fused_regions"]),
with the same bits."""
import numpy as np
import pytest

import clmad

SOURCE = "T f(T a, T b) { if (a > 0) return sin(a) * b; return a * b + a; }"
# Its loop's test is far from the values (it ends at inf and NaN), so that a
# device rounding sin in two programs apart takes the same branches in both.
SECOND = "T f(T y, T u) { T s = y; for (int i = 0; i < 2 && s < 1e30; i++) s = s * s + u; return tanh(s) * u; }"

LOSSES = {
    "sum(f * w)": lambda y, w, g: (y * w).sum(),
    "mean(f * w)": lambda y, w, g: (y * w).mean(),
    "mean((f - w) ** 2)": lambda y, w, g: ((y - w) ** 2).mean(),
    "sum(exp(-f))": lambda y, w, g: (-y).exp().sum(),
    "sum(g(f, w))": lambda y, w, g: g(y, w).sum(),
    # a constant: its 0-d tensor is made between f and g, which keeps f held
    "sum(g(f, 0.5))": lambda y, w, g: g(y, 0.5).sum(),
    "dot(exp(-f), w)": lambda y, w, g: clmad.dot((-y).exp(), w),
    "dot(f, f)": lambda y, w, g: clmad.dot(y, y),
    # a tensor times itself: the square stage (the error squared by hand)
    "sum(f * f)": lambda y, w, g: (y * y).sum(),
    "mean(d * d), d = f - w": lambda y, w, g: (lambda d: (d * d).mean())(y - w),
    # a regulariser added: the add hands backward's seed on, the fused gradients are used
    "sum(f * w) + 0.01 sum(w * w)": lambda y, w, g: (y * w).sum() + 0.01 * (w * w).sum(),
}


def made(ctx, a, b, w, w_grad):
    """The kernels and the leaves of a program, made before its first call."""
    k, g = ctx.kernel(SOURCE, "f"), ctx.kernel(SECOND, "f")
    return k, g, ctx.tensor(a, requires_grad=True), ctx.tensor(b, requires_grad=True), \
        ctx.tensor(w, requires_grad=w_grad)


def run(fusion, loss_of, a, b, w, w_grad):
    with clmad.Context(fusion=fusion) as ctx:
        k, g, ta, tb, tw = made(ctx, a, b, w, w_grad)
        before = ctx.stats()
        loss = loss_of(k(ta, tb), tw, g)
        loss.backward()
        after = ctx.stats()
        fused = after["fused_losses"] - before["fused_losses"]
        fallbacks = after["fusion_fallbacks"] - before["fusion_fallbacks"]
        kernels = after["kernels_launched"] - before["kernels_launched"]
        grads = [t.grad.numpy() if t.grad is not None else None for t in (ta, tb, tw)]
        return loss.numpy(), grads, fused, kernels, fallbacks


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("w_grad", [False, True])
def test_natural_loss_is_fused_and_bitwise_eager(rng, name, w_grad):
    a, b, w = (rng.uniform(-2, 2, (37, 65)).astype(np.float32) for _ in range(3))
    loss_on, grads_on, fused_on, kernels_on, fallbacks = run(True, LOSSES[name], a, b, w, w_grad)
    loss_off, grads_off, fused_off, _, _ = run(False, LOSSES[name], a, b, w, w_grad)
    assert fused_on == 1 and fused_off == 0
    # w's slot already holds the regulariser's gradient: a partial taken whole needs it empty
    assert fallbacks == 0 or (w_grad and name.endswith("0.01 sum(w * w)"))
    if name in ("sum(g(f, w))", "sum(g(f, 0.5))"):  # g is a stage: the kernels of (f * w).sum()
        constant = name == "sum(g(f, 0.5))"  # and the fill of 0.5's 0-d tensor, made in the step
        assert kernels_on == run(True, LOSSES["sum(f * w)"], a, b, w, w_grad)[3] + constant
    if name == "dot(exp(-f), w)":  # the stages fused: the kernels of clmad.dot(f, w)
        assert kernels_on == run(True, lambda y, w, g: clmad.dot(y, w), a, b, w, w_grad)[3]
    assert_bitwise(loss_on, grads_on, loss_off, grads_off)


def assert_bitwise(loss_on, grads_on, loss_off, grads_off):
    assert loss_on.tobytes() == loss_off.tobytes()
    for g_on, g_off in zip(grads_on, grads_off):
        assert (g_on is None) == (g_off is None)
        assert g_on is None or g_on.tobytes() == g_off.tobytes()


@pytest.mark.parametrize("name", ["sum(f * w)", "mean((f - w) ** 2)", "sum(g(f, w))"])
@pytest.mark.parametrize("shape", [(65,), (37, 1)])
def test_row_or_column_operand_is_fused(rng, name, shape):
    """A stage's w that needs no gradient may be a row or a column: the loss
    kernel reads it at each element's broadcast offset, with the kernels of
    the form with a full w, bit for bit as fusion off."""
    a, b, w_full = (rng.uniform(-2, 2, (37, 65)).astype(np.float32) for _ in range(3))
    w = rng.uniform(-2, 2, shape).astype(np.float32)
    loss_on, grads_on, fused_on, kernels_on, fallbacks = run(True, LOSSES[name], a, b, w, False)
    loss_off, grads_off, fused_off, _, _ = run(False, LOSSES[name], a, b, w, False)
    assert fused_on == 1 and fused_off == 0 and fallbacks == 0
    assert kernels_on == run(True, LOSSES[name], a, b, w_full, False)[3]
    assert_bitwise(loss_on, grads_on, loss_off, grads_off)


@pytest.mark.parametrize("name", ["sum(f * w)", "mean((f - w) ** 2)", "sum(g(f, w))", "sum(f * w) + 0.01 sum(w * w)"])
@pytest.mark.parametrize("shape", [(65,), (37, 1), ()])
def test_learnable_row_column_or_scalar_is_fused(rng, name, shape):
    """A stage's w of another shape that needs a gradient (a bias row, a
    scale; a builtin's operand or a user kernel's input): the loss kernel
    writes its contributions, backward sums them to w's shape as the stage's
    node would, bit for bit as fusion off."""
    a, b = (rng.uniform(-2, 2, (37, 65)).astype(np.float32) for _ in range(2))
    w = np.asarray(rng.uniform(-2, 2, shape), dtype=np.float32)
    loss_on, grads_on, fused_on, _, fallbacks = run(True, LOSSES[name], a, b, w, True)
    loss_off, grads_off, fused_off, _, _ = run(False, LOSSES[name], a, b, w, True)
    assert fused_on == 1 and fused_off == 0 and fallbacks == 0
    assert grads_on[-1] is not None and grads_on[-1].shape == shape
    assert_bitwise(loss_on, grads_on, loss_off, grads_off)


# Chains of elementwise calls before a product: Python's temporaries are gone
# when @ reads the last value, so the chain is a lazy region (docs/fusion.md).
# f() makes the kernel's output as a temporary: a name still bound to it (a
# parameter, a local) would keep the chain from being one.
REGIONS = {
    "tanh(f * w) @ W": lambda f, w, g, W: (f() * w).tanh() @ W,
    "g(f, w) @ W": lambda f, w, g, W: g(f(), w) @ W,
    "exp(-f) @ W": lambda f, w, g, W: (-f()).exp() @ W,
    # w is a learnable row here: a bias
    "relu(f + b) @ W": lambda f, w, g, W: (f() + w).relu() @ W,
}


def run_region(fusion, chain, a, b, w, W, policy="store"):
    with clmad.Context(fusion=fusion) as ctx:
        ctx.partials_policy = policy
        k, g, ta, tb, tw = made(ctx, a, b, w, True)
        tW = ctx.tensor(W, requires_grad=True)
        before = ctx.stats()
        loss = chain(lambda: k(ta, tb), tw, g, tW).sum()
        loss.backward()
        after = ctx.stats()
        regions = after["fused_regions"] - before["fused_regions"]
        fallbacks = after["fusion_fallbacks"] - before["fusion_fallbacks"]
        grads = [t.grad.numpy() if t.grad is not None else None for t in (ta, tb, tw, tW)]
        return loss.numpy(), grads, regions, fallbacks


@pytest.mark.parametrize("name", sorted(REGIONS))
def test_chain_before_a_product_is_a_region_and_bitwise_eager(rng, name):
    """The chain's last value is written by one kernel, and backward forms
    its gradients in one kernel, bit for bit as fusion off."""
    a, b = (rng.uniform(-2, 2, (37, 65)).astype(np.float32) for _ in range(2))
    w = rng.uniform(-2, 2, (65,) if name.startswith("relu") else (37, 65)).astype(np.float32)
    W = rng.uniform(-1, 1, (65, 5)).astype(np.float32)
    loss_on, grads_on, regions_on, fallbacks = run_region(True, REGIONS[name], a, b, w, W)
    loss_off, grads_off, regions_off, _ = run_region(False, REGIONS[name], a, b, w, W)
    assert regions_on == 1 and regions_off == 0 and fallbacks == 0
    # Eager with stored partials forms f in the dual program, the region in
    # the values-only one. Where the device rounds them alike (eager's two
    # policies agree) the bits are eager's; elsewhere (Intel's runtime turns
    # the dual's sin and cos into one sincos) within 32 ulps of each
    # tensor's largest magnitude: a product adds up the last bits of z,
    # where a sum may cancel.
    loss_re, grads_re, _, _ = run_region(False, REGIONS[name], a, b, w, W, "recompute")
    try:
        assert_bitwise(loss_re, grads_re, loss_off, grads_off)
    except AssertionError:
        for x, y in zip([loss_on] + grads_on, [loss_off] + grads_off):
            assert (x is None) == (y is None)
            if x is not None:
                np.testing.assert_allclose(x, y, rtol=0, atol=32 * 2.0 ** -23 * float(np.max(np.abs(y))))
        return
    assert_bitwise(loss_on, grads_on, loss_off, grads_off)
