#!/usr/bin/env bash
# gpu-report.sh: on a machine with a GPU, build for that GPU, run every ctest label (compute-
# sanitizer runs included), then each chapter's benchmark.sh, and print a short summary.
#
#   scripts/gpu-report.sh [RESULTS_DIR] [REGEX]
#
# REGEX (e.g. '^02_') limits the build to the chapters whose directory matches it, and ctest and
# the benchmarks to the matching tests and chapters. WORKBOOK_BENCHMARKS=0 skips the benchmarks.
#
# RESULTS_DIR (default: results/) receives two files: results.tar.gz, holding every log and each
# chapter's text output, JSON, CSV and plots, and summary.txt, printed last: the tests' outcome and,
# after the benchmarks, your headline figures beside the committed ones with the ratio
# (scripts/compare-results.py). The committed figures themselves come from scripts/regenerate.sh.
set -uo pipefail
case ${1:-} in
  -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
if (($# > 2)) || [[ ${1:-x} == -* || -z ${1-x} ]]; then
  echo "error: usage: scripts/gpu-report.sh [RESULTS_DIR] [REGEX]" >&2
  exit 2
fi
source "$(dirname "$0")/env.sh"
cd "$workbook_root"
# Before anything is built or written: without a GPU there is nothing to report.
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "gpu-report.sh needs a GPU: nvidia-smi lists none on this machine" >&2
  exit 77
fi
destination=$(mkdir -p "${1:-results}" && cd "${1:-results}" && pwd)
filter=${2:-}
build=$workbook_root/build-gpu
results=$build/report
rm -rf "$results" && mkdir -p "$results"
export CUDAARCHS=${CUDAARCHS:-native}

{
  date -u '+%Y-%m-%d %H:%M UTC'
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv
} | tee "$results/gpu.txt"

if ! cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWORKBOOK_CHAPTER_FILTER="$filter" \
     >"$results/configure.log" 2>&1; then
  tail -30 "$results/configure.log"; exit 1
fi
# Keep going past a chapter that does not build, so that the others still get tested.
if ! cmake --build "$build" -j "$(nproc)" -- -k 0 >"$results/build.log" 2>&1; then
  echo "== build errors (the tests of these targets will fail)"
  grep -E -A5 'error|FAILED' "$results/build.log" | head -60
fi

ctest --test-dir "$build" -j 6 --output-on-failure --timeout 900 ${filter:+-R "$filter"} \
  >"$results/ctest.log" 2>&1
ctest_status=$?

for dir in [0-9][0-9]_*/; do
  chapter=${dir%/}
  [[ ${WORKBOOK_BENCHMARKS:-1} != 0 && -x $chapter/benchmark.sh ]] || continue
  [[ -z $filter || $chapter =~ $filter ]] || continue
  mkdir -p "$results/$chapter"
  echo "== $chapter/benchmark.sh"
  start=$(date +%s)
  "$chapter/benchmark.sh" "$build/$chapter" "$results/$chapter" >"$results/$chapter/benchmark.log" 2>&1
  echo "   exit $? after $(( $(date +%s) - start )) s"
done

{
  echo "== ctest (exit $ctest_status)"
  # The verdict, each failure (not the skips: counted below) with ctest's dot padding cut, and the labels' times.
  grep -E 'tests passed|tests failed|\*\*\*(Failed|Timeout|Exception|Not Run)|^[a-z]+ += ' \
    "$results/ctest.log" | sed -E 's/ \.{3,}/ /' | head -40
  grep -E -c '\(Skipped\)' "$results/ctest.log" | sed 's/^/skipped: /'
  if [[ ${WORKBOOK_BENCHMARKS:-1} != 0 ]]; then
    echo "== your headline figures beside the committed ones"
    python3 scripts/compare-results.py "$results"
  fi
} | tee "$results/summary.txt"
tar -C "$results" -czf "$destination/results.tar.gz" .
cp "$results/summary.txt" "$destination/"
exit $ctest_status
