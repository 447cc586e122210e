# SPDX-License-Identifier: Apache-2.0
"""Does bench_mlp train as PyTorch does? Not a timing.

bench_mlp --check-dir DIR saves, per size, the parameters after its first K
steps and the losses of those steps (DIR/<device>.mlp.<dims>.safetensors).
This script takes the same K steps from the same inputs (mlp_inputs.py) in
PyTorch twice, in float64 (the reference) and in float32 (the peer), and
compares clmad with both.

Tolerances, float32 against float64 after K Adam steps (lr 1e-3), on
every loss and every element of W1, b1, W2, b2:
  - every loss within 1e-6 relative: float32 rounds to 6e-8 relative, and
    the loss sums a few thousand rounded products (the GEMMs' inner sizes,
    the log-softmax, the mean) whose errors mostly cancel (1e-7 measured,
    clmad and PyTorch float32 alike, on POCL at 256x784x1024x10);
  - parameters in units of lr, as Adam moves each element by about lr a
    step, scaled by m / sqrt(v) rather than by the gradient's size:
    99% of the elements within 1e-4 lr (1e-5 measured: a wrong constant of
    the step or of the gradient shows here), and at most 1 element in
    10^4 beyond 0.01 lr: an element whose gradient is within float32
    rounding of zero (or of eps) takes a step of uncertain size and sign in
    any float32 implementation (3 of 814,090 elements measured beyond
    0.01 lr for clmad, 0 for PyTorch's float32; the largest 0.011 lr and
    0.009 lr), and none beyond 2 lr a step.
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

LOSS_RTOL = 1e-6
BULK_LR, BULK_QUANTILE = 1e-4, 0.99
AGREE_LR, OUTLIER_FRACTION = 0.01, 1e-4


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


def compare(losses, params, ref_losses, ref_params, steps):
    """The errors of (losses, params) against the reference, and whether they pass."""
    loss_rel = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses))
    err = np.concatenate([np.abs(np.asarray(params[k], dtype=np.float64) - ref).ravel() / mlp_inputs.LR
                          for k, ref in ref_params.items()])
    worst, bulk, outliers = float(err.max()), float(np.quantile(err, BULK_QUANTILE)), int((err > AGREE_LR).sum())
    ok = (loss_rel <= LOSS_RTOL and bulk <= BULK_LR and outliers <= OUTLIER_FRACTION * err.size
          and worst <= 2 * steps)
    return {"loss_rel": loss_rel, "q99_lr": bulk, "max_lr": worst, "outliers": outliers, "elements": err.size,
            "ok": ok}


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
            rows = {"clmad vs float64": compare(losses, params, ref_losses, ref_params, steps),
                    "clmad vs torch f32": compare(losses, params, f32_losses, f32_params, steps),
                    "torch f32 vs float64": compare(f32_losses, f32_params, ref_losses, ref_params, steps)}
            device_name = os.path.basename(path).split(".mlp.")[0]
            print(f"check {name} ({device_name}), {steps} Adam steps, losses clmad {losses[0]:.6f} .. "
                  f"{losses[-1]:.6f}, float64 {ref_losses[0]:.6f} .. {ref_losses[-1]:.6f}:")
            for label, r in rows.items():
                print(f"  {label:22s} loss rel {r['loss_rel']:.1e}  params: 99% within {r['q99_lr']:.1e} lr, "
                      f"{r['outliers']} of {r['elements']} beyond {AGREE_LR} lr, max {r['max_lr']:.1e} lr  "
                      f"{'ok' if r['ok'] else 'FAIL'}")
            failed |= not (rows["clmad vs float64"]["ok"] and rows["clmad vs torch f32"]["ok"])
            results.append({"dims": name, "device": device_name, "steps": steps, "clmad_losses": losses,
                            "float64_losses": ref_losses, "torch_f32_losses": f32_losses, "errors": rows})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"benchmark": "mlp-check", "torch": torch.__version__, "torch_device": str(device),
                       "loss_rtol": LOSS_RTOL, "bulk_lr": BULK_LR, "bulk_quantile": BULK_QUANTILE, "agree_lr": AGREE_LR, "outlier_fraction": OUTLIER_FRACTION,
                       "results": results}, fh, indent=1)
            fh.write("\n")
    if failed:
        raise SystemExit("check_mlp: clmad's training differs from PyTorch's beyond the tolerances")


if __name__ == "__main__":
    main()
