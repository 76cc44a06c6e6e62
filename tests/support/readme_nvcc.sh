#!/usr/bin/env bash
# readme_nvcc.sh README...: builds every one-line nvcc command of the READMEs, as a reader types it
# from the workbook's root, each into a temporary folder (for build/nvcc), as many at once as the
# machine has cores. Without a GPU, -arch=native becomes -arch=sm_90 (native needs a GPU to ask).
# With ccache installed, nvcc's host compiler runs through it, with a cache of this run's own: the
# common/*.cpp files every chapter's line compiles are then compiled once per set of flags, not
# eight times (what each line builds is the same; nothing is kept from an earlier run). A .cu file
# gains nothing: nvcc's temporary file names are in what it hands the host compiler.
# Exit 0 when every one compiled and linked; 1 naming each that did not, or a README without one.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if command -v ccache >/dev/null; then
  mkdir -p "$out/ccache-bin"
  for compiler in gcc g++ cc c++; do ln -s "$(command -v ccache)" "$out/ccache-bin/$compiler"; done
  export PATH="$out/ccache-bin:$PATH" CCACHE_DIR="$out/ccache" CCACHE_NOHASHDIR=1
fi
native=1
nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || native=0
status=0
n=0
build() {  # build N README COMMAND: one command into $out/N, its log beside
  local dir=$out/$1 readme=$2 typed=$3 command
  mkdir -p "$dir"
  command=${typed//build\/nvcc/$dir}
  ((native)) || command=${command//-arch=native/-arch=sm_90}
  if bash -c "$command" >"$dir.log" 2>&1; then
    echo "built ($readme): ${typed:0:120}..."
  else
    { echo "error: $readme: this nvcc command fails:"; echo "  $typed"; head -20 "$dir.log"; } >"$dir.failed"
    return 1
  fi
}
for readme in "$@"; do
  mapfile -t commands < <(grep -E '^mkdir -p build/nvcc && nvcc ' "$readme")
  if ((${#commands[@]} == 0)); then
    echo "error: $readme has no one-line nvcc command (mkdir -p build/nvcc && nvcc ...)"
    status=1
  fi
  for command in "${commands[@]}"; do
    while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n; done
    n=$((n + 1))  # here, not in the job: a background job's arithmetic stays in its subshell
    build "$n" "$readme" "$command" &
  done
done
wait
cat "$out"/*.failed 2>/dev/null && status=1
exit "$status"
