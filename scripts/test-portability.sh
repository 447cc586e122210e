#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make test-portability: the test suite on every OpenCL implementation
# installed here (make deps-portability installs them), one line each:
#   pocl       POCL for the host's CPU
#   pocl-avx2  POCL with its AVX2 kernel library (POCL_KERNELLIB_NAME=avx2),
#              what AVX2-only hosts run; on AVX-512 hosts only
#   rusticl    Mesa's rusticl on llvmpipe (RUSTICL_ENABLE=llvmpipe; no fp64:
#              the tests' f64 parts skip, saying so)
#   intel      Intel's oneAPI OpenCL CPU runtime (BUILD/portability/intel-icd)
#   oclgrind   the kernel-level tests under Oclgrind (make test-oclgrind)
# One build folder (BUILD/portability/suite) serves them all: only the ICD
# file the tests use (CLMAD_TEST_ICD_FILE) changes between runs, which
# recompiles nothing. Full logs: BUILD/portability/<name>.log. Exits 1 when
# any implementation failed a test. PORTABILITY_ONLY="pocl rusticl" runs
# only those.
set -uo pipefail
build=${1:-build}
root=$(pwd)
dir="$build/portability"
suite="$dir/suite"
mkdir -p "$dir"

impls=()
[ -e /etc/OpenCL/vendors/pocl.icd ] && impls+=("pocl|/etc/OpenCL/vendors/pocl.icd|")
if [ -e /etc/OpenCL/vendors/pocl.icd ] && grep -qw avx512f /proc/cpuinfo &&
  compgen -G '/usr/share/pocl/kernel-*-avx2.bc' >/dev/null; then
  impls+=("pocl-avx2|/etc/OpenCL/vendors/pocl.icd|POCL_KERNELLIB_NAME=avx2")
fi
[ -e /etc/OpenCL/vendors/rusticl.icd ] && impls+=("rusticl|/etc/OpenCL/vendors/rusticl.icd|RUSTICL_ENABLE=llvmpipe")
[ -e "$dir/intel-icd/intel-cpu.icd" ] && impls+=("intel|$(cd "$dir/intel-icd" && pwd)/intel-cpu.icd|")
command -v oclgrind >/dev/null && impls+=("oclgrind||")

selected() { [ -z "${PORTABILITY_ONLY:-}" ] || [[ " $PORTABILITY_ONLY " == *" $1 "* ]]; }

status=0
lines=()
for entry in "${impls[@]}"; do
  IFS='|' read -r name icd extra <<<"$entry"
  selected "$name" || continue
  log="$root/$dir/$name.log"
  start=$(date +%s)
  if [ "$name" = oclgrind ]; then
    make --no-print-directory test-oclgrind >"$log" 2>&1
    rc=$?
    summary=$(grep -E 'tests passed|tests failed' "$log" | tail -1)
    device="Oclgrind (kernel-level tests, small sizes)"
    skips=""

  else
    echo "portability: $name: configuring and building $suite" >&2
    if ! { cmake -S . -B "$suite" -DCLMAD_WERROR=ON -DCLMAD_TEST_ICD_FILE="$icd" &&
      cmake --build "$suite" -j "$(nproc)"; } >"$log" 2>&1; then
      lines+=("portability: $name: the build failed (see $log)")
      status=1
      continue
    fi
    echo "portability: $name: running the suite (log: $log)" >&2
    device=$(env $extra OCL_ICD_VENDORS="$root/$suite/test-icd" CLMAD_DEVICE= "$suite/clmad-info" 2>/dev/null |
      sed -n 's/^clmad would use [0-9]*:[0-9]* \(.*\) (default:.*/\1/p')
    # Criterion names skipped tests only when verbose.
    env $extra CRITERION_VERBOSITY_LEVEL=1 ctest --test-dir "$suite" --output-on-failure -j 2 >>"$log" 2>&1
    rc=$?
    summary=$(grep -E 'tests passed|tests failed' "$log" | tail -1)
    skips=$(grep -c '^\[SKIP\]' "$suite/Testing/Temporary/LastTest.log" 2>/dev/null || true)
    skips="$skips Criterion tests and $(grep -c '(Skipped)' "$log" || true) ctest tests skipped"
  fi
  [ $rc -eq 0 ] || status=1
  secs=$(($(date +%s) - start))
  lines+=("$(printf 'portability: %-9s %-36s %s; %s; %d s' "$name" "${device:-?}" \
    "${summary:-no summary (exit $rc)}" "${skips:-nothing skipped}" "$secs")")
done
# Leave the suite's folder on POCL, as a plain configure would.
[ -d "$suite" ] && cmake -S . -B "$suite" -DCLMAD_TEST_ICD_FILE=/etc/OpenCL/vendors/pocl.icd >/dev/null 2>&1
printf '%s\n' "${lines[@]}"
exit $status
