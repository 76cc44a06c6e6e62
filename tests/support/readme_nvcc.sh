#!/usr/bin/env bash
# readme_nvcc.sh README: builds the README's one-line nvcc commands, as a reader would type them
# from the workbook's root, into a temporary folder (for build/nvcc). Without a GPU, -arch=native
# becomes -arch=sm_90 (native needs a GPU to ask). Exit 0 when every one compiled and linked; 1
# naming the one that did not, or when the README has none.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
readme=$1
cd "$root"
mapfile -t commands < <(grep -E '^mkdir -p build/nvcc && nvcc ' "$readme")
if ((${#commands[@]} == 0)); then
  echo "error: $readme has no one-line nvcc command (mkdir -p build/nvcc && nvcc ...)"
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for command in "${commands[@]}"; do
  typed=$command
  command=${command//build\/nvcc/$out}
  nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || command=${command//-arch=native/-arch=sm_90}
  if bash -c "$command" >"$out/log" 2>&1; then
    echo "built: ${typed:0:150}..."
  else
    echo "error: $readme: this nvcc command fails:"
    echo "  $typed"
    head -20 "$out/log"
    status=1
  fi
done
exit "$status"
