#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build into a prefix under the build folder, then builds
# examples/quickstart.c as an outside project and runs it:
#   1. through CMake (tests/outside: find_package(clmad)), against the
#      shared library (clmad::clmad) and the static one (clmad::clmad_static);
#   2. through pkg-config: `cc quickstart.c $(pkg-config --cflags --libs clmad)`
#      (shared) and `... clmad-static` (static), as they are;
#   3. the README's first program (first.c) with the README's CMake project
#      and pkg-config lines, taken from README.md as written (the prefix in
#      place of /opt/clmad), shared and static.
# The shared builds must load libclmad.so from the prefix.
# When the build has the MPI component (clmad-mpi.pc is installed), the same
# for tests/outside/mpi_program.c: find_package(clmad COMPONENTS mpi) with
# clmad::mpi and clmad::mpi_static, and pkg-config clmad-mpi, shared and
# static; run through the MPI launcher given after CC (e.g. mpiexec -n 2
# --oversubscribe; without one, as a single process).
# Usage: install_test.sh SOURCE_DIR BUILD_DIR [CMAKE] [CC] [MPI LAUNCHER...]
# Registered in ctest as install_outside (tests/CMakeLists.txt), which sets
# the test environment (POCL only, caches under the build folder).
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
cmake=${3:-cmake}
cc=${4:-cc}
shift $(( $# < 4 ? $# : 4 ))
launcher=("$@")
mpi_program=$src/tests/outside/mpi_program.c
example=$src/examples/quickstart.c
work=$build/install-test
prefix=$work/prefix

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'install test: FAILED: %s\n' "$*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"

step "install into $prefix"
"$cmake" --install "$build" --prefix "$prefix"
for f in include/clmad.h share/clmad/clmad_ad.clh share/doc/clmad/README.md share/doc/clmad/LICENSE \
         share/doc/clmad/CHANGELOG.md share/doc/clmad/docs/design-notes.md; do
    [ -f "$prefix/$f" ] || fail "$f was not installed"
done
pc=$(find "$prefix" -name clmad.pc -path '*/pkgconfig/*' | head -n 1)
config=$(find "$prefix" -name clmadConfig.cmake | head -n 1)
[ -n "$pc" ] || fail "clmad.pc was not installed"
[ -n "$config" ] || fail "clmadConfig.cmake was not installed"
libdir=$(cd "$(dirname "$(dirname "$pc")")" && pwd -P)
for f in libclmad.a libclmad.so; do
    [ -e "$libdir/$f" ] || fail "$libdir/$f was not installed"
done
mpi=0
if [ -f "$libdir/pkgconfig/clmad-mpi.pc" ]; then
    mpi=1
    for f in "$prefix/include/clmad_mpi.h" "$libdir/libclmad_mpi.a" "$libdir/libclmad_mpi.so" \
             "$(dirname "$config")/clmadMpiTargets.cmake"; do
        [ -e "$f" ] || fail "$f was not installed (the MPI component was built)"
    done
    echo "the MPI component is installed: its programs are built and run too"
fi

# The README's list of installed files ("## Using clmad from another
# project", the list after "installs these files:"): the public headers and
# pkg-config files it names are exactly those installed; those of the MPI
# component may be missing when it was not built.
step "the README's install list against the prefix"
listed=$(awk '/^## /{ s = ($0 == "## Using clmad from another project") }
    s && /installs these files:/ { l = 1; next }
    l && /^$/ && n { exit } l { n++; print }' "$src/README.md")
[ -n "$listed" ] || fail "README.md: no list after \"installs these files:\""
listed_names() { grep -oE "\`[^\`]*\.$1\`" <<<"$listed" | tr -d '\`' | xargs -rn1 basename | sort -u; }
compare_lists() { # WHAT README-NAMES INSTALLED-NAMES
    local n
    for n in $3; do
        grep -qx "$n" <<<"$2" || fail "$n is installed but the README's install list does not name it"
    done
    for n in $2; do
        grep -qx "$n" <<<"$3" || { [ $mpi = 0 ] && [[ $n == *mpi* ]]; } ||
            fail "the README's install list names $n, which is not installed"
    done
    echo "$1: $(echo $3)"
}
compare_lists headers "$(listed_names h)" "$(cd "$prefix/include" && ls -- *.h | sort)"
compare_lists pkg-config "$(listed_names pc)" "$(cd "$libdir/pkgconfig" && ls -- *.pc | sort)"

# The shared builds must use the prefix's libclmad.so (and libclmad_mpi.so).
check_links_prefix() {
    local exe=$1 lib=${2:-libclmad}
    local path
    path=$(ldd "$exe" | sed -n "s/^[[:space:]]*$lib\\.so[^ ]* => \\([^ ]*\\) .*/\\1/p")
    [ -n "$path" ] || fail "$exe does not link $lib.so (or it is not found): $(ldd "$exe")"
    [ "$(cd "$(dirname "$path")" && pwd -P)" = "$libdir" ] || fail "$exe loads $path, not the one in $libdir"
    echo "$exe: loads $path"
}
check_static() {
    local exe=$1
    if ldd "$exe" | grep -q 'libclmad\(_mpi\)\?\.so'; then
        fail "$exe should not need libclmad.so or libclmad_mpi.so"
    fi
    echo "$exe: no libclmad.so (static)"
}

step "outside CMake project: find_package(clmad)"
"$cmake" -S "$src/tests/outside" -B "$work/cmake" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON \
    -DCLMAD_EXAMPLE="$example" -DCLMAD_MPI_PROGRAM="$([ $mpi = 1 ] && echo "$mpi_program")"
"$cmake" --build "$work/cmake"
check_links_prefix "$work/cmake/example_shared"
check_static "$work/cmake/example_static"
if [ $mpi = 1 ]; then
    check_links_prefix "$work/cmake/mpi_shared"
    check_links_prefix "$work/cmake/mpi_shared" libclmad_mpi
    check_static "$work/cmake/mpi_static"
fi

step "outside build through pkg-config"
export PKG_CONFIG_PATH=$(dirname "$pc")
echo "pkg-config --cflags --libs clmad: $(pkg-config --cflags --libs clmad)"
echo "pkg-config --libs --static clmad: $(pkg-config --libs --static clmad)"
[ "$(pkg-config --modversion clmad)" = "$(sed -n 's/^Version: //p' "$pc")" ] || fail "pkg-config version"
# shellcheck disable=SC2046 # the flags are meant to split
"$cc" -std=c99 -Wall -Wextra -Werror -pedantic "$example" -o "$work/pc_shared" \
    $(pkg-config --cflags --libs clmad) -lm -Wl,-rpath,"$(pkg-config --variable=libdir clmad)"
check_links_prefix "$work/pc_shared"
echo "pkg-config --cflags --libs clmad-static: $(pkg-config --cflags --libs clmad-static)"
# shellcheck disable=SC2046
"$cc" -std=c99 -Wall -Wextra -Werror -pedantic "$example" -o "$work/pc_static" \
    $(pkg-config --cflags --libs clmad-static)
check_static "$work/pc_static"

if [ $mpi = 1 ]; then
    step "outside MPI build through pkg-config clmad-mpi"
    echo "pkg-config --cflags --libs clmad-mpi: $(pkg-config --cflags --libs clmad-mpi)"
    # shellcheck disable=SC2046
    "$cc" -std=c99 -Wall -Wextra -Werror "$mpi_program" -o "$work/pc_mpi_shared" \
        $(pkg-config --cflags --libs clmad-mpi) -Wl,-rpath,"$(pkg-config --variable=libdir clmad-mpi)"
    check_links_prefix "$work/pc_mpi_shared"
    check_links_prefix "$work/pc_mpi_shared" libclmad_mpi
    echo "pkg-config --cflags --libs clmad-mpi-static: $(pkg-config --cflags --libs clmad-mpi-static)"
    # shellcheck disable=SC2046
    "$cc" -std=c99 -Wall -Wextra -Werror "$mpi_program" -o "$work/pc_mpi_static" \
        $(pkg-config --cflags --libs clmad-mpi-static)
    check_static "$work/pc_mpi_static"
fi

step "the README's recipes, as written, on its first program"
readme=$src/README.md
# The first ```c block after the heading "## A first program", the first
# ```cmake and ```sh blocks after "## Using clmad from another project".
block() { # HEADING FENCE
    awk -v h="$1" -v f="$2" '$0 == h { in_section = 1; next }
        in_section && !inblock && $0 == "```" f { inblock = 1; next }
        inblock && $0 == "```" { exit }
        inblock { print }' "$readme"
}
mkdir -p "$work/readme"
block "## A first program" c > "$work/readme/first.c"
block "## Using clmad from another project" cmake > "$work/readme/CMakeLists.txt"
block "## Using clmad from another project" sh | sed "s|/opt/clmad|$prefix|g" > "$work/readme/pkg-config.sh"
for f in first.c CMakeLists.txt pkg-config.sh; do
    [ -s "$work/readme/$f" ] || fail "README.md: no block for $f"
done
cat "$work/readme/CMakeLists.txt" "$work/readme/pkg-config.sh"
"$cmake" -S "$work/readme" -B "$work/readme/build" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
"$cmake" --build "$work/readme/build"
check_links_prefix "$work/readme/build/first"
# The static variant the README names in its comment.
sed 's/clmad::clmad /clmad::clmad_static /' "$work/readme/CMakeLists.txt" > "$work/readme/static.cmake"
mkdir -p "$work/readme/static"
cp "$work/readme/first.c" "$work/readme/static/"
cp "$work/readme/static.cmake" "$work/readme/static/CMakeLists.txt"
"$cmake" -S "$work/readme/static" -B "$work/readme/static/build" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
"$cmake" --build "$work/readme/static/build"
check_static "$work/readme/static/build/first"
(cd "$work/readme" && bash -euo pipefail pkg-config.sh)
check_links_prefix "$work/readme/first"
check_static "$work/readme/first_static"

for exe in cmake/example_shared cmake/example_static pc_shared pc_static \
           readme/build/first readme/static/build/first readme/first readme/first_static; do
    step "run $exe"
    "$work/$exe" || fail "$exe exited with status $?"
done
# Each rank with a POCL kernel cache of its own (tests/CMakeLists.txt says
# why), named after its rank as Open MPI or MPICH's launcher tells it.
if [ $mpi = 1 ]; then
    for exe in cmake/mpi_shared cmake/mpi_static pc_mpi_shared pc_mpi_static; do
        step "run $exe${launcher[*]:+ through ${launcher[*]}}"
        "${launcher[@]}" sh -c 'if [ -n "${POCL_CACHE_DIR:-}" ]; then
                export POCL_CACHE_DIR="$POCL_CACHE_DIR/rank${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
                mkdir -p "$POCL_CACHE_DIR"
            fi
            exec "$0"' "$work/$exe" || fail "$exe exited with status $?"
    done
fi
printf '\ninstall test: ok (CMake package and pkg-config, shared and static%s)\n' \
    "$([ $mpi = 1 ] && echo ', with the MPI component')"
