#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the test suite through ctest and prints its wall time.
set -euo pipefail
build=${1:-build}
start=$(date +%s)
status=0
ctest --test-dir "$build" --output-on-failure -j 2 || status=$?
end=$(date +%s)
echo "clmad: test suite wall time: $((end - start)) s (status $status)"
exit $status
