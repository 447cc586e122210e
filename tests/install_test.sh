#!/usr/bin/env bash
# Installs the build into a prefix under the build folder, then builds
# examples/quickstart.c as an outside project and runs it:
#   1. through CMake (tests/outside: find_package(clmad)), against the
#      shared library (clmad::clmad) and the static one (clmad::clmad_static);
#   2. through pkg-config: `cc quickstart.c $(pkg-config --cflags --libs clmad)`
#      (shared), and `pkg-config --static` flags with libclmad.a (static).
# The shared builds must load libclmad.so from the prefix.
# Usage: install_test.sh SOURCE_DIR BUILD_DIR [CMAKE] [CC]
# Registered in ctest as install_outside (tests/CMakeLists.txt), which sets
# the test environment (POCL only, caches under the build folder).
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
cmake=${3:-cmake}
cc=${4:-cc}
example=$src/examples/quickstart.c
work=$build/install-test
prefix=$work/prefix

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'install test: FAILED: %s\n' "$*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"

step "install into $prefix"
"$cmake" --install "$build" --prefix "$prefix"
for f in include/clmad.h; do
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

# The shared builds must use the prefix's libclmad.so.
check_links_prefix() {
    local exe=$1
    local path
    path=$(ldd "$exe" | sed -n 's/^[[:space:]]*libclmad\.so[^ ]* => \([^ ]*\) .*/\1/p')
    [ -n "$path" ] || fail "$exe does not link libclmad.so (or it is not found): $(ldd "$exe")"
    [ "$(cd "$(dirname "$path")" && pwd -P)" = "$libdir" ] || fail "$exe loads $path, not the one in $libdir"
    echo "$exe: loads $path"
}
check_static() {
    local exe=$1
    if ldd "$exe" | grep -q 'libclmad\.so'; then
        fail "$exe should not need libclmad.so"
    fi
    echo "$exe: no libclmad.so (static)"
}

step "outside CMake project: find_package(clmad)"
"$cmake" -S "$src/tests/outside" -B "$work/cmake" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON \
    -DCLMAD_EXAMPLE="$example"
"$cmake" --build "$work/cmake"
check_links_prefix "$work/cmake/example_shared"
check_static "$work/cmake/example_static"

step "outside build through pkg-config"
export PKG_CONFIG_PATH=$(dirname "$pc")
echo "pkg-config --cflags --libs clmad: $(pkg-config --cflags --libs clmad)"
echo "pkg-config --libs --static clmad: $(pkg-config --libs --static clmad)"
[ "$(pkg-config --modversion clmad)" = "$(sed -n 's/^Version: //p' "$pc")" ] || fail "pkg-config version"
# shellcheck disable=SC2046 # the flags are meant to split
"$cc" -std=c99 -Wall -Wextra -Werror -pedantic "$example" -o "$work/pc_shared" \
    $(pkg-config --cflags --libs clmad) -lm -Wl,-rpath,"$(pkg-config --variable=libdir clmad)"
check_links_prefix "$work/pc_shared"
static_libs=$(pkg-config --libs --static clmad | sed "s|-lclmad\\b|$libdir/libclmad.a|")
# shellcheck disable=SC2046,SC2086
"$cc" -std=c99 -Wall -Wextra -Werror -pedantic "$example" -o "$work/pc_static" \
    $(pkg-config --cflags clmad) $static_libs -lm
check_static "$work/pc_static"

for exe in cmake/example_shared cmake/example_static pc_shared pc_static; do
    step "run $exe"
    "$work/$exe" || fail "$exe exited with status $?"
done
printf '\ninstall test: ok (CMake package and pkg-config, shared and static)\n'
