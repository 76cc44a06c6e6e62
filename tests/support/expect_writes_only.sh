#!/bin/sh
# expect_writes_only.sh PYTHON MODULE "FILES" SCRIPT ARGS...: runs PYTHON SCRIPT ARGS in an empty
# folder, with @OUT@ in ARGS replaced by a second empty folder, and passes when it exits 0, leaves
# the first folder empty and writes exactly FILES (space-separated names) into the second: a script
# writes only where it is told. Exit 77 (skipped) where PYTHON cannot import MODULE ("-": none).
python=$1
module=$2
expected=$3
shift 3
if [ "$module" != - ] && ! "$python" -c "import $module" >/dev/null 2>&1; then
  echo "skipped: needs $module for $python"
  exit 77
fi
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
mkdir "$work/cwd" "$work/out"
for arg do  # each argument with @OUT@ replaced, in order
  shift
  set -- "$@" "$(printf '%s' "$arg" | sed "s|@OUT@|$work/out|g")"
done
(cd "$work/cwd" && "$python" "$@") || { echo "expected exit code 0, got $?"; exit 1; }
left=$(ls -A "$work/cwd")
if [ -n "$left" ]; then echo "wrote into the current folder: $left"; exit 1; fi
written=$(ls -A "$work/out" | tr '\n' ' ' | sed 's/ $//')
wanted=$(printf '%s\n' $expected | sort | tr '\n' ' ' | sed 's/ $//')
if [ "$written" != "$wanted" ]; then echo "expected to write '$wanted', wrote '$written'"; exit 1; fi
