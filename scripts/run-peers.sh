#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-peers: clmad's HM-LSTM benchmark next to PyTorch (eager and
# torch.compile), JAX (jit) and NumPy on the same inputs, on this CPU (POCL).
# Rounds alternate the order (clmad first, then the peers first) so that drift
# of the machine falls on both sides; the report takes the median of the round
# medians. Progress goes to stderr.
#   PEERS_DIMS    sizes (default 1024,2048; the peers draw the same inputs
#                 only when given the same list, see bench/peers/inputs.py)
#   PEERS_ROUNDS  rounds (default 3)
#   PEERS_REPS    repetitions per measurement in each round (default 5)
set -euo pipefail
build=${1:-build}
dims=${PEERS_DIMS:-1024,2048}
rounds=${PEERS_ROUNDS:-3}
reps=${PEERS_REPS:-5}
# Absolute paths: the peers run from bench/peers.
case $build in /*) ;; *) build="$PWD/$build" ;; esac
venv="$build/peers-venv"
runs="$build/peers-runs"

# The peers live in their own virtual environment (scripts/install-peers.sh).
scripts/install-peers.sh "$build"

# bench_hmlstm sees POCL alone, as in scripts/run-bench.sh.
icd="$build/peers-icd"
mkdir -p "$icd"
cp /etc/OpenCL/vendors/pocl.icd "$icd/"
export OCL_ICD_VENDORS="$icd" POCL_CACHE_DIR="$build/pocl-cache" CLMAD_DEVICE=

run_clmad() { "$build/bench_hmlstm" --dims "$dims" --reps "$reps" --out "$1" >&2; }
run_peer() { (cd bench/peers && "$venv/bin/python" "peer_$2.py" --dims "$dims" --reps "$reps" --json "$1/$2.json") >&2; }

rm -rf "$runs"
start=$(date +%s)
for round in $(seq 1 "$rounds"); do
  dir="$runs/round-$round"
  mkdir -p "$dir"
  order=(clmad torch jax numpy)
  [ $((round % 2)) = 0 ] && order=(numpy jax torch clmad)
  echo "== round $round/$rounds: ${order[*]}" >&2
  for tool in "${order[@]}"; do
    if [ "$tool" = clmad ]; then run_clmad "$dir"; else run_peer "$dir" "$tool"; fi
  done
done
echo "run-peers: measurements took $(( $(date +%s) - start )) s" >&2
python3 scripts/peers-report.py "$runs" bench/results "$build"
