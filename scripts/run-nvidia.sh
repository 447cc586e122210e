#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test programs and the benchmarks on an NVIDIA GPU whose driver ships
# libnvidia-opencl.so.1 but no ICD file (as on the machines behind the
# project's `device` tool), with binaries built elsewhere:
#   scripts/run-nvidia.sh BIN_DIR OUT_DIR [test|bench|all]
# BIN_DIR holds clmad-info, bench_*, example_hmlstm and tests/test_*
# (copied from a build folder), libclmad-kernel-profile.so for a profile
# of the MLP step, and libclmad.so for the Python layer against C; LD_LIBRARY_PATH must reach libclblast and
# libcriterion when the machine lacks them (it is passed to clmad's programs
# only, not to the peers' Python). Results go to OUT_DIR/results; with
# bench, the peers (torch.compile, JAX jit) run on the same GPU on the same
# inputs where python3 has them, beside bench_hmlstm and bench_mlp (whose
# first steps bench/peers/check_mlp.py compares with PyTorch on the GPU:
# <device>.mlp.check.json; the MLP table: <device>.mlp.peers.md). The H100
# figures in bench/results were measured this way (bench/results/*.peers.md).
set -u
bin=$1
out=$2
what=${3:-all}
icd=$(mktemp -d)
echo libnvidia-opencl.so.1 > "$icd/nvidia.icd"
mkdir -p "$out/results" "$icd/cache" "$icd/tmp"
export OCL_ICD_VENDORS=$icd CLMAD_DEVICE= CLMAD_CACHE_DIR=$icd/cache CLMAD_TEST_TMP=$icd/tmp
"$bin/clmad-info"
status=0
if [ "$what" != bench ]; then
  for t in "$bin"/tests/test_*; do
    start=$(date +%s)
    "$t" --jobs 8 --short-filename > "$icd/test.log" 2>&1 || { status=1; tail -30 "$icd/test.log"; }
    printf '%-24s %4d s  %s\n' "$(basename "$t")" $(( $(date +%s) - start )) "$(tail -1 "$icd/test.log")"
  done
  # Two random-program tests again with every pooled buffer poisoned
  # (docs/testing.md): a kernel reading unwritten memory turns a result NaN.
  for t in test_fusion_random test_tape_random; do
    [ -x "$bin/tests/$t" ] || continue
    CLMAD_POISON_BUFFERS=1 "$bin/tests/$t" --jobs 8 --short-filename > "$icd/test.log" 2>&1 ||
      { status=1; tail -30 "$icd/test.log"; }
    printf '%-24s %s (poisoned)\n' "$t" "$(tail -1 "$icd/test.log")"
  done
  "$bin/example_hmlstm" > "$out/example_hmlstm.log" 2>&1 || status=1
  tail -12 "$out/example_hmlstm.log"
fi
if [ "$what" != test ]; then
  dims=1024,2048,4096
  "$bin/bench_hmlstm" --dims $dims --reps 15 --out "$out/results" || status=1
  peers=$(cd "$(dirname "$0")/../bench/peers" && pwd)
  base=$out/results/$(cd "$out/results" && ls -t *.hmlstm.json | head -1 | sed 's/\.hmlstm\.json$//')
  if env -u LD_LIBRARY_PATH python3 -c 'import torch' 2>/dev/null; then
    (cd "$peers" && env -u LD_LIBRARY_PATH PEERS_TORCH_DEVICE=cuda python3 peer_torch.py --dims $dims --reps 15 \
      --json "$base.peer_torch.json") || status=1
  fi
  if env -u LD_LIBRARY_PATH python3 -c 'import jax' 2>/dev/null; then
    (cd "$peers" && env -u LD_LIBRARY_PATH JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false python3 peer_jax.py \
      --dims $dims --reps 15 --json "$base.peer_jax.json") || status=1
  fi
  # The MLP training step: one size where the host's per-step cost shows,
  # two where the GEMMs do (4096 x 1024 x 4096 x 1000: 169 GFLOP a step).
  mlp_dims=256x784x1024x10,1024x1024x4096x1000,4096x1024x4096x1000
  mkdir -p "$icd/mlp-check"
  "$bin/bench_mlp" --dims $mlp_dims --reps 15 --out "$out/results" --check-dir "$icd/mlp-check" || status=1
  mbase=$out/results/$(cd "$out/results" && ls -t *.mlp.json | head -1 | sed 's/\.mlp\.json$//')
  # A lazy region against the same calls eagerly (the HM-LSTM cell times w before a product).
  if [ -x "$bin/bench_region" ]; then
    "$bin/bench_region" --dims 1024,2048,4096 --reps 15 >"$mbase.region.txt" || status=1
    cat "$mbase.region.txt"
  fi
  # 16-bit storage's conversions against the copy (64 Mi f32 elements).
  if [ -x "$bin/bench_half" ]; then
    "$bin/bench_half" --n 67108864 --reps 15 >"$mbase.half.txt" || status=1
    cat "$mbase.half.txt"
  fi
  # A training step in bf16 and f16 storage against f32 (issue 35's 0.6x at 4096^2).
  if [ -x "$bin/bench_half_cell" ]; then
    "$bin/bench_half_cell" 4096 15 >"$mbase.half_cell.txt" || status=1
    cat "$mbase.half_cell.txt"
  fi
  if env -u LD_LIBRARY_PATH python3 -c 'import torch' 2>/dev/null; then
    (cd "$peers" && env -u LD_LIBRARY_PATH PEERS_TORCH_DEVICE=cuda python3 peer_torch_mlp.py --dims $mlp_dims \
      --reps 15 --json "$mbase.mlp.peer_torch.json") || status=1
    (cd "$peers" && env -u LD_LIBRARY_PATH PEERS_TORCH_DEVICE=cuda python3 check_mlp.py --dims $mlp_dims \
      --check-dir "$icd/mlp-check" --json "$mbase.mlp.check.json") || status=1
  fi
  if env -u LD_LIBRARY_PATH python3 -c 'import jax' 2>/dev/null; then
    (cd "$peers" && env -u LD_LIBRARY_PATH JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false python3 \
      peer_jax_mlp.py --dims $mlp_dims --reps 15 --json "$mbase.mlp.peer_jax.json") || status=1
  fi
  env -u LD_LIBRARY_PATH python3 "$(dirname "$0")/mlp-report.py" recorded "$out/results" || status=1
  # Where the MLP step's device time goes, kernel by kernel, when the
  # profiler was built (tools/kernel_profile.c; copy it into BIN_DIR).
  if [ -f "$bin/libclmad-kernel-profile.so" ]; then
    LD_PRELOAD="$bin/libclmad-kernel-profile.so" "$bin/bench_mlp" --dims 4096x1024x4096x1000 --reps 3 \
      --check-steps 2 --out "$icd" 2> "$out/results/kernel-profile.txt" > /dev/null || status=1
    grep -A16 "kernel profile" "$out/results/kernel-profile.txt"
  fi
  # The Python layer against C on the same GPU (issue 36: Python at most
  # 1.05x C's HM-LSTM step), when libclmad.so is in BIN_DIR and python3 has
  # NumPy: bench/python_overhead.py with BIN_DIR's bench_call and
  # bench_call_hmlstm.
  if [ -f "$bin/libclmad.so" ] && env -u LD_LIBRARY_PATH python3 -c 'import numpy' 2>/dev/null; then
    CLMAD_LIBRARY="$bin/libclmad.so" PYTHONPATH="$(dirname "$0")/../python" \
      python3 "$(dirname "$0")/../bench/python_overhead.py" --build "$bin" --rounds 5 --out "$out/results" \
      > /dev/null || status=1
    grep "|" "$out/results/python.md"
  fi
  "$bin/bench_cell" 2048 20 "$out/results" || status=1
  "$bin/bench_arity" --elements 16777216 --reps 9 --out "$out/results" || status=1
fi
exit $status
