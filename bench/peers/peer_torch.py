# SPDX-License-Identifier: Apache-2.0
"""PyTorch: eager (torch.where) and torch.compile (Inductor) fwd+bwd.

Times loss = sum(cell(...) * w) and the gradients of c, f, i, g from the
leaf tensors, as bench_hmlstm's fused variants do; compile time excluded.
On the CPU by default; PEERS_TORCH_DEVICE=cuda runs it on the GPU (each
step then waits for the device before its time is taken).
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
    device = torch.device(os.environ.get("PEERS_TORCH_DEVICE", "cpu"))
    torch.set_num_threads(os.cpu_count() or 1)
    compiled = torch.compile(cell_loss)  # default backend: Inductor
    runs = []
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"{torch.get_num_threads()} threads"
    print(f"torch {torch.__version__}, {where}, float32, median of {args.reps}")
    for d, x in inputs.generate(args.dims):
        z, zb, w = (torch.from_numpy(x[k]).to(device) for k in ("z", "zb", "w"))
        leaves = [torch.from_numpy(x[k]).to(device).requires_grad_() for k in ("c", "f", "i", "g")]
        for variant, fn in (("eager", cell_loss), ("compile", compiled)):
            def step():
                loss = fn(z, zb, *leaves, w)
                grads = torch.autograd.grad(loss, leaves)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                return loss, grads

            loss, grads = step()  # compiles on the first call
            ref = inputs.check(x, loss.item(), [t.cpu().numpy() for t in grads], f"torch {variant} dims {d}")
            ms = inputs.median_ms(step, args.reps)
            print(f"dims {d}: {variant:8s} {ms:9.3f} ms")
            runs.append({"dims": d, "variant": variant, "device": str(device), "median_ms": ms, "loss": loss.item(), "ref_loss": ref})
    inputs.write_json(args.json, "torch", torch.__version__, runs)


if __name__ == "__main__":
    main()
