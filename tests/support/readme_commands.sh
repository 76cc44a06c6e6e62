#!/usr/bin/env bash
# readme_commands.sh README BUILD_DIR: runs every command of the README's ```bash blocks that runs
# without a GPU, one line at a time from the workbook's root, as a reader types it after the Quick
# start's build. A command passes with exit 0, or 77 ("needs something this machine lacks": a GPU,
# torch). Left out: lines marked "(GPU)" (they need one, and on a GPU machine they would measure for
# minutes or write into results/) or "(writes)" (they rewrite the tree), the Quick start scripts and
# ctest (what the test command runs), cmake (the build this runs after) and nvcc (readme_nvcc.sh
# builds those). The commands name build/, the default preset's folder: for another build (ctest
# of build-regen/build, say) the test says so and exits 77.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
readme=$1
cd "$root"
if [[ $(cd "${2:-build}" 2>/dev/null && pwd) != "$root/build" ]]; then
  echo "the README's commands name build/, and this test belongs to the build in ${2:-?}: not run here"
  exit 77
fi
mapfile -t commands < <(awk '/^```bash/ {on = 1; next} /^```/ {on = 0} on' "$readme" |
  grep -vE '^\s*(#|$)' | grep -vF -e '(GPU)' -e '(writes)' |
  grep -vE '^\s*(ctest|cmake|scripts/run-tests\.sh|scripts/run-chapters\.sh)\b|nvcc ')
status=0
for command in "${commands[@]}"; do
  log=$(timeout 600 bash -c "$command" 2>&1)
  code=$?
  if ((code == 0 || code == 77)); then
    echo "exit $code: $command"
  elif ((code == 1)) && grep -q '^error: this script needs ' <<<"$log"; then
    echo "needs a package this machine lacks: $command"
  else
    echo "error: $readme: exit $code: $command"
    tail -5 <<<"$log" | sed 's/^/  /'
    status=1
  fi
done
exit "$status"
