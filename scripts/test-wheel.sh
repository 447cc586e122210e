#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make test-wheel`: proves that the wheel of `make wheel` runs on a machine
# with Python and pip only. A fresh venv; `pip install WHEEL[pocl]` with
# binaries only (no compiler can run); then, with LD_LIBRARY_PATH unset,
# OCL_ICD_VENDORS pointing at an empty folder and no OpenCL variable of
# clmad's: `import clmad` finds the pip POCL (pocl-binary-distribution) and
# loads the OpenCL libraries from the venv only, ldd of every library the
# wheel bundles names only glibc-level system libraries, and the Python
# examples train. Last, with the system's ICD folder (when it has ICDs),
# the wheel's clmad sees those platforms and leaves the pip POCL out.
# Prints the install time and the `import clmad` time.
# Usage: test-wheel.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
python=${CLMAD_PYTHON:-python3}
wheels=("$build"/wheel/clmad-*manylinux*.whl)
if [ ${#wheels[@]} -ne 1 ] || [ ! -f "${wheels[0]}" ]; then
  echo "test-wheel: expected one manylinux wheel in $build/wheel (run make wheel)" >&2
  exit 1
fi
wheel=${wheels[0]}
# The install line of the READMEs names this very wheel.
for readme in README.md python/README.md; do
  if ! grep -qF "pip install \"build/wheel/$(basename "$wheel")[pocl]\"" "$src/$readme"; then
    echo "test-wheel: $readme does not start its Python install with: pip install \"build/wheel/$(basename "$wheel")[pocl]\"" >&2
    exit 1
  fi
done
work=$build/wheel-test
rm -rf "$work"
mkdir -p "$work/empty-vendors" "$work/run"
venv=$work/venv
start=$(date +%s.%N)

echo "== fresh venv, pip install $(basename "$wheel")[pocl] (binaries only)"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary :all: "$wheel[pocl]"
installed=$(date +%s.%N)

site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# The environment of a machine without OpenCL: no ICD but the pip POCL's,
# no library path, caches inside the test folder.
bare=(env -u LD_LIBRARY_PATH -u OPENCL_VENDOR_PATH -u CLMAD_LIBRARY -u CLMAD_DEVICE
      OCL_ICD_VENDORS="$work/empty-vendors" CLMAD_CACHE_DIR="$work/clmad-cache"
      POCL_CACHE_DIR="$work/pocl-cache")

echo "== ldd of every library the wheel bundles"
# glibc and the GCC runtime: what the manylinux policies allow a wheel to need.
allowed=" linux-vdso.so.1 ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libgcc_s.so.1 libstdc++.so.6 "
bad=0
bundled=("$site"/clmad/*.so* "$site"/clmad.libs/*.so*)
for lib in "${bundled[@]}"; do
  while read -r line; do
    name=${line%% *}
    target=$(sed -n 's/.*=> \([^ ]*\) .*/\1/p' <<<"$line")
    if [ "$target" = "not" ]; then
      echo "  $(basename "$lib"): $name not found"; bad=1
    elif [ -n "$target" ] && [ "${target#"$site"/}" != "$target" ]; then
      :  # another library of the wheel
    elif [ "${allowed/ $(basename "$name") /}" = "$allowed" ]; then
      echo "  $(basename "$lib"): $line is not a glibc-level system library"; bad=1
    fi
  done < <("${bare[@]}" ldd "$lib" | sed 's/^[[:space:]]*//')
done
[ $bad -eq 0 ] || { echo "test-wheel: FAIL (ldd)"; exit 1; }
licences=("$site"/clmad/licenses/*.copyright)
if [ ! -f "$site/clmad/licenses/clmad.LICENSE" ] || [ ${#licences[@]} -lt $((${#bundled[@]} - 1)) ]; then
  echo "test-wheel: FAIL (clmad/licenses/ lacks the licence of a bundled library)"; exit 1
fi
echo "  ${#bundled[@]} libraries: $(cd "$site" && echo clmad/*.so* clmad.libs/*.so*)"

echo "== import clmad, the devices, where the OpenCL libraries came from"
cd "$work/run"  # not the source tree: its python/clmad must not be imported
"${bare[@]}" "$venv/bin/python" - "$site" <<'PY'
import sys, time
t = time.perf_counter()
import clmad
took = time.perf_counter() - t
site = sys.argv[1]
devices = clmad.devices()
for d in devices:
    print(f"  {d.spec}  {d.name}  fp64={d.fp64}")
with open("/proc/self/maps") as f:
    mapped = {line.split()[-1] for line in f if ".so" in line}
opencl = sorted(p for p in mapped if any(k in p for k in ("libOpenCL", "libclblast", "libpocl", "libclmad")))
print("  OpenCL libraries mapped:", *opencl, sep="\n    ")
assert clmad._icd.pip_pocl, "the pip POCL was not chosen"
assert devices, "no device"
outside = [p for p in opencl if not p.startswith(site + "/")]
assert not outside, f"OpenCL libraries from outside the venv: {outside}"
assert any("libpocl" in p for p in opencl), "the pip POCL's library is not loaded"
print(f"  import clmad: {took:.3f} s")
PY

# The pip POCL (pocl-binary-distribution 3.0, 2022, LLVM 14) cannot build a
# kernel on a CPU that its LLVM does not know (AMD Zen 4 and later:
# "unknown target CPU 'generic'", pocl/pocl#1049). There the examples run on
# Intel's OpenCL CPU runtime from PyPI instead, which still proves that the
# wheel needs nothing from the system, and the test ends with status 77.
echo "== the pip POCL builds a kernel"
device_note=""
if probe=$("${bare[@]}" "$venv/bin/python" -c '
import numpy as np, clmad
ctx = clmad.Context()
y = ctx.kernel("T f(T x) { return x * x + 1; }", "f")(ctx.tensor(np.arange(4.0)))
assert (y.numpy() == np.arange(4.0) ** 2 + 1).all(), y.numpy()
print("  ok on", ctx.device.name)' 2>&1); then
  echo "$probe"
  device=("${bare[@]}")
elif grep -q "unknown target CPU" <<<"$probe"; then
  echo "$probe" | grep -m1 "unknown target CPU" | sed 's/^/  /'
  device_note="the pip POCL (LLVM 14) cannot build kernels on this CPU ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | xargs)): the examples ran on Intel's OpenCL runtime from PyPI"
  echo "  $device_note"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary :all: intel-opencl-rt intel-cmplr-lib-rt
  mkdir -p "$work/intel-vendors"
  echo "$venv/lib/libintelocl.so" >"$work/intel-vendors/intel.icd"
  device=("${bare[@]}" OCL_ICD_VENDORS="$work/intel-vendors")
else
  echo "$probe"
  echo "test-wheel: FAIL (the pip POCL cannot build a kernel)"
  exit 1
fi

echo "== the Python examples (small sizes, as python/tests/test_examples.py)"
for example in "mlp.py" "newton.py 200" "hmlstm.py 60 6 16 8"; do
  set -- $example
  t0=$(date +%s.%N)
  "${device[@]}" "$venv/bin/python" "$src/python/examples/$1" "${@:2}" | tail -n 1
  echo "  $example: ok, $(echo "$(date +%s.%N) - $t0" | bc) s"
done
done_at=$(date +%s.%N)

if ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then
  echo "== with the system's ICDs (/etc/OpenCL/vendors): they are seen, the pip POCL is not added"
  env -u LD_LIBRARY_PATH -u OCL_ICD_VENDORS -u OPENCL_VENDOR_PATH -u CLMAD_LIBRARY -u CLMAD_DEVICE \
    CLMAD_CACHE_DIR="$work/clmad-cache" "$venv/bin/python" - "$site" <<'PY'
import os, sys
import clmad
site = sys.argv[1]
assert clmad._icd.pip_pocl is None and "OCL_ICD_VENDORS" not in os.environ, "a system ICD was hidden"
devices = clmad.devices()
with open("/proc/self/maps") as f:
    drivers = sorted({line.split()[-1] for line in f if ".so" in line and "/etc/" not in line
                      and not line.split()[-1].startswith(site + "/")
                      and any(k in line for k in ("pocl", "Rusticl", "MesaOpenCL", "OpenCL"))})
print(f"  {len(devices)} devices:", *[f"{d.spec} {d.name}" for d in devices], sep="\n    ")
print("  system OpenCL drivers loaded:", *drivers, sep="\n    ")
assert devices and drivers, "the system's OpenCL platforms are not seen"
PY
else
  echo "== no ICD in /etc/OpenCL/vendors: the check with the system's ICDs is not run"
fi

times="install $(echo "$installed - $start" | bc) s, install to trained examples $(echo "$done_at - $start" | bc) s"
if [ -n "$device_note" ]; then
  echo "test-wheel: partial ($times): $device_note"
  exit 77
fi
echo "test-wheel: ok ($times)"
