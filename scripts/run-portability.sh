#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-portability: the HM-LSTM benchmark (bench_hmlstm) and the MLP
# training step (bench_mlp) on every OpenCL implementation installed here
# (make deps-portability), with the peers (torch.compile, JAX jit; make
# bench-peers installs them) on the same host, in interleaved rounds; then
# bench/results/portability.md, portability.json and portability.svg
# (scripts/portability-report.py) and portability-mlp.md and .json
# (scripts/mlp-report.py, with bench/peers/check_mlp.py's check of each
# implementation's first steps against PyTorch).
#   pocl       POCL for the host's CPU
#   pocl-avx2  POCL's AVX2 kernel library (POCL_KERNELLIB_NAME=avx2), on
#              AVX-512 hosts: what AVX2-only hosts run; compared with the
#              peers limited to AVX2 as well (ATEN_CPU_CAPABILITY=avx2,
#              XLA_FLAGS=--xla_cpu_max_isa=AVX2)
#   rusticl    rusticl on llvmpipe
#   intel      Intel's oneAPI OpenCL CPU runtime
# A GPU measured through another machine (bench/results/*.hmlstm.json of a
# GPU) is listed from its file, without peers.
#   PORT_DIMS    sizes (default 1024,2048)   PORT_ROUNDS  rounds (default 3)
#   PORT_REPS    repetitions per measurement (default 5)
#   PORT_BENCHES which (default "hmlstm mlp")
#   PORT_MLP_DIMS bench_mlp's sizes (default 256x784x1024x10,1024x784x1024x10)
#   PORTABILITY_ONLY="pocl intel"  only those implementations
set -euo pipefail
build=${1:-build}
case $build in /*) ;; *) build="$PWD/$build" ;; esac
dims=${PORT_DIMS:-1024,2048}
rounds=${PORT_ROUNDS:-3}
reps=${PORT_REPS:-5}
benches=${PORT_BENCHES:-hmlstm mlp}
mlp_dims=${PORT_MLP_DIMS:-256x784x1024x10,1024x784x1024x10}
runs="$build/portability/bench-runs"
venv="$build/peers-venv"
icds="$build/portability/bench-icd"
rm -rf "$runs"
mkdir -p "$runs" "$icds"

impls=()
add_impl() { # name icd-file env...
  local name=$1 file=$2
  shift 2
  [ -e "$file" ] || return 0
  [ -z "${PORTABILITY_ONLY:-}" ] || [[ " $PORTABILITY_ONLY " == *" $name "* ]] || return 0
  mkdir -p "$icds/$name"
  cp "$file" "$icds/$name/"
  impls+=("$name|$*")
}
add_impl pocl /etc/OpenCL/vendors/pocl.icd
if grep -qw avx512f /proc/cpuinfo && compgen -G '/usr/share/pocl/kernel-*-avx2.bc' >/dev/null; then
  add_impl pocl-avx2 /etc/OpenCL/vendors/pocl.icd POCL_KERNELLIB_NAME=avx2
fi
add_impl rusticl /etc/OpenCL/vendors/rusticl.icd RUSTICL_ENABLE=llvmpipe
add_impl intel "$build/portability/intel-icd/intel-cpu.icd"
[ ${#impls[@]} -gt 0 ] || { echo "run-portability: no OpenCL implementation found" >&2; exit 1; }

peers=()
if "$venv/bin/python" -c "import torch, jax" 2>/dev/null; then
  peers=(torch jax)
else
  echo "run-portability: no peers ($venv lacks torch or jax: make bench-peers installs them)" >&2
fi
# Inductor's cache (torch.compile) keeps kernels built for one ISA and hands
# them to the other: under ATEN_CPU_CAPABILITY=avx2 after a run on AVX-512 it
# computed a wrong GELU (1.4 off) or corrupted the heap. One cache per ISA.
export TORCHINDUCTOR_CACHE_DIR="$build/inductor-cache/host"
avx2_env=(ATEN_CPU_CAPABILITY=avx2 XLA_FLAGS=--xla_cpu_max_isa=AVX2 TORCHINDUCTOR_CACHE_DIR="$build/inductor-cache/avx2")

run_impl() { # round-dir name env...
  local dir=$1 name=$2
  shift 2
  mkdir -p "$dir/$name"
  env "$@" OCL_ICD_VENDORS="$icds/$name" POCL_CACHE_DIR="$build/pocl-cache" CLMAD_DEVICE= \
    "$build/bench_hmlstm" --dims "$dims" --reps "$reps" --out "$dir/$name" >&2 ||
    echo "run-portability: $name failed in $(basename "$dir")" >&2
}
run_peer() { # round-dir tool isa env...
  local dir=$1 tool=$2 isa=$3
  shift 3
  mkdir -p "$dir/peers-$isa"
  (cd bench/peers && env "$@" "$venv/bin/python" "peer_$tool.py" --dims "$dims" --reps "$reps" \
    --json "$dir/peers-$isa/$tool.json") >&2 || echo "run-portability: $tool ($isa) failed" >&2
}
# bench_mlp; the first round's also saves its checked steps for check_mlp.py.
run_impl_mlp() { # round-dir name env...
  local dir=$1 name=$2 check=()
  shift 2
  mkdir -p "$dir/$name"
  [ "$(basename "$dir")" = round-1 ] && check=(--check-dir "$runs/check-$name") && mkdir -p "$runs/check-$name"
  env "$@" OCL_ICD_VENDORS="$icds/$name" POCL_CACHE_DIR="$build/pocl-cache" CLMAD_DEVICE= \
    "$build/bench_mlp" --dims "$mlp_dims" --reps "$reps" --out "$dir/$name" "${check[@]}" >&2 ||
    echo "run-portability: bench_mlp on $name failed in $(basename "$dir")" >&2
}
run_peer_mlp() { # round-dir tool isa env...
  local dir=$1 tool=$2 isa=$3
  shift 3
  mkdir -p "$dir/peers-$isa"
  (cd bench/peers && env "$@" "$venv/bin/python" "peer_${tool}_mlp.py" --dims "$mlp_dims" --reps "$reps" \
    --json "$dir/peers-$isa/${tool}_mlp.json") >&2 || echo "run-portability: ${tool}_mlp ($isa) failed" >&2
}
has() { [[ " $benches " == *" $1 "* ]]; }

start=$(date +%s)
for round in $(seq 1 "$rounds"); do
  dir="$runs/round-$round"
  mkdir -p "$dir"
  jobs=()
  for bench in hmlstm mlp; do
    has $bench || continue
    suffix=$([ $bench = mlp ] && echo -mlp || true)
    for entry in "${impls[@]}"; do jobs+=("impl$suffix|$entry"); done
    for tool in "${peers[@]}"; do
      jobs+=("peer$suffix|$tool|host|")
      [[ " ${impls[*]} " == *" pocl-avx2|"* ]] && jobs+=("peer$suffix|$tool|avx2|${avx2_env[*]}")
    done
  done
  cut -d' ' -f1 /proc/loadavg >> "$runs/load.txt"
  # Every other round in reverse, so that drift of the machine falls on all.
  if [ $((round % 2)) = 0 ]; then
    for ((i = 0, j = ${#jobs[@]} - 1; i < j; i++, j--)); do t=${jobs[i]}; jobs[i]=${jobs[j]}; jobs[j]=$t; done
  fi
  for job in "${jobs[@]}"; do
    IFS='|' read -r kind a b c <<<"$job"
    echo "== round $round/$rounds: $kind $a $b" >&2
    # shellcheck disable=SC2086
    case $kind in
      impl) run_impl "$dir" "$a" $b ;;
      impl-mlp) run_impl_mlp "$dir" "$a" $b ;;
      peer) run_peer "$dir" "$a" "$b" $c ;;
      peer-mlp) run_peer_mlp "$dir" "$a" "$b" $c ;;
    esac
  done
done
echo "run-portability: measurements took $(($(date +%s) - start)) s" >&2
has hmlstm && python3 scripts/portability-report.py "$runs" bench/results
if has mlp; then
  # Each implementation's first steps against PyTorch (float64 and float32).
  checked=0
  for entry in "${impls[@]}"; do
    name=${entry%%|*}
    [ ${#peers[@]} -gt 0 ] && [ -d "$runs/check-$name" ] || continue
    (cd bench/peers && "$venv/bin/python" check_mlp.py --dims "$mlp_dims" --check-dir "$runs/check-$name" \
      --json "$runs/check-$name.json") >&2 || { checked=1; echo "run-portability: check_mlp failed on $name" >&2; }
  done
  python3 scripts/mlp-report.py portability "$runs" bench/results
  [ $checked = 0 ] || exit 1
fi
