#!/usr/bin/env bash
# skip-reasons.sh: after a ctest run, list why the skipped tests were skipped, grouped by reason,
# so a reader sees the reasons without `ctest -V` (ctest itself prints only "***Skipped").
#
#   scripts/skip-reasons.sh JUNIT_XML      (run-tests.sh calls it with ctest's --output-junit file)
#
# The reason is what the test printed: a Catch2 SKIP message, or a program's one-line reason. Reasons
# with one cause are one group: every test that found no GPU ("needs a CUDA GPU: ..."), every
# untouched exercise, every test that found no PyTorch.
set -euo pipefail
case ${1:-} in
  -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
if [[ $# -ne 1 || -z $1 || $1 == -* ]]; then
  echo "error: usage: scripts/skip-reasons.sh JUNIT_XML (ctest's --output-junit file)" >&2
  exit 2
fi
junit=$1
if [[ ! -f $junit ]]; then
  echo "error: $junit: no such file (run ctest with --output-junit $junit first)" >&2
  exit 2
fi
if ! grep -q '<testsuite' "$junit"; then
  echo "error: $junit: not a JUnit XML file (ctest --output-junit writes one)" >&2
  exit 2
fi
awk '
  function unescape(s) {
    gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s); gsub(/&apos;/, "\047", s)
    gsub(/&amp;/, "\\&", s)
    return s
  }
  function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
  /<testcase / {
    name = $0; sub(/.*<testcase name="/, "", name); sub(/".*/, "", name); name = unescape(name)
    skipped = ($0 ~ /status="notrun"/); in_output = 0; last = ""; message = ""; state = 0
    next
  }
  skipped && /<system-out>/ { in_output = 1; sub(/.*<system-out>/, "") }
  skipped && in_output {
    done = sub(/<\/system-out>.*/, "")
    line = trim(unescape($0))
    # Catch2 says "message:" for a SKIP alone, "messages:" when CAPTURE/INFO values come first
    # ("name := value" lines, which are context, not the reason).
    if (state == 0 && line ~ /^explicitly with messages?:$/) state = 1
    else if (state == 1 && line ~ / := /) { }
    else if (state == 1 && line != "") message = message (message == "" ? "" : " ") line
    else if (state == 1 && message != "") state = 2
    else if (state == 0 && line != "") last = line
    if (!done) next
    in_output = 0
    reason = message != "" ? message : (last != "" ? last : "(no reason printed)")
    sub(/^program reports no usable GPU: /, "", reason)
    sub(/^skipped: /, "", reason)
    # No GPU at all, whichever test found it out: one cause.
    if (sub(/^[A-Za-z_0-9]+ needs a CUDA GPU: /, "", reason)) reason = "needs a CUDA GPU: " reason
    else if (reason ~ /^needs [0-9]+ GPUs?, found 0 \(.*\)$/) {
      sub(/^needs [0-9]+ GPUs?, found 0 \(/, "", reason); sub(/\)$/, "", reason); reason = "needs a CUDA GPU: " reason
    }
    if (reason ~ / cannot import torch: /) reason = "needs PyTorch that imports and sees a GPU"
    if (reason ~ /^not attempted yet: /)
      reason = "not attempted yet: an exercise still holds its TODO(exercise): line (see scripts/check-exercise.sh --list)"
    if (!(reason in count)) order[++reasons] = reason
    count[reason]++
    total++
  }
  END {
    if (total == 0) exit
    printf "\n%d tests skipped, for these reasons:\n", total
    for (i = 1; i <= reasons; i++) {
      r = order[i]
      printf "  %3d x %s\n", count[r], r
    }
  }
' "$junit"
