# SPDX-License-Identifier: Apache-2.0
"""An LSTM layer whose cell update is the HM-LSTM cell (examples/hmlstm.c in Python):
one fused broadcast kernel with data-dependent branches, differentiated in forward
mode inside the reverse-mode tape that holds the products, slices and the loss.

The cell takes two controls per sequence and step:
  FLUSH  (z = 1):          c' = sigmoid(i) tanh(g)
  COPY   (z = 0, zb = 0):  c' = c
  UPDATE (otherwise):      c' = sigmoid(f) c + sigmoid(i) tanh(g)
Task: sequences of values v_t with a reset flag r_t and a valid flag m_t; the target
at step t is half the sum of the valid values since the last reset. The controls are
the flags (z = r, zb = m). The program
 1. checks the gradient of the layer with the fused cell against the same cell built
    from builtins (clmad.where over masks) and against a central difference along a
    random direction, in float64 (exit 1 above 1e-6 relative);
 2. trains with Adam and exits 1 unless the loss falls by 30%.
Usage: hmlstm.py [ITERS] [STEPS] [BATCH] [HIDDEN]"""
import sys

import numpy as np

import clmad

CELL = """
T cell(T z, T zb, T c, T f, T i, T g)
{
    if (z == 1)  return sigmoid(i) * tanh(g);          /* FLUSH  */
    if (zb == 0) return c;                              /* COPY   */
    return sigmoid(f) * c + sigmoid(i) * tanh(g);       /* UPDATE */
}
"""

args = [int(a) for a in sys.argv[1:]]
ITERS, STEPS, BATCH, H = (args + [150, 12, 32, 16][len(args):])[:4]
ctx = clmad.Context()
cell = ctx.kernel(CELL, "cell")


def builtin_cell(z, zb, c, f, i, g):
    flush = i.sigmoid() * g.tanh()
    return clmad.where(z == 1, flush, clmad.where(zb == 0, c, f.sigmoid() * c + flush))


def make_batch(rng):
    v = rng.uniform(-1, 1, (STEPS, BATCH))
    r = (rng.uniform(size=(STEPS, BATCH)) < 0.25).astype(float)
    r[0] = 1
    m = (rng.uniform(size=(STEPS, BATCH)) < 0.8).astype(float)
    target, acc = np.zeros((BATCH, STEPS)), np.zeros(BATCH)
    for t in range(STEPS):
        acc = np.where(r[t] == 1, 0, acc) + m[t] * v[t]
        target[:, t] = 0.5 * acc
    return v, r, m, target


def loss_of(params, data, cell_fn, dtype):
    wx, wh, wy, by = params
    v, r, m, target = data
    h = ctx.zeros((BATCH, H), dtype)
    c = ctx.zeros((BATCH, H), dtype)
    ys = []
    for t in range(STEPS):
        x = ctx.tensor(np.stack([v[t], np.ones(BATCH)], 1), dtype=dtype)
        gates = x @ wx + h @ wh                                       # (BATCH, 4H)
        i, g, o, f = (gates[:, k * H:(k + 1) * H] for k in range(4))
        z = ctx.tensor(r[t][:, None], dtype=dtype)
        zb = ctx.tensor(m[t][:, None], dtype=dtype)
        c = cell_fn(z, zb, c, f, i, g)
        h = o.sigmoid() * c.tanh()
        ys.append(h @ wy + by)                                        # (BATCH, 1)
    return clmad.mse_loss(clmad.concat(ys, axis=1), ctx.tensor(target, dtype=dtype))


def init(dtype, seed):
    return [ctx.rand_normal((2, 4 * H), 0, 0.5, seed, dtype, True),
            ctx.rand_normal((H, 4 * H), 0, 0.5 / np.sqrt(H), seed + 1, dtype, True),
            ctx.rand_normal((H, 1), 0, 0.5 / np.sqrt(H), seed + 2, dtype, True),
            ctx.zeros(1, dtype, True)]


def check_gradients(rng):
    """Fused cell vs builtin cell vs a central difference along a random direction (f64)."""
    params = init(np.float64, 10)
    data = make_batch(rng)
    grads = []
    for cell_fn in (cell, builtin_cell):
        for p in params:
            p.zero_grad()
        loss_of(params, data, cell_fn, np.float64).backward()
        grads.append([p.grad.numpy() for p in params])
    worst = max(np.abs(a - b).max() / max(1e-12, np.abs(b).max()) for a, b in zip(*grads))
    values = [p.numpy() for p in params]
    direction = [rng.normal(size=v.shape) for v in values]
    h = 1e-6
    with ctx.no_grad():
        def at(s):
            moved = [ctx.tensor(v + s * d) for v, d in zip(values, direction)]
            return loss_of(moved, data, cell, np.float64).item()
        fd = (at(h) - at(-h)) / (2 * h)
    ad = sum((g * d).sum() for g, d in zip(grads[0], direction))
    fd_error = abs(ad - fd) / max(1e-12, abs(fd))
    print(f"gradient check: fused vs builtins {worst:.2e}, vs central difference {fd_error:.2e}")
    return worst < 1e-6 and fd_error < 1e-6


def train(rng):
    dtype = np.float64 if ctx.device.fp64 else np.float32
    params = init(dtype, 20)
    opt = clmad.optim.Adam(params, lr=0.02)
    first = last = None
    for it in range(ITERS):
        loss = loss_of(params, make_batch(rng), cell, dtype)
        opt.zero_grad()
        loss.backward()
        opt.step()
        last = loss.item()
        first = last if first is None else first
        if it % 25 == 0:
            print(f"iteration {it:3d}  loss {last:.5f}")
    print(f"loss {first:.5f} -> {last:.5f}: {100 * (1 - last / first):.1f}% lower")
    return last <= 0.7 * first


rng = np.random.default_rng(0)
ok = check_gradients(rng) if ctx.device.fp64 else True
ok = train(rng) and ok
sys.exit(0 if ok else 1)
