#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# clmad as a sub-project (tests/parent: add_subdirectory(clmad)): the
# parent configures without pkg-config (so without Criterion), its build
# makes clmad's static library and no test, example, benchmark or
# clmad-info, and its program (examples/quickstart.c) links and runs.
# Usage: subproject_test.sh SOURCE_DIR WORK_DIR [CMAKE] [CC]
# Registered in ctest as subproject (tests/CMakeLists.txt).
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
cmake=${3:-cmake}
cc=${4:-cc}
fail() { printf 'subproject test: FAILED: %s\n' "$*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
"$cmake" -S "$src/tests/parent" -B "$work" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON \
    -DCLMAD_SOURCE_DIR="$src" -DCLMAD_PROGRAM="$src/examples/quickstart.c"
"$cmake" --build "$work" -j 2
[ -f "$work/clmad/libclmad.a" ] || fail "libclmad.a was not built"
programs=$(find "$work/clmad" -type f -perm -u+x ! -name '*.so*' ! -path '*/CMakeFiles/*' | sort)
[ -z "$programs" ] || fail "programs built besides the library: $programs"
[ ! -e "$work/clmad/libclmad.so" ] || fail "libclmad.so built (CLMAD_BUILD_SHARED is for the top level)"
[ ! -e "$work/clmad/tests" ] || fail "clmad's tests were configured"
"$work/app" || fail "the parent's program exited with status $?"
echo "subproject test: ok (only libclmad.a built; the parent's program runs)"
