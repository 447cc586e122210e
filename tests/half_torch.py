# SPDX-License-Identifier: Apache-2.0
"""clmad's 16-bit roundings and widenings against PyTorch's, through
safetensors files both ways (tests/half_torch_tool.c is the C side): PyTorch
writes f32 values (random bit patterns, the specials, ties and their
neighbours in both formats) with its own .half() and .bfloat16() of them,
and every 16-bit pattern with its widening; the tool checks clmad_cast
against them and writes its roundings back, which PyTorch compares here.
Usage: half_torch.py TOOL FOLDER"""
import subprocess
import sys

import torch
from safetensors.torch import load_file, save_file

tool, folder = sys.argv[1], sys.argv[2]
gen = torch.Generator().manual_seed(35)
bits = torch.randint(-2**31, 2**31, (1 << 18,), generator=gen, dtype=torch.int64).to(torch.int32)
ties = bits.clone()
ties[0::4] = (ties[0::4] & ~0x1fff) | 0x1000  # f16 ties (13 bits dropped)
ties[1::4] = (ties[1::4] & ~0xffff) | 0x8000  # bf16 ties (16 bits dropped)
ties[2::4] = (ties[2::4] & ~0x1fff) | 0x1001  # just above an f16 tie
specials = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 65504.0, 65519.99, 65520.0,
                         2.0**-24, 2.0**-25, 1.5 * 2.0**-25, 2.0**-14, 2.0**-149, 3.4028234663852886e38,
                         1 + 2.0**-11, 1 + 2.0**-8], dtype=torch.float32)
x = torch.cat([specials, bits.view(torch.float32), ties.view(torch.float32)])
pats = torch.arange(-2**15, 2**15, dtype=torch.int32).to(torch.int16)
theirs = {
    "x": x, "x_f16": x.half(), "x_bf16": x.bfloat16(),
    "pat_f16": pats.view(torch.float16).clone(), "pat_bf16": pats.view(torch.bfloat16).clone(),
    "pat_f16_wide": pats.view(torch.float16).float(), "pat_bf16_wide": pats.view(torch.bfloat16).float(),
}
save_file(theirs, f"{folder}/from_torch.safetensors")
mine_path = f"{folder}/from_clmad.safetensors"
if subprocess.run([tool, f"{folder}/from_torch.safetensors", mine_path]).returncode != 0:
    sys.exit(1)
mine = load_file(mine_path)
failures = []
for name in ("x_f16", "x_bf16"):
    a, b = mine[name], theirs[name]
    same = (a.view(torch.int16) == b.view(torch.int16)) | (a.float().isnan() & b.float().isnan())
    if a.dtype != b.dtype or a.shape != b.shape or not bool(same.all()):
        failures.append(f"{name}: clmad's file differs from PyTorch's rounding")
for f in failures:
    print("FAIL:", f)
print(f"half_torch: {len(x)} values, {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
