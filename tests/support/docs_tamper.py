"""docs_tamper.py: the docs check must catch every way a page can stop telling the truth.

    python3 tests/support/docs_tamper.py

For every page made from a template (common/readme_render.py), in memory, without touching a file:
- the results change under it: every fractional number its results/ files hold is scaled (JSON
  values, and the decimals of text results), three times, each time by factors that differ from number
  to number. Every line of prose that shows a figure with a decimal point must then read
  differently in at least one of the three pages: a line that does not is typed, or computed from
  something other than the results;
- a figure typed into the template's prose (also across a line break, and inside a tag), "the same
  run" typed there, and a figure, a sentence or a claim of one regeneration typed into a string of
  its readme_values.py must each be named by the check.
And for claims about runs (tests/support/docs_fixture: two files from two runs): a value that
calls them "the same regeneration", and a page that reads both without a sentence saying why,
must each fail to render.
Exit 0 when every change is caught, 1 otherwise (naming each one that was not), 77 without Jinja2.
"""
import os
import re
import sys
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "common"))
import readme_figures  # noqa: E402
import readme_render  # noqa: E402

FIXTURE = "tests/support/docs_fixture"
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])")


def factor(value, salt):
    """A scale between 1.2 and 5 that differs from number to number (so ratios move too)."""
    return 1.2 + (zlib.crc32(f"{salt}:{value!r}".encode()) % 381) / 100.0


def scaled(data, salt):
    """JSON data with every fractional number scaled; the provenance record left as it is."""
    if isinstance(data, dict):
        return {k: (v if k == "provenance" else scaled(v, salt)) for k, v in data.items()}
    if isinstance(data, list):
        return [scaled(v, salt) for v in data]
    if isinstance(data, float) and not data.is_integer():
        return data * factor(data, salt)
    return data


def scaled_line(line, salt):
    def one(m):
        digits = len(m.group(0).split(".")[1])
        return f"{float(m.group(0)) * factor(m.group(0), salt):.{digits}f}"
    return DECIMAL.sub(one, line)


def render_with_results_scaled(template, salt):
    json_of, text_of = readme_figures.Results.json, readme_figures.Results.text
    readme_figures.Results.json = lambda self, name: scaled(json_of(self, name), salt)
    readme_figures.Results.text = lambda self, name: [scaled_line(l, salt) for l in text_of(self, name)]
    try:
        return readme_render.render(template)
    finally:
        readme_figures.Results.json, readme_figures.Results.text = json_of, text_of


def figure_lines(page):
    """(line number, line) of each prose line that shows a figure with a decimal point."""
    in_code = False
    for number, line in enumerate(page.split("\n"), start=1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code or line.startswith(("<!--", "- regeneration", "- outside a regeneration")):
            continue
        if any("." in m.group(0) for m in readme_figures.MEASURED.finditer(re.sub(r"`[^`]*`", "", line))):
            yield number, line


def unmoved_figures(template):
    """The figure lines of a page that read the same whatever its results say."""
    made = readme_render.render(template)
    moved = [set(render_with_results_scaled(template, salt).split("\n")) for salt in ("a", "b", "c")]
    return [(number, line) for number, line in figure_lines(made) if all(line in lines for lines in moved)], made


INJECTED_PROSE = ["\nA typed figure: 12.5 ms.\n", "\nBoth were measured in the same run.\n",
                  "\nIt took 12.5\nms in all.\n", '\n{{ "took 12.5 ms" }}\n']
INJECTED_CODE = ['\n_typed = f"took {1} ms, then 12.5 ms"\n',
                 '\n_prose = "a whole sentence of the page written here as a string in the code"\n',
                 '\n_claim = "in the same regeneration"\n']


def page_failures(template):
    failures = []
    unmoved, made = unmoved_figures(template)
    failures += [f"{template[:-3]}:{n}: a figure that does not follow its results (typed?): {line.strip()[:80]}"
                 for n, line in unmoved]
    with open(os.path.join(ROOT, template), encoding="utf-8") as f:
        source = f.read()
    for text in INJECTED_PROSE:
        if not readme_render.template_problems(template, source + text):
            failures.append(f"{template}: {text.strip()!r} typed in the template passed the check")
    values = os.path.join(os.path.dirname(template), readme_render.VALUES)
    if os.path.exists(os.path.join(ROOT, values)):
        with open(os.path.join(ROOT, values), encoding="utf-8") as f:
            code = f.read()
        for text in INJECTED_CODE:
            if not readme_render.values_problems(values, code + text):
                failures.append(f"{values}: {text.strip()!r} passed the check")
    return len(list(figure_lines(made))) - len(unmoved), failures


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
    followed, failures = 0, []
    for template in templates:
        try:
            n, found = page_failures(template)
        except readme_render.DocError as e:
            failures.append(f"{template}: cannot be made, so nothing could be tampered with: {e}")
            continue
        followed += n
        failures += found
    failures += run_claim_failures()
    print(f"{followed} lines of figures in {len(templates)} pages follow their results when the results change; "
          "in each page, figures and claims of one run typed in the template, and figures, sentences and claims "
          "typed in its values, caught; a same-run claim over two runs, and two runs unexplained, refused")
    for f in failures:
        print(f"error: {f}")
    return 1 if failures or not templates or not followed else 0


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print("error: usage: python3 tests/support/docs_tamper.py (it takes no arguments)", file=sys.stderr)
        sys.exit(2)
    sys.exit(main())
