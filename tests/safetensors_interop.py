# SPDX-License-Identifier: Apache-2.0
"""Files clmad writes load with the Python package safetensors with the
same bits, and files it writes load in clmad (tests/safetensors_tool.c
defines the reference tensors by their bit patterns; this script makes the
same ones). NumPy has no bfloat16, so the tensors go through safetensors'
own serializer and parser (serialize_file, deserialize: what its NumPy and
PyTorch front ends call), bf16 as its uint16 bit patterns.
Usage: safetensors_interop.py TOOL FOLDER"""
import subprocess
import sys

import numpy as np
from safetensors import TensorSpec, deserialize, safe_open, serialize_file

tool, folder = sys.argv[1], sys.argv[2]

REFS = [("a", np.float32, (2, 3, 4), 1), ("b", np.float64, (5,), 7), ("scalar", np.float32, (), 3),
        ("empty", np.float32, (0, 3), 0), ("caf\u00e9 \"quoted\"", np.float32, (2,), 11),
        ("labels", np.int32, (6,), 5), ("ids", np.int64, (2, 2), 9), ("mask", np.uint8, (7,), 13),
        ("halves", np.float16, (9,), 17), ("brains", "BF16", (3, 2), 19)]
# The files' dtype names, and TensorSpec's (the names of the frameworks)
FORMAT = {np.float64: "F64", np.float32: "F32", np.float16: "F16", np.int64: "I64", np.int32: "I32",
          np.uint8: "U8", np.int16: "I16", "BF16": "BF16"}
SPEC = {"F64": "float64", "F32": "float32", "F16": "float16", "I64": "int64", "I32": "int32", "U8": "uint8",
        "I16": "int16", "BF16": "bfloat16"}


def reference(dtype, shape, seed):
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.uint64)
    if dtype == "BF16":
        dtype = np.uint16  # its bits
    size = np.dtype(dtype).itemsize
    if size == 4:
        bits = ((i * np.uint64(2654435761) + np.uint64(seed)) % np.uint64(2**32)).astype(np.uint32)
    elif size == 2:
        bits = ((i * np.uint64(2654435761) + np.uint64(seed)) % np.uint64(2**16)).astype(np.uint16)
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
with open(written, "rb") as f:
    loaded = dict(deserialize(f.read()))
for name, dtype, shape, seed in REFS:
    want = reference(dtype, shape, seed)
    got = loaded.get(name)
    if (got is None or got["dtype"] != FORMAT[dtype] or tuple(got["shape"]) != shape
            or bytes(got["data"]) != want.tobytes()):
        failures.append(f"clmad -> Python: {name!r}: {got!r} != {want!r}")
if sorted(loaded) != sorted(r[0] for r in REFS):
    failures.append(f"clmad -> Python: names {sorted(loaded)}")
with safe_open(written, framework="numpy") as f:
    if f.metadata() != {"format": "np", "written_by": "clmad"}:
        failures.append(f"clmad -> Python: metadata {f.metadata()}")
    if not same_bits(f.get_tensor("halves"), reference(np.float16, (9,), 17)):
        failures.append("clmad -> Python: safe_open's float16 \"halves\" differs")

# Python -> clmad
tensors = {name: (FORMAT[dtype], reference(dtype, shape, seed)) for name, dtype, shape, seed in REFS}
tensors["shorts"] = ("I16", np.arange(4, dtype=np.int16))
specs = {name: TensorSpec(dtype=SPEC[fmt], shape=list(a.shape), data_ptr=a.ctypes.data, data_len=a.nbytes)
         for name, (fmt, a) in tensors.items()}
theirs = f"{folder}/from_python.safetensors"
serialize_file(specs, theirs, metadata={"written_by": "safetensors"})
check = subprocess.run([tool, "check", theirs])
if check.returncode != 0:
    failures.append(f"Python -> clmad: safetensors_tool check exited {check.returncode}")

for f in failures:
    print("FAIL:", f)
print(f"safetensors interop: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
