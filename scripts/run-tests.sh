#!/usr/bin/env bash
# run-tests.sh: install what is missing, configure, build, and run every Catch2 check with ctest.
# On a machine without a GPU the GPU cases are reported as skipped, each with its reason.
#
#   scripts/run-tests.sh                 # everything
#   scripts/run-tests.sh -L cpu          # extra arguments go to ctest (-L gpu, -R 02_, ...)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$workbook_root"
"$workbook_root/scripts/install-deps.sh"
cmake --preset "$WORKBOOK_PRESET" >/dev/null
cmake --build --preset "$WORKBOOK_PRESET"
ctest --preset "$WORKBOOK_PRESET" "$@"
