#!/usr/bin/env bash
# compare_results_check.sh PYTHON: scripts/compare-results.py given the committed results as "yours"
# (one link per chapter, as gpu-report.sh lays out its run) prints every headline figure with the
# ratio 1.00: each figure is found in its file, on both sides.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
yours=$(mktemp -d)
trap 'rm -rf "$yours"' EXIT
for chapter in "$root"/[0-9][0-9]_*/; do
  chapter=${chapter%/}
  ln -s "$chapter/results" "$yours/$(basename "$chapter")"
done
out=$("$1" "$root/scripts/compare-results.py" "$yours") || { echo "error: exit $?"; exit 1; }
printf '%s\n' "$out"
rows=$(tail -n +2 <<<"$out")
[[ -n $rows ]] || { echo "error: no figures"; exit 1; }
if grep -v ' 1\.00  *same$' <<<"$rows"; then echo "error: the rows above are not 1.00, the same"; exit 1; fi
