#!/usr/bin/env sh
# SPDX-License-Identifier: Apache-2.0
# Every source file (C, OpenCL C, shell, Python, CMake, make, pkg-config
# templates, suppression files) of the repository carries an
# SPDX-License-Identifier line near its top (LICENSE: Apache-2.0).
# Usage: check-spdx.sh [SOURCE_DIR]; lists the files without one.
cd "${1:-.}" || exit 2
missing=$(find src include tools examples bench tests cl scripts cmake mk python CMakeLists.txt Makefile \
    -type f \( -name '*.c' -o -name '*.h' -o -name '*.cl' -o -name '*.clh' -o -name '*.sh' \
    -o -name '*.py' -o -name '*.cmake' -o -name '*.in' -o -name '*.mk' -o -name '*.supp' \
    -o -name CMakeLists.txt -o -name Makefile \) -print |
    sort | while read -r f; do
        head -n 5 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || echo "$f"
    done)
if [ -n "$missing" ]; then
    echo "files without 'SPDX-License-Identifier: Apache-2.0' in their first 5 lines:"
    echo "$missing"
    exit 1
fi
echo "every source file has its SPDX-License-Identifier"
