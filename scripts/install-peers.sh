#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python peers of make bench-peers and make bench-portability (NumPy,
# JAX for the CPU, PyTorch) in their own virtual environment,
# BUILD/peers-venv. Idempotent. PyPI serves no CPU-only torch wheel for
# Linux (the +cpu builds are only on PyTorch's own index, which cannot be
# reached here): the PyPI wheel is the CUDA build, with its nvidia-*
# packages (several GB), and it runs on the CPU all the same.
set -euo pipefail
build=${1:-build}
venv="$build/peers-venv"
if ! "$venv/bin/python" -c "import numpy, jax, torch" 2>/dev/null; then
  echo "install-peers: installing numpy, jax[cpu] and torch into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q numpy "jax[cpu]" torch
fi
