#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Safetensors files between clmad and the Python package safetensors (PyPI),
# both ways, bit for bit (tests/safetensors_interop.py). The packages go
# into a virtual environment of its own under the build folder
# (BUILD/safetensors-venv), made once and reused.
# Exits 77 (skipped) only when python3 or its venv module is missing; a
# failed pip install is a failure.
# Usage: tests/safetensors_interop.sh SOURCE_DIR BUILD_DIR TOOL
set -eu
src=$1 build=$2 tool=$3
command -v python3 > /dev/null 2>&1 || { echo "skipped: no python3"; exit 77; }
python3 -c 'import venv, ensurepip' > /dev/null 2>&1 || { echo "skipped: python3 has no venv module"; exit 77; }
venv=$build/safetensors-venv
if ! "$venv/bin/python" -c 'import safetensors, numpy' > /dev/null 2>&1; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet safetensors numpy
fi
work=$build/test-tmp/safetensors-interop
rm -rf "$work"
mkdir -p "$work"
exec "$venv/bin/python" "$src/tests/safetensors_interop.py" "$tool" "$work"
