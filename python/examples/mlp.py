# SPDX-License-Identifier: Apache-2.0
"""A 2-layer MLP (2 -> 32 tanh -> 2 classes) learns which points of a grid lie inside
a circle, with Adam and the softmax cross-entropy (examples/mlp.c in Python).
Exits 1 unless the loss falls by 90%. Usage: mlp.py [STEPS]"""
import sys

import numpy as np

import clmad

ctx = clmad.Context()
g = np.stack(np.meshgrid(np.linspace(-1, 1, 16), np.linspace(-1, 1, 16)), -1).reshape(-1, 2)
x = ctx.tensor(g.astype(np.float32))
y = ctx.tensor(((g ** 2).sum(1) < 0.5).astype(np.float32))        # class indices, as values
w1 = ctx.rand_normal((2, 32), 0, 1, seed=1, requires_grad=True)
b1 = ctx.zeros(32, requires_grad=True)
w2 = ctx.rand_normal((32, 2), 0, 0.2, seed=2, requires_grad=True)
b2 = ctx.zeros(2, requires_grad=True)
opt = clmad.optim.Adam([w1, b1, w2, b2], lr=0.05)
for step in range(int(sys.argv[1]) if len(sys.argv) > 1 else 200):
    loss = clmad.cross_entropy((x @ w1 + b1).tanh() @ w2 + b2, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    first = loss.item() if step == 0 else first
    if step % 50 == 0:
        print(f"step {step:3d}  loss {loss.item():.5f}")
print(f"loss {first:.5f} -> {loss.item():.5f}: {100 * (1 - loss.item() / first):.1f}% lower")
sys.exit(0 if loss.item() <= 0.1 * first else 1)
