#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/half_torch.py in a virtual environment over PYTHON's own packages
# (Debian's python3-torch) with the Python package safetensors added
# (BUILD/torch-venv, made once and reused). Exits 77 (skipped) when PYTHON
# is missing or has no torch; a failed pip install is a failure.
# Usage: tests/half_torch.sh PYTHON SOURCE_DIR BUILD_DIR TOOL
set -eu
python=$1 src=$2 build=$3 tool=$4
[ -x "$python" ] || { echo "skipped: no $python (CLMAD_TORCH_PYTHON)"; exit 77; }
"$python" -c 'import torch' > /dev/null 2>&1 || { echo "skipped: $python has no torch"; exit 77; }
venv=$build/torch-venv
if ! "$venv/bin/python" -c 'import torch, safetensors.torch' > /dev/null 2>&1; then
    "$python" -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install --quiet --no-deps safetensors
fi
work=$build/test-tmp/half-torch
rm -rf "$work"
mkdir -p "$work"
exec "$venv/bin/python" "$src/tests/half_torch.py" "$tool" "$work"
