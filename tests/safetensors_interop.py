# SPDX-License-Identifier: Apache-2.0
"""Files clmad writes load with the Python package safetensors with the
same bits, and files it writes load in clmad (tests/safetensors_tool.c
defines the reference tensors by their bit patterns; this script makes the
same ones). Usage: safetensors_interop.py TOOL FOLDER"""
import subprocess
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

tool, folder = sys.argv[1], sys.argv[2]

REFS = [("a", np.float32, (2, 3, 4), 1), ("b", np.float64, (5,), 7), ("scalar", np.float32, (), 3),
        ("empty", np.float32, (0, 3), 0), ("caf\u00e9 \"quoted\"", np.float32, (2,), 11),
        ("labels", np.int32, (6,), 5), ("ids", np.int64, (2, 2), 9), ("mask", np.uint8, (7,), 13)]


def reference(dtype, shape, seed):
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.uint64)
    size = np.dtype(dtype).itemsize
    if size == 4:
        bits = ((i * np.uint64(2654435761) + np.uint64(seed)) % np.uint64(2**32)).astype(np.uint32)
    elif size == 1:
        bits = ((i * np.uint64(2654435761) + np.uint64(seed)) % np.uint64(2**8)).astype(np.uint8)
    else:
        with np.errstate(over="ignore"):
            bits = i * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed)
    return bits.view(dtype).reshape(shape)


def same_bits(x, y):
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


failures = []

# clmad -> Python
written = f"{folder}/from_clmad.safetensors"
if subprocess.run([tool, "write", written]).returncode == 77:
    sys.exit(77)  # the device has no fp64 (the tool said so)
subprocess.run([tool, "write", written], check=True)
loaded = load_file(written)
for name, dtype, shape, seed in REFS:
    want = reference(dtype, shape, seed)
    if name not in loaded or not same_bits(loaded[name], want):
        failures.append(f"clmad -> Python: {name!r}: {loaded.get(name)!r} != {want!r}")
if sorted(loaded) != sorted(r[0] for r in REFS):
    failures.append(f"clmad -> Python: names {sorted(loaded)}")
with safe_open(written, framework="numpy") as f:
    if f.metadata() != {"format": "np", "written_by": "clmad"}:
        failures.append(f"clmad -> Python: metadata {f.metadata()}")

# Python -> clmad
tensors = {name: reference(dtype, shape, seed) for name, dtype, shape, seed in REFS}
tensors["halves"] = np.arange(4, dtype=np.float16)
theirs = f"{folder}/from_python.safetensors"
save_file(tensors, theirs, metadata={"written_by": "safetensors"})
check = subprocess.run([tool, "check", theirs])
if check.returncode != 0:
    failures.append(f"Python -> clmad: safetensors_tool check exited {check.returncode}")

for f in failures:
    print("FAIL:", f)
print(f"safetensors interop: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
