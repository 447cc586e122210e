# SPDX-License-Identifier: Apache-2.0
"""Does bench_mlp train as PyTorch does? Not a timing.

bench_mlp --check-dir DIR saves, per size, the parameters after its first K
steps and the losses of those steps (DIR/<device>.mlp.<dims>.safetensors).
This script takes the same K steps from the same inputs (mlp_inputs.py) in
PyTorch twice, in float64 (the reference) and in float32 (the peer), and
compares clmad with both.

The errors, after K Adam steps (lr 1e-3), over every loss and every
element of W1, b1, W2, b2: the largest relative error of a loss, and the
parameters' errors in units of lr (Adam moves each element by about lr a
step, scaled by m / sqrt(v) rather than by the gradient's size): the 99th
percentile, the elements beyond 0.01 lr, the largest.

Tolerances: clmad must be as accurate as PyTorch's float32 is in the same
run, within a factor of 4. Two float32 implementations sum in different
orders (the GEMMs' blocking, the reductions), so their errors against
float64 are of one size but not equal; and that size grows with the
problem (the 99th percentile was 9e-6 lr for PyTorch at batch 256, 9e-5 lr
at batch 1024, where more of the gradient cancels). So, against float64,
each error may reach 4 times PyTorch float32's, or a floor where that is
tiny: a loss 1e-6 relative, the 99th percentile 1e-4 lr, 1 element in 10^4
beyond 0.01 lr (an element whose gradient is within rounding of zero, or
of eps, steps by an uncertain amount in any float32 implementation); and
none beyond 2 lr a step. Against PyTorch float32 the allowance is 5 times
its error (clmad's 4 plus PyTorch's own). A wrong formula is far outside:
the erf GELU in place of the tanh one puts the loss 4e-5 off and the 99th
percentile at 1e-2 lr (300 times PyTorch float32's own error).
PEERS_TORCH_DEVICE=cuda runs PyTorch on the GPU (no TF32).
Usage: check_mlp.py --dims LIST --check-dir DIR [--json FILE]
"""
import argparse
import glob
import json
import os
import struct

import numpy as np
import torch

import mlp_inputs
from peer_torch_mlp import Trainer

FACTOR = 4  # clmad's errors against float64: at most FACTOR x PyTorch float32's
FLOORS = {"loss_rel": 1e-6, "q99_lr": 1e-4, "outlier_fraction": 1e-4}
AGREE_LR = 0.01


def read_safetensors(path):
    """{name: float32 array}, metadata (the few lines the format needs)."""
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
        body = fh.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, e in header.items():
        if e["dtype"] != "F32":
            raise SystemExit(f"{path}: {name} is {e['dtype']}, not F32")
        a, b = e["data_offsets"]
        tensors[name] = np.frombuffer(body[a:b], dtype="<f4").reshape(e["shape"])
    return tensors, meta


def torch_run(data, steps, dtype, device):
    t = Trainer(data, device, dtype=dtype)
    losses = [t.step().item() for _ in range(steps)]
    return losses, {k: p.detach().cpu().double().numpy() for k, p in zip(("W1", "b1", "W2", "b2"), t.params)}


def errors(losses, params, ref_losses, ref_params):
    """The errors of (losses, params) against the reference."""
    loss_rel = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses))
    err = np.concatenate([np.abs(np.asarray(params[k], dtype=np.float64) - ref).ravel() / mlp_inputs.LR
                          for k, ref in ref_params.items()])
    return {"loss_rel": loss_rel, "q99_lr": float(np.quantile(err, 0.99)), "max_lr": float(err.max()),
            "outlier_fraction": float((err > AGREE_LR).mean()), "outliers": int((err > AGREE_LR).sum()),
            "elements": err.size}


def judge(e, peer, factor, steps):
    """Sets e["ok"] and e["limits"]: each error within factor x the peer's, or its floor."""
    e["limits"] = {k: max(factor * peer[k], floor) for k, floor in FLOORS.items()}
    e["limits"]["max_lr"] = 2.0 * steps
    e["ok"] = all(e[k] <= limit for k, limit in e["limits"].items())
    return e


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dims", default=mlp_inputs.DEFAULT_DIMS)
    p.add_argument("--check-dir", required=True)
    p.add_argument("--json", help="write the errors here")
    args = p.parse_args()
    device = torch.device(os.environ.get("PEERS_TORCH_DEVICE", "cpu"))
    torch.set_num_threads(os.cpu_count() or 1)
    torch.backends.cuda.matmul.allow_tf32 = False
    results, failed = [], False
    for d in mlp_inputs.parse_dims(args.dims):
        name = mlp_inputs.dims_text(d)
        files = sorted(glob.glob(os.path.join(args.check_dir, f"*.mlp.{name}.safetensors")))
        if not files:
            raise SystemExit(f"check_mlp: no {args.check_dir}/*.mlp.{name}.safetensors (bench_mlp --check-dir)")
        data = mlp_inputs.generate(d)
        for path in files:
            params, meta = read_safetensors(path)
            losses = [float(v) for v in meta["losses"].split(",")]
            steps = len(losses)
            ref_losses, ref_params = torch_run(data, steps, torch.float64, device)
            f32_losses, f32_params = torch_run(data, steps, torch.float32, device)
            peer = errors(f32_losses, f32_params, ref_losses, ref_params)
            rows = {"clmad vs float64": judge(errors(losses, params, ref_losses, ref_params), peer, FACTOR, steps),
                    "clmad vs torch f32": judge(errors(losses, params, f32_losses, f32_params), peer, FACTOR + 1,
                                                steps),
                    "torch f32 vs float64": peer}
            device_name = os.path.basename(path).split(".mlp.")[0]
            print(f"check {name} ({device_name}), {steps} Adam steps, losses clmad {losses[0]:.6f} .. "
                  f"{losses[-1]:.6f}, float64 {ref_losses[0]:.6f} .. {ref_losses[-1]:.6f}:")
            for label, r in rows.items():
                verdict = "" if "ok" not in r else "  ok" if r["ok"] else "  FAIL (limits " + ", ".join(
                    f"{k} {v:.1e}" for k, v in r["limits"].items()) + ")"
                print(f"  {label:22s} loss rel {r['loss_rel']:.1e}  params: 99% within {r['q99_lr']:.1e} lr, "
                      f"{r['outliers']} of {r['elements']} beyond {AGREE_LR} lr, max {r['max_lr']:.1e} lr{verdict}")
            failed |= not (rows["clmad vs float64"]["ok"] and rows["clmad vs torch f32"]["ok"])
            results.append({"dims": name, "device": device_name, "steps": steps, "clmad_losses": losses,
                            "float64_losses": ref_losses, "torch_f32_losses": f32_losses, "errors": rows})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"benchmark": "mlp-check", "torch": torch.__version__, "torch_device": str(device),
                       "factor": FACTOR, "floors": FLOORS, "agree_lr": AGREE_LR, "results": results}, fh, indent=1)
            fh.write("\n")
    if failed:
        raise SystemExit("check_mlp: clmad's training differs from PyTorch's beyond the tolerances")


if __name__ == "__main__":
    main()
