#!/usr/bin/env bash
# regenerate.sh: remake every figure the READMEs quote, from one clean commit on one GPU machine.
#
#   scripts/regenerate.sh [--resume] [STEP...]
#
# Steps, in order (default: all of them):
#   build      configure and build everything for this machine's GPUs, in build-regen/build
#   01 .. 05   the chapter's benchmark.sh on the first GPU (CUDA_VISIBLE_DEVICES=0)
#   06         06_multi_gpu/benchmark.sh on every GPU (its runs on 1, 2 and 4 of them are its own)
#   06:A,B,..  a part of it, benchmark.sh's own steps A, B (e.g. 06:topology,allreduce,dp), so that
#              06 fits calls of ten minutes; 06 is done once each of its steps has passed
#   small-gpu  every program with all but 8 GiB of the first GPU held by another process
#              (scripts/small-gpu.sh); ptx-jit: every lesson program forced through PTX, as on a GPU
#              newer than the build (scripts/ptx-jit.sh). Their tables go to test-logs/<run>/.
#   tests      ctest, every label but sanitize; tests-sanitize: the compute-sanitizer cases
#   install    each chapter this run measured has its results/ replaced by what the run wrote (the
#              others keep theirs), then the READMEs' figures regenerated (scripts/docs.sh write)
# The measuring steps write into build-regen/staged/<chapter>/, never into the tree, so the tree
# stays clean until install. Test logs go to test-logs/<run>/ (ctest's, compute-sanitizer's).
#
# It refuses a tree with uncommitted changes: every result says which commit made it. A lent GPU
# runs ten minutes at a time, so the run can stop between steps and go on: --resume skips the
# steps already done by a run of the same commit (build-regen/run.txt says which), and refuses to
# mix commits. Every program and script records the run's name (WORKBOOK_RUN, e.g.
# 2026-11-28_4xH100-80GB-HBM3; a second run of another commit on the same day and kind of machine
# is 2026-11-28_4xH100-80GB-HBM3_2) in its results' provenance, and the READMEs check that a
# chapter's figures come from one run. Exit 0 when every step asked for passed; 1 when one failed
# (the run goes on with the next); 2 bad usage; 77 without a GPU.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$workbook_root"
readonly all_steps=(build 01 02 03 04 05 06 small-gpu ptx-jit tests tests-sanitize install)
usage="usage: scripts/regenerate.sh [--resume] [STEP...] (steps: ${all_steps[*]}, or 06:A,B,... for some of 06's)"
# 06's benchmark.sh takes some of its steps at a time (its all_steps line lists them).
readonly steps_06=$(sed -n 's/^all_steps=//p' 06_multi_gpu/benchmark.sh 2>/dev/null)
resume=0
steps=()
for arg in "$@"; do
  case $arg in
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --resume) resume=1 ;;
    06:*)
      [[ ${arg#06:} =~ ^[a-z_]+(,[a-z_]+)*$ ]] || { echo "error: '$arg': 06: takes a comma list of benchmark.sh's steps ($usage)" >&2; exit 2; }
      IFS=, read -ra parts <<<"${arg#06:}"
      for part in "${parts[@]}"; do
        if [[ ,$steps_06, != *",$part,"* ]]; then echo "error: no step '$part' in 06_multi_gpu/benchmark.sh (its steps: $steps_06)" >&2; exit 2; fi
      done
      steps+=("$arg") ;;
    *) if [[ " ${all_steps[*]} " != *" $arg "* ]]; then echo "error: no step '$arg' ($usage)" >&2; exit 2; fi
       steps+=("$arg") ;;
  esac
done
((${#steps[@]})) || steps=("${all_steps[@]}")

work=$workbook_root/build-regen
if [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]] || ! git rev-parse -q HEAD >/dev/null 2>&1; then
  echo "error: regenerate.sh needs a git checkout with no uncommitted changes (git status), so that every result names the commit that made it" >&2
  exit 2
fi
commit=$(git rev-parse HEAD)
needs_gpu=1
[[ ${steps[*]} == install ]] && needs_gpu=0  # install only copies what a run left, and runs cog
if ((needs_gpu)) && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "regenerate.sh needs a GPU: nvidia-smi lists none on this machine" >&2
  exit 77
fi

# The run's name: the date and the machine, e.g. 2026-11-28_4xH100-80GB-HBM3. install alone
# goes on with the run there is; it may run at a later commit that changed only READMEs, tests and
# test logs (nothing that makes a result), on any machine with cog.
((needs_gpu)) || resume=1
if ((resume)) && [[ -f $work/run.txt ]]; then
  read -r run run_commit <"$work/run.txt"
  run_machine=${run#*_}
  run_machine=${run_machine%%_*}  # without a second run's number
  if ((needs_gpu)) && [[ $run_machine != "$(workbook_machine_name)" ]]; then
    echo "error: run $run was made on $run_machine, and this machine is $(workbook_machine_name): one run, one machine; start again without --resume" >&2
    exit 2
  fi
  if [[ $run_commit != "$commit" ]] && ((needs_gpu)); then
    echo "error: build-regen/ holds run $run of commit ${run_commit:0:12}, and HEAD is ${commit:0:12}: start again without --resume" >&2
    exit 2
  fi
  code_changes=$(git diff --name-only "$run_commit" HEAD 2>/dev/null | grep -vE '(^|/)README\.md$|^tests/|^test-logs/' |
    head -3 | paste -sd' ')
  if [[ -n $code_changes ]] || ! git cat-file -e "$run_commit" 2>/dev/null; then
    echo "error: run $run measured commit ${run_commit:0:12}; HEAD has changed more than READMEs since (${code_changes:-that commit is not here}): measure again" >&2
    exit 2
  fi
else
  ((resume == 0)) || { echo "error: --resume: build-regen/run.txt is missing, so there is no run to go on with" >&2; exit 2; }
  if [[ ${steps[0]} != build ]]; then
    echo "error: a new run starts with the build step (it empties build-regen/); to go on with the run there, add --resume" >&2
    exit 2
  fi
  run="$(date -u +%Y-%m-%d)_$(workbook_machine_name)"
  # A run's name names one commit: a name that committed results or test logs already carry gets
  # a number.
  base=$run number=1
  while git grep -q -F -e "run $run," -- '*/results/*' 'test-logs/*' 2>/dev/null; do
    number=$((number + 1)) && run=${base}_$number
  done
  rm -rf "$work" && mkdir -p "$work/done" "$work/staged"
  echo "$run $commit" >"$work/run.txt"
fi
export WORKBOOK_RUN=$run
logs=$workbook_root/test-logs/$run
mkdir -p "$work/done" "$work/staged"
build=$work/build
echo "regenerate.sh: run $run, commit ${commit:0:12}; steps: ${steps[*]}"

chapter_dir() { ls -d "$1"_*/ 2>/dev/null | head -1 | sed 's:/$::'; }

run_tests() {  # run_tests LOG CTEST_ARGS...: LOG.txt (its provenance line first) and LOG.xml (JUnit)
  local log=$1
  shift
  mkdir -p "$logs" && python3 common/provenance.py ctest "$@" >"$log.txt" &&
    ctest --test-dir "$build" "$@" -j 8 --timeout 900 --output-on-failure --output-junit "$log.xml" >>"$log.txt" 2>&1
}

run_step() {  # run_step STEP: the step's work; 0 when it passed
  local step=$1 chapter
  case $step in
    build)
      CUDAARCHS=native cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 &&
        cmake --build "$build" -j "$(nproc)" >"$work/build.log" 2>&1 ||
        { tail -30 "$work/configure.log" "$work/build.log"; return 1; } ;;
    0[1-5]|06|06:*)
      chapter=$(chapter_dir "${step%%:*}")
      local gpus=${CUDA_VISIBLE_DEVICES-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)}
      [[ $step == 06* ]] || gpus=${gpus%%,*}  # 01-05 on the first GPU; 06 on all of them
      local parts=${step#06:} log=$work/$chapter.log
      if [[ $step != 06:* ]]; then
        parts=""
        rm -rf "$work/staged/$chapter" "$work"/done/06.*
      elif [[ -f $work/done/06 ]]; then
        return 0  # the whole of 06 passed earlier in this run
      elif ! ls "$work"/done/06.* >/dev/null 2>&1; then
        rm -rf "$work/staged/$chapter" "$log"  # the first part of 06 in this run
      fi
      mkdir -p "$work/staged/$chapter"
      [[ -n $parts ]] || : >"$log"
      STEPS=$parts CUDA_VISIBLE_DEVICES=$gpus "$chapter/benchmark.sh" "$build/$chapter" "$work/staged/$chapter" >>"$log" 2>&1 ||
        { tail -5 "$log"; return 1; }
      if [[ -n $parts ]]; then  # 06 is done once each of its steps is
        IFS=, read -ra done_now <<<"$parts"
        IFS=, read -ra all_parts <<<"$steps_06"
        for part in "${done_now[@]}"; do touch "$work/done/06.$part"; done
        for part in "${all_parts[@]}"; do [[ -f $work/done/06.$part ]] || return 0; done
        # The plots and summary.md read every step's files: drawn again unless this part ended with them.
        if [[ ${done_now[-1]} != plot ]]; then
          STEPS=plot CUDA_VISIBLE_DEVICES=$gpus "$chapter/benchmark.sh" "$build/$chapter" "$work/staged/$chapter" >>"$log" 2>&1 ||
            { tail -5 "$log"; return 1; }
        fi
        touch "$work/done/06"
      fi ;;
    small-gpu|ptx-jit)  # the table into test-logs/, each program's output kept in build-regen/
      mkdir -p "$logs" "$work/$step"
      CUDA_VISIBLE_DEVICES=$(nvidia-smi --query-gpu=index --format=csv,noheader | head -1) \
        "scripts/$step.sh" "$build" "$work/$step/$step.txt"
      local status=$?
      cp "$work/$step/$step.txt" "$logs/" && return "$status" ;;
    tests)
      run_tests "$logs/ctest" -LE sanitize ;;
    tests-sanitize)
      run_tests "$logs/ctest_sanitize" -L sanitize ;;
    install)
      local installed=()
      for chapter in [0-9][0-9]_*/; do  # each results/ replaced whole, or not at all
        chapter=${chapter%/}
        if [[ ! -f $work/done/${chapter:0:2} ]]; then
          echo "install: $chapter keeps its results/ (step ${chapter:0:2} has not passed in this run)"
          continue
        fi
        rm -rf "$chapter/results.new" && cp -r "$work/staged/$chapter" "$chapter/results.new" &&
          rm -rf "$chapter/results" && mv "$chapter/results.new" "$chapter/results" || return 1
        installed+=("$chapter")
      done
      ((${#installed[@]})) || { echo "install: no chapter's step has passed in run $run: nothing to install"; return 1; }
      echo "install: results/ of ${installed[*]} from run $run"
      scripts/docs.sh write || { echo "install: the results are in place, the READMEs not refilled (scripts/docs.sh write)"; return 1; } ;;
  esac
}

status=0
for step in "${steps[@]}"; do
  # A step is done once per run; the build only while its folder is still there (a fresh machine
  # that resumes a run builds again).
  done_already=0
  [[ -f $work/done/$step && $step != install && ($step != build || -f $build/CMakeCache.txt) ]] && done_already=1
  if [[ $step == 06:* ]]; then  # a part of 06: done when each of its steps is, or the whole of 06
    done_already=1
    IFS=, read -ra parts <<<"${step#06:}"
    for part in "${parts[@]}"; do [[ -f $work/done/06.$part ]] || done_already=0; done
    [[ -f $work/done/06 ]] && done_already=1
  fi
  if ((done_already)); then
    echo "== $step: done earlier in this run"
    continue
  fi
  start=$SECONDS
  echo "== $step"
  if run_step "$step"; then
    [[ $step == 06:* ]] || touch "$work/done/$step"
    echo "   passed after $((SECONDS - start)) s"
  else
    status=1
    echo "   FAILED after $((SECONDS - start)) s (logs in build-regen/ and test-logs/$run/)"
  fi
done
grep -hE 'tests passed|tests failed' "$logs"/ctest*.txt 2>/dev/null
exit "$status"
