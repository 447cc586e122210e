#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make check-vector: are the generated kernels of the HM-LSTM cell packed
# SIMD code on POCL? Compiles every variant (primal, partials, vjp, stored)
# into a fresh POCL kernel cache through bench_hmlstm at a small size, then
# disassembles each kernel that POCL built and counts floating-point
# arithmetic on packed ymm/zmm registers against scalar (ss/sd) arithmetic.
# A kernel whose loop was left scalar ("loop not vectorized: instruction
# return type cannot be vectorized", as every kernel calling the builtin
# tanh was on AVX2 hosts before issue 23) has no packed ymm/zmm arithmetic
# at all; a vectorised one has about as many packed as scalar instructions
# (the scalar ones are the loop's remainder, which repeats the body).
# Kernels without arithmetic (copies, selects) pass.
#
# Targets: the host's own, and on an AVX-512 host also POCL's AVX2 kernel
# library (POCL_KERNELLIB_NAME=avx2; that library is what AVX2-only hosts
# get, and it differs: POCL_LLVM_CPU_NAME alone changes the code generator
# but not the library). The device is the one of OCL_ICD_VENDORS when it is
# set (the test suite's), else POCL's ICD; when it writes nothing into
# POCL's kernel cache it is not POCL, and the check is skipped with that
# reason. Needs an AVX2 or AVX-512 host (on others POCL would use xmm).
set -euo pipefail
build=${1:-build}
if ! grep -qw avx2 /proc/cpuinfo; then
  echo "check-vector: skipped: this CPU has no AVX2 (packed code would be 128-bit)"
  exit 0
fi
command -v objdump >/dev/null || { echo "check-vector: objdump (binutils) is missing" >&2; exit 1; }
work="$(cd "$build" && pwd)/check-vector"
rm -rf "$work"
mkdir -p "$work"
icd_dir=${OCL_ICD_VENDORS:-}
if [ -z "$icd_dir" ]; then
  if [ ! -e /etc/OpenCL/vendors/pocl.icd ]; then
    echo "check-vector: skipped: POCL is not installed (/etc/OpenCL/vendors/pocl.icd)"
    exit 0
  fi
  icd_dir="$work/icd"
  mkdir -p "$icd_dir"
  cp /etc/OpenCL/vendors/pocl.icd "$icd_dir/"
fi

targets=(host)
if grep -qw avx512f /proc/cpuinfo && compgen -G '/usr/share/pocl/kernel-*-avx2.bc' >/dev/null; then
  targets+=(avx2)
fi

arith='v(add|sub|mul|div|max|min|fn?m(add|sub)[0-9]+)'
status=0
checked=0
for target in "${targets[@]}"; do
  cache="$work/$target/pocl-cache"
  mkdir -p "$cache" "$work/$target/out"
  lib=()
  [ "$target" = host ] || lib=(POCL_KERNELLIB_NAME="$target")
  env "${lib[@]}" OCL_ICD_VENDORS="$icd_dir" POCL_CACHE_DIR="$cache" CLMAD_DEVICE= CLMAD_CACHE_DIR= \
    "$build/bench_hmlstm" --dims 256 --reps 1 --out "$work/$target/out" >/dev/null 2>"$work/$target/bench.log" ||
    { cat "$work/$target/bench.log" >&2; exit 1; }
  device=$(basename "$(ls "$work/$target/out"/*.hmlstm.json 2>/dev/null | head -1)" .hmlstm.json)
  # POCL keeps one binary per kernel and local size: <hash>/<kernel>/<size>/<kernel>.so
  sos=$(find "$cache" -path '*/clmad__bcast_*/*' -name 'clmad__bcast_*.so' ! -path '*/0-0-0/*' | sort)
  if [ -z "$sos" ]; then
    if [ "$checked" -eq 0 ]; then
      echo "check-vector: skipped: the device ($device) wrote no kernel into POCL's kernel cache: it is not POCL"
      exit 0
    fi
    echo "check-vector: [$target] no clmad__bcast_* kernel found in $cache" >&2
    exit 1
  fi
  while IFS= read -r so; do
    kernel=$(basename "$so" .so)
    asm=$(objdump -d --no-show-raw-insn "$so")
    packed=$(grep -cE "\s${arith}p[sd]\s.*%[yz]mm" <<<"$asm" || true)
    scalar=$(grep -cE "\s${arith}s[sd]\s" <<<"$asm" || true)
    verdict=ok
    if [ "$scalar" -eq 0 ] && [ "$packed" -eq 0 ]; then
      verdict="ok (no arithmetic)"
    elif [ "$packed" -eq 0 ] && [ "$scalar" -le 8 ]; then
      # A builtin over 0-d tensors (bench_hmlstm's plus: 0.001 * reg, and
      # the add of two losses) has an operation or two per slot and one
      # element: nothing to pack. A cell kernel left scalar has hundreds.
      verdict="ok (a few scalar operations: a one-element builtin)"
    elif [ "$kernel" = clmad__bcast_loss ] && [ "$packed" -gt 0 ]; then
      # The fused loss kernel evaluates whole runs of its range in a
      # vectorised loop and the elements outside them (a range's ends) one
      # by one: a scalar copy of the element besides the packed one, so
      # only a kernel with no packed arithmetic at all fails.
      verdict="ok (runs packed, range ends scalar)"
    elif [ $((2 * packed)) -lt "$scalar" ]; then
      verdict=SCALAR
      status=1
    fi
    checked=$((checked + 1))
    printf 'check-vector: %-28s %-22s packed ymm/zmm %4d  scalar %4d  %s\n' "[$device]" "$kernel" "$packed" "$scalar" "$verdict"
  done <<<"$sos"
done
[ $status -eq 0 ] && echo "check-vector: all $checked kernels are vectorised (targets: ${targets[*]})"
exit $status
