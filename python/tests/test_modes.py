# SPDX-License-Identifier: Apache-2.0
"""`with ctx.retain_tape():` as a block, and the library's advice in Python's
terms in the exceptions."""
import re

import numpy as np
import pytest

import clmad
from clmad.errors import python_terms


def test_retain_tape_block(ctx):
    x = ctx.tensor(np.array([0.1, -0.4, 0.7], np.float32), requires_grad=True)
    assert not ctx.retain_tape and ctx.retain_tape == False and repr(ctx.retain_tape) == "False"  # noqa: E712
    with ctx.retain_tape():
        assert ctx.retain_tape and repr(ctx.retain_tape) == "True"
        loss = x.tanh().sum()
        loss.backward()
        loss.backward()  # the tape was kept
        (hv,) = clmad.hvp(loss, [x], [np.ones(3, np.float32)])
        assert ctx.stats()["tape_nodes"] > 0
    t = np.tanh(x.numpy())
    np.testing.assert_allclose(x.grad.numpy(), 2 * (1 - t * t), rtol=1e-6)
    np.testing.assert_allclose(hv.numpy(), -2 * t * (1 - t * t), rtol=1e-5)
    # back to off: the tape is cleared, as backward would have, so x may be updated in place
    assert not ctx.retain_tape and ctx.stats()["tape_nodes"] == 0
    x -= 0.1 * x.grad


def test_retain_tape_blocks_nest_and_restore(ctx):
    x = ctx.tensor(np.ones(2, np.float32), requires_grad=True)
    ctx.retain_tape = True
    try:
        with ctx.retain_tape(False):
            assert not ctx.retain_tape
            (x * 2).sum().backward()
        assert ctx.retain_tape
        loss = (x * 3).sum()
        with ctx.retain_tape():
            pass
        assert ctx.stats()["tape_nodes"] > 0  # it was on before: the block leaves the tape alone
        loss.backward()
    finally:
        ctx.retain_tape = False
        ctx.tape_clear()
    with pytest.raises(RuntimeError):
        with ctx.retain_tape():
            raise RuntimeError("inside")
    assert not ctx.retain_tape


def test_python_terms_of_the_library_advice():
    assert python_terms("clmad_backward: the tape was consumed by an earlier backward (keep it with "
                        "clmad_set_retain_tape)") == ("clmad_backward: the tape was consumed by an earlier "
                                                      "backward (keep it with ctx.retain_tape() or "
                                                      "Context(retain_tape=True))")
    assert python_terms("clmad_set_retain_tape: busy") == "clmad_set_retain_tape: busy"  # the call's name stays


def _advice_is_pythons(message):
    """No C call named after the name of the call that failed."""
    return not re.search(r"\bclmad_\w+", message.partition(": ")[2])


def test_exceptions_advise_in_python_terms(ctx):
    x = ctx.tensor(np.ones(3, np.float32), requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    with pytest.raises(clmad.StateError) as e:
        loss.backward()
    assert "ctx.retain_tape()" in str(e.value) and _advice_is_pythons(str(e.value)), str(e.value)
    with pytest.raises(clmad.StateError) as e:
        clmad.hvp(loss, [x], [np.ones(3, np.float32)])
    assert "backward()" in str(e.value) and _advice_is_pythons(str(e.value)), str(e.value)
    y = x * 2  # the tape holds x and y
    with pytest.raises(clmad.StateError) as e:
        y.copy_(x)
    assert "ctx.tape_clear()" in str(e.value) and _advice_is_pythons(str(e.value)), str(e.value)
    with pytest.raises(clmad.StateError) as e:
        clmad.optim.SGD([x], lr=0.1).step()
    assert "ctx.tape_clear()" in str(e.value) and _advice_is_pythons(str(e.value)), str(e.value)
    ctx.tape_clear()
    with pytest.raises(clmad.ShapeError) as e:
        ctx.scalar(2.0) @ x
    assert "use * for a scalar" in str(e.value) and _advice_is_pythons(str(e.value)), str(e.value)
