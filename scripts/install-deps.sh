#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages clmad needs to build, test and run on a CPU.
# Idempotent: checks with dpkg first and returns at once when all are there.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  libclblast-dev libcriterion-dev
  openmpi-bin libopenmpi-dev
  python3-venv python3-pip   # the Python package's test (scripts/test-python.sh), make bench-peers
)
# Optional extras for the other targets (bench, portability, kernel checks).
if [ "${CLMAD_DEPS_EXTRA:-0}" = 1 ]; then
  packages+=(mesa-opencl-icd oclgrind gnuplot-nox valgrind)
fi
# PyTorch from Debian (1.13, about 1 GB with its libraries), for the test that
# checks clmad_hvp against double backward (hvp_torch; skipped without it).
# Its recommends (Qt, codecs) are not needed.
apt_options=()
if [ "${CLMAD_DEPS_TORCH:-0}" = 1 ]; then
  packages+=(python3-torch)
  apt_options+=(--no-install-recommends)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "clmad: error: packages missing and this user cannot install them. Run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "clmad: installing missing packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq "${apt_options[@]}" "${missing[@]}"
