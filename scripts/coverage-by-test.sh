#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Line coverage of src/ by each test program of the checking builds, for
# choosing and checking the memcheck set (make coverage-memcheck,
# docs/testing.md).
#
#   coverage-by-test.sh BUILD_DIR OUT_DIR [REGEX]
#
# Configures BUILD_DIR as a gcov build (--coverage -O0) with the checking
# builds' launcher, so that it holds the same test programs as
# build-valgrind. Then runs each test program alone (ctest -R, with
# CLMAD_TEST_SMALL=1 as memcheck runs them) twice: once to fill the kernel
# caches, as test-valgrind's warm-up does, and once counted, so that the
# lines that only a cold cache reaches (compiles) count only where memcheck
# reaches them too. Writes gcovr's JSON of src/ for the first run to
# OUT_DIR/cold/<test>.json (what `make test` reaches), for the second to
# OUT_DIR/<test>.json (what memcheck reaches), the second's wall time to
# OUT_DIR/times.tsv, and clears the counters after each run.
# scripts/coverage-report.py reads them. REGEX: only the programs it
# matches, added to OUT_DIR (caches kept: their first run is warmer).
# Counters are updated atomically (-fprofile-update=atomic): test_threads'
# threads otherwise leave negative branch counts that gcovr refuses.
set -euo pipefail
build=$1
out=$2
src=$(cd "$(dirname "$0")/.." && pwd)
command -v gcovr >/dev/null || {
  echo "coverage-by-test.sh: gcovr is missing (apt-get install gcovr)" >&2; exit 1; }
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="--coverage -fprofile-update=atomic -O0" \
  -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage \
  -DCLMAD_TEST_LAUNCHER="$src/tests/sanitizers/check-run.sh" >/dev/null
cmake --build "$build" -j "${JOBS:-2}" >/dev/null
only=${3:-}
mkdir -p "$out/cold"
# gcovr's JSON of the counters so far, then cleared: json_of FILE
json_of() {
  gcovr -r "$src" --object-directory "$build" --filter "$src/src/" --exclude-directories '.*/CMakeFiles/[0-9.]+$' \
    --json "$1" >/dev/null
  find "$build" -name '*.gcda' -delete
}
[ -n "$only" ] || { rm -rf "$build/pocl-cache" "$build/clmad-cache"; : >"$out/times.tsv"; }
find "$build" -name '*.gcda' -delete
tests=$(ctest --test-dir "$build" -N | awk '/Test +#/ {print $3}' | grep '^test_' | grep -E "${only:-.}")
for t in $tests; do
  CLMAD_TEST_SMALL=1 ctest --test-dir "$build" -R "^$t\$" >/dev/null || true
  json_of "$out/cold/$t.json"
  start=$(date +%s.%N)
  status=0
  CLMAD_TEST_SMALL=1 ctest --test-dir "$build" -R "^$t\$" >/dev/null || status=$?
  end=$(date +%s.%N)
  printf '%s\t%.1f\t%s\n' "$t" "$(echo "$end - $start" | bc)" "$status" >>"$out/times.tsv"
  json_of "$out/$t.json"
  echo "coverage-by-test.sh: $t done (status $status)"
done
