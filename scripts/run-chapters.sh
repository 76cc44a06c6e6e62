#!/usr/bin/env bash
# run-chapters.sh: install what is missing, configure, build, and run every chapter in order.
# A chapter that needs a GPU says so (exit 77) on a machine without one, and the run goes on.
#
#   scripts/run-chapters.sh              # full runs
#   scripts/run-chapters.sh --quick      # extra arguments go to every program
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$workbook_root"
"$workbook_root/scripts/install-deps.sh"
workbook_build

failed=()
skipped=()
for dir in [0-9][0-9]_*/; do
  chapter=${dir%/}
  program=${chapter#[0-9][0-9]_}
  [[ -x $workbook_build_dir/$chapter/$program ]] || continue
  printf '\n===== %s =====\n' "$chapter"
  started=$EPOCHREALTIME
  set +e
  "$workbook_build_dir/$chapter/$program" "$@"
  status=$?
  set -e
  seconds=$(awk -v from="$started" -v to="$EPOCHREALTIME" 'BEGIN { printf "%.1f", to - from }')
  case $status in
    0) echo "($chapter: passed in $seconds s)" ;;
    77) echo "($chapter skipped: no usable GPU)"; skipped+=("$chapter") ;;
    *) echo "($chapter: exit $status after $seconds s)"; failed+=("$chapter (exit $status)") ;;
  esac
done
if ((${#failed[@]})); then
  printf '\nFailed: %s\n' "${failed[*]}"
  exit 1
fi
if ((${#skipped[@]})); then
  printf '\nEvery chapter ran; %d of them need a GPU and were skipped: %s\n' "${#skipped[@]}" "${skipped[*]}"
else
  printf '\nEvery chapter ran and passed.\n'
fi
