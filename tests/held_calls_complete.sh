#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/test_held_calls.c calls every public function that takes an existing
# tensor as an input with a held tensor (docs/fusion.md) in that position.
# This check keeps its table complete: it lists, from include/clmad.h and
# include/clmad_cl.h, every CLMAD_API function with a tensor input parameter
# (a parameter whose type names clmad_tensor and is not `clmad_tensor **`,
# the output parameters: `clmad_tensor *x`, `const clmad_tensor *t`,
# `clmad_tensor *const *xs`), and fails, naming them, when one has no
# ENTRY(name) in the table (name without the clmad_ prefix) or when the
# table names a function that is not one of them.
# Not scanned: include/clmad_mpi.h (its two tensor calls need MPI and
# several ranks; tests/mpi/ covers them).
# Usage: held_calls_complete.sh SOURCE_DIR
# Registered in ctest as held_calls_complete (tests/CMakeLists.txt).
set -euo pipefail
src=$(cd "${1:-$(dirname "$0")/..}" && pwd)
exec python3 - "$src" <<'EOF'
import re
import sys

src = sys.argv[1]
headers = ["include/clmad.h", "include/clmad_cl.h"]
table = "tests/test_held_calls.c"


def tensor_input(param):
    t = re.sub(r"\s+", "", param)
    return "clmad_tensor" in t and "clmad_tensor**" not in t


wanted = set()
for h in headers:
    text = re.sub(r"/\*.*?\*/", " ", open(f"{src}/{h}").read(), flags=re.S)
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)  # preprocessor lines
    for decl in re.findall(r"\bCLMAD_API\b[^;]*;", text):
        m = re.search(r"\b(clmad_\w+)\s*\(([^()]*)\)", decl)
        if not m:
            sys.exit(f"held_calls_complete: cannot read the declaration: {' '.join(decl.split())}")
        if any(tensor_input(p) for p in m.group(2).split(",")):
            wanted.add(m.group(1))
if len(wanted) < 50:
    sys.exit(f"held_calls_complete: only {len(wanted)} functions found in {headers}: is the parse broken?")

code = re.sub(r"/\*.*?\*/", " ", open(f"{src}/{table}").read(), flags=re.S)
code = re.sub(r"//[^\n]*", " ", code)
listed = ["clmad_" + n for n in re.findall(r"^\s*ENTRY\((\w+)\)", code, flags=re.M)]
status = 0
missing = sorted(wanted - set(listed))
extra = sorted(set(listed) - wanted)
twice = sorted({n for n in listed if listed.count(n) > 1})
if missing:
    print(f"{table} has no ENTRY for these functions that take a tensor input:")
    print("\n".join("  " + n for n in missing))
    status = 1
if extra:
    print(f"{table} has ENTRYs for functions that take no tensor input (or do not exist):")
    print("\n".join("  " + n for n in extra))
    status = 1
if twice:
    print(f"{table} lists these more than once: {' '.join(twice)}")
    status = 1
if status == 0:
    print(f"held_calls_complete: the table covers the {len(wanted)} functions with a tensor input")
sys.exit(status)
EOF
