#!/usr/bin/env bash
# time-quickstart.sh: the README's two Quick start commands on a fresh clone of this commit, timed,
# as a newcomer runs them (what .ci/run runs); with `tests`, the test command alone
# (scripts/run-tests.sh), as a reader with a GPU runs it. The log, with its provenance line and the
# wall time at the end, goes to test-logs/<date>_<machine>/quickstart.txt (where the README's figure
# is read) or run-tests.txt.
#
#   scripts/time-quickstart.sh          # both commands
#   scripts/time-quickstart.sh tests    # scripts/run-tests.sh alone
#
# It needs a tree with no uncommitted changes (the clone is of the commit). Exit: the commands'.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$workbook_root"
case ${1:-} in
  -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
command=(bash .ci/run)
name=quickstart
if [[ ${1:-} == tests ]]; then
  command=(scripts/run-tests.sh)
  name=run-tests
  shift
fi
if (($# > 0)); then echo "error: time-quickstart.sh takes nothing or 'tests' (see scripts/time-quickstart.sh --help)" >&2; exit 2; fi
if [[ -n $(git status --porcelain --untracked-files=no) ]]; then
  echo "error: time-quickstart.sh times a clone of the commit: commit or stash the changes first" >&2
  exit 2
fi
logs=$workbook_root/test-logs/$(date -u +%Y-%m-%d)_$(workbook_machine_name)
mkdir -p "$logs"
clone=$(mktemp -d)
trap 'rm -rf "$clone"' EXIT
git clone -q "$workbook_root" "$clone/workbook"
log=$logs/$name.txt
stamp=$(python3 common/provenance.py "${command[@]}")  # before the old log is emptied: the tree is clean
echo "$stamp" >"$log"
start=$SECONDS
(cd "$clone/workbook" && "${command[@]}") >>"$log" 2>&1
status=$?
elapsed=$((SECONDS - start))
echo "$name: exit $status after $elapsed s ($((elapsed / 60)) min $((elapsed % 60)) s) on a fresh clone" | tee -a "$log"
exit "$status"
