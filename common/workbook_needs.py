"""workbook_needs.py: the Python packages a chapter script needs, imported when first used.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    from workbook_needs import needs, require
    torch = needs("torch")             # a stand-in; the import happens at the first torch.<name>
    plt = needs("matplotlib.pyplot")   # the Agg backend: no display is needed
    ...
    args = parser.parse_args()
    require("torch")                   # after the arguments: the import now, before any work

So `--help` and argument errors work without torch, numpy or matplotlib. A script started by a python3
that lacks a package moves, at require(), to the workbook's own .venv/ (scripts/install-deps.sh puts
numpy and matplotlib there, and it sees the system's torch), with the same arguments, before any work.
A package missing there too (or installed but broken) ends the script with one line on stderr and
exit code 1:

    error: this script needs matplotlib: pip install -r requirements-plots.txt (the repository root's)

requirements-plots.txt (numpy, matplotlib) and requirements-pytorch.txt (torch, numpy) at the repository
root list the packages and the versions the workbook was run with; requirements.txt installs both.
workbook_cli.py beside this file parses the flags by the C++ programs' rules (a bad value: one line, exit 2).
"""
import importlib
import importlib.util
import os
import subprocess
import sys

_PIP = {"torch": "pip install torch (a CUDA build that your driver supports: see requirements-pytorch.txt)",
        "matplotlib": "scripts/install-deps.sh puts it into .venv/ (or pip install -r requirements-plots.txt)",
        "numpy": "pip install -r requirements-pytorch.txt (the repository root's; read its notes on torch first)"}


_VENV = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".venv"))


def _move_to_venv(names):
    """Runs this script again with .venv/'s Python, if there is one, this is another Python, and
    that one finds every package in `names` (a Python with torch but not numpy stays with its torch)."""
    python = os.path.join(_VENV, "bin", "python3")
    if os.path.realpath(sys.prefix) == _VENV or not os.access(python, os.X_OK) or not os.path.isfile(sys.argv[0]):
        return
    probe = "import importlib.util as u, sys; sys.exit(not all(u.find_spec(n) for n in sys.argv[1:]))"
    if subprocess.run([python, "-c", probe, *{name.split(".")[0] for name in names}]).returncode != 0:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(python, [python] + sys.argv)


def _importable(name):
    try:
        return importlib.util.find_spec(name.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def load(name):
    """Imports module `name` now, or stops the script with one line naming the package."""
    package = name.split(".")[0]
    try:
        if package == "matplotlib":
            matplotlib = importlib.import_module("matplotlib")
            matplotlib.use("Agg")  # before pyplot: plots go to files
            # Titles and labels come from the command line and from result files (a device name, a
            # track name): text as written, never TeX, so a '$' cannot stop a plot.
            matplotlib.rcParams["text.parse_math"] = False
        return importlib.import_module(name)
    except ImportError as e:  # ModuleNotFoundError included
        if isinstance(e, ModuleNotFoundError) and e.name == package:
            reason = f"this script needs {package}"
        else:
            first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            reason = f"{package} is installed but does not import ({first_line})"
        print(f"error: {reason}: {_PIP.get(package, 'pip install ' + package)}", file=sys.stderr)
        sys.exit(1)


def require(*names):
    """Imports every module in `names` now: a script calls it after parsing its arguments, so that a
    missing package stops it before any work."""
    if not all(_importable(name) for name in names):
        _move_to_venv(names)
    for name in names:
        load(name)


class _Needed:
    def __init__(self, name):
        self._name = name
        self._module = None

    def __getattr__(self, attr):  # called only for names the stand-in itself does not have
        if attr in ("_name", "_module"):
            raise AttributeError(attr)
        if self._module is None:
            self._module = load(self._name)
        return getattr(self._module, attr)


def needs(name):
    """A stand-in for module `name` that imports it (through load) at its first attribute access."""
    return _Needed(name)


if __name__ == "__main__":
    print("error: common/workbook_needs.py is a module the workbook's scripts import, not a program", file=sys.stderr)
    sys.exit(2)
