#!/usr/bin/env bash
# check-exercise.sh: build one exercise from the file you edited and check it.
#
#   scripts/check-exercise.sh 04 gradient      # chapter number, exercise name
#   scripts/check-exercise.sh --list           # every exercise, and whether it is attempted yet
#
# It builds only that exercise's checker (your compile errors show here), then runs it: your
# code against the chapter's CPU twin at sizes that catch the usual mistakes, under
# compute-sanitizer's racecheck and memcheck, then timed against the chapter's own code. The
# last line is the verdict: "correct; ...", "wrong: ...; hint: ..." or "not attempted yet: ...".
# Exit codes: 0 correct, 1 wrong (or it does not compile), 2 bad usage, 77 not attempted yet or
# no GPU (after it compiled).
set -uo pipefail
source "$(dirname "$0")/env.sh"
usage="error: usage: scripts/check-exercise.sh CHAPTER EXERCISE (e.g. 04 gradient), or --list"

list_exercises() {
  local file chapter state
  for file in "$workbook_root"/[0-9][0-9]_*/exercises/*.cu; do
    [[ -e $file && $(basename "$file") != check_* ]] || continue
    chapter=$(basename "$(dirname "$(dirname "$file")")")
    state="attempted"
    grep -q 'TODO(exercise):' "$file" && state="not attempted yet"
    printf '%s %-12s %-18s %s\n' "${chapter:0:2}" "$(basename "$file" .cu)" "($state)" "${file#"$workbook_root"/}"
  done
}

case ${1:-} in
  -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --list) if [[ $# -ne 1 ]]; then echo "$usage" >&2; exit 2; fi; list_exercises; exit 0 ;;
esac
if [[ $# -ne 2 ]]; then echo "$usage" >&2; exit 2; fi
chapter_dir=$(cd "$workbook_root" && ls -d "$1"_*/ 2>/dev/null | head -1)
chapter_dir=${chapter_dir%/}
if [[ ! $1 =~ ^[0-9][0-9]$ || -z $chapter_dir ]]; then
  echo "error: no chapter $1 (the chapters are $(cd "$workbook_root" && ls -d [0-9][0-9]_*/ | cut -c1-2 | paste -sd' '))" >&2
  exit 2
fi
attempt=$workbook_root/$chapter_dir/exercises/$2.cu
if [[ ! $2 =~ ^[a-z_]+$ || ! -f $attempt || $2 == check_* ]]; then
  known=$(list_exercises | awk -v c="$1" '$1 == c { print $2 }' | paste -sd' ')
  echo "error: chapter $1 has no exercise '$2' (it has: ${known:-none})" >&2
  exit 2
fi

# Configure once (the default preset, as run-tests.sh), then build this exercise alone.
if [[ ! -f $workbook_build_dir/CMakeCache.txt ]]; then
  cmake --preset default >/dev/null || { echo "error: configuring the build failed (run: cmake --preset default)" >&2; exit 1; }
fi
build_log=$(cmake --build "$workbook_build_dir" --target "exercise_${chapter_dir}_$2" 2>&1)
build_status=$?
# The compiler's messages, without ninja's progress and the compiler's own command lines.
grep -v -E -e '^\[[0-9]+/[0-9]+\]' -e '^ninja: (no work to do|build stopped)' -e '^FAILED: ' \
  -e ' -o [^ ]*CMakeFiles/' <<<"$build_log" || true
if [[ $build_status -ne 0 ]]; then
  echo "wrong: ${attempt#"$workbook_root"/} does not compile (the compiler's errors are above)"
  exit 1
fi
exec "$workbook_build_dir/$chapter_dir/exercises/check_$2"
