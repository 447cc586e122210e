# SPDX-License-Identifier: Apache-2.0
"""Shared inputs and settings of the MLP training step (bench/bench_mlp.c).

A size is BATCHxINxHIDDENxCLASSES. For each size, bench_mlp restarts
bench_hmlstm's xorshift64 stream (seed 0x2545F4914F6CDD1D, replayed by
inputs.XorShift64) and draws, in this order, in float64 then rounded to
float32:
  x       batch*in values, 2u - 1, row-major (batch, in)
  labels  batch values, floor(u * classes), int64
  W1, b1  in*hidden and hidden values, (2u - 1) / sqrt(in)
  W2, b2  hidden*classes and classes values, (2u - 1) / sqrt(hidden)
(PyTorch's nn.Linear initialisation, uniform in +-1/sqrt(fan_in)). Each
size starts afresh, so any --dims list gives every tool the same inputs.

The step: logits = gelu(x W1 + b1) W2 + b2, gelu in its tanh form
(PyTorch's gelu(approximate="tanh")), loss = mean softmax cross-entropy
against the labels, backward, one Adam step (PyTorch's defaults below).

`python mlp_inputs.py --dims 256x784x1024x10` prints the sums of the
inputs, to compare with another implementation's.
"""
import argparse

import numpy as np

from inputs import XorShift64

DEFAULT_DIMS = "256x784x1024x10,1024x784x1024x10"
ACTIVATION = "gelu_tanh"
LR, BETA1, BETA2, EPS = 1e-3, 0.9, 0.999, 1e-8
CHECK_STEPS = 5


def parse_dims(text):
    """'256x784x1024x10,...' -> [(256, 784, 1024, 10), ...]"""
    sizes = []
    for tok in text.split(","):
        parts = tuple(int(p) for p in tok.split("x"))
        if len(parts) != 4 or min(parts) < 1:
            raise SystemExit(f"bad size {tok!r}: BATCHxINxHIDDENxCLASSES")
        sizes.append(parts)
    return sizes


def dims_text(d):
    return "x".join(str(v) for v in d)


def generate(d):
    """The inputs of size d: dict of x, labels, W1, b1, W2, b2 (NumPy)."""
    batch, n_in, hidden, classes = d
    rng = XorShift64()

    def draw(n, scale):
        return ((2 * rng.uniform(n) - 1) * scale).astype(np.float32)

    x = draw(batch * n_in, 1.0).reshape(batch, n_in)
    labels = np.floor(rng.uniform(batch) * classes).astype(np.int64)
    s1, s2 = 1 / np.sqrt(float(n_in)), 1 / np.sqrt(float(hidden))
    w1 = draw(n_in * hidden, s1).reshape(n_in, hidden)
    b1 = draw(hidden, s1)
    w2 = draw(hidden * classes, s2).reshape(hidden, classes)
    b2 = draw(classes, s2)
    return {"x": x, "labels": labels, "W1": w1, "b1": b1, "W2": w2, "b2": b2}


def reference_loss(data):
    """The loss before any step, in float64 NumPy: what every tool's first loss must be."""
    x, w1, b1, w2, b2 = (data[k].astype(np.float64) for k in ("x", "W1", "b1", "W2", "b2"))
    z = x @ w1 + b1
    h = 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))
    logits = h @ w2 + b2
    m = logits.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(logits - m).sum(axis=1))
    return float(np.mean(lse - logits[np.arange(len(logits)), data["labels"]]))


def losses_ok(losses, ref, label):
    """A peer's first losses: the first within 1e-6 of the float64 loss (1e-7
    measured), all finite and falling over the steps; says so when not."""
    rel = abs(losses[0] - ref) / abs(ref)
    ok = rel <= 1e-6 and all(np.isfinite(losses)) and losses[-1] < losses[0]
    if not ok:
        print(f"  {label}: WRONG, losses {losses} (float64 first loss {ref:.9g}, off by {rel:.1e}): not timed")
    return ok


def step_flops(d):
    """Multiply-adds x 2 of the two forward GEMMs, dW1, dW2 and the hidden adjoint (as bench_mlp)."""
    b, i, h, c = d
    return 4 * b * i * h + 6 * b * h * c


def parse_args(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dims", default=DEFAULT_DIMS, help="comma-separated BATCHxINxHIDDENxCLASSES, as bench_mlp --dims")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--check-steps", type=int, default=CHECK_STEPS, help="steps whose losses are recorded first")
    p.add_argument("--json", help="write the medians here")
    a = p.parse_args()
    a.sizes = parse_dims(a.dims)
    return a


if __name__ == "__main__":
    args = parse_args("Prints the sums of the inputs of each size.")
    for d in args.sizes:
        x = generate(d)
        sums = ", ".join(f"{k} {x[k].sum(dtype=np.float64):.9g}" for k in ("x", "labels", "W1", "b1", "W2", "b2"))
        print(f"{dims_text(d)}: {sums}")
