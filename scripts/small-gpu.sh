#!/usr/bin/env bash
# small-gpu.sh: run every chapter as on a smaller GPU. Another process first takes all but GIB GiB
# of the first visible GPU's memory (scripts/tools/hold_gpu_memory.cu); then each program runs with
# its default arguments, one at a time: the lesson programs, the bench programs and the PyTorch
# scripts. For each: its exit status, its time, the most GPU memory it used (nvidia-smi's
# memory.used, sampled every 50 ms, less what was in use before it started) and its last line.
#
#   scripts/small-gpu.sh [--gib N] [--timeout S] BUILD_DIR OUT_FILE
#
# --gib: the memory left free (default 8, as an RTX 4060); --timeout: seconds a program may run
# (default 60; one still running then is stopped and listed as such). OUT_FILE gets the table,
# after its provenance line; each program's whole output goes to OUT_FILE's folder, small-gpu/.
# Exit 0 when every program passed, refused for memory in one line, or said it cannot run here
# (exit 77, or a missing package such as torch named in one line); 1 when
# one failed, crashed or ran out of time; 2 bad usage; 77 without a GPU.
set -uo pipefail
source "$(dirname "$0")/env.sh"
usage="usage: scripts/small-gpu.sh [--gib N] [--timeout S] BUILD_DIR OUT_FILE"
gib=8 timeout_s=60
while [[ ${1:-} == --* ]]; do
  case $1 in
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --gib) gib=${2:-}; shift $(($# > 1 ? 2 : 1)) ;;
    --timeout) timeout_s=${2:-}; shift $(($# > 1 ? 2 : 1)) ;;
    *) echo "error: small-gpu.sh: unknown option '$1' ($usage)" >&2; exit 2 ;;
  esac
done
(($# == 2)) || { echo "error: $usage" >&2; exit 2; }
[[ $gib =~ ^[1-9][0-9]{0,3}$ && $timeout_s =~ ^[1-9][0-9]{0,4}$ ]] ||
  { echo "error: small-gpu.sh: --gib and --timeout take a positive whole number ($usage)" >&2; exit 2; }
build=$1 out=$2
[[ -d $build ]] || { echo "error: small-gpu.sh: no build folder '$build'" >&2; exit 2; }
[[ -d $(dirname "$out") ]] || { echo "error: small-gpu.sh: no folder for '$out'" >&2; exit 2; }
nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || { echo "small-gpu.sh needs a GPU: nvidia-smi lists none" >&2; exit 77; }
gpu=${CUDA_VISIBLE_DEVICES:-0}
gpu=${gpu%%,*}
logs=$(dirname "$out")/small-gpu
mkdir -p "$logs"

used_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i "$gpu"; }

# The holder: built here, started, and stopped when this script ends.
holder=$build/hold_gpu_memory
nvcc -std=c++17 -O2 -o "$holder" "$workbook_root/scripts/tools/hold_gpu_memory.cu" || exit 1
CUDA_VISIBLE_DEVICES=$gpu "$holder" $((gib * 1024)) >"$logs/holder.txt" 2>&1 &
holder_pid=$!
trap 'kill "$holder_pid" 2>/dev/null; wait "$holder_pid" 2>/dev/null' EXIT
for _ in $(seq 100); do grep -q '^holding' "$logs/holder.txt" && break; sleep 0.2; done
grep -q '^holding' "$logs/holder.txt" || { cat "$logs/holder.txt" >&2; echo "error: small-gpu.sh: the holder did not start" >&2; exit 1; }

# Every program a reader runs, in the chapters' order: lesson programs, bench, PyTorch scripts.
programs=()
lessons=$(workbook_lesson_programs)
for dir in "$workbook_root"/[0-9][0-9]_*/; do
  chapter=$(basename "$dir")
  for program in $(grep "^$chapter/" <<<"$lessons") "$chapter/${chapter#[0-9][0-9]_}_bench"; do
    [[ -x $build/$program ]] && programs+=("$program")
  done
  for script in "$dir"pytorch_*.py; do [[ -f $script ]] && programs+=("$chapter/$(basename "$script")"); done
done

{
  python3 "$workbook_root/common/provenance.py" scripts/small-gpu.sh --gib "$gib" --timeout "$timeout_s"
  echo "small-gpu: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader -i "$gpu") on GPU $gpu;" \
    "another process holds all but $gib GiB: $(sed -n 's/^holding \([0-9]*\) MiB.*; \([0-9]*\) MiB free/\1 MiB held, \2 MiB free/p' "$logs/holder.txt")"
  printf '%-44s %5s %8s %9s  %s\n' program exit seconds "peak MiB" "last line"
} >"$out"

passed=0 refused=0 skipped=0 failed=0
for program in "${programs[@]}"; do
  log=$logs/${program//\//.}.txt
  if [[ $program == *.py ]]; then command=(python3 "$workbook_root/$program"); else command=("$build/$program"); fi
  before=$(used_mib)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i "$gpu" -lms 50 >"$log.memory" 2>/dev/null &
  sampler=$!
  started=$EPOCHREALTIME
  timeout --kill-after=10 "$timeout_s" "${command[@]}" >"$log" 2>&1
  status=$?
  seconds=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  peak=$(sort -n "$log.memory" | tail -1)
  last=$(grep -v '^[[:space:]]*$' "$log" | tail -1 | cut -c1-150)
  case $status in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)) ;;  # needs what this machine lacks (by_hand: two GPUs)
    1)  # one line: a refusal for memory (it names MiB), or a package this machine lacks
      if [[ $(grep -c . "$log") -le 2 && $last == error:*MiB* ]]; then refused=$((refused + 1))
      elif [[ $(grep -c . "$log") -le 2 && $last == "error: this script needs "* ]]; then skipped=$((skipped + 1))
      else failed=$((failed + 1)); fi ;;
    124|137) failed=$((failed + 1)); last="(stopped after $timeout_s s) $last" ;;
    *) failed=$((failed + 1)) ;;
  esac
  printf '%-44s %5s %8s %9s  %s\n' "$program" "$status" "$seconds" "$((${peak:-$before} - before))" "$last" | tee -a "$out"
done
echo "small-gpu: ${#programs[@]} programs with $gib GiB free: $passed passed, $refused refused for memory in one line, $skipped cannot run here (exit 77, or a package missing), $failed failed or stopped" | tee -a "$out"
((failed == 0))
