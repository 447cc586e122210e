#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-peers: clmad's benchmarks next to their peers on the same
# inputs, on this CPU (POCL):
#   hmlstm  bench_hmlstm beside PyTorch (eager and torch.compile), JAX (jit)
#           and NumPy (bench/peers/peer_*.py)
#   mlp     bench_mlp, an MLP training step, beside PyTorch (eager and
#           torch.compile) and JAX jit (bench/peers/peer_*_mlp.py); its first
#           steps are checked against PyTorch (bench/peers/check_mlp.py)
# Rounds alternate the order (clmad first, then the peers first) so that drift
# of the machine falls on both sides; the reports take the median of the round
# medians. Progress goes to stderr.
#   PEERS_BENCHES   which (default "hmlstm mlp")
#   PEERS_DIMS      bench_hmlstm's sizes (default 1024,2048; the peers draw the
#                   same inputs only when given the same list, see
#                   bench/peers/inputs.py)
#   PEERS_MLP_DIMS  bench_mlp's sizes, BATCHxINxHIDDENxCLASSES (default
#                   256x784x1024x10,1024x784x1024x10)
#   PEERS_ROUNDS    rounds (default 3)
#   PEERS_REPS      repetitions per measurement in each round (default 5)
set -euo pipefail
build=${1:-build}
benches=${PEERS_BENCHES:-hmlstm mlp}
dims=${PEERS_DIMS:-1024,2048}
mlp_dims=${PEERS_MLP_DIMS:-256x784x1024x10,1024x784x1024x10}
rounds=${PEERS_ROUNDS:-3}
reps=${PEERS_REPS:-5}
# Absolute paths: the peers run from bench/peers.
case $build in /*) ;; *) build="$PWD/$build" ;; esac
venv="$build/peers-venv"
runs="$build/peers-runs"

# The peers live in their own virtual environment (scripts/install-peers.sh).
scripts/install-peers.sh "$build"

# The benchmarks see POCL alone, as in scripts/run-bench.sh.
icd="$build/peers-icd"
mkdir -p "$icd"
cp /etc/OpenCL/vendors/pocl.icd "$icd/"
export OCL_ICD_VENDORS="$icd" POCL_CACHE_DIR="$build/pocl-cache" CLMAD_DEVICE=
# torch.compile's kernels for this host's ISA alone (scripts/run-portability.sh
# keeps another cache for its AVX2 runs: Inductor would reuse one for the other).
export TORCHINDUCTOR_CACHE_DIR="$build/inductor-cache/host"

run_clmad() { "$build/bench_hmlstm" --dims "$dims" --reps "$reps" --out "$1" >&2; }
run_peer() { (cd bench/peers && "$venv/bin/python" "peer_$2.py" --dims "$dims" --reps "$reps" --json "$1/$2.json") >&2; }
# The first round's bench_mlp also saves its checked steps for check_mlp.py.
run_clmad_mlp() {
  local check=()
  [ "$2" = 1 ] && check=(--check-dir "$runs/check")
  "$build/bench_mlp" --dims "$mlp_dims" --reps "$reps" --out "$1" "${check[@]}" >&2
}
run_peer_mlp() { (cd bench/peers && "$venv/bin/python" "peer_$2.py" --dims "$mlp_dims" --reps "$reps" --json "$1/$2.json") >&2; }

tools=()
[[ " $benches " == *" hmlstm "* ]] && tools+=(clmad torch jax numpy)
[[ " $benches " == *" mlp "* ]] && tools+=(clmad_mlp torch_mlp jax_mlp)
[ ${#tools[@]} -gt 0 ] || { echo "run-peers: PEERS_BENCHES names neither hmlstm nor mlp" >&2; exit 2; }

rm -rf "$runs"
mkdir -p "$runs/check"
start=$(date +%s)
for round in $(seq 1 "$rounds"); do
  dir="$runs/round-$round"
  mkdir -p "$dir"
  order=("${tools[@]}")
  if [ $((round % 2)) = 0 ]; then
    order=()
    for ((i = ${#tools[@]} - 1; i >= 0; i--)); do order+=("${tools[i]}"); done
  fi
  cut -d' ' -f1 /proc/loadavg >> "$runs/load.txt"
  echo "== round $round/$rounds: ${order[*]} (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  for tool in "${order[@]}"; do
    case $tool in
      clmad) run_clmad "$dir" ;;
      clmad_mlp) run_clmad_mlp "$dir" "$round" ;;
      *_mlp) run_peer_mlp "$dir" "$tool" ;;
      *) run_peer "$dir" "$tool" ;;
    esac
  done
done
echo "run-peers: measurements took $(( $(date +%s) - start )) s" >&2
[[ " $benches " == *" hmlstm "* ]] && python3 scripts/peers-report.py "$runs" bench/results "$build"
if [[ " $benches " == *" mlp "* ]]; then
  checked=0
  (cd bench/peers && "$venv/bin/python" check_mlp.py --dims "$mlp_dims" --check-dir "$runs/check" \
    --json "$runs/check.json") >&2 || checked=1
  python3 scripts/mlp-report.py peers "$runs" bench/results
  [ $checked = 0 ] || { echo "run-peers: bench_mlp's steps differ from PyTorch's (check_mlp.py)" >&2; exit 1; }
fi
