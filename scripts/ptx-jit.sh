#!/usr/bin/env bash
# ptx-jit.sh: run every lesson program as on a GPU newer than its build. With CUDA_FORCE_PTX_JIT=1
# the driver ignores the machine code in a program and compiles its PTX, as it must on a GPU the
# build has no machine code for. Each program runs with its default arguments three times: as
# built; forced through PTX with an empty compile cache (the first start on a new GPU); and forced
# again, the cache now filled (every later start). The table gives each run's exit status and
# time, and the first start's extra seconds.
#
#   scripts/ptx-jit.sh BUILD_DIR OUT_FILE
#
# OUT_FILE gets the table after its provenance line; each run's whole output goes to OUT_FILE's
# folder, ptx-jit/. Exit 0 when every run passed (or each of a program's three said it cannot run
# here: exit 77); 1 when one failed; 2 bad usage; 77 without a GPU.
set -uo pipefail
source "$(dirname "$0")/env.sh"
case ${1:-} in
  -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
(($# == 2)) || { echo "error: usage: scripts/ptx-jit.sh BUILD_DIR OUT_FILE" >&2; exit 2; }
build=$1 out=$2
[[ -d $build ]] || { echo "error: ptx-jit.sh: no build folder '$build'" >&2; exit 2; }
[[ -d $(dirname "$out") ]] || { echo "error: ptx-jit.sh: no folder for '$out'" >&2; exit 2; }
nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || { echo "ptx-jit.sh needs a GPU: nvidia-smi lists none" >&2; exit 77; }
logs=$(dirname "$out")/ptx-jit
cache=$logs/compute-cache  # the driver's compile cache, emptied before the first forced run
mkdir -p "$logs"

programs=()
for program in $(workbook_lesson_programs); do [[ -x $build/$program ]] && programs+=("$program"); done

run_once() {  # run_once LOG [VAR=VALUE...]: runs $program; prints "STATUS SECONDS"
  local log=$1 started status
  shift
  started=$EPOCHREALTIME
  env "$@" timeout --kill-after=10 300 "$build/$program" >"$log" 2>&1
  status=$?
  awk -v s="$status" -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d %.1f", s, b - a }'
}

{
  python3 "$workbook_root/common/provenance.py" scripts/ptx-jit.sh
  echo "ptx-jit: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1);" \
    "PTX in ${programs[0]}: $(cuobjdump --list-ptx "$build/${programs[0]}" 2>/dev/null | grep -oE 'sm_[0-9]+a?' | sort -u | paste -sd' ')"
  printf '%-34s %12s %12s %12s %14s\n' program "as built" "first start" "cache warm" "first's extra"
} >"$out"
failed=0
for program in "${programs[@]}"; do
  name=${program//\//.}
  rm -rf "$cache"
  read -r s0 t0 <<<"$(run_once "$logs/$name.built.txt")"
  read -r s1 t1 <<<"$(run_once "$logs/$name.first.txt" CUDA_FORCE_PTX_JIT=1 CUDA_CACHE_PATH="$cache")"
  read -r s2 t2 <<<"$(run_once "$logs/$name.warm.txt" CUDA_FORCE_PTX_JIT=1 CUDA_CACHE_PATH="$cache")"
  # 77: the program needs what this machine lacks (by_hand: two GPUs), forced or not.
  ((s0 == 0 && s1 == 0 && s2 == 0)) || ((s0 == 77 && s1 == 77 && s2 == 77)) || failed=$((failed + 1))
  printf '%-34s %12s %12s %12s %13.1fs\n' "$program" "exit $s0 ${t0}s" "exit $s1 ${t1}s" "exit $s2 ${t2}s" \
    "$(awk -v a="$t1" -v b="$t2" 'BEGIN { print a - b }')" | tee -a "$out"
done
grep -h 'CUDA_FORCE_PTX_JIT' "$logs"/*.first.txt | sed 's/^ */note: /' | sort -u | tee -a "$out"
echo "ptx-jit: ${#programs[@]} programs, $failed with a run that failed" | tee -a "$out"
((failed == 0))
