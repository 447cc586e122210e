#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compiles, links and runs every ```c block of the README and of the docs/
# pages, so that the documentation cannot drift from the API.
#   - A block that defines `int main` is a complete program, taken as it is.
#   - Any other block is a fragment: its #include lines go to the top, after
#     <clmad.h> <stdio.h> <stdlib.h> <string.h> <math.h>, and the rest becomes
#     the body of `int main(void) { ... return 0; }`.
#   - The line `<!-- snippet: compile-only -->` just before the opening fence
#     compiles and links a block without running it.
# Programs link libclmad.so, libm and OpenCL (for the clmad_cl.h snippets).
# Each program runs in the test environment and must exit with status 0.
# Usage: readme_snippets.sh OUT_DIR CC INCLUDE_DIR LIBCLMAD_SO FILE.md...
# (messages name a block by FILE.md's path as given, and its line).
# Registered in ctest as readme_snippets (tests/CMakeLists.txt).
set -euo pipefail
out=$1
cc=$2
include=$3
lib=$4
shift 4
libdir=$(cd "$(dirname "$lib")" && pwd)

rm -rf "$out"
mkdir -p "$out"
count=0
ran=0
status=0
for readme in "$@"; do
doc=$(basename "$(dirname "$readme")")/$(basename "$readme")
case $doc in ./* | */README.md) doc=$(basename "$readme") ;; esac
work=$out/${doc//\//_}
mkdir -p "$work"

# Split the file into snippet_N.txt files, with snippet_N.line (the file's
# line of the block's first line) and snippet_N.run (run it) beside them.
awk -v out="$work" '
    /^```c[ \t]*$/ && !inblock {
        inblock = 1; n++
        file = sprintf("%s/snippet_%d.txt", out, n)
        printf "" > file
        printf "%d\n", NR + 1 > sprintf("%s/snippet_%d.line", out, n)
        if (prev !~ /<!-- snippet: compile-only -->/)
            printf "" > sprintf("%s/snippet_%d.run", out, n)
        next
    }
    /^```[ \t]*$/ && inblock { inblock = 0; close(file); next }
    inblock { print > file }
    { if ($0 !~ /^[ \t]*$/) prev = $0 }
    END {
        if (inblock) { print doc ": unterminated ```c block" > "/dev/stderr"; exit 1 }
    }
' doc="$doc" "$readme"

for txt in "$work"/snippet_*.txt; do
    [ -e "$txt" ] || break
    count=$((count + 1))
    base=${txt%.txt}
    name=$(basename "$base")
    line=$(cat "$base.line")
    where="$doc line $line"
    c=$base.c
    # #line directives: compiler messages give positions in the .md file.
    if grep -Eq '^[[:space:]]*int[[:space:]]+main[[:space:]]*\(' "$txt"; then
        { printf '#line %d "%s"\n' "$line" "$doc"; cat "$txt"; } >"$c"
    else
        {
            printf '#include <clmad.h>\n#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n'
            grep -E '^[[:space:]]*#[[:space:]]*include' "$txt" || true
            printf 'int main(void)\n{\n#line %d "%s"\n' "$line" "$doc"
            sed -E 's/^[[:space:]]*#[[:space:]]*include.*$//' "$txt"
            printf '    return 0;\n}\n'
        } >"$c"
    fi
    if ! "$cc" -std=c11 -Wall -Wextra -Werror=implicit-function-declaration \
        -Werror=incompatible-pointer-types -Werror=int-conversion -Wno-unused-parameter \
        -I"$include" "$c" -o "$base" "$lib" -Wl,-rpath,"$libdir" -lm -lOpenCL 2>"$base.log"; then
        echo "FAILED to compile $name ($where):"
        cat "$base.log"
        echo "--- the program, as compiled ($c):"
        cat -n "$c"
        status=1
        continue
    fi
    if [ -s "$base.log" ]; then
        echo "warnings in $name ($where):"
        cat "$base.log"
        status=1
    fi
    if [ -e "$base.run" ]; then
        if "$base" >"$base.out" 2>&1; then
            ran=$((ran + 1))
            echo "ok: $name ($where) compiled and ran"
        else
            rc=$?
            echo "FAILED: $name ($where) exited with status $rc:"
            cat "$base.out"
            status=1
        fi
    else
        echo "ok: $name ($where) compiled (compile-only)"
    fi
done
done
if [ "$count" -eq 0 ]; then
    echo "no \`\`\`c blocks found in $*"
    exit 1
fi
echo "README snippets: $count compiled, $ran ran, status $status"
exit $status
