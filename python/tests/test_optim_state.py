# SPDX-License-Identifier: Apache-2.0
"""An optimizer's state (clmad_optimizer_save / clmad_optimizer_load): to a file
and back, as a state_dict and back; training goes on with the same bits."""
import numpy as np
import pytest

import clmad

MAKERS = {
    "sgd": lambda ps: clmad.optim.SGD(ps, lr=0.01),
    "sgd_momentum": lambda ps: clmad.optim.SGD(ps, lr=0.01, momentum=0.9, nesterov=True),
    "adam": lambda ps: clmad.optim.Adam(ps, lr=0.01),
    "adamw": lambda ps: clmad.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
}


def train(ctx, opt, params, target, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss = clmad.sum((params[0] @ params[1] - target) ** 2)
        loss.backward()
        opt.step()


def setup(ctx, make, values):
    params = [ctx.tensor(v, requires_grad=True) for v in values]
    return params, make(params)


@pytest.fixture
def problem(rng):
    values = [rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(4, 2)).astype(np.float32)]
    return values, rng.normal(size=(3, 2)).astype(np.float32)


@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("how", ["file", "state_dict"])
def test_training_goes_on_with_the_same_bits(ctx, problem, tmp_path, kind, how):
    values, target_array = problem
    target = ctx.tensor(target_array)
    params, opt = setup(ctx, MAKERS[kind], values)
    train(ctx, opt, params, target, 3)
    saved_params = [p.numpy() for p in params]
    if how == "file":
        opt.save(tmp_path / "opt.safetensors")
    else:
        state = opt.state_dict()
    train(ctx, opt, params, target, 2)
    straight = [p.numpy() for p in params]
    assert all(np.isfinite(a).all() for a in straight)
    # a new run from the saved parameters and state
    params2, opt2 = setup(ctx, MAKERS[kind], saved_params)
    if how == "file":
        opt2.load(tmp_path / "opt.safetensors")
    else:
        opt2.load_state_dict(state)
    assert opt2.steps == 3
    train(ctx, opt2, params2, target, 2)
    for a, b in zip(straight, params2):
        assert a.tobytes() == b.numpy().tobytes()
    # without the state the run differs (the check above could fail)
    if kind != "sgd":
        params3, opt3 = setup(ctx, MAKERS[kind], saved_params)
        train(ctx, opt3, params3, target, 2)
        assert any(a.tobytes() != b.numpy().tobytes() for a, b in zip(straight, params3))


def test_state_dict_is_pytorchs_layout(ctx):
    g = np.array([0.5, -2.0, 1.0], np.float32)
    p = ctx.tensor(np.zeros(3, np.float32), requires_grad=True)
    opt = clmad.optim.Adam([p], lr=0.01, betas=(0.8, 0.99))
    clmad.dot(p, ctx.tensor(g)).backward()  # gradient g
    opt.step()
    sd = opt.state_dict()
    assert sd["kind"] == "adam" and sd["steps"] == 1
    (group,) = sd["param_groups"]
    assert group["lr"] == 0.01 and group["betas"] == (0.8, 0.99) and group["params"] == [0]
    assert not group["nesterov"] and group["weight_decay"] == 0.0
    state = sd["state"][0]
    assert sorted(state) == ["exp_avg", "exp_avg_sq", "step"] and state["step"] == 1
    np.testing.assert_allclose(state["exp_avg"].numpy(), 0.2 * g, rtol=1e-6)
    np.testing.assert_allclose(state["exp_avg_sq"].numpy(), 0.01 * g * g, rtol=1e-6)
    # plain SGD keeps no tensors, only the step counts
    sgd = clmad.optim.SGD([p], lr=0.1)
    assert sgd.state_dict()["state"] == {0: {"step": 0}}
    # NumPy arrays are taken in a state_dict
    sd["state"][0]["exp_avg"] = np.full(3, 7.0, np.float32)
    fresh = clmad.optim.Adam([ctx.tensor(np.zeros(3, np.float32), requires_grad=True)])
    fresh.load_state_dict(sd)
    np.testing.assert_array_equal(fresh.state_dict()["state"][0]["exp_avg"].numpy(), [7, 7, 7])


def test_a_state_of_another_optimizer_is_refused(ctx, tmp_path):
    p = ctx.tensor(np.zeros(3, np.float32), requires_grad=True)
    adam = clmad.optim.Adam([p])
    adam.save(tmp_path / "adam.safetensors")
    sgd = clmad.optim.SGD([p], lr=0.1, momentum=0.9)
    with pytest.raises(clmad.InvalidArgumentError, match="adam"):
        sgd.load(tmp_path / "adam.safetensors")
    with pytest.raises(clmad.InvalidArgumentError, match="adam"):
        sgd.load_state_dict(adam.state_dict())
    two = clmad.optim.Adam([p, ctx.tensor(np.zeros(2, np.float32), requires_grad=True)])
    with pytest.raises(clmad.InvalidArgumentError, match="parameters"):
        two.load(tmp_path / "adam.safetensors")
    with pytest.raises(clmad.ShapeError):
        clmad.optim.Adam([ctx.tensor(np.zeros(4, np.float32), requires_grad=True)]).load(
            tmp_path / "adam.safetensors")
    with pytest.raises(clmad.InvalidArgumentError, match="not a state_dict"):
        adam.load_state_dict({"state": {}})
    with pytest.raises(clmad.IOError):
        adam.load(tmp_path / "missing.safetensors")
