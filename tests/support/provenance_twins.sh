#!/usr/bin/env bash
# provenance_twins.sh PYTHON PROGRAM: the C++ record (PROGRAM --device cpu --quick --json) and the
# Python one (common/provenance.py) have the same fields, and the same values for what both see of
# this machine and run: host, GPUs, driver, toolkit, libraries, run. (The commit is the build's in
# C++ and the checkout's in Python; the CUDA runtime is the program's own, or PyTorch's.)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
json=$(mktemp --suffix=.json)
trap 'rm -f "$json"' EXIT
WORKBOOK_RUN=twins "$2" --device cpu --quick --json "$json" >/dev/null || { echo "error: $2 failed"; exit 1; }
WORKBOOK_RUN=twins "$1" - "$json" "$root/common" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
import provenance
cpp = json.load(open(sys.argv[1]))["provenance"]
py = provenance.record()
problems = [f"fields: C++ {sorted(cpp)}, Python {sorted(py)}"] if sorted(cpp) != sorted(py) else []
problems += [f"{k}: C++ {cpp.get(k)!r}, Python {py.get(k)!r}" for k in
             ("host", "gpus", "driver", "cuda_toolkit", "libraries", "run") if cpp.get(k) != py.get(k)]
print("\n".join(f"error: {p}" for p in problems) or f"the same fields; the same {', '.join(('host', 'gpus', 'driver', 'cuda_toolkit', 'libraries', 'run'))}")
sys.exit(1 if problems else 0)
PY
