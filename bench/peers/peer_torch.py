# SPDX-License-Identifier: Apache-2.0
"""PyTorch: eager (torch.where) and torch.compile (Inductor, CPU) fwd+bwd.

Times loss = sum(cell(...) * w) and the gradients of c, f, i, g from the
leaf tensors, as bench_hmlstm's fused variants do; compile time excluded.
"""
import os

import torch

import inputs


def cell_loss(z, zb, c, f, i, g, w):
    flush = torch.sigmoid(i) * torch.tanh(g)
    update = torch.sigmoid(f) * c + flush
    y = torch.where(z == 1, flush, torch.where(zb == 0, c, update))
    return (y * w).sum()


def main():
    args = inputs.parse_args(__doc__)
    torch.set_num_threads(os.cpu_count() or 1)
    compiled = torch.compile(cell_loss)  # default backend: Inductor
    runs = []
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, median of {args.reps}")
    for d, x in inputs.generate(args.dims):
        z, zb, w = (torch.from_numpy(x[k]) for k in ("z", "zb", "w"))
        leaves = [torch.from_numpy(x[k]).requires_grad_() for k in ("c", "f", "i", "g")]
        for variant, fn in (("eager", cell_loss), ("compile", compiled)):
            def step():
                loss = fn(z, zb, *leaves, w)
                return loss, torch.autograd.grad(loss, leaves)

            loss, grads = step()  # compiles on the first call
            ref = inputs.check(x, loss.item(), [t.numpy() for t in grads], f"torch {variant} dims {d}")
            ms = inputs.median_ms(step, args.reps)
            print(f"dims {d}: {variant:8s} {ms:9.3f} ms")
            runs.append({"dims": d, "variant": variant, "median_ms": ms, "loss": loss.item(), "ref_loss": ref})
    inputs.write_json(args.json, "torch", torch.__version__, runs)


if __name__ == "__main__":
    main()
