#!/usr/bin/env bash
# benchmark.sh [BUILD_DIR [RESULTS_DIR]]: chapter 03's full measurement on a GPU machine.
#
# Runs streams_events (default workload, JSON; its speed targets judged in targets.txt), then with
# the same calibrated iteration count streams_events_bench (the Chrome trace) and the PyTorch
# version (so all run the same compute workload), the side-by-side comparison, the --drop-wait bug
# (expected to FAIL), the variants the README discusses, and renders the trace to timeline.png.
# Everything lands in RESULTS_DIR (default 03_streams_events/results; BUILD_DIR:
# build/03_streams_events). Without a usable GPU: one line saying why, exit 77.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/../common/benchmark_start.sh
source "$here/../common/benchmark_start.sh" 03_streams_events streams_events "$@"
mkdir -p "$results"
program=$build/streams_events
bench=$build/streams_events_bench
if [[ ! -x $bench ]]; then
  echo "03_streams_events/benchmark.sh: $bench must exist: build first (cmake --build --preset default)" >&2
  exit 2
fi

# A failed check is reported (exit status in the log) but does not stop the other measurements.
"$program" --json "$results/streams_events.json" | tee "$results/streams_events.txt" ||
  echo "streams_events exit status: $?" | tee -a "$results/streams_events.txt"

# The speed targets of the asynchrony, waits and calibration sections, judged on this run (the
# tests only check that each was measured: a neighbour on the GPU moves these numbers).
stamped "$results/targets.txt" python3 - "$results/streams_events.json" <<'PY' || true
import json, sys
j = json.load(open(sys.argv[1]))
verdict = lambda ok: "met" if ok else "NOT met"
a = j["asynchrony"]
kernel_ms, launch_us, read_ms = a["kernel_ms"]["median"], a["launch_us"]["median"], a["read_blocked_ms"]["median"]
print("targets (same run):")
print(f"  launch returned after {launch_us:.1f} us, {100 * launch_us / (1000 * kernel_ms):.2f}% of the "
      f"{kernel_ms:.2f} ms kernel (target under 10%): {verdict(launch_us < 0.1 * 1000 * kernel_ms)}")
print(f"  reading the result blocked {read_ms:.3f} ms, {100 * read_ms / kernel_ms:.0f}% of the kernel "
      f"(target over 50%): {verdict(read_ms > 0.5 * kernel_ms)}")
m = {w["call"]: w["blocked_us"]["median"] for w in j["waits"]["methods"]}
gpu_side, device = m["cudaStreamWaitEvent(C, a_done)"], m["cudaDeviceSynchronize"]
print(f"  GPU-side wait blocked the host {gpu_side:.1f} us, cudaDeviceSynchronize {device:.1f} us "
      f"(target: less): {verdict(gpu_side < device)}")
c = j["workload"].get("calibration")
if c:
    compute_ms = j["stages"]["compute_ms"]["median"]
    print(f"  compute stage {compute_ms:.3f} ms for a calibration target of {c['target_ms']:.3f} ms "
          f"(target 0.5x to 2x): {verdict(0.5 * c['target_ms'] < compute_ms < 2 * c['target_ms'])}")
PY

workload() {  # workload() KEY...: a field of the default run's JSON "workload" object
  python3 -c 'import json, sys; w = json.load(open(sys.argv[1]))["workload"]
for k in sys.argv[2:]: w = w[k]
print(w)' "$results/streams_events.json" "$@"
}
iterations=$(workload iterations)
iterations_slower_copy=$(workload calibration iterations_for_slower_copy)
# The timeline of the same workload: K = 4 and the article's two streams, traced.
"$bench" --iterations "$iterations" --trace "$results/trace.json" --json "$results/timeline.json" |
  tee "$results/timeline.txt" || echo "streams_events_bench exit status: $?" | tee -a "$results/timeline.txt"
PYTHONUNBUFFERED=1 stamped "$results/pytorch_streams.txt" python3 "$here/pytorch_streams.py" --iterations "$iterations" \
  --json "$results/pytorch_streams.json" ||
  echo "pytorch_streams.py exit status: $?" | tee -a "$results/pytorch_streams.txt"
stamped "$results/comparison.txt" python3 "$here/compare_pytorch.py" "$results/streams_events.json" "$results/pytorch_streams.json" ||
  echo "compare_pytorch.py exit status: $? (1: not the same workload)" | tee -a "$results/comparison.txt"

# The missing-wait bug: the program's own check must catch it (exit 1, last line FAIL).
set +e
"$program" --drop-wait --iterations "$iterations" --streams 4 --repeats 5 >"$results/drop_wait.txt" 2>&1
status=$?
set -e
echo "--drop-wait exit status: $status (1 expected)" | tee -a "$results/drop_wait.txt"

# Variants for the README. Compute as long as the slower copy alone (the calibration target before
# the copies' shared link was measured): the bound from the stages alone then promises more than
# the link gives. Compute twice the default (the SMs clearly the bottleneck). The same bytes in 8
# big chunks instead of 64 (filling and draining the pipeline costs more).
"$program" --iterations "$iterations_slower_copy" --json "$results/variant_slower_copy.json" \
  >"$results/variant_slower_copy.txt" 2>&1 || echo "slower-copy variant: exit $?"
"$program" --iterations $((2 * iterations)) --json "$results/variant_compute_bound.json" \
  >"$results/variant_compute_bound.txt" 2>&1 || echo "compute-bound variant: exit $?"
"$program" --iterations "$iterations" --chunks 8 --chunk-elements 8388608 --json "$results/variant_8_chunks.json" \
  >"$results/variant_8_chunks.txt" 2>&1 || echo "8-chunk variant: exit $?"

# The same bytes in 512 small chunks (0.5 MiB): each operation is short, so the cost of issuing it
# from the host (Python + PyTorch dispatch versus a C++ call) starts to show.
small=(--iterations "$iterations" --chunks 512 --chunk-elements 131072)
"$program" "${small[@]}" --json "$results/small_chunks_cpp.json" >"$results/small_chunks_cpp.txt" 2>&1 ||
  echo "small-chunk C++ run: exit $?"
stamped "$results/small_chunks_pytorch.txt" python3 "$here/pytorch_streams.py" "${small[@]}" --json "$results/small_chunks_pytorch.json" >/dev/null || echo "small-chunk PyTorch run: exit $?"
stamped "$results/small_chunks_comparison.txt" python3 "$here/compare_pytorch.py" "$results/small_chunks_cpp.json" "$results/small_chunks_pytorch.json" || true

python3 "$here/plot_trace.py" "$results/trace.json" "$results/timeline.png"

# The exercises' worked answers, judged by their checkers: the verdicts the README quotes.
exercise_answers "$results/exercises.txt"
