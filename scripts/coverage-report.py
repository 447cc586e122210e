#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Line coverage of src/ by a set of test programs against all of them.

    coverage-report.py OUT_DIR SET_REGEX [--max-gap POINTS] [--suggest]
                       [--cost-log LASTTEST_LOG]

OUT_DIR holds one gcovr JSON per test program, of a run with warm caches
as memcheck runs it, cold/ the same of a first run as `make test` makes
it, and times.tsv (scripts/coverage-by-test.sh). Prints the line coverage
of src/ by every program together (first runs) and by the programs whose
names match SET_REGEX (the memcheck set of mk/reliability.mk; warm runs),
and the files the set leaves unreached or far behind. Fails (exit 1) when the set is more than --max-gap points
(default 5) behind, or leaves a file unreached that the whole suite reaches.
--suggest prints a greedy choice: programs by new lines per second of their
run, until the gap is under the limit and every reached file is reached.
The seconds are those of the coverage run, or with --cost-log those of a
ctest log (build-valgrind/Testing/Temporary/LastTest.log after a run with
VALGRIND_TESTS=.: the seconds under memcheck).
"""
import argparse
import json
import os
import re
import sys


def lines_of(path):
    """All code lines of src/ in one gcovr JSON, and those it reached."""
    with open(path) as f:
        data = json.load(f)
    lines, hit = set(), set()
    for entry in data["files"]:
        for line in entry["lines"]:
            if line.get("gcovr/noncode"):
                continue
            key = (entry["file"], line["line_number"])
            lines.add(key)
            if line["count"] > 0:
                hit.add(key)
    return lines, hit


def load(out_dir):
    """Lines reached per program (warm runs), all lines, seconds."""
    covered, lines, times = {}, set(), {}
    with open(os.path.join(out_dir, "times.tsv")) as f:
        for row in f:
            name, seconds, _ = row.rstrip("\n").split("\t")
            times[name] = float(seconds)
    for name in times:
        all_lines, covered[name] = lines_of(os.path.join(out_dir, name + ".json"))
        lines |= all_lines
    return covered, lines, times


def load_cold(out_dir, names):
    """Lines reached per program in its first run, where recorded."""
    paths = {name: os.path.join(out_dir, "cold", name + ".json") for name in names}
    return {name: lines_of(path)[1] for name, path in paths.items() if os.path.exists(path)}


def files_of(keys):
    out = {}
    for path, _ in keys:
        out[path] = out.get(path, 0) + 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("set_regex")
    ap.add_argument("--max-gap", type=float, default=5.0)
    ap.add_argument("--suggest", action="store_true")
    ap.add_argument("--cost-log")
    args = ap.parse_args()
    covered, lines, times = load(args.out_dir)
    if args.cost_log:
        with open(args.cost_log) as f:
            for m in re.finditer(r'^"([^"]+)" time elapsed: (\d+):(\d+):(\d+)$', f.read(), re.M):
                if m.group(1) in times:
                    h, mi, se = map(int, m.groups()[1:])
                    times[m.group(1)] = 3600 * h + 60 * mi + se
    pattern = re.compile(args.set_regex)
    chosen = sorted(n for n in covered if pattern.search(n))
    full = set().union(*covered.values(), *load_cold(args.out_dir, covered).values())
    part = set().union(*(covered[n] for n in chosen)) if chosen else set()
    pct = lambda s: 100.0 * len(s) / len(lines)
    gap = pct(full) - pct(part)
    print(f"src/ lines: {len(lines)}")
    print(f"all {len(covered)} programs: {pct(full):.1f}% ({sum(times.values()):.0f} s of runs)")
    print(f"memcheck set, {len(chosen)} programs: {pct(part):.1f}% "
          f"({sum(times[n] for n in chosen):.0f} s of runs); gap {gap:.1f} points")
    full_files, part_files = files_of(full), files_of(part)
    unreached = sorted(f for f in full_files if f not in part_files)
    behind = sorted(((full_files[f] - part_files.get(f, 0), f) for f in full_files), reverse=True)
    for f in unreached:
        print(f"  unreached by the set: {f} ({full_files[f]} lines reached by the suite)")
    for missing, f in behind[:10]:
        if missing and f not in unreached:
            print(f"  {missing:4d} lines fewer: {f}")
    if args.suggest:
        pick, have = [], set()
        need_files = set(full_files)
        while pct(full) - pct(have) > args.max_gap - 1 or not need_files <= set(files_of(have)):
            best = max((n for n in covered if n not in pick),
                       key=lambda n: len(covered[n] - have) / max(times[n], 0.5)
                       + 1000 * len(set(files_of(covered[n] - have)) - set(files_of(have))))
            pick.append(best)
            have |= covered[best]
            print(f"  suggest {best}: {pct(have):.1f}% ({times[best]:.1f} s)")
        print("suggested set: ^(" + "|".join(sorted(pick)) + ")$")
    ok = gap <= args.max_gap and not unreached
    print("coverage-report: " + ("ok" if ok else f"FAIL: more than {args.max_gap} points behind "
                                  "or a file unreached"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
