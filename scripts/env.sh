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

# Where the system's CMake is older than 3.24 (Ubuntu 22.04 has 3.22), or Ninja is missing and apt
# cannot install it, install-deps.sh puts PyPI's into .venv/ and links them, alone, in
# .venv/tools/: that folder comes first on PATH (the rest of .venv/bin, python3 included, does not).
# Called again after install-deps.sh, which may have just made it.
workbook_tools_dir=$workbook_root/.venv/tools
workbook_use_tools() {
  if [[ -d $workbook_tools_dir && :$PATH: != *":$workbook_tools_dir:"* ]]; then
    export PATH="$workbook_tools_dir:$PATH"
    hash -r
  fi
}
workbook_use_tools

# What both Quick start commands begin with: from the workbook's root, install what is missing
# (scripts/install-deps.sh), then put the tools it may have just put into .venv/ first on PATH.
workbook_set_up() {
  cd "$workbook_root" || return 1
  "$workbook_root/scripts/install-deps.sh" || return
  workbook_use_tools
}

# Every lesson program, as CHAPTER/PROGRAM, in the chapters' order: the one named after its chapter
# (06_multi_gpu: multi_gpu), then any other its CMakeLists.txt names (OTHER_LESSON by_hand).
workbook_lesson_programs() {
  local dir chapter name
  for dir in "$workbook_root"/[0-9][0-9]_*/; do
    chapter=$(basename "$dir")
    for name in "${chapter#[0-9][0-9]_}" $(sed -n 's/.*OTHER_LESSON \([a-z_0-9]*\).*/\1/p' "$dir/CMakeLists.txt"); do
      echo "$chapter/$name"
    done
  done
}

# The machine's name in a run's name (test-logs/<date>_<machine>/): "4xH200" for the GPUs this
# process may use (CUDA_VISIBLE_DEVICES applies), or "2-core-no-GPU" without one.
workbook_machine_name() {
  if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "$(nproc)-core-no-GPU"
    return
  fi
  local count
  count=$(nvidia-smi -L | grep -c '^GPU ')
  if [[ -n ${CUDA_VISIBLE_DEVICES+set} ]]; then
    count=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c '[^[:space:]]')
  fi
  echo "${count}x$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed 's/^NVIDIA //; s/ /-/g')"
}

# Configure the default preset. Shows the build's own summary ("-- workbook: ..." lines: CUDA
# version, architectures, what is left out) rather than CMake's full output, unless it fails.
workbook_configure() {
  local log
  log=$(mktemp)
  if ! cmake --preset default >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  grep -E '^-- workbook:' "$log" || true
  rm -f "$log"
}

# Configure and build the default preset.
workbook_build() {
  workbook_configure && workbook_compile
}

# Build the default preset, configured already.
workbook_compile() {
  # On a terminal ninja redraws one progress line. Into a log or a pipe it writes one line per step
  # (over 200): there only every 25th step, the last, and whatever else is printed (a compiler's
  # message, FAILED) are kept.
  if [[ -t 1 ]]; then
    cmake --build --preset default
    return
  fi
  local interactive=()  # mawk reads its input in large blocks unless told to go line by line
  awk -W version 2>&1 | grep -qi mawk && interactive=(-W interactive)
  cmake --build --preset default 2>&1 |
    awk "${interactive[@]}" '/^\[[0-9]+\/[0-9]+\] / { last = $0; if (++steps % 25) next; last = "" }
                             { print; fflush() }
                             END { if (last != "") print last }'
  return "${PIPESTATUS[0]}"
}
