#!/usr/bin/env bash
# benchmark.sh BUILD_DIR RESULTS_DIR: chapter 06's full measurement on a machine with 1-4 GPUs
# (about 4 minutes on 4 H200s). 1. topology; 2. all-reduce 8 B..1 GiB on 2..N GPUs (and on
# each smaller count); 3. dp and ddp at 5M points on all GPUs; 4. scaling (strong 5M, 100M;
# weak 100M per GPU) over 1, 2, 4; 5. PyTorch DDP on the same problems; 6. nccl-tests'
# all_reduce_perf if it is installed; 7. plots and summary.md.
set -euo pipefail
build=$1
results=$2
here=$(cd "$(dirname "$0")" && pwd)
program=$build/multi_gpu
mkdir -p "$results"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
gpus=$(nvidia-smi -L | wc -l)
status=0
nvidia-smi topo -m >"$results/nvidia_smi_topo.txt" 2>&1 || true

"$program" topology --json "$results/topology.json" | tee "$results/topology.txt" || status=1
for n in 2 4 8; do
  (( n <= gpus )) || continue
  "$program" allreduce --gpus "$n" --json "$results/allreduce_${n}gpus.json" | tee "$results/allreduce_${n}gpus.txt" || status=1
done
"$program" dp --json "$results/dp.json" | tee "$results/dp.txt" || status=1
for n in 1 2 4; do
  (( n <= gpus )) || continue
  "$program" ddp --nproc "$n" --json "$results/ddp_${n}.json" | tee "$results/ddp_${n}.txt" || status=1
  python3 "$here/pytorch_ddp.py" --nproc "$n" --json "$results/ddp_pytorch_${n}.json" | tee "$results/ddp_pytorch_${n}.txt" || status=1
done
"$program" scaling --repeats 3 --json "$results/scaling.json" | tee "$results/scaling.txt" || status=1
python3 "$here/pytorch_ddp.py" --scaling --repeats 3 --json "$results/pytorch_scaling.json" | tee "$results/pytorch_scaling.txt" || status=1
# The fault: rank 1 of 2 dies at epoch 100; the run must end, naming it, within the bound.
if (( gpus >= 2 )); then
  start=$SECONDS
  "$program" ddp --nproc 2 --fail-rank 1 --fail-epoch 100 --timeout-s 20 --json "$results/fault.json" \
    >"$results/fault.txt" 2>&1 && status=1  # it must fail
  echo "wall seconds: $((SECONDS - start))" >>"$results/fault.txt"
fi
# NCCL's own test, same flags as the measured anchors, when it is on this machine.
if command -v all_reduce_perf >/dev/null; then
  for n in 2 4; do
    (( n <= gpus )) || continue
    timeout 120 all_reduce_perf -b 8 -e 1G -f 2 -n 20 -w 5 -g "$n" >"$results/nccl_tests_${n}gpus.txt" 2>&1 || true
  done
fi
python3 "$here/plot_multi_gpu.py" "$results" | tee "$results/summary.md" || status=1
exit $status
