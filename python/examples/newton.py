# SPDX-License-Identifier: Apache-2.0
"""Differentiate through Newton's method: each element solves y^3 + a y = x by
Newton steps inside one broadcast kernel. The gradients that reverse mode (the
tape) and forward mode (partials) give through the iterations must equal those
of the implicit function, dy/dx = 1 / (3y^2 + a), dy/da = -y / (3y^2 + a).
Exits 1 on a mismatch (relative 1e-10). Usage: newton.py [N]"""
import sys

import numpy as np

import clmad

SOURCE = """
T cubic(T x, T a)                       /* y^3 + a y = x, a > 0: one real root */
{
    T y = x / (1 + a);
    for (int it = 0; it < 60; it++) {
        T dy = (y * y * y + a * y - x) / (3 * y * y + a);
        y -= dy;
        if (fabs(dy) < (real)1e-15)
            break;
    }
    return y;
}
"""

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
rng = np.random.default_rng(0)
ctx = clmad.Context()
if not ctx.device.fp64:  # the checks below are in float64; 77: skipped, as the C examples
    print(f"newton.py: skipped: {ctx.device.name} has no fp64", file=sys.stderr)
    sys.exit(77)
cubic = ctx.kernel(SOURCE, "cubic")
x = ctx.tensor(rng.uniform(-5, 5, (n, 1)), requires_grad=True)     # a column of right-hand sides
a = ctx.tensor(rng.uniform(0.5, 2, (1, 8)), requires_grad=True)    # a row of coefficients
y = cubic(x, a)                                                    # the (n, 8) grid of solutions
y.sum().backward()                                                 # reverse mode through the loop
yv, av = y.numpy(), a.numpy()
d = 3 * yv ** 2 + av
print("largest residual", np.abs(yv ** 3 + av * yv - x.numpy()).max())
errors = {
    "reverse dx": np.abs(x.grad.numpy() - (1 / d).sum(1, keepdims=True)).max(),
    "reverse da": np.abs(a.grad.numpy() - (-yv / d).sum(0, keepdims=True)).max() / np.abs(a.grad.numpy()).max(),
}
with ctx.no_grad():
    _, ((dx, da),) = cubic.partials(x, a)                          # forward mode
errors["forward dx"] = np.abs(dx.numpy() * d - 1).max()
errors["forward da"] = np.abs(da.numpy() * d + yv).max() / np.abs(yv).max()
for name, e in errors.items():
    print(f"{name}: largest relative error {e:.2e}")
sys.exit(0 if max(errors.values()) < 1e-10 else 1)
