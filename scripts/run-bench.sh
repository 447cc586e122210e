#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: every benchmark on every OpenCL implementation available here
# (POCL, and Mesa rusticl on llvmpipe when installed), then one Markdown table
# and gnuplot charts under bench/results/. Progress goes to stderr.
#   BENCH_REPS      repetitions per measurement (default 5)
#   BENCH_DIMS      HM-LSTM sizes (default 512,1024,2048)
#   BENCH_ELEMENTS  arity-scaling elements (default 65536: on a CPU the
#                   function's 16 sin per element dominate, and 1..16 inputs
#                   under four chunk caps must fit in the 15-minute budget)
# Results of devices not present here (e.g. a GPU measured through another
# machine) stay in bench/results and are part of the table and charts.
set -euo pipefail
build=${1:-build}
out=bench/results
reps=${BENCH_REPS:-5}
dims=${BENCH_DIMS:-512,1024,2048}
elements=${BENCH_ELEMENTS:-65536}
mkdir -p "$out"

# One ICD folder per implementation, so each run sees exactly one platform.
impls=()
icd_root="$build/bench-icd"
mkdir -p "$icd_root"
for name in pocl rusticl; do
  [ -f "/etc/OpenCL/vendors/$name.icd" ] || continue
  mkdir -p "$icd_root/$name"
  cp "/etc/OpenCL/vendors/$name.icd" "$icd_root/$name/"
  impls+=("$name")
done
[ ${#impls[@]} -gt 0 ] || { echo "run-bench: no OpenCL implementation found" >&2; exit 1; }

start=$(date +%s)
for impl in "${impls[@]}"; do
  echo "== $impl" >&2
  export OCL_ICD_VENDORS="$PWD/$icd_root/$impl" POCL_CACHE_DIR="$PWD/$build/pocl-cache" CLMAD_DEVICE=
  [ "$impl" = rusticl ] && export RUSTICL_ENABLE=llvmpipe
  "$build/clmad-info" | tail -1 >&2
  t0=$(date +%s)
  "$build/bench_hmlstm" --dims "$dims" --reps "$reps" --out "$out"
  t1=$(date +%s)
  # rusticl compiles each dual kernel from scratch (about a minute for the
  # larger ones on llvmpipe): there, only the one-chunk curve.
  arity_caps=
  [ "$impl" = rusticl ] && arity_caps=--one-chunk
  "$build/bench_arity" --elements "$elements" --reps "$reps" --out "$out" $arity_caps
  t2=$(date +%s)
  "$build/bench_cell" 2048 "$reps" "$out"
  echo "run-bench: $impl: hmlstm $((t1 - t0)) s, arity $((t2 - t1)) s, cell $(( $(date +%s) - t2 )) s" >&2
done
echo "run-bench: measurements took $(( $(date +%s) - start )) s" >&2
scripts/bench-report.sh "$out"
