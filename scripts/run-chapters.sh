#!/usr/bin/env bash
# run-chapters.sh: install what is missing, configure, build, and run every chapter in order.
# A chapter that needs a GPU says so (exit 77) on a machine without one, and the run goes on; one
# whose program also takes `--device cpu` (04: the same training on the CPU twins) then runs that way.
#
#   scripts/run-chapters.sh              # full runs
#   scripts/run-chapters.sh --quick      # small sizes, in every program
#   scripts/run-chapters.sh --device 1   # another GPU
# Only --quick and --device go to the programs (every chapter's program takes both); anything else
# is refused before the build. A program that refuses them (exit 2) stops the run with exit 2.
set -euo pipefail
case ${1:-} in
  -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
# A --device of the reader's own is kept: the CPU fallback below would add a second one.
device_given=0
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --quick) ;;
    --device=* | --device)
      if [[ ${args[i]} == --device ]]; then i=$((i + 1)); value=${args[i]:-}; else value=${args[i]#--device=}; fi
      # Every chapter's program takes these; `cpu` only 04's (it runs that way by itself without a GPU).
      [[ $value =~ ^(0|[1-9][0-9]{0,8}|cuda|cuda:(0|[1-9][0-9]{0,8}))$ ]] ||
        { echo "error: run-chapters.sh: --device must be N, cuda or cuda:N, got '$value'" >&2; exit 2; }
      device_given=1 ;;
    *) echo "error: run-chapters.sh passes only --quick and --device to the programs, got '${args[i]}' (see scripts/run-chapters.sh --help)" >&2
       exit 2 ;;
  esac
done
source "$(dirname "$0")/env.sh"
workbook_set_up
workbook_build

failed=()
skipped=()
on_cpu=()
programs=0
# A chapter's program is named after it (06_multi_gpu: multi_gpu); a chapter with a second lesson
# program names it in its CMakeLists.txt (OTHER_LESSON by_hand), and it runs next.
for dir in [0-9][0-9]_*/; do
  chapter_dir=${dir%/}
  for program in "${chapter_dir#[0-9][0-9]_}" $(sed -n 's/.*OTHER_LESSON \([a-z_0-9]*\).*/\1/p' "$chapter_dir/CMakeLists.txt"); do
    chapter=$chapter_dir
    [[ $program == "${chapter_dir#[0-9][0-9]_}" ]] || chapter="$chapter_dir $program"
    [[ -x $workbook_build_dir/$chapter_dir/$program ]] || continue
    printf '\n===== %s =====\n' "$chapter"
    programs=$((programs + 1))
    started=$EPOCHREALTIME
    set +e
    "$workbook_build_dir/$chapter_dir/$program" "$@"
    status=$?
    set -e
    seconds=$(awk -v from="$started" -v to="$EPOCHREALTIME" 'BEGIN { printf "%.1f", to - from }')
    case $status in
      0) echo "($chapter: passed in $seconds s)" ;;
      2) echo "run-chapters.sh: $chapter refused the arguments '$*' (its reason above); stopping" >&2; exit 2 ;;
      77)
        if ((!device_given)) && "$workbook_build_dir/$chapter_dir/$program" --help 2>/dev/null | grep -q 'cpu, N'; then
          echo "($chapter: no usable GPU; running it on the CPU instead: $program --device cpu)"
          set +e
          "$workbook_build_dir/$chapter_dir/$program" "$@" --device cpu
          status=$?
          set -e
          seconds=$(awk -v from="$started" -v to="$EPOCHREALTIME" 'BEGIN { printf "%.1f", to - from }')
          if ((status == 0)); then
            echo "($chapter: passed on the CPU in $seconds s)"; on_cpu+=("$chapter")
          else
            echo "($chapter: exit $status on the CPU after $seconds s)"; failed+=("$chapter --device cpu (exit $status)")
          fi
        else
          echo "($chapter skipped: no usable GPU)"; skipped+=("$chapter")
        fi ;;
      *) echo "($chapter: exit $status after $seconds s)"; failed+=("$chapter (exit $status)") ;;
    esac
  done
done
if ((${#failed[@]})); then
  printf '\nFailed: %s\n' "${failed[*]}"
  exit 1
fi
if ((${#skipped[@]})); then
  printf -v list '%s, ' "${skipped[@]}"
  printf '\nNo program failed; %d of the %d need a GPU and were skipped: %s\n' "${#skipped[@]}" "$programs" "${list%, }"
else
  printf '\nEvery chapter ran and passed.\n'
fi
if ((${#on_cpu[@]})); then
  printf 'Without a GPU, %s ran on the CPU (--device cpu) and passed.\n' "${on_cpu[*]}"
fi
