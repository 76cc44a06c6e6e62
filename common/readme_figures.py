"""readme_figures.py: every figure a README quotes, read from its chapter's results/ by cog.

A README holds each measured figure (a time, a bandwidth, a ratio, a percentage, a test count) and
each block of program output inside a cog block, written from the committed files:

    <!-- [[[cog
    from readme_figures import Results, fixed, ratio, paragraph
    r = Results("04_linear_regression")
    cuda, torch = r.json("cuda.json"), r.json("pytorch_cuda.json")
    paragraph(f"One epoch takes {fixed(cuda['epoch_ms']['median'], 2)} ms here and "
              f"{fixed(torch['epoch_ms']['median'], 2)} ms in PyTorch eager: "
              f"{ratio(torch['epoch_ms']['median'], cuda['epoch_ms']['median'])} faster.")
    ]]] -->
    (what cog writes)
    <!-- [[[end]]] -->

`scripts/docs.sh write` (cog -r) fills the blocks; `scripts/docs.sh check` (the ctest label docs)
fails when a block differs from what the files give, when a file is gone, when a measured figure
stands outside a block, and when one README's figures come from more than one run without a line
saying why (Results.sources(), the README's last block). Comparison words ("faster", "slower") are
computed too (faster_or_slower), never typed.

cog keeps one namespace per README, so a Results made in the first block serves every later one.
"""
import csv
import json
import os
import re
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIXED = "MIXED PROVENANCE"  # scripts/docs.sh check fails on a README that holds these words
UNCLEAN = "UNCLEAN PROVENANCE"  # and on these: a figure from a modified tree or an unknown commit


def _cog():
    import cog  # only there while cog runs a block
    return cog


def emit(text=""):
    """Writes lines into the README where the block stands."""
    for line in str(text).split("\n"):
        _cog().outl(line)


def paragraph(text, width=100):
    """A paragraph of prose, wrapped at `width` columns as the READMEs are."""
    emit(textwrap.fill(" ".join(text.split()), width=width, break_on_hyphens=False, break_long_words=False))


# ------------------------------------------------------------------------- numbers as text
def fixed(x, digits=2):
    """12.3456 -> '12.35' (digits after the point)."""
    return f"{x:.{digits}f}"


def significant(x, digits=3):
    """A number to `digits` significant figures, without an exponent: 0.012345 -> '0.0123', 1234.5 -> '1235'."""
    if x == 0:
        return "0"
    from math import floor, log10
    places = max(digits - 1 - int(floor(log10(abs(x)))), 0)
    return f"{x:.{places}f}"


def ratio(a, b, digits=2):
    """a / b as a factor: '13.01x'."""
    return f"{a / b:.{digits}f}x"


def percent(part, whole=1.0, digits=0):
    """part / whole as a percentage: '59%'."""
    return f"{100.0 * part / whole:.{digits}f}%"


def faster_or_slower(time, other_time):
    """The word for how `time` compares with `other_time` (lower is faster)."""
    return "faster" if time < other_time else "slower" if time > other_time else "as fast"


def more_or_less(value, other):
    return "more" if value > other else "less" if value < other else "the same"


# ------------------------------------------------------------------------- provenance
def _line_record(line):
    """The identity fields of a provenance line: commit (12 hex), tree, run, GPUs, date."""
    m = re.match(r"(?:# |<!-- )provenance: commit (\S+) \((\w+)\), (no GPU|\d+ x [^,]+), ", line)
    if not m:
        return None
    run, host = re.search(r", run (\S+),", line), re.search(r", host (\S+),", line)
    date = re.search(r", (\d{4}-\d\d-\d\d)T", line)
    return {"commit": m.group(1)[:12], "tree": m.group(2), "run": run.group(1) if run else None,
            "host": host.group(1) if host else "?", "gpus": m.group(3), "date": date.group(1) if date else "?"}


def _json_record(p):
    gpus = p.get("gpus") or []
    return {"commit": str(p.get("commit", "unknown"))[:12], "tree": p.get("tree", "unknown"), "run": p.get("run"),
            "host": p.get("host", "?"), "gpus": f"{len(gpus)} x {gpus[0]['name']}" if gpus else "no GPU",
            "date": str(p.get("date", "?"))[:10]}


class Results:
    """One chapter's results/ folder (or another folder of the workbook, such as test-logs/), read
    for a README. Every file read is noted with its provenance, for sources()."""

    def __init__(self, folder, readme_folder=None):
        """`folder`: a chapter ("04_linear_regression", meaning its results/) or a folder of the
        workbook; `readme_folder`: where the README that links to the files stands (default: the
        chapter's own folder; "." for the top README)."""
        self.folder = folder if "/" in folder else os.path.join(folder, "results")
        self.readme_folder = readme_folder if readme_folder is not None else self.folder.split("/")[0]
        self.read = {}  # file name -> its provenance identity (None: the file carries none)

    def path(self, name):
        return os.path.join(ROOT, self.folder, name)

    def link(self, name, text=None):
        """A Markdown link to a results file, relative to the chapter's README."""
        target = os.path.relpath(self.path(name), os.path.join(ROOT, self.readme_folder))
        return f"[{text or target}]({target})"

    def _lines(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return f.read().splitlines()

    def json(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            data = json.load(f)
        p = data.get("provenance") if isinstance(data, dict) else None
        self.read[name] = _json_record(p) if isinstance(p, dict) else None
        return data

    def text(self, name):
        """The file's lines, its provenance line left out."""
        lines = self._lines(name)
        self.read[name] = _line_record(lines[0]) if lines else None
        return [l for l in lines if _line_record(l) is None]

    def csv(self, name):
        lines = self.text(name)
        return list(csv.DictReader(lines))

    def number(self, name, pattern, group=1):
        """The number that `pattern` (a regular expression) captures in the first matching line."""
        for line in self.text(name):
            m = re.search(pattern, line)
            if m:
                return float(m.group(group).replace(",", ""))
        raise ValueError(f"{self.folder}/{name}: no line matches {pattern!r}")

    def output(self, name, start=None, stop=None, grep=None, caption=True):
        """A fenced block of a text result: from the first line matching `start` (a regular
        expression; default the first line) up to, not including, the next line matching `stop`
        (default: the end), keeping only the lines matching `grep` when given. Above it, a line
        naming the GPU and the date the file says."""
        lines = self.text(name)
        if start is not None:
            first = next((i for i, l in enumerate(lines) if re.search(start, l)), None)
            if first is None:
                raise ValueError(f"{self.folder}/{name}: no line matches start {start!r}")
            lines = lines[first:]
        if stop is not None:
            end = next((i for i, l in enumerate(lines) if i > 0 and re.search(stop, l)), len(lines))
            lines = lines[:end]
        if grep is not None:
            lines = [l for l in lines if re.search(grep, l)]
        if caption:
            record = self.read.get(name)
            where = f"{record['gpus']}, {record['date']}" if record else "no provenance record"
            emit(f"{self.link(name)} ({where}):")
            emit()
        emit("```")
        for l in lines:
            emit(l.rstrip())
        emit("```")

    def sources(self, mixed=None, also=()):
        """The README's last block: which run made the figures above. More than one run (or a file
        without provenance) is written as MIXED PROVENANCE, which the docs check refuses, unless
        `mixed` says why the README quotes several runs. `also`: other Results this README read."""
        records, machines = {}, {}
        for results in (self, *also):
            for name, record in sorted(results.read.items()):
                key = None if record is None else (record["commit"], record["tree"], record["run"], record["host"])
                records.setdefault(key, (record, []))[1].append(f"{results.folder}/{name}")
                if record is not None:  # a run's programs see 1 GPU or all of them: name each way once
                    machines.setdefault(key, {})[record["gpus"]] = True
        def describe(record):
            key = (record["commit"], record["tree"], record["run"], record["host"])
            run = f"run {record['run']}" if record["run"] else "no regeneration run"
            return f"{run} ({' and '.join(machines[key])}, {record['date']}) at commit {record['commit']} ({record['tree']})"
        if list(records) == [None] or not records:
            paragraph(f"{MIXED}: no file read here carries a provenance record.")
            return
        unclean = sorted({f for key, (record, files) in records.items() if key and (record["tree"] != "clean" or
                          record["commit"] == "unknown") for f in files})
        if unclean:  # results are made from a committed tree, or they say nothing about the code
            emit(f"{UNCLEAN}: made from a modified tree or an unknown commit: {', '.join(unclean)}")
        if len(records) == 1:
            (record, files), = records.values()
            paragraph(f"Every figure above comes from {describe(record)}: {len(files)} files of "
                      f"{', '.join(sorted({f.rsplit('/', 1)[0] for f in files}))}.")
            return
        if mixed is None:
            emit(f"{MIXED}: the figures above come from {len(records)} records:")
        else:
            paragraph(f"The figures above come from {len(records)} records ({mixed}):")
        for key, (record, files) in records.items():
            what = describe(record) if record else "no provenance record"
            emit(f"- {what}: {', '.join(files)}")


# ------------------------------------------------------------------------- the check
# A measured figure: a number with a unit of time, rate or size per second, a factor ("2.4x"), a
# percentage, or a test count. Outside a generated block it was typed, and typed figures drift.
# Code (fenced blocks and `spans`) is left alone: a figure there is a setting or a command.
MEASURED = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s?(?:ms|us|µs|μs|ns|s|sec|min|minutes|seconds|milliseconds|microseconds|GB/s|TB/s|"
                      r"GiB/s|MB/s|MiB/s|TFLOP/s|GFLOP/s|W)(?!\w)|x(?![\w])|×|%|\s(?:tests?|passed|failed|skipped)\b)")
MAX_CHAPTER_LINES = 600


def typed_in_code(line):
    """The measured figures a cog block's line of code types itself: those left once its comments
    and its f-strings' {fields} are taken out ("0.000us", a token matched in a file, is no figure)."""
    code = re.sub(r"\s#\s.*$", "", line)
    while re.search(r"\{[^{}]*\}", code):
        code = re.sub(r"\{[^{}]*\}", "", code)
    return [m.group(0) for m in MEASURED.finditer(code) if float(re.match(r"[\d,.]+", m.group(0))[0].replace(",", "")) != 0]


def typed_figures(text):
    """(line number, figure) for every measured figure outside cog blocks' output and code spans:
    in the prose, and in the text a block's code types itself."""
    found, in_block, in_code, in_cog_code = [], False, False, False
    for number, line in enumerate(text.splitlines(), start=1):
        if "[[[cog" in line:
            in_block, in_cog_code = True, True
        if in_block:
            if in_cog_code:
                found += [(number, figure) for figure in typed_in_code(line.split("[[[cog")[-1])]
                in_cog_code = "]]]" not in line.split("[[[cog")[-1]
            in_block = "[[[end]]]" not in line
            continue
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        prose = re.sub(r"`[^`]*`", "", line)
        prose = re.sub(r"\]\([^)]*\)", "]", prose)  # link targets: file names, not figures
        found += [(number, m.group(0)) for m in MEASURED.finditer(prose)]
    return found


def check(paths):
    """The part of scripts/docs.sh check that cog does not do; one line per problem; 0 or 1."""
    problems = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for number, figure in typed_figures(text):
            problems.append(f"{path}:{number}: '{figure}' is typed: a measured figure comes from results/ through a cog block")
        if UNCLEAN in text:
            problems.append(f"{path}: {UNCLEAN}: a figure comes from a modified tree or an unknown commit (regenerate from a clean one)")
        if MIXED in text:
            problems.append(f"{path}: {MIXED}: its figures come from several runs, and no line says why (Results.sources(mixed=...))")
        if "Results(" in text and ".sources(" not in text:
            problems.append(f"{path}: reads results/ but never says from which run (end it with a block calling Results.sources())")
        lines = text.count("\n")
        if re.match(r"\d\d_", path) and lines > MAX_CHAPTER_LINES:
            problems.append(f"{path}: {lines} lines, over the {MAX_CHAPTER_LINES} a chapter README may have")
    for p in problems:
        print(f"error: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2:]))
    print("error: usage: python3 common/readme_figures.py --check README.md... (scripts/docs.sh check runs it; "
          "the READMEs' cog blocks import this module)", file=sys.stderr)
    sys.exit(2)
