#!/usr/bin/env bash
# plot_default_out.sh PYTHON SCRIPT RESULTS_DIR FILE...: the plot, run without --out, writes FILE...
# into build/plots/<chapter>/ and leaves RESULTS_DIR as it was (a reader's plot never rewrites the
# committed results). Exit 77 without matplotlib.
set -uo pipefail
python=$1 script=$2 results=$3
shift 3
"$python" -c 'import matplotlib' 2>/dev/null || { echo "skipped: needs matplotlib"; exit 77; }
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/build/plots/$(basename "$(dirname "$script")")
listing() { find "$results" -type f -printf '%p %s %T@\n' | sort; }
before=$(listing)
for file in "$@"; do rm -f "$out/$file"; done
"$python" "$script" "$results" >/dev/null || { echo "error: $script $results failed"; exit 1; }
for file in "$@"; do
  [[ -s $out/$file ]] || { echo "error: $out/$file was not written"; exit 1; }
done
[[ $(listing) == "$before" ]] || { echo "error: $results changed"; exit 1; }
echo "wrote $* into ${out#$root/}; $results unchanged"
