"""readme_figures.py: the named values a README's template drops into its prose, read from results/.

Each README is written as a template, README.md.in (Jinja2: plain Markdown with `{{ name }}` where a
figure goes). Beside it, readme_values.py computes those names from the committed results/:

    from readme_figures import fixed, ratio

    def values(book):
        r = book.results("04_linear_regression")      # that chapter's results/ folder
        cuda, torch = r.json("cuda.json"), r.json("pytorch_cuda.json")
        return {
            "cuda_ms": fixed(cuda["epoch_ms"]["median"], 2),
            "speedup": ratio(torch["epoch_ms"]["median"], cuda["epoch_ms"]["median"]),
            "same_run": book.same_run((r, "cuda.json"), (r, "pytorch_cuda.json")),
        }

and the template says `One epoch takes {{ cuda_ms }} ms, {{ speedup }} PyTorch's, measured in
{{ same_run }}.` common/readme_render.py renders README.md from the two (scripts/docs.sh write) and
checks that the committed README.md is what they give (scripts/docs.sh check, the ctest label docs).

Every file a Book opens is noted with its provenance record: `{{ sources() }}` lists them at the
end of the page, and a claim about runs ("the same run", "one run") comes only from same_run() or
runs_phrase(), which raise RunClaimError when the records behind the claim disagree.
"""
import csv
import importlib.util
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VALUES = "readme_values.py"  # the module beside a template that computes its values


class RunClaimError(Exception):
    """A sentence would say "the same run" (or "one run") over files that came from several."""


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


def count(n):
    """A whole number with thousands separators: 5000000 -> '5,000,000'."""
    return f"{int(n):,}"


def faster_or_slower(time, other_time):
    """The word for how `time` compares with `other_time` (lower is faster)."""
    return "faster" if time < other_time else "slower" if time > other_time else "as fast"


def more_or_less(value, other):
    return "more" if value > other else "less" if value < other else "the same"


def spread(timing, scale=1.0, digits=2):
    """A timing {"median", "min", "max", "runs"} as 'median (min-max, N runs)' text pieces, scaled."""
    return {key: fixed(timing[key] * scale, digits) for key in ("median", "min", "max")} | {"runs": str(timing["runs"])}


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


def run_key(record):
    """What makes two records one run: the commit, the tree, the regeneration run and the host."""
    return None if record is None else (record["commit"], record["tree"], record["run"], record["host"])


def describe_run(record, gpus=None):
    """'regeneration 2026-11-28_4xH200 (named for its machine), on 1 x NVIDIA H200, 2026-11-28, commit
    5e806168621e': a benchmark session, not one repetition of a measurement."""
    where = " and ".join(gpus or [record["gpus"]])
    session = f"regeneration {record['run']} (named for its machine)" if record["run"] else "outside a regeneration"
    return f"{session}, on {where}, {record['date']}, commit {record['commit']}"


class Results:
    """One chapter's results/ folder (or another folder of the workbook, such as test-logs/...),
    read for a README. Every file read is noted with its provenance record."""

    def __init__(self, folder, readme_folder):
        """`folder`: a chapter ("04_linear_regression", meaning its results/) or a folder of the
        workbook; `readme_folder`: where the page that links to the files stands ("." for the root)."""
        self.folder = folder if "/" in folder else os.path.join(folder, "results")
        self.readme_folder = readme_folder
        self.read = {}  # file name -> its provenance record (None: the file carries none)

    def path(self, name):
        return os.path.join(ROOT, self.folder, name)

    def link(self, name, text=None):
        """A Markdown link to a results file, relative to the page."""
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
        return list(csv.DictReader(self.text(name)))

    def record(self, name):
        """The provenance record of a file (reading it, if not read yet)."""
        if name not in self.read:
            self.json(name) if name.endswith(".json") else self.text(name)
        return self.read[name]

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
        naming the file, the GPU and the date its record gives."""
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
        block = ["```", *(l.rstrip() for l in lines), "```"]
        if caption:
            record = self.read.get(name)
            where = f"{record['gpus']}, {record['date']}" if record else "no provenance record"
            block = [f"{self.link(name)} ({where}):", ""] + block
        return "\n".join(block)


class Book:
    """The results one page reads, for its sources line and its claims about runs."""

    def __init__(self, readme_folder):
        self.readme_folder = readme_folder
        self.opened = []

    def results(self, folder):
        r = Results(folder, self.readme_folder)
        self.opened.append(r)
        return r

    def records(self):
        """{run key: (record, [file, ...], {gpus: True})} over every file read, in reading order."""
        found = {}
        for results in self.opened:
            for name, record in results.read.items():
                key = run_key(record)
                entry = found.setdefault(key, (record, [], {}))
                entry[1].append(f"{results.folder}/{name}")
                if record is not None:  # a run's programs see one GPU or all of them: name each way once
                    entry[2][record["gpus"]] = True
        return found

    def same_run(self, *files):
        """'the same regeneration' (one benchmark session: scripts/regenerate.sh), when every (results,
        name) pair comes from one; RunClaimError if not."""
        records = {f"{r.folder}/{name}": r.record(name) for r, name in files}
        keys = {run_key(rec) for rec in records.values()}
        # Files made outside a regeneration name no session: same commit and host say nothing of when.
        if len(keys) != 1 or None in keys or any(rec["run"] is None for rec in records.values()):
            listing = "; ".join(f"{f}: {describe_run(rec) if rec else 'no provenance record'}" for f, rec in records.items())
            raise RunClaimError(f"'the same regeneration' claimed over files from {len(keys)} ({listing})")
        return "the same regeneration"

    def runs_phrase(self, *files):
        """'one regeneration' or 'N regenerations' for the (results, name) pairs: the count the records give."""
        records = [r.record(name) for r, name in files]
        if any(rec is None or rec["run"] is None for rec in records):
            raise RunClaimError("a count of regenerations over a file made outside one, or without a provenance record")
        keys = {run_key(rec) for rec in records}
        return "one regeneration" if len(keys) == 1 else f"{len(keys)} regenerations"


def load_values(folder):
    """The readme_values.py module of a folder ("." for the root), or None where there is none."""
    path = os.path.join(ROOT, folder, VALUES)
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location(f"readme_values_{folder.replace('.', 'root')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------- the checks
# A measured figure: a number with a unit of time, rate or size per second, a factor ("2.4x"), a
# percentage, or a test count. Typed by hand it drifts from the results; it must come from a value.
MEASURED = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s?(?:ms|us|µs|μs|ns|s|sec|min|minutes|seconds|milliseconds|microseconds|GB/s|TB/s|"
                      r"GiB/s|MB/s|MiB/s|TFLOP/s|GFLOP/s|W)(?!\w)|x(?![\w])|×|%|\s(?:tests?|passed|failed|skipped)\b)")
# A claim about runs, which only Book.same_run() and Book.runs_phrase() may write.
RUN_CLAIM = re.compile(r"\b(?:same (?:run|regeneration|benchmark session)|one (?:run|regeneration|benchmark session)|single run|"
                       r"(?:one|same) machine|one GPU machine)\b", re.I)


def nonzero_figures(text):
    """The measured figures in `text`, leaving out zeros ("0.000us" is a token, not a figure)."""
    return [m.group(0) for m in MEASURED.finditer(text) if float(re.match(r"[\d,.]+", m.group(0))[0].replace(",", "")) != 0]
