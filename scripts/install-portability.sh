#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make deps-portability: the OpenCL implementations that make
# test-portability and make bench-portability run on, besides POCL:
#   - Mesa's rusticl on llvmpipe and Oclgrind (Debian packages);
#   - Intel's oneAPI OpenCL CPU runtime (PyPI intel-opencl-rt and the
#     compiler runtime it links, intel-cmplr-lib-rt) in a virtual
#     environment under BUILD/portability/intel-venv, and an ICD folder
#     BUILD/portability/intel-icd whose file names its libintelocl.so by
#     full path (the wheel's own .icd file holds a placeholder path).
# Idempotent. Needs root or sudo for the Debian packages (see
# install-deps.sh) and PyPI for the Intel runtime; without PyPI the Intel
# runtime is left out and said so.
set -euo pipefail
build=${1:-build}
CLMAD_DEPS_EXTRA=1 CLMAD_DEPS_PEERS=1 "$(dirname "$0")/install-deps.sh"

dir="$build/portability"
mkdir -p "$dir"
venv="$(cd "$dir" && pwd)/intel-venv"
if [ ! -e "$venv/lib/libintelocl.so" ]; then
  echo "clmad: installing Intel's OpenCL CPU runtime into $venv (PyPI intel-opencl-rt)" >&2
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install -q intel-opencl-rt intel-cmplr-lib-rt; then
    echo "clmad: Intel's OpenCL CPU runtime could not be installed from PyPI: left out" >&2
    exit 0
  fi
fi
lib=$(ls "$venv"/lib/libintelocl.so 2>/dev/null || true)
if [ -z "$lib" ]; then
  echo "clmad: $venv has no lib/libintelocl.so: Intel's runtime left out" >&2
  exit 0
fi
mkdir -p "$dir/intel-icd"
echo "$lib" >"$dir/intel-icd/intel-cpu.icd"
