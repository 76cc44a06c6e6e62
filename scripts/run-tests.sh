#!/usr/bin/env bash
# run-tests.sh: install what is missing, configure, build, and run every Catch2 check with ctest.
# On a machine without a GPU the GPU cases are skipped; the run ends with their reasons, then
# ctest's summary line again.
#
#   scripts/run-tests.sh                 # everything
#   scripts/run-tests.sh -L cpu          # extra arguments go to ctest (-L gpu, -R '^02_', ...)
set -euo pipefail
case ${1:-} in
  -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
# ctest runs everything when it does not know an option: a typo is refused here instead, before
# the build. Values (after -L, -R, -j, ...) are ctest's to check.
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  arg=${args[i]}
  case $arg in
    -L|-LE|-R|-E|-I|--label-regex|--label-exclude|--tests-regex|--exclude-regex|--timeout|--repeat)
      # ctest would take a missing value as "no filter" and run everything
      ((i + 1 < ${#args[@]})) && [[ -n ${args[i + 1]} ]] ||
        { echo "error: run-tests.sh: $arg needs a value (see scripts/run-tests.sh --help)" >&2; exit 2; }
      i=$((i + 1)) ;;
    -j|-V|-VV|-N|-j[0-9]*|-L?*|-R?*|-E?*) ;;
    --parallel|--output-on-failure|\
    --stop-on-failure|--rerun-failed|--show-only|--schedule-random|--verbose|--extra-verbose|--no-tests=*|\
    --label-regex=*|--label-exclude=*|--tests-regex=*|--exclude-regex=*|--parallel=*|--timeout=*|--repeat=*) ;;
    -*) echo "error: run-tests.sh: '$arg' is not a ctest option it passes on (see scripts/run-tests.sh --help)" >&2
        exit 2 ;;
  esac
done
source "$(dirname "$0")/env.sh"
cd "$workbook_root"
"$workbook_root/scripts/install-deps.sh"
workbook_build
junit=$workbook_build_dir/Testing/junit.xml
summary=$workbook_build_dir/Testing/ctest-output.txt
mkdir -p "$workbook_build_dir/Testing"
rm -f "$junit"
status=0
ctest --preset default --output-junit "$junit" "$@" 2>&1 | tee "$summary" || status=$?
[[ -f $junit ]] && { "$workbook_root/scripts/skip-reasons.sh" "$junit" || true; }  # a report; never the verdict
grep -E '^[0-9]+% tests passed' "$summary" | tail -1 || true
exit "$status"
