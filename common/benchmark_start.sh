# shellcheck shell=bash
# benchmark_start.sh: sourced by each chapter's benchmark.sh before it measures anything.
#
#   source "$here/../common/benchmark_start.sh" CHAPTER PROGRAM [BUILD_DIR [RESULTS_DIR]]
#
# Sets `build` (BUILD_DIR, default build/CHAPTER under the repository root) and `results`
# (RESULTS_DIR, default CHAPTER/results, so that no two chapters write into one folder), and stops
# the script with one line on stderr when it cannot measure: exit 2 when BUILD_DIR lacks PROGRAM or
# workbook_needs_gpu (built beside the chapters, in BUILD_DIR/../common), 77 when there is no usable
# GPU, with workbook_needs_gpu's reason (as every program of the workbook does).
# shellcheck disable=SC2034  # build and results are for the benchmark.sh that sources this file
build=${3:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/$1}
results=${4:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/$1/results}
benchmark_needs_gpu=$(dirname "$build")/common/workbook_needs_gpu
if [[ ! -x $build/$2 || ! -x $benchmark_needs_gpu ]]; then
  echo "$1/benchmark.sh: $build/$2 and $benchmark_needs_gpu must exist: build first" \
       "(cmake --preset default && cmake --build --preset default)" >&2
  exit 2
fi
benchmark_status=0
benchmark_why=$("$benchmark_needs_gpu" 2>&1 >/dev/null) || benchmark_status=$?
if ((benchmark_status == 77)); then
  echo "$1/benchmark.sh needs a GPU: ${benchmark_why#*needs a CUDA GPU: }" >&2
  exit 77
elif ((benchmark_status != 0)); then
  echo "$1/benchmark.sh: $benchmark_needs_gpu failed (exit $benchmark_status): $benchmark_why" >&2
  exit "$benchmark_status"
fi
unset benchmark_status benchmark_why benchmark_needs_gpu
