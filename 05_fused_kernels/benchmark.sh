#!/usr/bin/env bash
# benchmark.sh [BUILD_DIR [RESULTS_DIR]]: chapter 05's full measurement on a GPU machine (~1.5 minutes on an H200).
# 1. the lesson's default run (5M points: every variant checked, then timed);
# 2. the bench: the sweep (9 sizes x 8 variants, CSV + JSON), then at 5M points the per-kernel
#    breakdown of variants 1 and 3 and, untimed, a Chrome trace of 3 epochs of variants 1, 3, 4, 6,
#    and the cost of variant 8's grid barrier;
# 3. the PyTorch modes over the same sizes; 4. Nsight Compute on one fused kernel at 50M points
#    (clocks left alone); 5. plots + summary.md, and the trace drawn by chapter 03's plot_trace.py.
# BUILD_DIR defaults to build/05_fused_kernels, RESULTS_DIR to 05_fused_kernels/results (the files
# the README quotes); without a usable GPU: one line saying why, exit 77.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/../common/benchmark_start.sh
source "$here/../common/benchmark_start.sh" 05_fused_kernels fused_kernels "$@"
program=$build/fused_kernels
bench=$build/fused_kernels_bench
mkdir -p "$results"
status=0
export PYTHONUNBUFFERED=1

"$program" --json "$results/fused.json" | tee "$results/fused.txt" || status=1
"$bench" --sweep --csv "$results/sweep.csv" --json "$results/sweep.json" | tee "$results/sweep.txt" || status=1
"$bench" --breakdown --trace "$results/trace.json" --json "$results/breakdown.json" | tee "$results/breakdown.txt" \
  || status=1
"$bench" --barrier --json "$results/barrier.json" | tee "$results/barrier.txt" || status=1
stamped "$results/pytorch_sweep.txt" python3 "$here/pytorch_fused.py" --csv "$results/pytorch_sweep.csv" --json "$results/pytorch_sweep.json" || status=1

# The fused kernel of variant 4 at 50M points: achieved DRAM throughput by the hardware counters.
# The 4th launch is profiled (the first three are the check run's). lr is small so that 8 epochs
# at 50M points stay finite (see sweep_lr).
if command -v ncu >/dev/null; then
  stamped "$results/ncu_fused_50M.txt" timeout 60 ncu --clock-control none --kernel-name regex:fused_sums_kernel --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis \
    "$program" --points 50000000 --epochs 8 --lr 0.0001 --variant 4 --repeats 1 --copy-mib 64 \
    >/dev/null || echo "ncu exited with $?" >>"$results/ncu_fused_50M.txt"
fi

stamped "$results/summary.md" python3 "$here/plot_fused.py" "$results" --out "$results" || status=1
python3 "$here/../03_streams_events/plot_trace.py" "$results/trace.json" "$results/trace.png" \
  "fused_kernels_bench --trace: CUDA event timestamps per variant and stream" || status=1
# The exercises' worked answers, judged by their checkers: the verdicts the README quotes.
exercise_answers "$results/exercises.txt" || status=1
exit $status
