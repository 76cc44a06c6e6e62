"""provenance.py: where a result came from, for the Python scripts and benchmark.sh. The twin of
common/provenance.cpp: the same fields, and the same one line.

    from provenance import record, line
    report["provenance"] = record()          # workbook_cli.write_json adds it to every --json
    print(line(record(), command))           # the first line of a text result

As a program, for benchmark.sh (text files written by a script or a tool the workbook does not
own: nvidia-smi, ncu, all_reduce_perf, the Python scripts' reports):

    python3 common/provenance.py [--markdown] COMMAND...    # prints the line for COMMAND

Fields: commit and tree (git, at run time: "modified" when tracked files outside */results/ and
test-logs/, the outputs, differ from the commit), gpus ([{"name", "uuid"}] from nvidia-smi, CUDA_VISIBLE_DEVICES applied to plain
indices), driver, cuda_runtime (PyTorch's CUDA where torch is loaded), cuda_toolkit (nvcc's, if on
PATH), libraries ({"torch": ...} where loaded or installed and named), host, run (WORKBOOK_RUN, the
regeneration that ran it), date (UTC) and command.
"""
import datetime
import os
import shlex
import socket
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _output(command, timeout=10):
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _git_state():
    commit = _output(["git", "-C", ROOT, "rev-parse", "HEAD"])
    if not commit:
        return "unknown", "unknown"
    changes = _output(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--", ".",
                       ":(exclude)*/results/*", ":(exclude)test-logs/*"])
    return commit, ("clean" if changes == "" else "modified" if changes else "unknown")


def _gpus():
    text = _output(["nvidia-smi", "--query-gpu=name,uuid", "--format=csv,noheader"])
    found = [dict(zip(("name", "uuid"), (f.strip() for f in row.split(",")))) for row in (text or "").splitlines()]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return found
    chosen = []
    for item in (i.strip() for i in visible.split(",")):  # CUDA stops at the first entry it cannot use
        match = [g for g in found if item.startswith("GPU-") and g.get("uuid", "").startswith(item)]
        if item.isdigit() and int(item) < len(found):
            match = [found[int(item)]]
        if not match:
            break
        chosen.append(match[0])
    return chosen


def _driver():
    try:
        with open("/proc/driver/nvidia/version") as f:
            words = f.read().split()
        # "NVRM version: NVIDIA UNIX [Open Kernel Module for x86_64|x86_64 Kernel Module]  580.159.04 ...":
        # the first word after "Module" made of digits and dots.
        return next(w for w in words[words.index("Module"):] if "." in w and w.replace(".", "").isdigit())
    except (OSError, ValueError, StopIteration):
        return (_output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]) or "none").splitlines()[0]


def _toolkit():
    text = _output(["nvcc", "--version"]) or ""
    release = [w for w in text.replace(",", " ").split() if w[:1].isdigit() and "." in w]
    return release[0] if release else "none"


def _relative(word):
    return word.replace(ROOT + os.sep, "")


def record(command=None, libraries=()):
    """The provenance of a result this process writes. `command` defaults to this script's own
    command line; `libraries` names packages to record even if not loaded yet ("torch")."""
    commit, tree = _git_state()
    torch = sys.modules.get("torch")
    versions = {}
    for name in sorted(set(libraries) | ({"torch"} if torch else set())):
        module = sys.modules.get(name)
        version = getattr(module, "__version__", None)
        if version is None:
            try:
                from importlib.metadata import version as installed_version
                version = installed_version(name)
            except Exception:  # not installed: nothing to record
                continue
        versions[name] = str(version)
    cuda_runtime = getattr(getattr(torch, "version", None), "cuda", None) if torch else None
    if command is None:
        command = sys.argv
    return {
        "commit": commit,
        "tree": tree,
        "gpus": _gpus(),
        "driver": _driver(),
        "cuda_runtime": cuda_runtime or "none",
        "cuda_toolkit": _toolkit(),
        "libraries": versions,
        "host": socket.gethostname() or "unknown",
        "run": os.environ.get("WORKBOOK_RUN") or None,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join(shlex.quote(_relative(w)) for w in command),
    }


def line(p, markdown=False):
    """One line, the same fields in the same order as provenance.cpp's provenance_line(); for a
    Markdown file, as an HTML comment (a line starting '#' would be a heading there)."""
    gpus = p["gpus"]
    where = f"{len(gpus)} x {gpus[0]['name']}" if gpus else "no GPU"
    parts = [f"commit {p['commit'][:12]} ({p['tree']})", where, f"driver {p['driver']}",
             f"CUDA runtime {p['cuda_runtime']}", f"toolkit {p['cuda_toolkit']}"]
    parts += [f"{name} {version}" for name, version in sorted(p["libraries"].items())]
    parts.append(f"host {p['host']}")
    if p["run"]:
        parts.append(f"run {p['run']}")
    text = f"provenance: {', '.join(parts)}, {p['date']}: {p['command']}"
    return f"<!-- {text} -->" if markdown else f"# {text}"


def main(argv):
    markdown = bool(argv) and argv[0] == "--markdown"
    command = argv[1:] if markdown else argv
    if not command or command[0].startswith("-"):
        print("error: usage: python3 common/provenance.py [--markdown] COMMAND... (the command whose output follows the line)",
              file=sys.stderr)
        return 2
    if any(os.path.basename(w).startswith("pytorch_") for w in command):
        try:  # the torch the script will load, and its CUDA, as the script's own JSON records them
            import torch  # noqa: F401
        except Exception:  # not installed or broken: the script says so itself
            pass
    print(line(record(command), markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
