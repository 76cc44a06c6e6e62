# env.sh: sourced by the scripts in this folder. Puts the CUDA toolkit on PATH where it was
# installed without being added there (the usual case for /usr/local/cuda).
if ! command -v nvcc >/dev/null 2>&1; then
  for cuda_bin in /usr/local/cuda/bin /opt/cuda/bin; do
    if [[ -x $cuda_bin/nvcc ]]; then export PATH="$PATH:$cuda_bin"; break; fi
  done
fi
workbook_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The build folder of the default preset (CMakePresets.json): every script builds the same way.
workbook_build_dir=$workbook_root/build

# Configure and build the default preset. Shows the build's own summary ("-- workbook: ..."
# lines: CUDA version, architectures, what is left out) rather than CMake's full output, unless
# configure fails.
workbook_build() {
  local log
  log=$(mktemp)
  if ! cmake --preset default >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  grep -E '^-- workbook:' "$log" || true
  rm -f "$log"
  cmake --build --preset default
}
