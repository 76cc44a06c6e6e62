"""docs_tamper.py: the docs check must catch every way a page can stop telling the truth.

    python3 tests/support/docs_tamper.py

For every page made from a template (common/readme_render.py), in memory, without touching a file:
- one digit changed in the first figure of each line that holds one must make the page differ
  from what its template and results/ give;
- a figure typed into the template's prose, and one typed into a string of its readme_values.py,
  must each be named; so must a sentence written as a string there, and "the same run" typed
  into the template's prose.
And for claims about runs (tests/support/docs_fixture: two files from two runs): a value that
calls them "the same run", and a page that reads both without a sentence saying why, must each
fail to render.
Exit 0 when every change is caught, 1 otherwise (naming each one that was not), 77 without Jinja2.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "common"))
import readme_figures  # noqa: E402
import readme_render  # noqa: E402

FIXTURE = "tests/support/docs_fixture"


def tampered_lines(text):
    """(line number, the page with one digit of that line's first figure changed)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = readme_figures.MEASURED.search(line)
        if not m:
            continue
        digit = next(k for k in range(m.start(), m.end()) if line[k].isdigit())
        changed = line[:digit] + str((int(line[digit]) + 1) % 10) + line[digit + 1:]
        yield i + 1, "\n".join(lines[:i] + [changed] + lines[i + 1:])


def page_failures(template):
    failures, caught = [], 0
    page = template[:-len(".in")]
    made = readme_render.render(template)
    for number, text in tampered_lines(made):
        if readme_render.page_difference(page, text, made):
            caught += 1
        else:
            failures.append(f"{page}:{number}: a changed digit passed the check")
    with open(os.path.join(ROOT, template), encoding="utf-8") as f:
        source = f.read()
    if not readme_render.template_problems(template, source + "\nA typed figure: 12.5 ms.\n"):
        failures.append(f"{template}: a '12.5 ms' typed in its prose passed the check")
    if not readme_render.template_problems(template, source + "\nBoth were measured in the same run.\n"):
        failures.append(f"{template}: 'the same run' typed in its prose passed the check")
    values = os.path.join(os.path.dirname(template), readme_render.VALUES)
    if os.path.exists(os.path.join(ROOT, values)):
        with open(os.path.join(ROOT, values), encoding="utf-8") as f:
            code = f.read()
        if not readme_render.values_problems(values, code + '\n_typed = f"took {1} ms, then 12.5 ms"\n'):
            failures.append(f"{values}: a '12.5 ms' typed in a string passed the check")
        if not readme_render.values_problems(values, code + '\n_prose = "a whole sentence of the page written here as a string in the code"\n'):
            failures.append(f"{values}: a sentence written as a string passed the check")
    return caught, failures


RUN_CLAIM_VALUES = f'''
def values(book):
    r = book.results("{FIXTURE}")
    return {{"claim": book.same_run((r, "first_run.json"), (r, "second_run.json"))}}
'''
TWO_RUNS_VALUES = f'''
def values(book):
    r = book.results("{FIXTURE}")
    return {{"a": r.json("first_run.json")["epoch_ms"]["median"], "b": r.json("second_run.json")["epoch_ms"]["median"]}}
'''


def run_claim_failures():
    failures = []
    cases = [("a claim of 'the same run' over files of two runs", RUN_CLAIM_VALUES, "Measured in {{ claim }}.\n"),
             ("figures of two runs with no sentence saying why", TWO_RUNS_VALUES, "{{ a }} and {{ b }}.\n\n{{ sources() }}\n")]
    for what, values, template in cases:
        try:
            readme_render.render(f"{FIXTURE}/README.md.in", values_source=values, template_text=template)
            failures.append(f"{what} rendered without an error")
        except readme_render.DocError:
            pass
    explained = "{{ a }} and {{ b }}.\n\n{% call sources() %}The two come from two runs on purpose.{% endcall %}\n"
    try:
        readme_render.render(f"{FIXTURE}/README.md.in", values_source=TWO_RUNS_VALUES, template_text=explained)
    except readme_render.DocError as e:
        failures.append(f"figures of two runs with a sentence saying why were refused: {e}")
    return failures


def main():
    try:
        import jinja2  # noqa: F401
    except ImportError:
        print("docs_tamper.py needs Jinja2 (PyPI's jinja2): scripts/install-deps.sh installs it into .venv/")
        return 77
    templates = readme_render.templates()
    caught, failures = 0, []
    for template in templates:
        try:
            n, found = page_failures(template)
        except readme_render.DocError as e:
            failures.append(f"{template}: cannot be made, so nothing could be tampered with: {e}")
            continue
        caught += n
        failures += found
    failures += run_claim_failures()
    print(f"{caught} changed digits caught in {len(templates)} pages; in each, a figure and a claim of one run typed "
          "in the template, and a figure and a sentence typed in its values, caught; a same-run claim over two runs, "
          "and two runs unexplained, refused")
    for f in failures:
        print(f"error: {f}")
    return 1 if failures or not templates or not caught else 0


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print("error: usage: python3 tests/support/docs_tamper.py (it takes no arguments)", file=sys.stderr)
        sys.exit(2)
    sys.exit(main())
