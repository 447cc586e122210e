# SPDX-License-Identifier: Apache-2.0
"""PyTorch: the MLP training step of bench_mlp, eager and torch.compile.

loss = cross_entropy(gelu(x @ W1 + b1, approximate="tanh") @ W2 + b2, labels),
backward, torch.optim.Adam (lr 1e-3, defaults otherwise). "compile" compiles
the loss (Inductor; its backward too, through AOTAutograd) and the Adam
step (torch.compile over opt.step, PyTorch's recipe); compile time is
excluded. Each variant trains its own parameters from the inputs of
mlp_inputs.py; its first --check-steps losses are recorded. On the CPU by
default; PEERS_TORCH_DEVICE=cuda runs it on the GPU (each step then waits
for the device before its time is taken), in true float32 (no TF32).
"""
import os

import torch
import torch.nn.functional as F

import inputs
import mlp_inputs


def mlp_loss(x, labels, w1, b1, w2, b2):
    h = F.gelu(x @ w1 + b1, approximate="tanh")
    return F.cross_entropy(h @ w2 + b2, labels)


class Trainer:
    """Parameters, Adam and the step of one variant (eager or compile)."""

    def __init__(self, data, device, dtype=torch.float32, compiled=False):
        self.device = device
        # torch.tensor copies: the steps must not write into the shared inputs.
        self.x = torch.tensor(data["x"], device=device, dtype=dtype)
        self.labels = torch.tensor(data["labels"], device=device)
        self.params = [torch.tensor(data[k], device=device, dtype=dtype, requires_grad=True)
                       for k in ("W1", "b1", "W2", "b2")]
        self.opt = torch.optim.Adam(self.params, lr=mlp_inputs.LR, betas=(mlp_inputs.BETA1, mlp_inputs.BETA2),
                                    eps=mlp_inputs.EPS)
        self.loss_fn = torch.compile(mlp_loss) if compiled else mlp_loss
        self.opt_step = torch.compile(self.opt.step) if compiled else self.opt.step

    def step(self):
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.x, self.labels, *self.params)
        loss.backward()
        self.opt_step()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return loss


def main():
    args = mlp_inputs.parse_args(__doc__)
    device = torch.device(os.environ.get("PEERS_TORCH_DEVICE", "cpu"))
    torch.set_num_threads(os.cpu_count() or 1)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"{torch.get_num_threads()} threads"
    print(f"torch {torch.__version__}, {where}, MLP step, float32, median of {args.reps}")
    runs, wrong = [], 0
    for d in args.sizes:
        data = mlp_inputs.generate(d)
        ref = mlp_inputs.reference_loss(data)
        name = mlp_inputs.dims_text(d)
        for variant in ("eager", "compile"):
            t = Trainer(data, device, compiled=variant == "compile")
            losses = [t.step().item() for _ in range(args.check_steps)]  # compiles on the first
            if not mlp_inputs.losses_ok(losses, ref, f"{name} {variant}"):
                wrong += 1
                continue
            ms = inputs.median_ms(t.step, args.reps)
            gflops = mlp_inputs.step_flops(d) / ms * 1e-6
            print(f"{name}: {variant:8s} {ms:9.3f} ms {gflops:8.1f} GFLOP/s  losses {losses[0]:.6f} .. {losses[-1]:.6f}")
            runs.append({"dims": name, "variant": variant, "device": str(device), "median_ms": ms,
                         "gflops": gflops, "losses": losses})
    inputs.write_json(args.json, "torch", torch.__version__, runs, benchmark="mlp")
    if wrong:
        raise SystemExit(f"peer_torch_mlp: {wrong} variant(s) computed a wrong loss")


if __name__ == "__main__":
    main()
