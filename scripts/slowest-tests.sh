#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The slowest tests of a build folder's last ctest run, slowest first.
#
#   slowest-tests.sh BUILD_DIR [N]
#
# Reads ctest's own log (Testing/Temporary/LastTest.log, whole seconds) and
# prints "  <seconds> s  <test>" for the N slowest (default 5). Prints
# nothing when the folder has no such log. mk/reliability.mk prints it after
# each checking run, scripts/ci-time.sh when CI is over its budget.
set -euo pipefail
log=$1/Testing/Temporary/LastTest.log
n=${2:-5}
[ -f "$log" ] || exit 0
sed -nE 's/^"([^"]+)" time elapsed: ([0-9]+):([0-9]+):([0-9]+)$/\1 \2 \3 \4/p' "$log" |
  awk '{ printf "%d %s\n", $2 * 3600 + $3 * 60 + $4, $1 }' | sort -rn | head -n "$n" |
  awk -v dir="$(basename "$1")" '{ printf "  %5d s  %s (%s)\n", $1, $2, dir }'
