# SPDX-License-Identifier: Apache-2.0
"""clmad.hvp against PyTorch's double backward, in float64 (ctest hvp_torch).

Three models, the same random inputs in both libraries, H·v for every
parameter by clmad_hvp (forward over reverse) and by torch.autograd.grad with
create_graph=True, then the gradient of (g . v):
  mlp     tanh(X W1 + b1) W2 + b2, mean squared error against a target;
  hmlstm  two steps of an LSTM layer whose cell is the HM-LSTM cell (a user
          kernel with three branches: FLUSH, COPY, UPDATE), a loss after the
          output product; in PyTorch the same per-element maths with torch.where;
  newton  Newton's square root in a user kernel that stops when the residual
          is small, so each element takes its own number of steps; in PyTorch
          the same iteration with a per-element active mask (torch.where), so
          each element differentiates the path it took.
Prints one line per case with the largest relative error over the parameters
(max |clmad - torch| / max |torch|, per parameter) and exits 1 above 1e-10.
Exits 77 ("skipped: ...") where PyTorch cannot be imported or the device has
no float64. Run with PYTHONPATH=<source>/python and CLMAD_LIBRARY=<libclmad.so>.
"""
import sys

try:
    import numpy as np
except ImportError as e:  # Debian's python3-torch brings python3-numpy
    print(f"skipped: NumPy cannot be imported ({e})")
    sys.exit(77)

import clmad  # noqa: E402 (a failure to load libclmad fails the test)

torch = None  # imported by main() once the OpenCL implementation is loaded


def import_torch():
    """PyTorch, imported after the first clmad context: Debian's torch links
    Debian's libtbb.so.12, older than the one Intel's OpenCL runtime ships
    and needs; loaded first, it keeps that runtime from loading at all."""
    global torch
    try:
        import torch as module
    except ImportError as e:  # Debian's python3-torch; CI installs it
        print(f"skipped: PyTorch cannot be imported ({e})")
        sys.exit(77)
    torch = module

TOLERANCE = 1e-10

HMLSTM_CELL = """
T cell(T z, T zb, T c, T f, T i, T g)
{
    if (z == 1)  return sigmoid(i) * tanh(g);          /* FLUSH  */
    if (zb == 0) return c;                              /* COPY   */
    return sigmoid(f) * c + sigmoid(i) * tanh(g);       /* UPDATE */
}
"""

# A loose stopping test: the result depends on the number of steps each element
# takes (a fixed number of steps for all would differ by about 1e-4), so the
# comparison checks that each element differentiates the path it took.
NEWTON_RESIDUAL = 1e-4
NEWTON_SQRT = """
T newton_sqrt(T a)                      /* a > 0 */
{
    T y = (1 + a) / 2;
    for (int it = 0; it < 100; it++) {
        T r = y * y - a;
        if (fabs(r) <= (real)%r * a)
            break;
        y = y - r / (2 * y);
    }
    return y;
}
""" % NEWTON_RESIDUAL


def torch_hvp(loss_fn, values, directions):
    """H·v by double backward: grad of (grad(loss) . v) with create_graph=True."""
    params = [torch.tensor(a, requires_grad=True) for a in values]
    grads = torch.autograd.grad(loss_fn(*params), params, create_graph=True)
    gv = sum((g * torch.from_numpy(d)).sum() for g, d in zip(grads, directions))
    return [h.detach().numpy() for h in torch.autograd.grad(gv, params)]


def clmad_hvp(ctx, loss_fn, values, directions):
    params = [ctx.tensor(a, requires_grad=True) for a in values]
    return [h.numpy() for h in clmad.hvp(loss_fn(*params), params, directions)]


def relative_error(ours, theirs):
    worst = 0.0
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape, (a.shape, b.shape)
        scale = np.abs(b).max()
        if scale == 0:  # a parameter with a zero H·v must get exactly zero
            worst = max(worst, np.abs(a).max())
        else:
            worst = max(worst, np.abs(a - b).max() / scale)
    return worst


def mlp_case(ctx, rng):
    X, Y = rng.normal(size=(16, 8)), rng.normal(size=(16, 3))
    values = [rng.normal(0, 0.5, (8, 12)), rng.normal(0, 0.1, (12,)),
              rng.normal(0, 0.5, (12, 3)), rng.normal(0, 0.1, (3,))]
    tX, tY = ctx.tensor(X), ctx.tensor(Y)
    xX, xY = torch.from_numpy(X), torch.from_numpy(Y)

    def ours(W1, b1, W2, b2):
        return clmad.mse_loss((tX @ W1 + b1).tanh() @ W2 + b2, tY)

    def theirs(W1, b1, W2, b2):
        return (((xX @ W1 + b1).tanh() @ W2 + b2 - xY) ** 2).mean()

    return ours, theirs, values, ""


def mlp_cross_entropy_case(ctx, rng):
    """The MLP as a classifier: softmax cross-entropy over integer labels
    (log_softmax, gather and mean on clmad's tape)."""
    X, labels = rng.normal(size=(16, 8)), rng.integers(0, 3, size=16)
    values = [rng.normal(0, 0.5, (8, 12)), rng.normal(0, 0.1, (12,)),
              rng.normal(0, 0.5, (12, 3)), rng.normal(0, 0.1, (3,))]
    tX, tL = ctx.tensor(X), ctx.tensor(labels.astype(np.int64))
    xX, xL = torch.from_numpy(X), torch.from_numpy(labels.astype(np.int64))

    def ours(W1, b1, W2, b2):
        return clmad.cross_entropy((tX @ W1 + b1).tanh() @ W2 + b2, tL)

    def theirs(W1, b1, W2, b2):
        return torch.nn.functional.cross_entropy((xX @ W1 + b1).tanh() @ W2 + b2, xL)

    return ours, theirs, values, "(integer labels)"


def hmlstm_case(ctx, rng):
    B, D, H, STEPS = 12, 3, 5, 2
    cell = ctx.kernel(HMLSTM_CELL, "cell")
    xs = [rng.normal(size=(B, D)) for _ in range(STEPS)]
    # Per row and step: z = 1 FLUSH, else zb = 0 COPY, else UPDATE; each branch
    # taken by four rows at every step.
    zs = [rng.permutation(np.repeat([1.0, 0.0, 0.0], 4))[:, None] for _ in range(STEPS)]
    zbs = [np.where(z == 1, rng.integers(0, 2, (B, 1)), 0.0) for z in zs]
    for z, zb in zip(zs, zbs):
        zb[np.flatnonzero(z == 0)[:4]] = 1.0   # four UPDATE rows (z = 0, zb = 1)
    target = rng.normal(size=(B, 2))
    values = [rng.normal(0, 0.5, (D, 4 * H)), rng.normal(0, 0.5, (H, 4 * H)),
              rng.normal(0, 0.5, (H, 2)), rng.normal(0, 0.5, (B, H)), rng.normal(0, 0.5, (B, H))]
    branches = [(int((z == 1).sum()), int(((z == 0) & (zb == 0)).sum()), int(((z == 0) & (zb == 1)).sum()))
                for z, zb in zip(zs, zbs)]
    assert all(min(b) > 0 for b in branches), branches

    def layer(Wx, Wh, Wy, h, c, inputs, cell_fn, sigmoid):
        for x, z, zb in zip(*inputs):
            gates = x @ Wx + h @ Wh
            i, g, o, f = (gates[:, k * H:(k + 1) * H] for k in range(4))
            c = cell_fn(z, zb, c, f, i, g)
            h = sigmoid(o) * c.tanh()
        return h @ Wy

    ours_in = ([ctx.tensor(x) for x in xs], [ctx.tensor(z) for z in zs], [ctx.tensor(zb) for zb in zbs])
    theirs_in = ([torch.from_numpy(x) for x in xs], [torch.from_numpy(z) for z in zs],
                 [torch.from_numpy(zb) for zb in zbs])
    tT, xT = ctx.tensor(target), torch.from_numpy(target)

    def torch_cell(z, zb, c, f, i, g):
        flush = torch.sigmoid(i) * torch.tanh(g)
        return torch.where(z == 1, flush, torch.where(zb == 0, c, torch.sigmoid(f) * c + flush))

    def ours(Wx, Wh, Wy, h0, c0):
        return clmad.mse_loss(layer(Wx, Wh, Wy, h0, c0, ours_in, cell, lambda t: t.sigmoid()), tT)

    def theirs(Wx, Wh, Wy, h0, c0):
        return ((layer(Wx, Wh, Wy, h0, c0, theirs_in, torch_cell, torch.sigmoid) - xT) ** 2).mean()

    return ours, theirs, values, f"(rows FLUSH/COPY/UPDATE per step: {branches})"


def newton_case(ctx, rng):
    newton_sqrt = ctx.kernel(NEWTON_SQRT, "newton_sqrt")
    X = rng.normal(0, 2, (10, 4))
    target = rng.normal(size=(10, 6))
    values = [rng.normal(0, 1, (4, 6)), rng.uniform(0.05, 1.5, (6,))]
    tX, tT = ctx.tensor(X), ctx.tensor(target)
    xX, xT = torch.from_numpy(X), torch.from_numpy(target)
    steps = {}

    def torch_sqrt(a):
        y = (1 + a) / 2
        active = torch.ones_like(a, dtype=torch.bool)
        count = torch.zeros_like(a, dtype=torch.int64)
        for _ in range(100):
            r = y * y - a
            active = active & ~(r.abs() <= NEWTON_RESIDUAL * a)
            if not bool(active.any()):
                break
            count += active
            y = torch.where(active, y - r / (2 * y), y)
        steps["count"] = count
        return y

    def ours(W, b):
        u = tX @ W
        y = newton_sqrt(u * u + b)
        return clmad.mse_loss(y.tanh() * y, tT)

    def theirs(W, b):
        u = xX @ W
        y = torch_sqrt(u * u + b)
        return ((y.tanh() * y - xT) ** 2).mean()

    def describe():
        c = steps["count"]
        return f"(Newton steps per element: {int(c.min())} to {int(c.max())}, {len(torch.unique(c))} distinct)"

    return ours, theirs, values, describe


def main():
    ctx = clmad.Context(retain_tape=True)
    if not ctx.device.fp64:
        print(f"skipped: {ctx.device.name} has no float64")
        return 77
    import_torch()
    torch.set_default_dtype(torch.float64)
    print(f"clmad {clmad.__version__} on {ctx.device.name}, PyTorch {torch.__version__}")
    rng = np.random.default_rng(27)
    failed = []
    for name, case in (("mlp", mlp_case), ("mlp_cross_entropy", mlp_cross_entropy_case),
                       ("hmlstm", hmlstm_case), ("newton", newton_case)):
        ours, theirs, values, note = case(ctx, rng)
        directions = [rng.normal(size=a.shape) for a in values]
        reference = torch_hvp(theirs, values, directions)
        note = note() if callable(note) else note
        error = relative_error(clmad_hvp(ctx, ours, values, directions), reference)
        ctx.tape_clear()
        ok = error <= TOLERANCE
        print(f"{name}: H·v of {len(values)} parameters, max relative error {error:.2e} "
              f"({'ok' if ok else 'FAILED'}, tolerance {TOLERANCE:.0e}) {note}".rstrip())
        if not ok:
            failed.append(name)
    if failed:
        print("FAILED: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
