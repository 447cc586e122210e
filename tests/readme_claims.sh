#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks claims of README.md and docs/*.md that the text alone can be held
# to, against the repository:
#   1. the examples table of the README ("## Examples") has a row for every
#      examples/*.c that the build makes (build/example_NAME), and names no
#      other;
#   2. every `make TARGET` named in the README or docs/ (in backquotes or a
#      ```sh block) is a target of the Makefile or mk/*.mk;
#   3. every CLMAD_* environment variable that src/ or tools/ reads
#      (getenv) is documented in the README or docs/, and every one those
#      document (`CLMAD_X=...` or `$CLMAD_X`) is read by src/, tools/,
#      scripts/, mk/, the Makefile or tests/;
#   4. no issue numbers in the README (the developers' record,
#      docs/design-notes.md, keeps them).
# Usage: readme_claims.sh SOURCE_DIR
# Registered in ctest as readme_claims (tests/CMakeLists.txt).
set -euo pipefail
src=$(cd "$1" && pwd)
cd "$src"
docs=(README.md docs/*.md)
status=0
fail() { printf 'readme_claims: %s\n' "$*"; status=1; }

# 1. The examples table.
rows=$(awk '/^## /{ in_section = ($0 == "## Examples") } in_section' README.md |
    sed -n 's/^| `\([a-z_0-9]*\)` |.*/\1/p' | sort -u)
built=$(for f in examples/*.c; do basename "$f" .c; done | grep -v '_mpi$' | sort -u)
[ -n "$rows" ] || fail 'README.md: no examples table under "## Examples"'
for name in $built; do
    grep -qx "$name" <<<"$rows" || fail "README.md: examples/$name.c is built but not in the examples table"
done
for name in $rows; do
    grep -qx "$name" <<<"$built" || fail "README.md: the examples table names $name, but there is no examples/$name.c"
done

# 2. make targets.
targets=$(sed -n 's/^\([a-z][a-z0-9-]*\):.*/\1/p' Makefile mk/*.mk | sort -u)
named=$(
    for f in "${docs[@]}"; do
        # backquoted spans, and the lines of ```sh blocks
        grep -o '`[^`]*`' "$f" | tr -d '`'
        awk '/^```sh/{ b = 1; next } /^```/{ b = 0 } b' "$f"
    done | grep -oE '(^|[[:space:]])make([[:space:]]+[A-Z_]+=[^[:space:]]*)*[[:space:]]+[a-z][a-z0-9-]*' |
        awk '{ print $NF }' | sort -u)
for t in $named; do
    grep -qx "$t" <<<"$targets" || fail "\`make $t\` is named in the documentation but is no target of Makefile or mk/*.mk"
done

# 3. CLMAD_* environment variables.
read_in_src=$(grep -rhoE 'getenv\("CLMAD_[A-Z0-9_]+"\)' src tools | sed -E 's/getenv\("(.*)"\)/\1/' | sort -u)
documented=$(cat "${docs[@]}" | grep -oE '(^|[^-A-Za-z0-9_])\$?CLMAD_[A-Z0-9_]+=|\$CLMAD_[A-Z0-9_]+' |
    grep -oE 'CLMAD_[A-Z0-9_]+' | sort -u)
for v in $read_in_src; do
    grep -qw "$v" "${docs[@]}" || fail "src/ reads the environment variable $v, which neither README.md nor docs/ documents"
done
for v in $documented; do
    grep -rqE "getenv\\(\"$v\"\\)|\\\$\\{?$v\\b|\\\$\\\$\\{$v\\b" src tools scripts mk Makefile tests ||
        fail "the documentation sets the environment variable $v, which nothing reads"
done

# 4. Issue numbers.
if grep -nE '\b[Ii]ssues? [0-9]+|#[0-9]{2,}\b' README.md; then
    fail "README.md names issue numbers (keep them in docs/design-notes.md)"
fi

[ $status = 0 ] && echo "readme_claims: ok ($(wc -w <<<"$built") examples, $(wc -w <<<"$named") make targets, $(wc -w <<<"$documented") environment variables documented)"
exit $status
