"""readme_render.py: every Markdown page made from its template, and the checks that keep it true.

    python3 common/readme_render.py write    # README.md from README.md.in and readme_values.py, for every page
    python3 common/readme_render.py check    # exit 0 when every committed page is what they give
    python3 common/readme_render.py check 04_linear_regression   # one folder's pages only

A page's source is NAME.md.in (Jinja2: Markdown with `{{ name }}` where a figure goes) in the
workbook's root or a chapter folder; the names come from `values(book)` in readme_values.py beside
it (common/readme_figures.py). check fails, with one line per problem, when
- a committed page differs from what its template and results/ give, or cannot be made from them
  (a file gone, a claim of "the same run" over files from several runs);
- a measured figure (a time, a rate, a ratio, a percentage, a test count) is typed into a
  template's prose or into a string of readme_values.py, rather than computed;
- a string in readme_values.py is a sentence (prose belongs in the template);
- a template's prose claims "the same run" or "one run" itself, rather than through same_run();
- a page shows template syntax, or a link to a file or a heading that does not exist;
- a chapter README does not open with its four parts, or does not link GLOSSARY.md.
Without Jinja2 (PyPI's jinja2; scripts/install-deps.sh puts it into .venv/): exit 77.
"""
import ast
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from readme_figures import MEASURED, ROOT, RUN_CLAIM, VALUES, Book, RunClaimError, describe_run, load_values, nonzero_figures  # noqa: E402

HEADER = "<!-- Made from {template} and {values} by scripts/docs.sh write: edit those, not this page. -->\n"
# A chapter README opens the same way: what you will learn, the command, its output, a legend.
OPENING = ["What you will learn", "Run it", "Sample output", "Reading the output"]
MAX_BULLETS = 5
PROSE_WORDS = 10  # a string of readme_values.py with this many words is a sentence, not a value


class DocError(Exception):
    """A page that cannot be made as its template asks."""


def templates(only=()):
    """Every page's template, relative to the root: the root's first, then the chapters' in order;
    with `only` (folders such as 04_linear_regression, or "." for the root), those folders' alone."""
    found = sorted(glob.glob("*.md.in", root_dir=ROOT))
    found += sorted(glob.glob("[0-9][0-9]_*/*.md.in", root_dir=ROOT))
    folders = {os.path.normpath(f) for f in only}
    return [t for t in found if not folders or (os.path.dirname(t) or ".") in folders]


def _sources(book):
    """The page's closing list: each run its figures came from, and the files. Several runs need a
    sentence saying why: `{% call sources() %}why{% endcall %}`."""
    def sources(caller=None):
        sources.called = True
        records = book.records()
        if not records:
            raise DocError("sources(): this page read no results")
        if None in records:
            raise DocError(f"files without a provenance record: {', '.join(records[None][1])}")
        unclean = [f for record, files, _ in records.values() if record["tree"] != "clean" or record["commit"] == "unknown"
                   for f in files]
        if unclean:
            raise DocError(f"figures from a modified tree or an unknown commit: {', '.join(unclean)} (regenerate from a clean one)")
        why = caller().strip() if caller else ""
        if len(records) > 1 and not why:
            raise DocError(f"the figures come from {len(records)} runs and no sentence says why "
                           "({% call sources() %}why{% endcall %})")
        lines = [why, ""] if why else []
        for record, files, gpus in records.values():
            folders = {}
            for f in files:
                folder, name = f.rsplit("/", 1)
                folders.setdefault(folder, []).append(name)
            where = "; ".join(f"{folder}: {', '.join(names)}" for folder, names in folders.items())
            lines.append(f"- {describe_run(record, list(gpus))}: {where}")
        return "\n".join(lines)
    sources.called = False
    return sources


def _environment():
    import jinja2
    return jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False,
                              trim_blocks=True, lstrip_blocks=True,
                              # {# ... #} would clash with shell's ${#array[@]} in a page's commands
                              comment_start_string="{##", comment_end_string="##}")


def render(template, values_source=None, template_text=None):
    """The page that `template` (a path relative to the root) gives. `values_source` and
    `template_text` replace the files' contents (the tamper tests use them)."""
    return _render(template, values_source, template_text)[0]


def page_records(template):
    """The provenance records behind the figures of a page, as its rendering reads them:
    [(record, files, gpus)], one per run."""
    return list(_render(template)[1].records().values())


def _render(template, values_source=None, template_text=None):
    folder = os.path.dirname(template) or "."
    book = Book(folder)
    if values_source is not None:
        module = type(sys)("readme_values_tampered")
        exec(compile(values_source, os.path.join(folder, VALUES), "exec"), module.__dict__)
    else:
        module = load_values(folder)
    try:
        values = module.values(book) if module else {}
        if template_text is None:
            with open(os.path.join(ROOT, template), encoding="utf-8") as f:
                template_text = f.read()
        sources = _sources(book)
        page = _environment().from_string(template_text).render(values, sources=sources)
        if book.records() and not sources.called:
            raise DocError("the page reads results/ but never lists where they come from ({{ sources() }})")
    except Exception as e:  # a values module's or a template's mistake: one line, never a traceback
        raise DocError(f"{template}: {type(e).__name__}: {e}") from None
    name = os.path.basename(template)
    header = HEADER.format(template=name, values=VALUES if module else "nothing else")
    return header + page, book


# ------------------------------------------------------------------------- checks on the sources
def _blank_tags(text):
    """The template with its Jinja tags blanked, newlines kept, so that line numbers still hold."""
    return re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{##.*?##\}", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


def prose_lines(text):
    """(line number, prose) of Markdown text: fenced code, code spans, link targets and HTML
    comments left out."""
    text = re.sub(r"<!--.*?-->", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    in_code = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        yield number, re.sub(r"\]\([^)]*\)", "]", line)


def _tag_literals(text):
    """(line number, string) of each quoted string inside a template's Jinja tags."""
    for tag in re.finditer(r"\{\{.*?\}\}|\{%.*?%\}", text, flags=re.S):
        number = text.count("\n", 0, tag.start()) + 1
        for literal in re.finditer(r"'([^']*)'|\"([^\"]*)\"", tag.group(0)):
            yield number, literal.group(1) if literal.group(1) is not None else literal.group(2)


def _joined_prose(text):
    """The prose as one string, each line's start remembered: a figure or a claim may span lines."""
    starts, pieces, at = [], [], 0
    for number, line in prose_lines(text):
        starts.append((at, number))
        pieces.append(line)
        at += len(line) + 1
    return " ".join(pieces), starts


def _line_at(starts, offset):
    return max((number for start, number in starts if start <= offset), default=1)


def template_problems(template, text):
    problems = []
    prose, starts = _joined_prose(_blank_tags(text))
    for m in MEASURED.finditer(prose):
        if nonzero_figures(m.group(0)):
            problems.append(f"{template}:{_line_at(starts, m.start())}: '{m.group(0)}' is typed: a measured figure is a "
                            "value from readme_values.py")
    for m in RUN_CLAIM.finditer(prose):
        problems.append(f"{template}:{_line_at(starts, m.start())}: '{m.group(0)}' is a claim about runs: it comes from "
                        "book.same_run() or book.runs_phrase(), which check the records")
    for number, literal in _tag_literals(text):
        problems += [f"{template}:{number}: '{figure}' is typed inside a tag: a measured figure is a value from "
                     "readme_values.py" for figure in nonzero_figures(literal)]
        problems += [f"{template}:{number}: '{m.group(0)}' is a claim about runs typed inside a tag"
                     for m in RUN_CLAIM.finditer(literal)]
    return problems


def _strings(tree):
    """(line, text, words) of every string in a module but its docstrings and error messages."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body and \
                isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            skip.add(id(node.body[0].value))
        if isinstance(node, (ast.Raise, ast.Assert)):
            skip.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            skip.update(id(n) for n in node.values)
            text = "".join(v.value if isinstance(v, ast.Constant) else " {} " for v in node.values)
            yield node.lineno, "".join(v.value for v in node.values if isinstance(v, ast.Constant)), text
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value, node.value


def values_problems(path, source):
    problems = []
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return [f"{path}:{e.lineno}: {e.msg}"]
    for line, constant, text in _strings(tree):
        problems += [f"{path}:{line}: '{figure}' is typed in a string: compute it from results/" for figure in nonzero_figures(constant)]
        problems += [f"{path}:{line}: '{m.group(0)}' is a claim about runs typed in a string: book.same_run() or "
                     "book.runs_phrase() make it, from the records" for m in RUN_CLAIM.finditer(constant)]
        looks_like_pattern = "\\" in text or text.startswith("^")
        if not looks_like_pattern and len(re.findall(r"[A-Za-z]+", text)) >= PROSE_WORDS:
            problems.append(f"{path}:{line}: a sentence in a string ('{text[:40]}...'): prose belongs in the template")
    return problems


# ------------------------------------------------------------------------- checks on the pages
def slug(heading):
    """The anchor GitHub gives a heading: lower case, punctuation but '-' and '_' dropped, spaces '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _workbook_files():
    """Every file and folder git tracks or would track (build folders and .venv/ left out); None
    outside a git checkout."""
    if not hasattr(_workbook_files, "found"):
        try:
            listed = subprocess.run(["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard"],
                                    capture_output=True, text=True, check=True).stdout.split("\n")
            found = set()
            for name in filter(None, listed):
                path = os.path.join(ROOT, name)
                while path.startswith(ROOT) and path not in found:
                    found.add(path)
                    path = os.path.dirname(path)
            _workbook_files.found = found
        except (OSError, subprocess.CalledProcessError):
            _workbook_files.found = None
    return _workbook_files.found


def _in_workbook(path):
    files = _workbook_files()
    return os.path.exists(path) and (path in files if files is not None else path.startswith(ROOT))


def anchors(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    in_code, found = False, set()
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            found.add(slug(line.lstrip("#")))
    return found


def page_problems(page_path, text):
    problems = []
    folder = os.path.dirname(os.path.join(ROOT, page_path))
    for number, line in prose_lines(text):
        if re.search(r"\{\{|\{%|\[\[\[cog", line):
            problems.append(f"{page_path}:{number}: template syntax left in the page")
    raw = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", raw):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        file, _, anchor = target.partition("#")
        path = os.path.normpath(os.path.join(folder, file)) if file else os.path.join(ROOT, page_path)
        if not _in_workbook(path):
            problems.append(f"{page_path}: a link to {target}, which is no file of the workbook (or does not exist)")
        elif anchor and path.endswith(".md") and anchor not in anchors(path):
            problems.append(f"{page_path}: a link to {target}, whose heading does not exist")
    return problems


def opening_problems(page_path, text):
    """A chapter README opens with its four parts, keeps to five bullets of what you will learn,
    and links the glossary."""
    if not re.match(r"\d\d_[^/]+/README\.md$", page_path):
        return []
    problems = []
    headings = re.findall(r"^## (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), flags=re.M)
    if headings[:len(OPENING)] != OPENING:
        problems.append(f"{page_path}: opens with {headings[:len(OPENING)]}, not {OPENING}")
    learn = re.search(r"^## What you will learn\n(.*?)^## ", text, flags=re.S | re.M)
    if learn and len(re.findall(r"^- ", learn.group(1), flags=re.M)) > MAX_BULLETS:
        problems.append(f"{page_path}: more than {MAX_BULLETS} bullets under 'What you will learn'")
    if "GLOSSARY.md" not in text:
        problems.append(f"{page_path}: no link to GLOSSARY.md")
    return problems


def page_difference(page, committed, made):
    """The problem line when a committed page is not the page its template gives, else None."""
    if committed == made:
        return None
    old, new = committed.splitlines(), made.splitlines()
    line = next((i for i, (a, b) in enumerate(zip(old, new), 1) if a != b), min(len(old), len(new)) + 1)
    return f"{page}:{line}: differs from what {page}.in and results/ give (scripts/docs.sh write)"


def check(only=()):
    problems = []
    pages = templates(only)
    for template in pages:
        page = template[:-len(".in")]
        folder = os.path.dirname(template) or "."
        with open(os.path.join(ROOT, template), encoding="utf-8") as f:
            problems += template_problems(template, f.read())
        values_path = os.path.join(folder, VALUES)
        if os.path.exists(os.path.join(ROOT, values_path)):
            with open(os.path.join(ROOT, values_path), encoding="utf-8") as f:
                problems += values_problems(values_path, f.read())
        try:
            made = render(template)
        except DocError as e:
            problems.append(str(e))
            continue
        try:
            with open(os.path.join(ROOT, page), encoding="utf-8") as f:
                committed = f.read()
        except OSError:
            problems.append(f"{page}: missing (scripts/docs.sh write)")
            continue
        difference = page_difference(page, committed, made)
        if difference:
            problems.append(difference)
        problems += page_problems(page, committed)
        problems += opening_problems(page, committed)
    for stray in glob.glob(os.path.join("[0-9][0-9]_*", "*.md"), root_dir=ROOT) + glob.glob("*.md", root_dir=ROOT):
        if only and (os.path.dirname(stray) or ".") not in {os.path.normpath(f) for f in only}:
            continue
        if not os.path.exists(os.path.join(ROOT, stray + ".in")):
            with open(os.path.join(ROOT, stray), encoding="utf-8") as f:
                text = f.read()
            problems += template_problems(stray, text) + page_problems(stray, text)
    for p in problems:
        print(f"error: {p}")
    if not problems:
        print(f"docs: {len(pages)} {'page' if len(pages) == 1 else 'pages'} as their templates and results/ give them; no figure typed, "
              "no claim about runs unchecked, every link found")
    return 1 if problems else 0


def write(only=()):
    status = 0
    for template in templates(only):
        try:
            made = render(template)
        except DocError as e:
            print(f"error: {e}")
            status = 1
            continue
        page = os.path.join(ROOT, template[:-len(".in")])
        try:
            with open(page, encoding="utf-8") as f:
                same = f.read() == made
        except OSError:
            same = False
        if not same:
            with open(page, "w", encoding="utf-8") as f:
                f.write(made)
            print(f"wrote {template[:-len('.in')]}")
    return status


if __name__ == "__main__":
    only = sys.argv[2:]
    if len(sys.argv) < 2 or sys.argv[1] not in ("check", "write") or \
            any(not os.path.isdir(os.path.join(ROOT, f)) for f in only):
        print("error: usage: python3 common/readme_render.py check|write [FOLDER...] (scripts/docs.sh runs it; "
              "FOLDER: a chapter's, or . for the root's pages)", file=sys.stderr)
        sys.exit(2)
    try:
        import jinja2  # noqa: F401
    except ImportError:
        print("readme_render.py needs Jinja2 (PyPI's jinja2): scripts/install-deps.sh installs it into .venv/")
        sys.exit(77)
    sys.exit(check(only) if sys.argv[1] == "check" else write(only))
