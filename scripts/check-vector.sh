#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make check-vector: are the generated kernels of the HM-LSTM cell packed
# SIMD code on POCL? Compiles every variant (primal, partials, vjp, stored)
# into a fresh POCL kernel cache through bench_hmlstm at a small size, then
# disassembles each kernel that POCL built and counts floating-point
# arithmetic on packed ymm/zmm registers against scalar (ss/sd) arithmetic.
# A kernel whose loop was left scalar (as in clmad <= 0.1: "loop not
# vectorized: instruction return type cannot be vectorized") has no packed
# ymm/zmm arithmetic at all; a vectorised one has about as many packed as
# scalar instructions (the scalar ones are the loop's remainder, which
# repeats the body). Kernels without arithmetic (copies, selects) pass.
# Needs an AVX2 or AVX-512 host (on others POCL would use xmm: skipped).
set -euo pipefail
build=${1:-build}
if ! grep -qw avx2 /proc/cpuinfo; then
  echo "check-vector: skipped: this CPU has no AVX2 (packed code would be 128-bit)"
  exit 0
fi
command -v objdump >/dev/null || { echo "check-vector: objdump (binutils) is missing" >&2; exit 1; }
work="$(cd "$build" && pwd)/check-vector"
rm -rf "$work"
mkdir -p "$work/icd" "$work/pocl-cache" "$work/out"
cp /etc/OpenCL/vendors/pocl.icd "$work/icd/"
OCL_ICD_VENDORS="$work/icd" POCL_CACHE_DIR="$work/pocl-cache" CLMAD_DEVICE= \
  CLMAD_CACHE_DIR= "$build/bench_hmlstm" --dims 256 --reps 1 --out "$work/out" >/dev/null 2>"$work/bench.log" ||
  { cat "$work/bench.log" >&2; exit 1; }

arith='v(add|sub|mul|div|max|min|fn?m(add|sub)[0-9]+)'
status=0
checked=0
# POCL keeps one binary per kernel and local size: <hash>/<kernel>/<size>/<kernel>.so
while IFS= read -r so; do
  kernel=$(basename "$so" .so)
  asm=$(objdump -d --no-show-raw-insn "$so")
  packed=$(grep -cE "\s${arith}p[sd]\s.*%[yz]mm" <<<"$asm" || true)
  scalar=$(grep -cE "\s${arith}s[sd]\s" <<<"$asm" || true)
  verdict=ok
  if [ "$scalar" -eq 0 ] && [ "$packed" -eq 0 ]; then
    verdict="ok (no arithmetic)"
  elif [ $((2 * packed)) -lt "$scalar" ]; then
    verdict=SCALAR
    status=1
  fi
  checked=$((checked + 1))
  printf 'check-vector: %-22s packed ymm/zmm %4d  scalar %4d  %s\n' "$kernel" "$packed" "$scalar" "$verdict"
done < <(find "$work/pocl-cache" -path '*/clmad_bcast_*/*' -name 'clmad_bcast_*.so' ! -path '*/0-0-0/*' | sort)
if [ "$checked" -eq 0 ]; then
  echo "check-vector: no clmad_bcast_* kernel found in $work/pocl-cache" >&2
  exit 1
fi
[ $status -eq 0 ] && echo "check-vector: all $checked kernels are vectorised"
exit $status
