# shellcheck shell=bash
# benchmark_start.sh: sourced by each chapter's benchmark.sh before it measures anything.
#
#   source "$here/../common/benchmark_start.sh" CHAPTER PROGRAM [BUILD_DIR [RESULTS_DIR]]
#
# First the arguments, before anything is looked for: `-h`/`--help` prints the script's header
# comment (exit 0); an option, an empty argument or more arguments than the header's synopsis
# ("# benchmark.sh [BUILD_DIR [RESULTS_DIR]]: ...", its second line) names is one line, exit 2; so
# is whatever the script's own `benchmark_check_args` function, if it defines one before sourcing
# this file, refuses (it gets the script's arguments). Then sets `build` (BUILD_DIR, default
# build/CHAPTER under the repository root) and `results` (RESULTS_DIR, default CHAPTER/results, so
# that no two chapters write into one folder), and stops the script with one line on stderr when it
# cannot measure: exit 2 when BUILD_DIR lacks PROGRAM or workbook_needs_gpu (built beside the
# chapters, in BUILD_DIR/../common), 77 when there is no usable GPU, with workbook_needs_gpu's
# reason (as every program of the workbook does).
benchmark_synopsis=$(sed -n '2s/^# benchmark.sh \([^:]*\):.*/\1/p' "$0")
benchmark_usage="usage: $1/benchmark.sh $benchmark_synopsis"
if [[ ${3:-} == -h || ${3:-} == --help ]]; then
  sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'
  exit 0
fi
benchmark_most=$(tr -cd '[' <<<"$benchmark_synopsis" | wc -c)
if (($# - 2 > benchmark_most)); then
  echo "error: $1/benchmark.sh: $(($# - 2)) arguments, at most $benchmark_most ($benchmark_usage)" >&2
  exit 2
fi
for benchmark_arg in "${@:3}"; do
  if [[ -z $benchmark_arg || $benchmark_arg == -* ]]; then
    echo "error: $1/benchmark.sh: unknown option or empty argument '$benchmark_arg' ($benchmark_usage)" >&2
    exit 2
  fi
done
if declare -F benchmark_check_args >/dev/null; then
  benchmark_check_args "${@:3}" || exit 2
fi
unset benchmark_synopsis benchmark_usage benchmark_most benchmark_arg
# shellcheck disable=SC2034  # build and results are for the benchmark.sh that sources this file
build=${3:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/$1}
results=${4:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/$1/results}
benchmark_needs_gpu=$(dirname "$build")
benchmark_needs_gpu=${benchmark_needs_gpu%/}/common/workbook_needs_gpu  # BUILD_DIR /x: /common, not //common
if [[ ! -x $build/$2 || ! -x $benchmark_needs_gpu ]]; then
  echo "error: $1/benchmark.sh: $build/$2 and $benchmark_needs_gpu must exist: BUILD_DIR is the chapter's" \
       "build folder (build/$1), built first (cmake --preset default && cmake --build --preset default)" >&2
  exit 2
fi
benchmark_status=0
benchmark_why=$("$benchmark_needs_gpu" 2>&1 >/dev/null) || benchmark_status=$?
if ((benchmark_status == 77)); then
  echo "$1/benchmark.sh needs a GPU: ${benchmark_why#*needs a CUDA GPU: }" >&2
  exit 77
elif ((benchmark_status != 0)); then
  echo "$1/benchmark.sh: $benchmark_needs_gpu failed (exit $benchmark_status): $benchmark_why" >&2
  exit "$benchmark_status"
fi
unset benchmark_status benchmark_why benchmark_needs_gpu

# stamped FILE COMMAND...: runs COMMAND with its output (stdout and stderr; a .md file stdout) on the screen and in
# FILE, after the provenance line of COMMAND (common/provenance.py; an HTML comment in a .md file).
# For the text results of the Python scripts and of tools (nvidia-smi, ncu): the C++ programs print
# their own line. Returns COMMAND's exit status.
stamped() {
  local file=$1 markdown=()
  shift
  [[ $file == *.md ]] && markdown=(--markdown)
  {
    python3 "$(dirname "${BASH_SOURCE[0]}")/provenance.py" "${markdown[@]}" "$@"
    # A Markdown file (a plot script's summary) is its stdout alone: the script's stderr line
    # naming the figures it wrote goes to the terminal, not into the table.
    if ((${#markdown[@]})); then "$@"; else "$@" 2>&1; fi
  } | tee "$file"
  return "${PIPESTATUS[0]}"
}

# refused FILE COMMAND...: runs COMMAND, which must refuse (exit 1 or 2) with one line on stderr,
# and adds "$ COMMAND" (the program by its name), that line and the exit status to FILE: the
# refusals a README quotes. The first call into a FILE that is not there writes its provenance line.
# Returns 1 when COMMAND did not refuse in one line.
refused() {
  local file=$1 err code=0 shown
  shift
  shown=("$(basename "$1")" "${@:2}")
  [[ -s $file ]] || python3 "$(dirname "${BASH_SOURCE[0]}")/provenance.py" "$@" >"$file"
  err=$("$@" 2>&1 >/dev/null) || code=$?
  printf '$ %s\n%s\n(exit %d)\n' "${shown[*]}" "$err" "$code" | tee -a "$file"
  ((code == 1 || code == 2)) && [[ $err != *$'\n'* && -n $err ]]
}

# exercise_answers FILE: every exercise checker of this chapter run on the lesson's own answer
# (BUILD_DIR/exercises/check_*_answer), each verdict under its name, into FILE: what the README's
# exercises section quotes. Returns 1 if an answer was not judged correct.
exercise_answers() {
  local file=$1 checker status=0
  python3 "$(dirname "${BASH_SOURCE[0]}")/provenance.py" "$build/exercises/check_*_answer" >"$file"
  for checker in "$build"/exercises/check_*_answer; do
    [[ -x $checker ]] || continue
    echo "\$ $(basename "$checker")" >>"$file"
    "$checker" >>"$file" 2>&1 || status=1
  done
  cat "$file"
  return "$status"
}
