#!/usr/bin/env python3
"""plot_trace.py: draw the Chrome trace written by `streams_events_bench --trace FILE` as a PNG timeline.

The traces of `fused_kernels_bench --trace` (05), `linear_regression_bench --trace` (04) and
the two-epoch timeline `pytorch_regression.py --profile` (04) cuts from torch.profiler's trace have
the same shape and are drawn by this script too.

    python3 plot_trace.py trace.json timeline.png ["title"]

It writes OUT.png (or .pdf, .svg: any format matplotlib writes) and nothing else.

One row per stream (the trace's tracks), one bar per operation, coloured by stage. Tracks named
"group: stream" are drawn in one panel per group, each panel's clock starting at its first bar,
so the K-stream pipeline and the article's two-stream pattern sit one above the other.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import PLOT_FORMATS, Parser, run  # noqa: E402  (usage errors and bad files: one line, exit 2)
from workbook_plots import save_figure  # noqa: E402  (the provenance in a figure's metadata, plain log ticks)

plt = needs("matplotlib.pyplot")  # the Agg backend: no display on the GPU machine
patches = needs("matplotlib.patches")

COLOURS = {"copy_in": "#4c72b0", "compute": "#dd8452", "copy_out": "#55a868", "delay": "#9a9a9a",
           "step": "#8172b3", "launch": "#c44e52", "sync": "#937860", "memset": "#64b5cd"}
LABELS = {"copy_in": "H2D copy", "compute": "compute kernel", "copy_out": "D2H copy", "delay": "late producer",
          "step": "update / SGD step", "launch": "host: launch call", "sync": "host: waits for the GPU",
          "memset": "memset"}
DEFAULT_TITLE = "streams_events_bench --trace: CUDA event timestamps per stream"


def load(parser, path):
    """The tracks' names {tid: name} and the operations (complete events, "ph": "X") of a Chrome
    trace, checked for what main() reads; anything else (another program's JSON) ends the script."""
    events = parser.input_json(path, None, {"traceEvents": [{}]})["traceEvents"]
    tracks = [(i, e) for i, e in enumerate(events) if e.get("ph") == "M" and e.get("name") == "thread_name"]
    ops = [(i, e) for i, e in enumerate(events) if e.get("ph") == "X"]
    for what, found, shape in (("tracks (thread_name records)", tracks, {"tid": "whole", "args": {"name": "text"}}),
                               ("operations (\"ph\": \"X\" records)", ops,
                                {"tid": "whole", "ts": "number", "dur": "duration", "cat?": "text"})):
        if not found:
            parser.fail(f"{path}: a trace with no {what}")
        for i, e in found:
            parser.check_shape(path, e, shape, f"traceEvents[{i}]")
    return {e["tid"]: e["args"]["name"] for _, e in tracks}, [e for _, e in ops]


def main(names, ops, png_path, title=DEFAULT_TITLE):
    groups = {}
    for tid in sorted(names):
        group = names[tid].split(":")[0] if ":" in names[tid] else ""
        groups.setdefault(group, []).append(tid)
    fig, axes = plt.subplots(len(groups), 1, figsize=(12, 1.2 + 0.55 * len(names)), squeeze=False, sharex=True,
                             gridspec_kw={"height_ratios": [len(t) for t in groups.values()]})
    for ax, (group, tids) in zip(axes[:, 0], groups.items()):
        mine = [e for e in ops if e["tid"] in tids]
        if not mine:
            continue
        t0 = min(e["ts"] for e in mine)
        # One bar collection per track and category, not one per operation: a trace of tens of
        # thousands of operations draws in seconds.
        bars = {}
        for e in mine:
            bars.setdefault((e["tid"], e.get("cat")), []).append(((e["ts"] - t0) / 1000, e["dur"] / 1000))
        for (tid, cat), spans in bars.items():
            row = tids.index(tid)
            ax.broken_barh(spans, (row - 0.4, 0.8), facecolors=COLOURS.get(cat, "black"), edgecolor="white",
                           linewidth=0.3)
        ax.set_yticks(range(len(tids)))
        ax.set_yticklabels([names[t].split(":", 1)[-1].strip() for t in tids])
        ax.invert_yaxis()
        ax.set_title(group or "streams", loc="left", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("ms since each panel's first operation")
    used = sorted({e.get("cat") for e in ops} & set(COLOURS), key=list(COLOURS).index)
    fig.legend(handles=[patches.Patch(color=COLOURS[c], label=LABELS[c]) for c in used], loc="upper right", ncol=len(used))
    fig.suptitle(title, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    save_figure(fig, png_path, dpi=120)
    print(f"wrote {png_path}: {len(ops)} operations on {len(names)} tracks")


if __name__ == "__main__":
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", metavar="TRACE.json",
                        help="written by streams_events_bench, fused_kernels_bench or linear_regression_bench --trace")
    parser.add_argument("png", metavar="OUT.png", help="the picture to write (.png, .pdf, .svg, ...); its folder must exist")
    parser.add_argument("title", metavar="TITLE", nargs="?", default=DEFAULT_TITLE, help=f"default: {DEFAULT_TITLE}")
    args = parser.parse_args()
    names, ops = load(parser, args.trace)
    parser.output_file(args.png, PLOT_FORMATS)
    require("matplotlib.pyplot", "matplotlib.patches")
    run(lambda: main(names, ops, args.png, args.title))
