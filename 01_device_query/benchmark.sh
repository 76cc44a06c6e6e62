#!/usr/bin/env bash
# benchmark.sh [BUILD_DIR [RESULTS_DIR]]: the full run whose output the README shows
# (scripts/gpu-report.sh calls this on a GPU machine): the lesson (device_query), what PyTorch
# reports for the same questions, then the bench (device_query_bench: matmuls in FP32, TF32 and
# BF16 and y = a x + y against the lesson's peaks) and pytorch_matmul.py, the same through PyTorch,
# one after the other, then two requests the programs must refuse in one line (refusals.txt).
# BUILD_DIR defaults to build/01_device_query, RESULTS_DIR to 01_device_query/results; without a
# usable GPU: one line saying why, exit 77.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/../common/benchmark_start.sh
source "$here/../common/benchmark_start.sh" 01_device_query device_query "$@"
if [[ ! -x $build/device_query_bench ]]; then
  echo "01_device_query/benchmark.sh: $build/device_query_bench must exist: build first (cmake --build --preset default)" >&2
  exit 2
fi
mkdir -p "$results"
status=0
"$build/device_query" --json "$results/device_query.json" | tee "$results/device_query.txt" || status=1
# What PyTorch reports for the same questions, for the README's side-by-side.
stamped "$results/torch_cuda.txt" python3 - "$here/../common" <<'PY' || echo "(the PyTorch side did not run: see the error above)"
import sys
sys.path.insert(0, sys.argv[1])
from workbook_needs import load
torch = load("torch")
if not torch.cuda.is_available():
    sys.exit("torch.cuda.is_available() is False: PyTorch needs a CUDA build that this driver supports")
print("torch", torch.__version__, "built with CUDA", torch.version.cuda)
print("torch.cuda.is_available()  ", torch.cuda.is_available())
print("torch.cuda.device_count()  ", torch.cuda.device_count())
print("torch.cuda.current_device()", torch.cuda.current_device())
print("torch.cuda.get_device_name()", torch.cuda.get_device_name())
p = torch.cuda.get_device_properties(0)
print("get_device_properties(0)   ", p)
free, total = torch.cuda.mem_get_info()
print(f"torch.cuda.mem_get_info()   free {free / 2**30:.2f} GiB, total {total / 2**30:.2f} GiB")
x = torch.empty(2**30, dtype=torch.uint8, device="cuda")
print(f"after a 1 GiB tensor:        allocated {torch.cuda.memory_allocated() / 2**30:.2f} GiB, "
      f"reserved {torch.cuda.memory_reserved() / 2**30:.2f} GiB, driver free {torch.cuda.mem_get_info()[0] / 2**30:.2f} GiB")
del x
print(f"after del:                   allocated {torch.cuda.memory_allocated() / 2**30:.2f} GiB, "
      f"reserved {torch.cuda.memory_reserved() / 2**30:.2f} GiB, driver free {torch.cuda.mem_get_info()[0] / 2**30:.2f} GiB")
torch.cuda.empty_cache()
print(f"after empty_cache():         allocated {torch.cuda.memory_allocated() / 2**30:.2f} GiB, "
      f"reserved {torch.cuda.memory_reserved() / 2**30:.2f} GiB, driver free {torch.cuda.mem_get_info()[0] / 2**30:.2f} GiB")
PY

# Matmuls and an element-wise kernel against the peaks that device_query printed.
"$build/device_query_bench" --json "$results/device_query_bench.json" | tee "$results/device_query_bench.txt" \
  || status=1
PYTHONUNBUFFERED=1 stamped "$results/pytorch_matmul.txt" python3 "$here/pytorch_matmul.py" --json "$results/pytorch_matmul.json" || status=1
# What a reader sees when a request cannot be met: a device index past the last one (PyTorch:
# torch.cuda.set_device(n) -> "invalid device ordinal") and a size larger than the GPU's free memory.
rm -f "$results/refusals.txt"
device_count=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["runtime"]["device_count"])' \
  "$results/device_query.json") || status=1
refused "$results/refusals.txt" "$build/device_query" --device "${device_count:-0}" || status=1
refused "$results/refusals.txt" "$build/device_query_bench" --axpy-elements 500G || status=1
# The exercises' worked answers, judged by their checkers: the verdicts the README quotes.
exercise_answers "$results/exercises.txt" || status=1
exit "$status"
