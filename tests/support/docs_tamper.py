"""docs_tamper.py: the docs check must catch a changed figure in every README.

    python3 tests/support/docs_tamper.py README.md 01_device_query/README.md ...

For each generated block of each README that holds a measured figure, one digit of its first
figure is changed, in a copy of the README, and cog --check must find that copy changed; and a
figure typed into each README's prose, or into a block's code, must be named by readme_figures'
check. Exit 0 when every
change is caught, 1 otherwise (naming each one that was not), 77 without cog.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "common"))
import readme_figures  # noqa: E402

PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
if not os.path.exists(PYTHON):
    PYTHON = sys.executable


def generated_figures(lines):
    """(line index, figure match) of the first measured figure in each generated block's output."""
    found, state, taken = [], "prose", False
    for i, line in enumerate(lines):
        if state == "prose" and "[[[cog" in line:
            state = "output" if "]]]" in line[line.index("[[[cog") + 6:] else "code"
            taken = False
        elif state == "code" and "]]]" in line:
            state, taken = "output", False
        elif state == "output" and "[[[end]]]" in line:
            state = "prose"
        elif state == "output" and not taken:
            m = readme_figures.MEASURED.search(line)
            if m:
                found.append((i, m))
                taken = True
    return found


def tampered(lines, i, m):
    """`lines` with one digit of the figure `m` on line i changed."""
    digit = next(k for k in range(m.start(), m.end()) if lines[i][k].isdigit())
    changed = str((int(lines[i][digit]) + 1) % 10)
    return lines[:i] + [lines[i][:digit] + changed + lines[i][digit + 1:]] + lines[i + 1:]


def main(readmes):
    # cog runs as PYTHON below: ask that interpreter (.venv/'s when there is one, as docs.sh does),
    # since a .venv/ whose install failed has no cog although this interpreter may have it, or not.
    if subprocess.run([PYTHON, "-c", "import cogapp"], capture_output=True).returncode != 0:
        print("docs_tamper.py needs cog (PyPI's cogapp): scripts/install-deps.sh installs it into .venv/")
        return 77
    failures, copies = [], {}
    folder = tempfile.mkdtemp()
    try:
        for readme in readmes:
            with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
                lines = f.read().split("\n")
            for n, (i, m) in enumerate(generated_figures(lines)):
                copy = os.path.join(folder, f"{readme.replace('/', '_')}.{n}.md")
                with open(copy, "w", encoding="utf-8") as f:
                    f.write("\n".join(tampered(lines, i, m)))
                copies[copy] = f"{readme}:{i + 1}: '{m.group(0)}'"
            if not readme_figures.typed_figures("\n".join(lines) + "\nA typed figure: 12.5 ms.\n"):
                failures.append(f"{readme}: a typed '12.5 ms' in its prose passed the check")
            in_code = '<!-- [[[cog\nparagraph(f"took {x} ms, then 12.5 ms")\n]]] -->\n<!-- [[[end]]] -->\n'
            if not readme_figures.typed_figures("\n".join(lines) + "\n" + in_code):
                failures.append(f"{readme}: a '12.5 ms' typed in a cog block's code passed the check")
        # One cog for every copy: it names each file it finds changed.
        done = subprocess.run([PYTHON, "-m", "cogapp", "--check", "-I", os.path.join(ROOT, "common"), *copies],
                              capture_output=True, text=True)
        caught = {line.split()[1] for line in done.stdout.splitlines() if line.endswith("(changed)")}
    finally:
        shutil.rmtree(folder)
    failures += [f"{where}: a changed digit passed cog --check" for copy, where in copies.items() if copy not in caught]
    print(f"{len(copies) - len(failures)} of {len(copies)} changed figures (one in each generated block of "
          f"{len(readmes)} READMEs) caught by cog --check; a figure typed in the prose and one typed in a block's "
          "code caught in each README")
    for f in failures:
        print(f"error: {f}")
    return 1 if failures or not copies else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("error: usage: python3 tests/support/docs_tamper.py README.md...", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
