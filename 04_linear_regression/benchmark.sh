#!/usr/bin/env bash
# benchmark.sh [BUILD_DIR [RESULTS_DIR]]: chapter 04's full measurement on a GPU machine.
# The CUDA and CPU versions (5M points, 200 epochs), their per-step times (linear_regression_bench),
# the PyTorch script on cuda and cpu, part 2's pipelines (and, untimed, a Chrome trace of 8 steps of
# each at 64K, drawn by chapter 03's plot_trace.py), part 2 at every batch size, with 4 filler
# threads and on one CPU core, the cost of reading the loss back, the README's divergence and
# exercise runs, then the plots and the README table (summary.md). Every program's text output is
# kept beside its JSON.
# BUILD_DIR defaults to build/04_linear_regression, RESULTS_DIR to 04_linear_regression/results;
# without a usable GPU: one line saying why, exit 77.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/../common/benchmark_start.sh
source "$here/../common/benchmark_start.sh" 04_linear_regression linear_regression "$@"
mkdir -p "$results"
status=0

"$build/linear_regression" --json "$results/cuda.json" | tee "$results/cuda.txt" || status=1
"$build/linear_regression" --device cpu --json "$results/cpu.json" | tee "$results/cpu.txt" || status=1
# The per-step times of both, from the harness.
"$build/linear_regression_bench" --json "$results/cuda_steps.json" | tee "$results/cuda_steps.txt" || status=1
"$build/linear_regression_bench" --device cpu --json "$results/cpu_steps.json" | tee "$results/cpu_steps.txt" || status=1
stamped "$results/pytorch_cuda.txt" python3 "$here/pytorch_regression.py" --device cuda --json "$results/pytorch_cuda.json" || status=1
# Ten more epochs under torch.profiler: its Chrome trace, its top operations, how busy the GPU was.
stamped "$results/pytorch_profile.txt" python3 "$here/pytorch_regression.py" --device cuda --repeats 2 --profile "$results/pytorch_profile.json" || status=1
python3 "$here/../03_streams_events/plot_trace.py" "$results/pytorch_profile_timeline.json" \
  "$results/pytorch_profile_timeline.png" "torch.profiler: 2 epochs" || status=1
stamped "$results/pytorch_cpu.txt" python3 "$here/pytorch_regression.py" --device cpu --json "$results/pytorch_cpu.json" || status=1
# Part 2: mini-batches from host memory, CUDA pipelines then PyTorch's, the same batches in the same order.
"$build/linear_regression" --batch-size 64K --shuffle --json "$results/minibatch.json" | tee "$results/minibatch.txt" \
  || status=1
# The timeline: 8 steps of each pipeline's last epoch (the sweep's one timed run at 64K comes first).
"$build/linear_regression_bench" --batch-sizes 64K --shuffle --epochs 20 --trace "$results/minibatch_trace.json" \
  --json "$results/minibatch_trace_summary.json" | tee "$results/minibatch_trace.txt" || status=1
stamped "$results/pytorch_minibatch.txt" python3 "$here/pytorch_minibatch.py" --batch-size 64K --shuffle --epochs 20 --repeats 1 --json "$results/pytorch_minibatch.json" || status=1
# Part 2 at every batch size (the README's sweep table), the ring with 4 filler threads, the CPU twin.
"$build/linear_regression_bench" --batch-sizes 4K,16K,64K,256K,1M,4M --shuffle --epochs 20 \
  --json "$results/batch_sweep.json" | tee "$results/batch_sweep.txt" || status=1
"$build/linear_regression" --batch-size 64K --shuffle --fill-threads 4 --json "$results/minibatch_fill_threads_4.json" \
  | tee "$results/minibatch_fill_threads_4.txt" || status=1
"$build/linear_regression" --batch-size 64K --shuffle --device cpu --json "$results/minibatch_cpu.json" \
  | tee "$results/minibatch_cpu.txt" || status=1
# What one copy of a batch's size gets of the bus, four ways (64K points of x or y = 256K bytes).
"$build/linear_regression_bench" --copy-sizes 64K,128K,256K,512K,1M --json "$results/small_copies.json" \
  | tee "$results/small_copies.txt" || status=1
# Part 1's loop with the loss read back every k epochs.
"$build/linear_regression_bench" --sync-every 1,10,200 --json "$results/sync_cost.json" | tee "$results/sync_cost.txt" \
  || status=1
# The divergence case, for the README: stops with "diverged at epoch k" and exit 1; so do 50M points
# at the default rate (on one CPU core) and the exercises' lr 0.05.
"$build/linear_regression" --lr 1.0 >"$results/diverge.txt" 2>&1 && status=1 || true
"$build/linear_regression" --device cpu --points 50M --epochs 20 >"$results/diverge_50M_cpu.txt" 2>&1 && status=1 || true
# The README's "More to try" 3: lr 0.04 and 0.05 on one CPU core, noise 0.5 on the GPU.
"$build/linear_regression" --device cpu --lr 0.04 >"$results/exercise3_lr_0.04_cpu.txt" 2>&1 || status=1
"$build/linear_regression" --device cpu --lr 0.05 >"$results/exercise3_lr_0.05_cpu.txt" 2>&1 && status=1 || true
"$build/linear_regression" --noise 0.5 >"$results/exercise3_noise_0.5_cuda.txt" 2>&1 || status=1
python3 "$here/plot_regression.py" "$results" --out "$results" || status=1
python3 "$here/../03_streams_events/plot_trace.py" "$results/minibatch_trace.json" "$results/minibatch_trace.png" \
  "linear_regression_bench --trace: 8 steps of each pipeline at 64K, CUDA event timestamps per stream" || status=1
# The exercises' worked answers, judged by their checkers: the verdicts the README quotes.
exercise_answers "$results/exercises.txt" || status=1
exit $status
