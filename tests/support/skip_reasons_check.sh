#!/usr/bin/env bash
# skip_reasons_check.sh: scripts/skip-reasons.sh on skip_reasons_sample.xml (five skips, made by hand)
# gives two groups: the two programs and the 4-GPU case that found no GPU as one, the two untouched
# exercises as the other.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(bash "$here/../../scripts/skip-reasons.sh" "$here/skip_reasons_sample.xml") || exit 1
printf '%s\n' "$out"
expect() { grep -qE "$1" <<<"$out" || { echo "error: no line matching: $1"; exit 1; }; }
[[ $(grep -cE '^ +[0-9]+ x ' <<<"$out") == 2 ]] || { echo "error: not 2 groups"; exit 1; }
expect '^    3 x needs a CUDA GPU: no NVIDIA driver is installed$'
expect '^    2 x not attempted yet: '
