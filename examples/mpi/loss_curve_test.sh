#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The data-parallel HM-LSTM (examples/mpi/hmlstm_mpi.c) against the single
# process: the same global batch of 16 sequences, 40 Adam steps, f32.
#   usage: loss_curve_test.sh EXAMPLE MPIEXEC NUMPROC_FLAG [MPIEXEC_FLAGS...]
#
# Runs, in this order (the first fills the kernel caches, so that the ranks
# of the later runs load rather than compile):
#   one     the example as a plain process (1 rank: the reference)
#   rev     the same with the rows of every batch in reverse order: the same
#           data, only the order of the f32 sums over rows changes. Its
#           distance to `one` is the f32 reduction noise of this training
#           run, printed beside the tolerance
#   two     mpiexec -n 2: rows 0-7 on rank 0, 8-15 on rank 1
#   det1/2  mpiexec -n 2 --deterministic, twice
# and checks
#   - `two` matches `one` at every step: |L2 - L1| <= TOL * L1, TOL = 1e-5
#     (why 1e-5: the sums over rows, the loss's mean and the rank average
#     are rounded differently with 2 ranks, each a few units of f32's 2^-24;
#     Adam and the recurrence carry such differences on from step to step:
#     over these 40 steps the row-reversed run `rev` drifts 3.3e-7 from
#     `one`, and `two` 4.6e-7. 1e-5 is ~20 times that, and ~25 times below the
#     smallest real error tried: summing instead of averaging the gradients,
#     which Adam nearly hides, moves the curve by 2.6e-4; a missing
#     broadcast or allreduce moves it by more than 100%);
#   - every run ends with the same parameter bits on every rank (the
#     replicas agree);
#   - det1 and det2 are bitwise equal: the loss curve and the hash of the
#     final parameters.
set -u
TOL=1e-5
example=$1
shift
mpiexec=$1
nflag=$2
shift 2
args="--global-batch 16 --iters 40"
dir=${CLMAD_TEST_TMP:-${TMPDIR:-/tmp}}/mpi_loss_curve.$$
mkdir -p "$dir" || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0

run() { # name, command...: output into $dir/name
    name=$1
    shift
    echo "== $name: $*"
    if ! timeout 240 "$@" >"$dir/$name" 2>&1; then
        cat "$dir/$name"
        echo "FAILED: $name exited with an error"
        fail=1
    fi
    grep -E '^(rank|held-out|parameters|[0-9.]+ ms)' "$dir/$name"
    grep -q 'replicas identical' "$dir/$name" || { echo "FAILED: $name: the replicas differ"; fail=1; }
}

# The largest relative distance between the loss curves of two runs.
distance() {
    grep '^step ' "$dir/$1" >"$dir/$1.curve"
    grep '^step ' "$dir/$2" >"$dir/$2.curve"
    paste "$dir/$1.curve" "$dir/$2.curve" | awk '
        { n++; d = $4 - $8; if (d < 0) d = -d; r = d / $4; if (r > m) { m = r; at = $2 } }
        END { if (n != 40) { print "steps:", n; exit 1 } printf "%.3g at step %d\n", m, at }'
}

run one "$example" $args
run rev "$example" $args --reverse-rows
run two "$mpiexec" "$nflag" 2 "$@" "$example" $args
run det1 "$mpiexec" "$nflag" 2 "$@" "$example" $args --deterministic
run det2 "$mpiexec" "$nflag" 2 "$@" "$example" $args --deterministic
[ "$fail" = 0 ] || exit 1

noise=$(distance one rev) || { echo "FAILED: the curves of one and rev: $noise"; exit 1; }
d2=$(distance one two) || { echo "FAILED: the curves of one and two: $d2"; exit 1; }
echo "f32 reduction noise (1 process, rows reversed): largest relative difference $noise"
echo "2 ranks vs 1 process:                           largest relative difference $d2 (tolerance $TOL)"
worst=${d2%% *}
if ! awk -v w="$worst" -v t="$TOL" 'BEGIN { exit !(w <= t) }'; then
    echo "FAILED: the 2-rank loss curve is more than $TOL away from the single process's"
    paste "$dir/one.curve" "$dir/two.curve"
    fail=1
fi

grep -E '^(step|parameters)' "$dir/det1" >"$dir/det1.bits"
grep -E '^(step|parameters)' "$dir/det2" >"$dir/det2.bits"
if cmp -s "$dir/det1.bits" "$dir/det2.bits"; then
    echo "deterministic, 2 ranks, two runs: loss curves and parameters bitwise equal ($(grep parameters "$dir/det1"))"
else
    echo "FAILED: two deterministic 2-rank runs differ"
    diff "$dir/det1.bits" "$dir/det2.bits"
    fail=1
fi
[ "$fail" = 0 ] && echo "ok"
exit $fail
