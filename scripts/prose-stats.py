#!/usr/bin/env python3
"""prose-stats.py: how readable each page of the workbook is, measured on the text a reader sees.

    scripts/prose-stats.py               # a table: every page's words, sentences and sentence length
    scripts/prose-stats.py --check       # the same, and exit 1 when a page is over a limit (ctest label docs)
    scripts/prose-stats.py PAGE.md...    # only these pages

Sentences are counted in the prose: paragraphs and list items, with code blocks, tables, headings
and HTML comments left out. A code span counts as one word, a link as its text. The limits: a mean
of at most 20 words a sentence, at most 5% of sentences over 35 words, and at most 3,000 words in
a chapter's README (every word outside code blocks and comments, its tables included).
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_MEAN, LONG, MAX_LONG_SHARE, MAX_CHAPTER_WORDS = 20.0, 35, 0.05, 3000
ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|vs|etc|cf|approx|no|Fig)\.$", re.I)


def pages():
    found = sorted(glob.glob("*.md", root_dir=ROOT)) + sorted(glob.glob("[0-9][0-9]_*/*.md", root_dir=ROOT))
    return [p for p in found if os.path.isfile(os.path.join(ROOT, p))]


def visible(text):
    """The page without HTML comments and fenced code."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return re.sub(r"^\s*```.*?^\s*```[^\n]*$", "", text, flags=re.S | re.M)


def inline(text):
    """Markdown inline syntax reduced to what a reader reads: a code span one word, a link its text."""
    text = re.sub(r"`[^`]+`", "CODE", text)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[*_]{1,2}(?=\S)|(?<=\S)[*_]{1,2}", "", text)


def units(text):
    """The paragraphs and list items of a page's prose, each as one line of text."""
    found, current = [], []
    def close():
        if current:
            found.append(" ".join(current))
            current.clear()
    for line in visible(text).splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "|")) or re.match(r"^-{3,}$", stripped):
            close()
            continue
        if re.match(r"^(?:[-*+]|\d+\.)\s", stripped):
            close()
            stripped = re.sub(r"^(?:[-*+]|\d+\.)\s+", "", stripped)
        current.append(stripped)
    close()
    return found


def sentences(unit):
    pieces, start = [], 0
    for m in re.finditer(r"[.!?](?=\s+[A-Z0-9(\"'*\[])", unit):
        if ABBREVIATIONS.search(unit[start:m.end()]):
            continue
        pieces.append(unit[start:m.end()])
        start = m.end()
    pieces.append(unit[start:])
    return [p.strip() for p in pieces if p.strip()]


def words(text):
    return [w for w in text.split() if re.search(r"\w", w)]


def measure(text):
    lengths = [len(words(inline(s))) for u in units(text) for s in sentences(u)]
    lengths = [n for n in lengths if n]
    shown = re.sub(r"^\s*#+\s", "", visible(text), flags=re.M)
    return {"words": len(words(inline(shown))), "sentences": len(lengths),
            "mean": sum(lengths) / len(lengths) if lengths else 0.0,
            "long": sum(1 for n in lengths if n > LONG) / len(lengths) if lengths else 0.0}


def problems(page, m):
    found = []
    if m["mean"] > MAX_MEAN:
        found.append(f"a mean of {m['mean']:.1f} words a sentence (at most {MAX_MEAN:.0f})")
    if m["long"] > MAX_LONG_SHARE:
        found.append(f"{100 * m['long']:.1f}% of sentences over {LONG} words (at most {100 * MAX_LONG_SHARE:.0f}%)")
    if re.match(r"\d\d_[^/]+/README\.md$", page) and m["words"] > MAX_CHAPTER_WORDS:
        found.append(f"{m['words']} words (a chapter's README holds at most {MAX_CHAPTER_WORDS})")
    return found


def main(args):
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    check = bool(args) and args[0] == "--check"
    chosen = args[1:] if check else args
    bad = [a for a in chosen if a.startswith("-") or not a.endswith(".md")]
    if bad:
        print(f"error: prose-stats.py takes --check and .md pages, got '{bad[0]}' (see scripts/prose-stats.py --help)", file=sys.stderr)
        return 2
    missing = [a for a in chosen if not os.path.isfile(os.path.join(ROOT, a))]
    if missing:
        print(f"error: prose-stats.py: no page {missing[0]}", file=sys.stderr)
        return 2
    failed = 0
    print(f"{'page':42} {'words':>6} {'sentences':>9} {'mean':>5} {'over ' + str(LONG):>8}")
    for page in chosen or pages():
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            m = measure(f.read())
        found = problems(page, m)
        failed += bool(found)
        print(f"{page:42} {m['words']:6d} {m['sentences']:9d} {m['mean']:5.1f} {100 * m['long']:7.1f}%"
              + (f"  over: {'; '.join(found)}" if found else ""))
    if check and failed:
        print(f"error: {failed} pages over the limits (mean at most {MAX_MEAN:.0f} words a sentence, at most "
              f"{100 * MAX_LONG_SHARE:.0f}% over {LONG}, a chapter README at most {MAX_CHAPTER_WORDS} words)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
