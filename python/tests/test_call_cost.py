# SPDX-License-Identifier: Apache-2.0
"""What one Python operation costs in calls into libclmad, and that the fast
paths of the hot operations (kernel calls, binary operators, dot, backward,
zero_grad) keep every check of the general path.

The counts come from a fresh interpreter in which ctypes.CDLL hands the package
a library whose functions count their calls (the package binds its functions
when it is imported, so the counting has to be in place before)."""
import gc
import json
import os
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

import clmad
from conftest import new_context

COUNTING = textwrap.dedent("""
    import collections, ctypes, json, sys
    counts = collections.Counter()

    class Counted:
        def __init__(self, name, f):
            object.__setattr__(self, "_name", name)
            object.__setattr__(self, "_f", f)

        def __call__(self, *args):
            counts[self._name] += 1
            return self._f(*args)

        def __getattr__(self, key):
            return getattr(self._f, key)

        def __setattr__(self, key, value):
            setattr(self._f, key, value)

    class CountingLibrary:
        def __init__(self, path, _load=ctypes.CDLL):
            object.__setattr__(self, "_lib", _load(path))

        def __getattr__(self, name):
            f = Counted(name, getattr(self._lib, name))
            object.__setattr__(self, name, f)
            return f

    ctypes.CDLL = CountingLibrary
    import clmad

    ctx = clmad.Context()
    x, a, w = ctx.full(16, 0.5), ctx.full(16, 2.0), ctx.full(16, 1.0)
    k = ctx.kernel("T f(T x, T a) { return a * x + 1; }", "f")

    def forward():
        y = k(x, a)

    def forward_dot_backward():
        y = k(x, a)
        clmad.dot(y, w).backward()
        x.zero_grad()

    def product():
        y = x * a

    def scalar_product():
        y = x * 2.0

    import numpy as np
    rng = np.random.default_rng(0)
    data = ctx.tensor(rng.normal(size=(8, 4)).astype(np.float32))
    labels = ctx.tensor(rng.integers(0, 3, 8).astype(np.int64))
    w1 = ctx.tensor(rng.normal(size=(4, 16)).astype(np.float32), requires_grad=True)
    b1 = ctx.zeros(16, requires_grad=True)
    w2 = ctx.tensor(rng.normal(size=(16, 3)).astype(np.float32), requires_grad=True)
    b2 = ctx.zeros(3, requires_grad=True)
    opt = clmad.optim.SGD([w1, b1, w2, b2], lr=0.1)

    def mlp_step():  # the README's MLP
        loss = clmad.cross_entropy((data @ w1 + b1).tanh() @ w2 + b2, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()

    def measure(op):
        op()  # once before: compiles, fills the pool
        counts.clear()
        op()
        return dict(counts)

    with ctx.no_grad():
        result = {"forward": measure(forward)}
    x.requires_grad = True
    result.update(forward_dot_backward=measure(forward_dot_backward), product=measure(product),
                  scalar_product=measure(scalar_product), mlp_step=measure(mlp_step))
    print(json.dumps(result))
""")


@pytest.fixture(scope="module")
def calls_per_operation():
    env = dict(os.environ)
    env["CLMAD_LIBRARY"] = os.path.join(os.path.dirname(clmad.__file__), "libclmad.so")
    if not os.path.exists(env["CLMAD_LIBRARY"]):  # the package runs from a source tree
        env["CLMAD_LIBRARY"] = clmad._lib.lib._name
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(clmad.__file__))
    run = subprocess.run([sys.executable, "-c", COUNTING], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_each_operation_makes_the_calls_that_c_makes(calls_per_operation):
    """The same calls as the C loop of bench/bench_call.c, and no more: no query
    of the dtype, shape or state of a tensor on the way."""
    c = calls_per_operation
    assert c["forward"] == {"clmad_broadcast": 1, "clmad_tensor_release": 1}
    assert c["forward_dot_backward"] == {"clmad_broadcast": 1, "clmad_dot": 1, "clmad_backward": 1,
                                         "clmad_tensor_zero_grad": 1, "clmad_tensor_release": 2}
    assert c["product"] == {"clmad_mul": 1, "clmad_tensor_release": 1}
    assert c["scalar_product"] == {"clmad_mul_scalar": 1, "clmad_tensor_release": 1}
    # (matmul is clmad_matmul whatever the ranks: no question about them first)
    assert c["mlp_step"] == {"clmad_matmul": 2, "clmad_add": 2, "clmad_tanh": 1,
                             "clmad_cross_entropy": 1, "clmad_optimizer_zero_grad": 1, "clmad_backward": 1,
                             "clmad_optimizer_step": 1, "clmad_tensor_item": 1, "clmad_tensor_release": 6}


def test_fast_paths_keep_the_checks(ctx):
    x, y = ctx.tensor(np.ones(3, np.float32)), ctx.tensor(np.full(3, 2.0, np.float32))
    k = ctx.kernel("T f(T x, T a) { return a * x; }", "f")
    with pytest.raises(clmad.InvalidArgumentError, match="takes 2 inputs, got 1"):
        k(x)
    for extra in ((x, y, y), (x, y, 1.0), (x, 1.0, y), (x, y, None)):
        with pytest.raises(clmad.InvalidArgumentError, match="takes 2 inputs, got 3"):
            k(*extra)
    with pytest.raises(TypeError):
        clmad.dot(x, 2.0)
    with pytest.raises(TypeError):
        x * "text"
    gone = ctx.tensor(np.ones(3, np.float32))
    gone.release()
    for use in (lambda: k(x, gone), lambda: k(gone, 1.0), lambda: clmad.dot(x, gone), lambda: gone * x,
                lambda: x * gone, lambda: gone * 2.0, lambda: gone.backward(), lambda: gone.zero_grad(),
                lambda: -gone, lambda: gone.sum()):
        with pytest.raises(clmad.ReleasedError):
            use()
    other = new_context()
    u, v = other.tensor(np.ones(3, np.float32), requires_grad=True), other.tensor(np.ones(3, np.float32))
    ku = other.kernel("T f(T x, T a) { return a * x; }", "f")
    loss = clmad.dot(u, v)
    other.close()
    for use in (lambda: ku(u, v), lambda: clmad.dot(u, v), lambda: u * v, lambda: u * 2.0,
                lambda: loss.backward(), lambda: u.exp()):
        with pytest.raises(clmad.ReleasedError):
            use()
    u.zero_grad()  # a tensor outlives its context's close, as before


def test_fast_paths_give_what_the_general_path_gives(ctx):
    class Sub(clmad.Tensor):
        __slots__ = ()

    a = np.array([0.5, -1.0, 2.0], np.float32)
    x = ctx.tensor(a, requires_grad=True)
    plain = ctx.tensor(a)
    sx = Sub(ctx, clmad._lib.lib.clmad_tensor_retain(plain._handle))  # a subclass: the general path
    k = ctx.kernel("T f(T x, T a) { return a * x + 1; }", "f")
    for value in (3, 3.0, np.float64(3.0), np.float32(3.0), True):
        v = np.float32(value)
        np.testing.assert_array_equal(k(x, value).numpy(), a * v + 1)
        np.testing.assert_array_equal((x * value).numpy(), a * v)
        np.testing.assert_array_equal((value * x).numpy(), a * v)
        np.testing.assert_array_equal((x - value).numpy(), a - v)
        np.testing.assert_array_equal((value - x).numpy(), v - a)
    np.testing.assert_array_equal(k(sx, x).numpy(), a * a + 1)
    np.testing.assert_array_equal((sx * x).numpy(), a * a)
    np.testing.assert_array_equal(clmad.dot(sx, x).numpy(), a @ a)
    with ctx.scope():
        y = k(x, x)
        z = clmad.dot(y, x)
    for t in (y, z):
        with pytest.raises(clmad.ReleasedError):
            t.numpy()
    clmad.dot(k(x, 2.0), x).backward()  # d/dx sum((2x + 1) x) = 4x + 1
    np.testing.assert_allclose(x.grad.numpy(), 4 * a + 1, rtol=1e-7)
    x.zero_grad()
    assert x.grad is None


def test_a_long_scope_keeps_its_bookkeeping_small(ctx):
    """A scope registers each tensor made inside (cheaply: a weak reference);
    the entries of collected tensors go, so a loop of 10,000 operations in one
    scope holds a bounded number, and the end releases exactly the live ones.
    (Blank Tensor objects take the memory of the collected ones, so that new
    tensors get new ids and do not simply overwrite the dead entries.)"""
    x = ctx.tensor(np.arange(3.0, dtype=np.float32))
    blanks = []
    with ctx.scope() as s:
        kept, live = s.keep(x * 2), x * 3
        for _ in range(10000):
            y = x + 1.0
            blanks.append(clmad.Tensor.__new__(clmad.Tensor))
        assert len({id(b) for b in blanks}) == len(blanks)
        assert len(s._made) <= 1024
    np.testing.assert_array_equal(kept.numpy(), [0, 2, 4])
    for t in (live, y):
        with pytest.raises(clmad.ReleasedError):
            t.numpy()


def test_fast_paths_keep_memory_flat_over_10000_cycles(ctx):
    """Python's memory (tracemalloc) and the library's (live tensor bytes) come
    back to where they were, with the cycles inside a scope too."""
    x = ctx.tensor(np.ones(16, np.float32), requires_grad=True)
    w = ctx.tensor(np.full(16, 0.5, np.float32))
    k = ctx.kernel("T f(T x, T a) { return a * x + 1; }", "f")

    def cycle():
        clmad.dot(k(x, 2.0) * w - 1.0, w).backward()
        x.zero_grad()

    cycle()
    gc.collect()
    before = ctx.stats()["live_tensor_bytes"]
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(5000):
            cycle()
        with ctx.scope():
            for _ in range(5000):
                cycle()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 16384, f"{grown} bytes more after 10,000 cycles"
    assert ctx.stats()["live_tensor_bytes"] == before


def test_null_library_of_the_layer_benchmark_stands_in_for_every_function(tmp_path):
    """bench/python_layer.py times the package against a library whose
    functions do nothing, made from the public headers: the package must
    import against it and run each timed operation (it broke once when the
    package bound clmad_cl.h's functions and the null library had only
    clmad.h's)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(root, "bench"))
    try:
        import python_layer
    finally:
        sys.path.pop(0)
    null = python_layer.build_null_library(str(tmp_path))
    package = os.path.dirname(os.path.dirname(os.path.abspath(clmad.__file__)))
    env = dict(os.environ, CLMAD_LIBRARY=null, PYTHONPATH=package)
    out = subprocess.run([sys.executable, python_layer.__file__, "--child", "null", "--calls", "20", "--rounds", "1"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    timed = json.loads(out.stdout)
    assert timed["HM-LSTM step (6-input cell)"]["calls_into_c"] >= 3, timed
