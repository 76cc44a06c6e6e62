"""docs_tamper.py: the docs check must catch a changed figure in every README.

    python3 tests/support/docs_tamper.py README.md 01_device_query/README.md ...

For each README: (1) one digit of a generated figure is changed, in a copy beside the original,
and cog --check must fail on the copy; (2) a typed figure is added to its prose, and
readme_figures' check must name it. Exit 0 when both are caught in every README, 1 otherwise
(naming the README), 77 without cog.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "common"))
import readme_figures  # noqa: E402

PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
if not os.path.exists(PYTHON):
    PYTHON = sys.executable


def generated_figure_line(lines):
    """The index of the first generated line holding a measured figure, and the figure's match."""
    state = "prose"
    for i, line in enumerate(lines):
        if state == "prose" and "[[[cog" in line:
            state = "output" if "]]]" in line[line.index("[[[cog") + 6:] else "code"
        elif state == "code" and "]]]" in line:
            state = "output"
        elif state == "output" and "[[[end]]]" in line:
            state = "prose"
        elif state == "output":
            m = readme_figures.MEASURED.search(line)
            if m:
                return i, m
    return None, None


def main(readmes):
    try:
        import cogapp  # noqa: F401
    except ImportError:
        if PYTHON == sys.executable:
            print("docs_tamper.py needs cog (PyPI's cogapp): scripts/install-deps.sh installs it into .venv/")
            return 77
    failures = []
    for readme in readmes:
        path = os.path.join(ROOT, readme)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        i, m = generated_figure_line(lines)
        if i is None:
            continue  # a README without a generated figure has nothing to tamper with
        digit = next(k for k in range(m.start(), m.end()) if lines[i][k].isdigit())
        changed = str((int(lines[i][digit]) + 1) % 10)
        tampered = lines[:i] + [lines[i][:digit] + changed + lines[i][digit + 1:]] + lines[i + 1:]
        copy = os.path.join(os.path.dirname(path), ".tampered_README.md")
        try:
            with open(copy, "w", encoding="utf-8") as f:
                f.write("\n".join(tampered))
            done = subprocess.run([PYTHON, "-m", "cogapp", "--check", "-I", os.path.join(ROOT, "common"), copy],
                                  capture_output=True, text=True)
        finally:
            os.remove(copy)
        if done.returncode == 0:
            failures.append(f"{readme}:{i + 1}: a changed digit in '{m.group(0)}' passed cog --check")
        typed = "\n".join(lines) + "\nA typed figure: 12.5 ms.\n"
        if not readme_figures.typed_figures(typed):
            failures.append(f"{readme}: a typed '12.5 ms' in its prose passed the check")
        print(f"{readme}: a changed '{m.group(0)}' (line {i + 1}) and a typed figure are both caught")
    for f in failures:
        print(f"error: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("error: usage: python3 tests/support/docs_tamper.py README.md...", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
