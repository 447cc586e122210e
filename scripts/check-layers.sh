#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks the floor plan of src/ (docs/ARCHITECTURE.md): arrows point down.
#   - a file includes headers of its own layer or of layers below it;
#   - what an object file of the library calls is defined in its own layer
#     or below, and the files' call graph has no cycle (within a layer too);
#   - no file of src/ reaches MAX_LINES lines.
# Usage: scripts/check-layers.sh BUILD_DIR   (the objects of the clmad target)
set -eu
build=${1:?usage: check-layers.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
objdir=$build/CMakeFiles/clmad.dir/src
layers="base runtime lower tape broadcast ops io"
MAX_LINES=${MAX_LINES:-350}
fail=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rank() { # rank of a layer name, or nothing
    r=0
    for l in $layers; do
        [ "$l" = "$1" ] && { echo $r; return; }
        r=$((r + 1))
    done
}

# 1. Includes.
for layer in $layers; do
    mine=$(rank "$layer")
    for f in "$root"/src/"$layer"/*.[ch]; do
        grep -o '^#include "[^"]*"' "$f" | sed 's/^#include "//; s/"$//' | while read -r inc; do
            case $inc in
            */*) ;;
            *) continue ;; # public headers (clmad.h, clmad_cl.h)
            esac
            other=$(rank "${inc%%/*}")
            if [ -z "$other" ] || [ ! -f "$root/src/$inc" ]; then
                echo "include: src/$layer/${f##*/} includes \"$inc\", not a header of src/"
                echo x >> "$work/fail"
            elif [ "$other" -gt "$mine" ]; then
                echo "include: src/$layer/${f##*/} (layer $layer) includes \"$inc\", a layer above it"
                echo x >> "$work/fail"
            fi
        done
    done
done

# 2. Calls between files, from the symbols of the objects.
for layer in $layers; do
    for src in "$root"/src/"$layer"/*.c; do
        name=$layer/$(basename "$src" .c)
        o=$objdir/$name.c.o   # objects of deleted sources may linger: not read
        [ -f "$o" ] || { echo "calls: no $o (build the clmad target first)"; exit 1; }
        nm "$o" | awk -v f="$name" '$2 ~ /^[TDBR]$/ { print $3, f }' >> "$work/defs"
        nm "$o" | awk -v f="$name" '$1 == "U" { print $2, f }' >> "$work/uses"
    done
done
sort -u "$work/defs" > "$work/defs.s"
sort -u "$work/uses" > "$work/uses.s"
# user -> definer, for the symbols that the library itself defines
join "$work/uses.s" "$work/defs.s" | awk '$2 != $3 { print $2, $3 }' | sort -u > "$work/edges"
while read -r user definer; do
    ru=$(rank "${user%%/*}")
    rd=$(rank "${definer%%/*}")
    if [ "$rd" -gt "$ru" ]; then
        syms=$(join "$work/uses.s" "$work/defs.s" | awk -v u="$user" -v d="$definer" '$2 == u && $3 == d { printf "%s ", $1 }')
        echo "calls: src/$user.c (layer ${user%%/*}) calls up into src/$definer.c: $syms"
        echo x >> "$work/fail"
    fi
done < "$work/edges"
if ! tsort "$work/edges" > /dev/null 2> "$work/tsort"; then
    echo "calls: the files of src/ call each other in a cycle:"
    sed 's/^tsort: /  /' "$work/tsort"
    echo x >> "$work/fail"
fi

# 3. File sizes.
for f in "$root"/src/*/*.[ch]; do
    n=$(wc -l < "$f")
    if [ "$n" -ge "$MAX_LINES" ]; then
        echo "size: ${f#"$root"/} has $n lines (the bound is $MAX_LINES)"
        echo x >> "$work/fail"
    fi
done

if [ -s "$work/fail" ]; then
    echo "check-layers: $(wc -l < "$work/fail") problem(s)"
    exit 1
fi
echo "check-layers: $(wc -l < "$work/edges") calls between files, all downward, no cycle; every file under $MAX_LINES lines"
