#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/ci-time.sh (make ci-time) on made-up phase times and ctest logs:
# within budget it passes and prints the total; over budget it fails and
# names the slowest tests, slowest first; without a phases file it fails.
# Usage: ci_time_test.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work/build/Testing/Temporary" "$work/build-asan/Testing/Temporary"
fail() { echo "ci_time_test: $*" >&2; exit 1; }
printf 'deps\t5\t0\ntest\t300\t0\nasan\t100\t0\n' >"$work/build/ci-phases.tsv"
cat >"$work/build/Testing/Temporary/LastTest.log" <<'LOG'
"test_fast" time elapsed: 00:00:02
"test_slow" time elapsed: 00:01:05
LOG
echo '"test_slower" time elapsed: 01:00:00' >"$work/build-asan/Testing/Temporary/LastTest.log"

out=$("$src/scripts/ci-time.sh" "$work/build/ci-phases.tsv" 600 2>&1) || fail "failed within budget: $out"
grep -q "total *405 s" <<<"$out" || fail "no total of 405 s in: $out"

status=0
out=$("$src/scripts/ci-time.sh" "$work/build/ci-phases.tsv" 400 2>&1) || status=$?
[ "$status" = 1 ] || fail "over budget: exit status $status, not 1"
grep -q "over its budget of 400 s" <<<"$out" || fail "no budget message in: $out"
first=$(grep -n "test_slow (build)" <<<"$out" | cut -d: -f1)
second=$(grep -n "test_fast (build)" <<<"$out" | cut -d: -f1)
[ -n "$first" ] && [ -n "$second" ] && [ "$first" -lt "$second" ] || fail "slowest tests not named, slowest first: $out"
grep -q "3600 s  test_slower (build-asan)" <<<"$out" || fail "build-asan's slowest not named: $out"

"$src/scripts/ci-time.sh" "$work/none.tsv" >/dev/null 2>&1 && fail "passed without a phases file"
echo "ci_time_test: ok"
