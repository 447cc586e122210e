#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The ABI of a shared library is its public header: `nm -D` of the library
# must list exactly the functions that the header declares with CLMAD_API,
# no clmad__ internal (the libraries are built with -fvisibility=hidden),
# and every function the header declares must carry CLMAD_API (else it
# would be hidden: a program linking the .so would not find it).
# Linker-made symbols (names starting with _: _init, _edata, ...) are ignored.
# Usage: abi_exports.sh LIBRARY.so HEADER.h[:HEADER.h...] [LIBRARY.so HEADERS]...
set -euo pipefail
status=0
while [ $# -ge 2 ]; do
    lib=$1 header=$2
    shift 2
    IFS=: read -r -a headers <<< "$header"
    # Every declaration at the start of a line: a return type, then clmad_NAME(.
    undecorated=$(grep -nHE '^(const |unsigned )?[a-z_]+ \**clmad_[a-z0-9_]*\(' "${headers[@]}" || true)
    if [ -n "$undecorated" ]; then
        printf 'declared without CLMAD_API (hidden in %s):\n%s\n' "$lib" "$undecorated" >&2
        status=1
    fi
    declared=$(sed -nE 's/^CLMAD_API [^(]*[ *](clmad_[a-z0-9_]*)\(.*/\1/p' "${headers[@]}" | sort -u)
    exported=$(nm -D --defined-only "$lib" | awk 'NF >= 3 && $3 !~ /^_/ { print $3 }' | sed 's/@.*//' | sort -u)
    extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
    missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
    if [ -n "$extra" ]; then
        printf '%s exports %d symbols that %s does not declare:\n%s\n' \
            "$lib" "$(echo "$extra" | wc -l)" "$header" "$extra" >&2
        status=1
    fi
    if [ -n "$missing" ]; then
        printf '%s does not export these functions of %s:\n%s\n' "$lib" "$header" "$missing" >&2
        status=1
    fi
    [ $status = 0 ] && echo "$lib: exports the $(echo "$declared" | wc -l) functions of $header, nothing else"
done
exit $status
