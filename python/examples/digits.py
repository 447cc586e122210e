# SPDX-License-Identifier: Apache-2.0
"""Handwritten digits end to end: scikit-learn's 8x8 digits (1797 images, shipped
inside the scikit-learn package), an MLP 64 -> 64 ReLU -> 10 trained with Adam
on the softmax cross-entropy, per-epoch loss and test accuracy, the first
epoch's time (it holds the first run's OpenCL compiles; later runs read them from
the caches), a plot of both curves when matplotlib is installed, a checkpoint
saved with clmad.save and reloaded into a fresh model, which must score the same.

Usage: digits.py [EPOCHS] [OUT_DIR]   (defaults: 20, the current folder)
Exits 0 when the test accuracy reaches 0.9 and the reloaded model scores the
same, 1 otherwise, 77 when scikit-learn is missing (it says so)."""
import os
import sys
import time

import numpy as np

import clmad

try:
    from sklearn.datasets import load_digits
except ImportError:
    print("digits.py needs scikit-learn (pip install scikit-learn)", file=sys.stderr)
    sys.exit(77)

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
out_dir = sys.argv[2] if len(sys.argv) > 2 else "."
batch = 64

# The data: pixels 0..16 scaled to 0..1, a fixed split of 1438 training and 359 test images.
digits = load_digits()
x_all = (digits.data / 16.0).astype(np.float32)
y_all = digits.target.astype(np.int64)
order = np.random.default_rng(0).permutation(len(x_all))
n_train = int(0.8 * len(x_all))
train, test = order[:n_train], order[n_train:]

ctx = clmad.Context()
x_test, y_test = ctx.tensor(x_all[test]), ctx.tensor(y_all[test])


def make_model(seed):
    return {"w1": ctx.rand_normal((64, 64), 0, (2 / 64) ** 0.5, seed=seed, requires_grad=True),
            "b1": ctx.zeros(64, requires_grad=True),
            "w2": ctx.rand_normal((64, 10), 0, (1 / 64) ** 0.5, seed=seed + 1, requires_grad=True),
            "b2": ctx.zeros(10, requires_grad=True)}


def logits(m, x):
    return clmad.relu(x @ m["w1"] + m["b1"]) @ m["w2"] + m["b2"]


model = make_model(seed=1)
opt = clmad.optim.Adam(list(model.values()), lr=0.01)
rng = np.random.default_rng(1)
losses, accuracies = [], []
for epoch in range(epochs):
    start, cpu = time.perf_counter(), time.process_time()
    total = 0.0
    idx = rng.permutation(train)
    for first in range(0, len(idx), batch):
        rows = idx[first:first + batch]
        loss = clmad.cross_entropy(logits(model, ctx.tensor(x_all[rows])), ctx.tensor(y_all[rows]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(rows)
    with ctx.no_grad():
        acc = clmad.accuracy(logits(model, x_test), y_test)
    losses.append(total / len(idx))
    accuracies.append(acc)
    seconds = time.perf_counter() - start
    print(f"epoch {epoch + 1:3d}  loss {losses[-1]:.4f}  test accuracy {acc:.4f}  ({seconds:.2f} s)")
    if epoch == 0:  # CPU time too: a busy machine stretches the wall time, not the work
        print(f"first epoch: {seconds:.2f} s, CPU {time.process_time() - cpu:.2f} s (with the first run's compiles)")

# The checkpoint: the parameters and the optimizer's state, reloaded into a new model.
path = os.path.join(out_dir, "digits.safetensors")
clmad.save(path, model, metadata={"epochs": str(epochs)})
opt.save(os.path.join(out_dir, "digits-adam.safetensors"))
reloaded = clmad.load(path, into=make_model(seed=7))
with ctx.no_grad():
    acc_reloaded = clmad.accuracy(logits(reloaded, x_test), y_test)
print(f"checkpoint {path}: reloaded model's test accuracy {acc_reloaded:.4f}")

try:
    import matplotlib
    matplotlib.use("Agg")  # to a file, no window
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is not installed: no plot")
else:
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.plot(range(1, epochs + 1), losses)
    left.set(xlabel="epoch", ylabel="training loss", yscale="log")
    right.plot(range(1, epochs + 1), accuracies)
    right.set(xlabel="epoch", ylabel="test accuracy")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "digits.png"))
    print(f"plot: {os.path.join(out_dir, 'digits.png')}")

sys.exit(0 if accuracies[-1] >= 0.9 and acc_reloaded == accuracies[-1] else 1)
