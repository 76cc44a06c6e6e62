# env.sh: sourced by the scripts in this folder. Puts the CUDA toolkit on PATH where it was
# installed without being added there (the usual case for /usr/local/cuda).
if ! command -v nvcc >/dev/null 2>&1; then
  for cuda_bin in /usr/local/cuda/bin /opt/cuda/bin; do
    if [[ -x $cuda_bin/nvcc ]]; then export PATH="$PATH:$cuda_bin"; break; fi
  done
fi
workbook_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# On a CI machine, build one GPU architecture (plus PTX) instead of five: same code, shorter build.
if [[ -n ${WORKBOOK_PRESET:-} ]]; then :
elif [[ ${CI:-} == true ]]; then WORKBOOK_PRESET=ci
else WORKBOOK_PRESET=default
fi
# The build folder of each preset (CMakePresets.json).
case $WORKBOOK_PRESET in
  default) workbook_build_dir=$workbook_root/build ;;
  *) workbook_build_dir=$workbook_root/build-$WORKBOOK_PRESET ;;
esac
