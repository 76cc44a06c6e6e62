#!/usr/bin/env bash
# docs.sh: the READMEs' figures, generated from results/ and checked (common/readme_figures.py).
#
#   scripts/docs.sh check     # what ctest's docs label runs: exit 0 when every README is true
#   scripts/docs.sh write     # refill every generated block from the committed results (cog -r)
#
# check fails (exit 1, one line per problem) when a generated block differs from what the files
# give (cog --check), when a file a block reads is gone, when a measured figure (a time, a rate, a
# ratio, a percentage, a test count) stands outside a generated block or is typed in a block's code,
# when one README's figures come from several runs without a line saying why, or from a modified
# tree or an unknown commit, and when a chapter README is over 600 lines.
# cog comes from .venv/ (scripts/install-deps.sh puts it there) or PATH; without it: exit 77.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$workbook_root"
usage="usage: scripts/docs.sh check|write"
case ${1:-} in
  -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  check|write) ;;
  '') echo "error: docs.sh needs a command: check or write ($usage)" >&2; exit 2 ;;
  *) echo "error: unknown command '$1' ($usage)" >&2; exit 2 ;;
esac
if (($# != 1)); then echo "error: docs.sh takes one command ($usage)" >&2; exit 2; fi
python=python3
[[ -x .venv/bin/python ]] && python=.venv/bin/python
if ! "$python" -c 'import cogapp' 2>/dev/null; then
  echo "docs.sh needs cog (PyPI's cogapp): scripts/install-deps.sh installs it into .venv/" >&2
  exit 77
fi
readmes=(README.md [0-9][0-9]_*/README.md)
if [[ $1 == write ]]; then
  exec "$python" -m cogapp -r -I common "${readmes[@]}"
fi
status=0
log=$(mktemp)
"$python" -m cogapp --check -I common "${readmes[@]}" >"$log" 2>&1 || {
  status=1
  # cog names a README whose generated text is stale as "Checking FILE  (changed)"
  sed -nE 's/^Checking (.*[^ ]) +\(changed\)$/error: \1: a generated block differs from what its results give (scripts\/docs.sh write)/p' "$log"
  grep -vE '^\s*$|^Checking |^Check failed$' "$log" | sed 's/^/error: /' | head -20
}
rm -f "$log"
"$python" common/readme_figures.py --check "${readmes[@]}" || status=1
((status)) || echo "docs: ${#readmes[@]} READMEs, every generated block as its results give it, no figure typed"
exit "$status"
