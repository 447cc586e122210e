#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CI's time budget (make ci-time; the last step of .ci/run).
#
#   ci-time.sh PHASES_FILE [BUDGET_S]
#
# PHASES_FILE has one line per phase of .ci/run: name, seconds, exit status
# (tab-separated). Prints them and their total, and fails when the total is
# over BUDGET_S (default CLMAD_CI_BUDGET_S or 3600: CI stops a run at 5400 s
# and we keep half an hour of room), naming the slowest tests of each build
# folder's last run so that the next change knows where the time went.
set -euo pipefail
phases=$1
budget=${2:-${CLMAD_CI_BUDGET_S:-3600}}
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$phases" ] || { echo "ci-time: no $phases (run .ci/run first)" >&2; exit 2; }
total=0
echo "ci-time: phase times"
while IFS=$'\t' read -r name seconds status; do
  printf '  %-10s %6d s  (%d:%02d)%s\n' "$name" "$seconds" $((seconds / 60)) $((seconds % 60)) \
    "$([ "$status" = 0 ] || echo "  exit status $status")"
  total=$((total + seconds))
done <"$phases"
printf '  %-10s %6d s  (%d:%02d), budget %d s\n' total "$total" $((total / 60)) $((total % 60)) "$budget"
if [ "$total" -gt "$budget" ]; then
  echo "ci-time: FAIL: CI took $total s, over its budget of $budget s. The slowest tests:" >&2
  root=$(cd "$(dirname "$phases")/.." && pwd)
  for dir in "$root"/build "$root"/build-asan "$root"/build-tsan "$root"/build-valgrind "$root"/build-oclgrind; do
    "$here/slowest-tests.sh" "$dir" 5 >&2
  done
  exit 1
fi
