#!/usr/bin/env python3
"""plot_fused.py RESULTS_DIR [--out DIR]: chapter 05's two charts and the README's table, from benchmark.sh's files.

The charts go into --out DIR (benchmark.sh: its RESULTS_DIR; default build/plots/05_fused_kernels/); nothing else is written.

time_vs_size.png   training time (200 epochs) against points, log-log: every CUDA variant
                   (sweep.csv) and every PyTorch mode (pytorch_sweep.csv), with the largest size
                   whose training set fits on chip (variant 8's room, sweep.json) drawn as a line;
per_operation.png  per-epoch time of each kernel / step at 5M points: 04's unfused kernels,
                   the fused kernel + update (breakdown.json, from fused_kernels_bench --breakdown), PyTorch
                   eager's steps (pytorch_sweep.json).
Prints summary.md (a Markdown table and the chapter's targets, judged) on stdout.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import results_folder_arguments, run  # noqa: E402  (usage errors and bad files: one line, exit 2)
from workbook_plots import save_figure, say_figures_written  # noqa: E402  (the provenance in a figure's metadata, plain log ticks)

plt = needs("matplotlib.pyplot")

OUTPUTS = ["time_vs_size.png", "per_operation.png"]
# What this script reads of the sweeps' CSV and of the JSON files (workbook_cli.shape_error).
NUMBERS = ("points", "median_ms", "us_per_epoch", "gbps", "copy_fraction", "copy_gbps", "passed")
TIMING = {"median": "number", "min": "number", "max": "number", "runs": "whole"}  # every measured time
BREAKDOWN_ROWS = [{"variant": "text", "operation": "text", "time_us": TIMING}]
BREAKDOWN = {"device?": "text", "breakdown?": BREAKDOWN_ROWS}
PYTORCH = {"breakdown?": BREAKDOWN_ROWS}
# The bars of chart 2: a breakdown row's variant -> its label.
GROUPS = {"1 unfused": "CUDA unfused (04)", "3 block_reduce": "CUDA fused (3)", "eager": "PyTorch eager"}
SWEEP = {"on_chip?": {"train_points?": "number"}}


def load(parser, d):
    """The rows of both sweeps that passed, and the three JSON files ({} for one that is missing),
    every file that exists checked; no passed row in either sweep ends the script."""
    def rows(name, implementation):
        path = os.path.join(d, name)
        found = parser.input_csv(path, NUMBERS, ("variant", "implementation")) if os.path.exists(path) else []
        other = sorted({r["implementation"] for r in found} - {implementation})
        if other:  # the two sweeps swapped (or another program's CSV): refused, not plotted under the wrong name
            parser.fail(f"{path}: its rows are {', '.join(other)}'s, its name says {implementation}'s")
        return [r for r in found if r["passed"] and r["median_ms"] > 0 and r["points"] > 0]

    def json_file(name, program, shape):
        path = os.path.join(d, name)
        return parser.input_json(path, program, shape) if os.path.exists(path) else {}

    found = (rows("sweep.csv", "cuda"), rows("pytorch_sweep.csv", "pytorch"), json_file("breakdown.json", "fused_kernels_bench", BREAKDOWN),
             json_file("pytorch_sweep.json", "pytorch_fused", PYTORCH), json_file("sweep.json", "fused_kernels_bench", SWEEP))
    if not found[0] and not found[1]:
        parser.fail(f"{d}: nothing to plot (no sweep.csv or pytorch_sweep.csv with a passed row)")
    return found


def fmt_points(n):
    n = int(n)
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}K" if n >= 1000 else str(n)


def main(cuda, torch_rows, fused, pyt, sweep, out):
    time_vs_size(cuda, torch_rows, fused, sweep, out)
    per_operation(fused, pyt, out)
    at, sizes = print_table(cuda, torch_rows)
    print_targets(cuda, at, sizes)
    say_figures_written("plot_fused.py")


def time_vs_size(cuda, torch_rows, fused, sweep, out):
    """Chart 1: time vs size."""
    fig, ax = plt.subplots(figsize=(9, 6))
    series = {}
    for r in cuda:
        series.setdefault(("CUDA", r["variant"]), []).append((r["points"], r["median_ms"]))
    for r in torch_rows:
        series.setdefault(("PyTorch", r["variant"]), []).append((r["points"], r["median_ms"]))
    for (side, name), pts in series.items():
        pts.sort()
        style = "-o" if side == "CUDA" else "--s"
        ax.plot([p for p, _ in pts], [t for _, t in pts], style, label=f"{side} {name}", markersize=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    room = sweep.get("on_chip", {}).get("train_points", 0)
    if room:  # training points are 80% of the points
        ax.axvline(room / 0.8, color="gray", linestyle=":", linewidth=1)
        ax.text(room / 0.8, ax.get_ylim()[1], f" on chip up to {fmt_points(room / 0.8)} points", fontsize=8,
                va="top", ha="left", color="gray")
    ax.set_xlabel("points (80% train)")
    ax.set_ylabel("training time, 200 epochs (ms, median)")
    ax.set_title(f"Training time vs dataset size, {fused.get('device', '')}".strip(", "), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    save_figure(fig, os.path.join(out, "time_vs_size.png"), dpi=120)


def operation_groups(fused, pyt):
    """[(label, {operation: median ms per epoch})] for the bars of chart 2, operations in the epoch's order."""
    order = ["forward", "loss", "backward", "step", "fused kernel", "update"]  # JSON objects may sort keys

    def in_order(steps):
        return {k: steps[k] for k in sorted((k for k in steps if k != "total"), key=lambda k: (
            order.index(k) if k in order else len(order), k))}

    per_variant = {}  # variant -> {operation: median ms per epoch}
    for row in fused.get("breakdown", []) + pyt.get("breakdown", []):
        per_variant.setdefault(row["variant"], {})[row["operation"]] = row["time_us"]["median"] * 1e-3
    return [(label, in_order(per_variant[v])) for v, label in GROUPS.items() if v in per_variant]


def per_operation(fused, pyt, out):
    """Chart 2: per-operation bars (microseconds per epoch) at 5M points; none without a breakdown."""
    groups = operation_groups(fused, pyt)
    if not groups:
        return
    fig, ax = plt.subplots(figsize=(9, 5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = []
    for g, (_, steps) in enumerate(groups):
        for step in steps:
            if step not in names:
                names.append(step)
    for g, (label, steps) in enumerate(groups):
        left = 0.0
        for step, ms in steps.items():
            c = colors[names.index(step) % len(colors)]
            ax.barh(g, ms * 1e3, left=left, color=c, label=step if g == [i for i, (_, s) in enumerate(groups)
                                                                             if step in s][0] else None)
            left += ms * 1e3
        ax.text(left, g, f"  {left:.1f} us", va="center", fontsize=9)
    ax.set_yticks(range(len(groups)))
    ax.set_yticklabels([g[0] for g in groups])
    ax.set_xlabel("per-epoch time (us, median over the epochs of one run), 5M points")
    ax.set_title("Where one epoch's time goes", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, os.path.join(out, "per_operation.png"), dpi=120)


def print_table(cuda, torch_rows):
    """The table: per size, every CUDA variant and PyTorch mode (ms for 200 epochs). Returns the rows by
    (points, column) and the sizes."""
    variants = []
    for r in cuda:
        if r["variant"] not in variants:
            variants.append(r["variant"])
    modes = []
    for r in torch_rows:
        if r["variant"] not in modes:
            modes.append(r["variant"])
    sizes = sorted({r["points"] for r in cuda + torch_rows})
    at = {(r["points"], "CUDA " + r["variant"]): r for r in cuda}
    at.update({(r["points"], "PyTorch " + r["variant"]): r for r in torch_rows})
    cols = ["CUDA " + v for v in variants] + ["PyTorch " + m for m in modes]
    print("Training time for 200 epochs, ms (median); - = not run (variant 2 above 5M, CPU above its cap)\n")
    print("| points | " + " | ".join(cols) + " |")
    print("|" + " --- |" * (len(cols) + 1))
    for n in sizes:
        cells = [f"{at[(n, c)]['median_ms']:.3g}" if (n, c) in at else "-" for c in cols]
        print(f"| {fmt_points(n)} | " + " | ".join(cells) + " |")
    return at, sizes


def print_targets(cuda, at, sizes):
    """The chapter's targets, judged on this run: against PyTorch at 5M, the copy's rate at the largest
    sizes, the time per epoch at the smallest."""
    def fastest(n):
        rs = [r for r in cuda if r["points"] == n]
        return min(rs, key=lambda r: r["median_ms"]) if rs else None

    print("\nNumbers to reach (this run):\n")
    f5 = fastest(5_000_000)
    eager = at.get((5_000_000, "PyTorch eager"))
    graph = at.get((5_000_000, "PyTorch graph"))
    if f5 and eager and graph:
        a, b = eager["median_ms"] / f5["median_ms"], graph["median_ms"] / f5["median_ms"]
        print(f"- 5M points: fastest variant {f5['variant']} {f5['median_ms']:.3f} ms; {a:.1f}x PyTorch eager "
              f"({eager['median_ms']:.2f} ms, target 25x: {'met' if a >= 25 else 'NOT met'}), {b:.1f}x CUDA-graph "
              f"replay ({graph['median_ms']:.2f} ms, target 20x: {'met' if b >= 20 else 'NOT met'})")
    for n in sizes:
        f = fastest(n)
        if f and n >= 50_000_000:
            print(f"- {fmt_points(n)} points: fastest variant {f['variant']} reads {f['gbps']:.0f} GB/s = "
                  f"{100 * f['copy_fraction']:.1f}% of the {f['copy_gbps']:.0f} GB/s copy "
                  f"(target 90%: {'met' if f['copy_fraction'] >= 0.9 else 'NOT met'})")
        if f and n <= 100_000:
            print(f"- {fmt_points(n)} points: fastest variant {f['variant']} {f['us_per_epoch']:.2f} us per epoch "
                  f"(target 2 us: {'met' if f['us_per_epoch'] <= 2 else 'NOT met'})")


if __name__ == "__main__":
    parser, results, out = results_folder_arguments(__doc__.splitlines()[0], OUTPUTS)
    inputs = load(parser, results)
    parser.output_folder(out, OUTPUTS)
    require("matplotlib.pyplot")
    run(lambda: main(*inputs, out))
