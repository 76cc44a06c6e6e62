#!/usr/bin/env bash
# benchmark.sh [BUILD_DIR [RESULTS_DIR]]: chapter 02's full measurement on a GPU machine
# (scripts/gpu-report.sh calls it). Runs, one after the other (never at once: they would share the PCIe link), the lesson
# (tensor_transfer: a 256 MiB random tensor, copies of 64 MiB, non_blocking), the bench
# (tensor_transfer_bench: copies of 4 KiB .. 1 GiB, the cost of pinning) and pytorch_transfer.py,
# then draws transfer_bandwidth.png from the bench's and PyTorch's JSON. Text output, JSON and the
# PNG land in RESULTS_DIR. About 40 s on an H200. BUILD_DIR defaults to build/02_tensor_transfer,
# RESULTS_DIR to 02_tensor_transfer/results; without a usable GPU: one line saying why, exit 77.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/../common/benchmark_start.sh
source "$here/../common/benchmark_start.sh" 02_tensor_transfer tensor_transfer "$@"
program=$build/tensor_transfer
bench=$build/tensor_transfer_bench
if [[ ! -x $bench ]]; then
  echo "02_tensor_transfer/benchmark.sh: $bench must exist: build first (cmake --build --preset default)" >&2
  exit 2
fi
mkdir -p "$results"

status=0
"$program" --json "$results/tensor_transfer.json" >"$results/tensor_transfer.txt" 2>&1 || status=$?
cat "$results/tensor_transfer.txt"
"$bench" --json "$results/tensor_transfer_bench.json" >"$results/tensor_transfer_bench.txt" 2>&1 || status=$?
cat "$results/tensor_transfer_bench.txt"
PYTHONUNBUFFERED=1 stamped "$results/pytorch_transfer.txt" python3 "$here/pytorch_transfer.py" --json "$results/pytorch_transfer.json" >/dev/null || status=$?
cat "$results/pytorch_transfer.txt"
if [[ -f $results/tensor_transfer_bench.json && -f $results/pytorch_transfer.json ]]; then
  stamped "$results/comparison.txt" python3 "$here/plot_transfer.py" "$results/tensor_transfer_bench.json" "$results/pytorch_transfer.json" \
    "$results/transfer_bandwidth.png" || status=$?
fi
# The exercises' worked answers, judged by their checkers: the verdicts the README quotes.
exercise_answers "$results/exercises.txt" || status=1
exit "$status"
