#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package's tests (ctest "python"): a virtual environment under
# the build folder (made once, then reused), `pip install` of python/ with
# this build's libclmad.so (no second build of the C library), then pytest
# on python/tests (the examples included).
# Usage: test-python.sh SOURCE_DIR BUILD_DIR LIBCLMAD_SO
# Exit 77 (skipped) only when python3 or its venv module is missing; any
# failure of venv, pip or the tests fails.
set -euo pipefail
src=$1 build=$2 library=$3
python=${CLMAD_PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
  echo "skipped: no $python (make deps installs python3-venv and python3-pip)"
  exit 77
fi
if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
  echo "skipped: $python has no venv module (make deps installs python3-venv)"
  exit 77
fi
venv=$build/python-venv
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
# The build and test requirements, once (the venv keeps them); safetensors
# for the tests of files written and read by the package of that name;
# ml_dtypes for bfloat16 as NumPy arrays (python/tests/test_half.py);
# scikit-learn (its 8x8 digits) and matplotlib for python/examples/digits.py
# (about 40 s of a fresh venv's install, once).
if ! "$venv/bin/python" -c 'import numpy, pytest, scikit_build_core, safetensors, ml_dtypes, sklearn, matplotlib' \
    2>/dev/null; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check numpy pytest scikit-build-core safetensors \
    ml_dtypes scikit-learn matplotlib
fi
# PyOpenCL for python/tests/test_pyopencl.py (the PyOpenCL interop), once; where
# it cannot be installed (no PyPI) that test skips, saying so, and so says this.
if ! "$venv/bin/python" -c 'import pyopencl' 2>/dev/null; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check pyopencl ||
    echo "warning: pip install pyopencl failed: python/tests/test_pyopencl.py will skip"
fi
# The package, with the library this build made (python/CMakeLists.txt:
# CLMAD_PREBUILT_LIBRARY), reinstalled every run so that it is current.
CMAKE_ARGS="-DCLMAD_PREBUILT_LIBRARY=$library" \
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
  --force-reinstall "$src/python"
# Run from the build folder, so that `import clmad` finds the installed
# package and not python/clmad of the source tree.
cd "$build"
unset CLMAD_LIBRARY
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$src/python/tests"
