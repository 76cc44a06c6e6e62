#!/usr/bin/env bash
# docs.sh: the workbook's pages made from their templates and results/, and checked
# (common/readme_render.py; the figures' code is each folder's readme_values.py).
#
#   scripts/docs.sh check     # what ctest's docs label runs: exit 0 when every page is true
#   scripts/docs.sh write     # remake every page (README.md from README.md.in) from the committed results
#
# check fails (exit 1, one line per problem) when a page differs from what its template and
# results/ give, when a file a page reads is gone, when a measured figure (a time, a rate, a ratio,
# a percentage, a test count) is typed in a template or in a string of readme_values.py, when a
# template claims "the same run" itself, when several runs stand behind a page without a sentence
# saying why, and when a link or a chapter README's opening is broken.
# Jinja2 comes from .venv/ (scripts/install-deps.sh puts it there) or python3; without it: exit 77.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$workbook_root"
usage="usage: scripts/docs.sh check|write"
case ${1:-} in
  -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  check|write) ;;
  '') echo "error: docs.sh needs a command: check or write ($usage)" >&2; exit 2 ;;
  *) echo "error: unknown command '$1' ($usage)" >&2; exit 2 ;;
esac
if (($# != 1)); then echo "error: docs.sh takes one command ($usage)" >&2; exit 2; fi
python=python3
[[ -x .venv/bin/python ]] && python=.venv/bin/python
exec "$python" common/readme_render.py "$1"
