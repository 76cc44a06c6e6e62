#!/usr/bin/env bash
# run-tests.sh: install what is missing, configure, build, and run every Catch2 check with ctest.
# On a machine without a GPU the GPU cases are skipped; the run ends with their reasons, then
# ctest's summary line again. Tests run side by side, one per core up to 8 (-j N, or
# CTEST_PARALLEL_LEVEL, says otherwise); those that need a machine to themselves (RUN_SERIAL:
# free-memory readings, every GPU at once, time bounds, the exercise checkers' build) run alone.
#
#   scripts/run-tests.sh                 # everything
#   scripts/run-tests.sh -L cpu          # extra arguments go to ctest (-L gpu, -R '^02_', ...)
set -euo pipefail
case ${1:-} in
  -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
# ctest runs everything when it does not know an option: a typo is refused here instead, before
# the build. Values (after -L, -R, -j, ...) are ctest's to check.
args=("$@")
parallel=  # a -j given here, or CTEST_PARALLEL_LEVEL, wins over the default
[[ -n ${CTEST_PARALLEL_LEVEL:-} ]] && parallel=yes
for ((i = 0; i < ${#args[@]}; i++)); do
  arg=${args[i]}
  case $arg in
    -L|-LE|-R|-E|-I|--label-regex|--label-exclude|--tests-regex|--exclude-regex|--timeout|--repeat)
      # ctest would take a missing value as "no filter" and run everything
      ((i + 1 < ${#args[@]})) && [[ -n ${args[i + 1]} ]] ||
        { echo "error: run-tests.sh: $arg needs a value (see scripts/run-tests.sh --help)" >&2; exit 2; }
      i=$((i + 1)) ;;
    -j|--parallel) parallel=yes; [[ ${args[i + 1]:-} =~ ^[0-9]+$ ]] && i=$((i + 1)) ;;  # its number, if it has one
    -j[0-9]*|--parallel=*) parallel=yes ;;
    -V|-VV|-N|-L?*|-R?*|-E?*) ;;
    --output-on-failure|\
    --stop-on-failure|--rerun-failed|--show-only|--schedule-random|--verbose|--extra-verbose|--no-tests=*|\
    --label-regex=*|--label-exclude=*|--tests-regex=*|--exclude-regex=*|--timeout=*|--repeat=*) ;;
    -*) echo "error: run-tests.sh: '$arg' is not a ctest option it passes on (see scripts/run-tests.sh --help)" >&2
        exit 2 ;;
    *) echo "error: run-tests.sh: '$arg' is not a ctest option (a filter goes after -R or -L, e.g. -R '^02_')" >&2
       exit 2 ;;
  esac
done
source "$(dirname "$0")/env.sh"
workbook_set_up
workbook_configure
# Catch2 is for the tests only: where configure could not have it, there is nothing to test, and
# this says so in one line, before the build (scripts/run-chapters.sh builds and runs the chapters).
left_out=$(sed -n 's/^WORKBOOK_TESTS_LEFT_OUT:INTERNAL=//p' "$workbook_build_dir/CMakeCache.txt")
if [[ -n $left_out ]]; then
  echo "error: run-tests.sh: no tests to run: $left_out" >&2
  exit 1
fi
if grep -q '^WORKBOOK_BUILD_TESTS:BOOL=OFF' "$workbook_build_dir/CMakeCache.txt"; then
  echo "error: run-tests.sh: no tests to run: this build folder has WORKBOOK_BUILD_TESTS=OFF (cmake --preset default -DWORKBOOK_BUILD_TESTS=ON)" >&2
  exit 1
fi
workbook_compile
# ctest pads every result line to its longest test name; a reader gets one short line a test
# ("12/470 Passed 0.11 s  name"), cut at 120 columns where it passed or was skipped (a failure keeps
# its whole name), and ctest's list of the tests that did not run is left out (skip-reasons.sh
# follows with their count and reasons). ctest's own lines are kept in build/Testing/ctest-output.txt.
compact() {
  local interactive=()  # mawk reads its input in large blocks unless told to go line by line
  awk -W version 2>&1 | grep -qi mawk && interactive=(-W interactive)
  awk "${interactive[@]}" -v width=120 '
    /^ +Start +[0-9]+: / { next }
    /^The following tests did not run:$/ { not_run = 1; blanks = 0; next }  # with the blank line before it
    not_run && /^\t/ { next }
    not_run { not_run = 0 }
    /^$/ { blanks++; next }  # held until a line follows: none at the end, where skip-reasons.sh starts with one
    { for (; blanks > 0; blanks--) print "" }
    {
      if (!match($0, /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: /)) { print; fflush(); next }
      counter = substr($0, 1, RLENGTH); sub(/ Test .*/, "", counter)
      rest = substr($0, RLENGTH + 1)
      if (match(rest, / +Passed +[0-9.]+ sec$/)) { outcome = substr(rest, RSTART); name = substr(rest, 1, RSTART - 1) }
      else if (match(rest, /\*\*\*[A-Z].*$/)) { outcome = substr(rest, RSTART + 3); name = substr(rest, 1, RSTART - 1) }
      else { print; fflush(); next }
      sub(/ +$/, "", name); sub(/ \.+$/, "", name)
      gsub(/ +/, " ", outcome); sub(/^ /, "", outcome); sub(/ sec$/, " s", outcome)
      line = sprintf("%s %-16s %s", counter, outcome, name)
      if (outcome ~ /^(Passed|Skipped)/ && length(line) > width) line = substr(line, 1, width - 3) "..."
      print line; fflush()
    }'
}
junit=$workbook_build_dir/Testing/junit.xml
summary=$workbook_build_dir/Testing/ctest-output.txt
mkdir -p "$workbook_build_dir/Testing"
rm -f "$junit"
cores=$(nproc 2>/dev/null || echo 1)
[[ -n $parallel ]] || set -- -j "$((cores < 8 ? cores : 8))" "$@"
status=0
ctest --preset default --output-junit "$junit" "$@" 2>&1 | tee "$summary" | compact || status=$?
[[ -f $junit ]] && { "$workbook_root/scripts/skip-reasons.sh" "$junit" || true; }  # a report; never the verdict
grep -E '^[0-9]+% tests passed' "$summary" | tail -1 || true
exit "$status"
