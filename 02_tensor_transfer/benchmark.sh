#!/usr/bin/env bash
# benchmark.sh: chapter 02's full measurement on a GPU machine (scripts/gpu-report.sh calls it).
#
#   02_tensor_transfer/benchmark.sh [BUILD_DIR [RESULTS_DIR]]
#
# Runs tensor_transfer (default mode: 4 KiB .. 1 GiB) and pytorch_transfer.py one after the other
# (never at once: they would share the PCIe link), then draws transfer_bandwidth.png. Text output,
# JSON and the PNG land in RESULTS_DIR. About 30 s on an H200. BUILD_DIR defaults to
# build/02_tensor_transfer, RESULTS_DIR to 02_tensor_transfer/results; without a usable GPU: one
# line saying why, exit 77.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/../common/benchmark_start.sh
source "$here/../common/benchmark_start.sh" 02_tensor_transfer tensor_transfer "$@"
mkdir -p "$results"

status=0
"$build/tensor_transfer" --json "$results/tensor_transfer.json" >"$results/tensor_transfer.txt" 2>&1 || status=$?
cat "$results/tensor_transfer.txt"
PYTHONUNBUFFERED=1 python3 "$here/pytorch_transfer.py" --json "$results/pytorch_transfer.json" \
  >"$results/pytorch_transfer.txt" 2>&1 || status=$?
cat "$results/pytorch_transfer.txt"
if [[ -f $results/tensor_transfer.json && -f $results/pytorch_transfer.json ]]; then
  python3 "$here/plot_transfer.py" "$results/tensor_transfer.json" "$results/pytorch_transfer.json" \
    "$results/transfer_bandwidth.png" | tee "$results/comparison.txt" || status=$?
fi
exit "$status"
