#!/usr/bin/env bash
# benchmark.sh [BUILD_DIR [RESULTS_DIR [STEPS]]]: chapter 06's full measurement on a machine with 1-4
# GPUs (about 10 minutes on 4 H200s, a third of it PyTorch's runs). Steps, in order: topology;
# allreduce (8 B..1 GiB on 2, 4, 8 GPUs, those there are); dp (5M points on every GPU: multi_gpu,
# and by_hand, by hand and on chip, with nn.DataParallel beside) and ddp (5M points on 1, 2, 4
# ranks, with PyTorch DDP and --nccl-nonblocking beside); mpi (ddp on 2 and 4 ranks started by Open
# MPI's mpirun, if it is there; a build without MPI refuses); exchange (the epoch's 12 bytes three
# ways, alone and in the epoch at 5M and 200M points, then training on chip from 1M to 12M points
# (5M among them) beside chapter 05's sweep of the same sizes; PyTorch's dist.all_reduce and
# symm_mem one_shot_all_reduce beside, on 2 and 4 GPUs); scaling (strong 5M, 100M; weak 100M per
# GPU, over 1, 2, 4, with each exchange; PyTorch too); fault (the launcher kills rank 1 of 2 as it
# trains, with each of the three exchanges and on chip, then stops it); network (the 2-rank ddp run
# again with NCCL's network transport forced: sockets over loopback, what ranks on two hosts
# without InfiniBand would use); nccl_tests (all_reduce_perf from 8 B to 1 GiB in one process, then
# 8 to 64 bytes one process per GPU as CUDA graphs, on plain buffers and symmetric windows, when it
# is installed); exercises (the worked answers' verdicts, exercises.txt); plot (plots and
# summary.md from whatever RESULTS_DIR holds).
# STEPS (or the STEPS environment variable) is a comma list of those names, default all of them,
# so that the measurement can be split over two runs into the same RESULTS_DIR, e.g.
#   benchmark.sh build/06_multi_gpu 06_multi_gpu/results topology,allreduce,nccl_tests,plot
#   benchmark.sh build/06_multi_gpu 06_multi_gpu/results dp,ddp,mpi,scaling,fault,plot
# BUILD_DIR defaults to build/06_multi_gpu, RESULTS_DIR to 06_multi_gpu/results; without a usable
# GPU: one line saying why, exit 77.
# GPUs counted are those this process may use: CUDA_VISIBLE_DEVICES when set, else nvidia-smi's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
all_steps=topology,allreduce,dp,ddp,mpi,exchange,scaling,fault,network,nccl_tests,exercises,plot
# Called by benchmark_start.sh before it looks for a GPU: a misspelt step is a usage error, not a
# run that measures nothing.
benchmark_check_args() {
  local step
  for step in $(tr ',' ' ' <<<"${3:-${STEPS:-$all_steps}}"); do
    if [[ ,$all_steps, != *",$step,"* ]]; then
      echo "error: 06_multi_gpu/benchmark.sh: no step '$step' (the steps: $all_steps)" >&2
      return 1
    fi
  done
}
# shellcheck source=SCRIPTDIR/../common/benchmark_start.sh
source "$here/../common/benchmark_start.sh" 06_multi_gpu multi_gpu "$@"
steps=",${3:-${STEPS:-$all_steps}},"
program=$build/multi_gpu        # the first lesson program: dp, and each ddp rank
by_hand=$build/by_hand          # the second: the exchange by hand, and on chip
bench=$build/multi_gpu_bench    # topology, allreduce, the ddp launcher, scaling, the fault
mkdir -p "$results"
# The program sets these itself in main(); PyTorch and nccl-tests do not, so they are set here too.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1

step() { [[ $steps == *",$1,"* ]]; }

installed=$(nvidia-smi -L | grep -c '^GPU ' || true)
if [[ -n ${CUDA_VISIBLE_DEVICES+set} ]]; then
  # Entries up to the first invalid one are used (as CUDA does); count the non-empty ones.
  visible=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c '[^[:space:]]' || true)
  gpus=$(( visible < installed ? visible : installed ))
else
  gpus=$installed
fi
echo "benchmark.sh: $gpus GPU(s) usable; steps ${steps//,/ }"
status=0
stamped "$results/nvidia_smi_topo.txt" nvidia-smi topo -m >/dev/null || true

if step topology; then
  "$bench" topology --json "$results/topology.json" | tee "$results/topology.txt" || status=1
fi
if step allreduce; then
  for n in 2 4 8; do
    (( n <= gpus )) || continue
    "$bench" allreduce --gpus "$n" --json "$results/allreduce_${n}gpus.json" | tee "$results/allreduce_${n}gpus.txt" || status=1
  done
fi
if step dp; then
  "$program" dp --json "$results/dp.json" | tee "$results/dp.txt" || status=1
  "$by_hand" dp --json "$results/by_hand.json" | tee "$results/by_hand.txt" || status=1
  "$by_hand" dp --on-chip --json "$results/by_hand_on_chip.json" | tee "$results/by_hand_on_chip.txt" || status=1
  # PyTorch's own nn.DataParallel (scatter, replicate, gather every step) on the same GPUs.
  stamped "$results/pytorch_data_parallel.txt" python3 "$here/pytorch_data_parallel.py" --json "$results/pytorch_data_parallel.json" || status=1
fi
if step ddp; then
  for n in 1 2 4; do
    (( n <= gpus )) || continue
    "$bench" ddp --nproc "$n" --json "$results/ddp_${n}.json" | tee "$results/ddp_${n}.txt" || status=1
    stamped "$results/ddp_pytorch_${n}.txt" python3 "$here/pytorch_ddp.py" --nproc "$n" --json "$results/ddp_pytorch_${n}.json" || status=1
    if (( n > 1 )); then  # the same run with non-blocking communicators, for the README's comparison
      "$bench" ddp --nproc "$n" --nccl-nonblocking --json "$results/nonblocking_ddp_${n}.json" \
        >"$results/nonblocking_ddp_${n}.txt" 2>&1 || status=1
    fi
  done
fi
# The same DDP run with Open MPI starting the ranks. mpirun --timeout bounds the whole job: a rank
# that is alive but stuck inside a blocking NCCL call is not stopped by anything else.
if step mpi && mpirun --version 2>/dev/null | grep -q "Open MPI"; then
  for n in 2 4; do
    (( n <= gpus )) || continue
    mpirun --allow-run-as-root --bind-to none --timeout 300 -x NCCL_NVLS_ENABLE=0 -np "$n" "$program" ddp \
      --json "$results/mpi_ddp_${n}.json" >"$results/mpi_ddp_${n}.txt" 2>&1 || status=1
    cat "$results/mpi_ddp_${n}.txt"
  done
fi
# The exchange: ours three ways (alone and in the epoch), then PyTorch's two. A PyTorch build
# without symmetric memory says so and exits 77: that run is skipped, not failed.
if step exchange; then
  # Beside the on-chip training, chapter 05's DRAM-bound variants on one GPU at the same sizes
  # (every variant but 2, capped there, and 8, on chip): the bench takes the fastest of each size.
  fused_bench=$build/../05_fused_kernels/fused_kernels_bench
  sweep=()
  if [[ -x $fused_bench ]]; then
    "$fused_bench" --sweep --sizes 1M,2M,4M,5M,6M,8M,10M,12M --variant 1,3,4,5,6,7 --json "$results/one_gpu_sweep.json" \
      >"$results/one_gpu_sweep.txt" 2>&1 || status=1
    sweep=(--one-gpu-sweep "$results/one_gpu_sweep.json")
  fi
  "$bench" exchange "${sweep[@]}" --json "$results/exchange.json" | tee "$results/exchange.txt" || status=1
  for n in 2 4; do
    (( n <= gpus )) || continue
    for x in nccl symm_mem; do
      stamped "$results/exchange_pytorch_${x}_${n}.txt" python3 "$here/pytorch_ddp.py" --nproc "$n" --exchange "$x" --json "$results/exchange_pytorch_${x}_${n}.json" || { rc=$?; (( rc == 77 )) || status=1; }
    done
  done
fi
if step scaling; then
  "$bench" scaling --repeats 3 --json "$results/scaling.json" | tee "$results/scaling.txt" || status=1
  stamped "$results/pytorch_scaling.txt" python3 "$here/pytorch_ddp.py" --scaling --repeats 3 --json "$results/pytorch_scaling.json" || status=1
fi
# The fault, from outside as a crash arrives: the launcher kills rank 1 of 2 (SIGKILL) one second
# into its training loop, with each of the three exchanges; then stops it (SIGSTOP, a hang) with
# one_shot. The run must end, naming rank 1, within its bounds. The training is long (3000 timed
# runs of 200 epochs, about 10 s) so that the signal lands while both ranks train.
if step fault && (( gpus >= 2 )); then
  fault() {  # fault NAME ARGS...: one fault run into fault_NAME.{txt,json}; it must fail
    local name=$1 start=$SECONDS
    shift
    "$bench" ddp --nproc 2 --repeats 3000 --reference-max 0 --fault-rank 1 "$@" --json "$results/fault_$name.json" \
      >"$results/fault_$name.txt" 2>&1 && status=1
    echo "wall seconds: $((SECONDS - start))" >>"$results/fault_$name.txt"
    tail -n 3 "$results/fault_$name.txt"
  }
  # With one_shot rank 0 waits on the GPU when rank 1 dies; with nccl_symmetric NCCL's symmetric
  # kernel may not heed the abort (support/nccl_comm.cpp).
  for x in nccl one_shot nccl_symmetric; do
    fault "$x" --timeout-s 20 --exchange "$x"
  done
  fault stop_one_shot --timeout-s 5 --exchange one_shot --fault-signal stop
  # On chip, rank 0 waits for rank 1 inside its persistent kernel.
  fault on_chip --timeout-s 20 --on-chip
  fault stop_on_chip --timeout-s 5 --on-chip --fault-signal stop
fi
# DDP across machines, on one: the ddp step's 2-rank run with NVLink and shared memory off for NCCL
# (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE), so that its all-reduce goes through the network transport,
# TCP sockets (NCCL_NET=Socket) over loopback (NCCL_SOCKET_IFNAME=lo): the path ranks on two hosts
# take without InfiniBand or RoCE, less the wire. Compare ddp_2_network.json with ddp_2.json.
if step network && (( gpus >= 2 )); then
  NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo \
    "$bench" ddp --nproc 2 --json "$results/ddp_2_network.json" | tee "$results/ddp_2_network.txt" || status=1
fi
# NCCL's own test, all_reduce_perf of nccl-tests, when it is on PATH (README: how to build it):
# - nccl_tests_<n>gpus.txt: 8 B to 1 GiB in one process (-g n), beside the allreduce step's busbw;
# - nccl_tests_graph_<n>gpus.txt and nccl_tests_graph_symmetric_<n>gpus.txt: 8 to 64 bytes at
#   NCCL's best for latency, the setting NVIDIA's small-message figures use: one process per GPU
#   (mpirun, for a build with MPI; else one thread per GPU, and _threads in the file names), the
#   iterations captured in a CUDA graph and replayed (-G), NCCL_GRAPH_MIXING_SUPPORT=0; plain
#   buffers, then symmetric windows (-R 2, where NCCL may choose its symmetric kernels). The
#   exchange step's nccl rows, one process per GPU as graphs, are that setting in this bench.
if step nccl_tests && ! command -v all_reduce_perf >/dev/null; then
  echo "nccl_tests: all_reduce_perf (nccl-tests) is not on PATH: skipped (README 06 says how to build it)"
elif step nccl_tests; then
  perf=$(command -v all_reduce_perf)
  for n in 2 4; do
    (( n <= gpus )) || continue
    stamped "$results/nccl_tests_${n}gpus.txt" timeout 120 "$perf" -b 8 -e 1G -f 8 -n 20 -w 5 -g "$n" >/dev/null || status=1
    linked=$(ldd "$perf" 2>/dev/null || true)
    if [[ $linked == *libmpi* ]] && mpirun --version 2>/dev/null | grep -q "Open MPI"; then
      per_gpu=(mpirun --allow-run-as-root --bind-to none --timeout 120 -x NCCL_NVLS_ENABLE=0
               -x NCCL_GRAPH_MIXING_SUPPORT=0 -np "$n" "$perf" -g 1)
      ranks=""
    else
      per_gpu=(timeout 120 "$perf" -t "$n" -g 1)
      ranks=_threads
    fi
    for buffers in 0:graph 2:graph_symmetric; do  # -R: 0 plain buffers, 2 symmetric windows
      NCCL_GRAPH_MIXING_SUPPORT=${NCCL_GRAPH_MIXING_SUPPORT:-0} stamped "$results/nccl_tests_${buffers#*:}${ranks}_${n}gpus.txt" \
        "${per_gpu[@]}" -b 8 -e 64 -f 2 -n 20 -w 5 -G 50 -R "${buffers%%:*}" >/dev/null || status=1
    done
  done
fi
if step exercises; then
  exercise_answers "$results/exercises.txt" || status=1
fi
if step plot; then
  stamped "$results/summary.md" python3 "$here/plot_multi_gpu.py" "$results" --out "$results" || status=1
fi
exit $status
