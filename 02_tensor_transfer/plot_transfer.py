#!/usr/bin/env python3
"""plot_transfer.py: bandwidth vs copy size from tensor_transfer_bench's and pytorch_transfer.py's JSON.

    python3 plot_transfer.py tensor_transfer_bench.json pytorch_transfer.json transfer_bandwidth.png

Draws H2D and D2H GB/s against size for the three kinds of host memory (tensor_transfer_bench) and for
PyTorch's pinned non_blocking copy into OUT.png (or .pdf, .svg: any format matplotlib writes), then
prints the chapter's targets, judged on the same run. Writes nothing else.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import PLOT_FORMATS, Parser, run  # noqa: E402  (usage errors and bad files: one line, exit 2)
from workbook_plots import save_figure  # noqa: E402  (the provenance in a figure's metadata, plain log ticks)

plt = needs("matplotlib.pyplot")

MiB = 1 << 20

# What this script reads of each program's --json (workbook_cli.shape_error).
TIMING = {"median": "positive", "min": "number", "max": "number", "runs": "whole"}  # common/table.h timing()
ROWS = [{"kind": "text", "direction": "text", "bytes": "positive", "gbps": "positive", "time_ms": TIMING}]
BENCH = {"device": "text", "bandwidth": ROWS, "random_tensor": {"bytes": "whole", "speedup": "number"}}
PYTORCH = {"bandwidth": ROWS, "random_tensor": {"speedup": "number"}}


def series(rows, kind, direction):
    pts = sorted((r["bytes"], r["gbps"]) for r in rows if r["kind"] == kind and r["direction"] == direction)
    return [b for b, _ in pts], [g for _, g in pts]


def row(rows, kind, direction, nbytes):
    return next((r for r in rows if r["kind"] == kind and r["direction"] == direction and r["bytes"] == nbytes), None)


def spread(r):
    """The min-to-max range of a measurement's repeats, relative to its median."""
    t = r["time_ms"]
    return (t["max"] - t["min"]) / t["median"]


def versus_pytorch(ours, theirs):
    """'faster', 'tie' or 'slower'. A tie: the gap between the medians is no larger than the spread
    of either side's own repeats, so a rerun could order them either way. At the PCIe link's limit
    both programs make the same cudaMemcpyAsync call, and a tie is the expected answer."""
    gap = abs(ours["gbps"] - theirs["gbps"]) / theirs["gbps"]
    if gap <= max(spread(ours), spread(theirs)):
        return "tie"
    return "faster" if ours["gbps"] > theirs["gbps"] else "slower"


def main():
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("cpp_json", metavar="tensor_transfer_bench.json", help="tensor_transfer_bench --json")
    parser.add_argument("torch_json", metavar="pytorch_transfer.json", help="pytorch_transfer.py --json")
    parser.add_argument("png", metavar="OUT.png", help="the figure to write (.png, .pdf, .svg, ...); its folder must exist")
    args = parser.parse_args()
    cpp, torch_run = parser.input_jsons((args.cpp_json, "tensor_transfer_bench", BENCH),
                                        (args.torch_json, "pytorch_transfer", PYTORCH))
    parser.output_file(args.png, PLOT_FORMATS)
    require("matplotlib.pyplot")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    styles = {"pageable": ("tab:red", "o"), "pinned": ("tab:blue", "s"), "registered": ("tab:green", "^")}
    for ax, direction in zip(axes, ("h2d", "d2h")):
        for kind, (color, marker) in styles.items():
            x, y = series(cpp["bandwidth"], kind, direction)
            ax.plot(x, y, color=color, marker=marker, markersize=4, label=f"{kind} (tensor_transfer)")
        x, y = series(torch_run["bandwidth"], "pinned", direction)
        ax.plot(x, y, color="black", linestyle="--", marker="x", markersize=5,
                label="PyTorch pinned, non_blocking=True")
        x, y = series(torch_run["bandwidth"], "pageable", direction)
        ax.plot(x, y, color="gray", linestyle=":", label="PyTorch pageable")
        ax.set_xscale("log", base=2)
        ax.set_xticks([1 << k for k in range(12, 31, 2)])
        ax.set_xticklabels(["4K", "16K", "64K", "256K", "1M", "4M", "16M", "64M", "256M", "1G"])
        ax.set_xlabel("bytes per copy")
        ax.set_title(f"{'host to device (H2D)' if direction == 'h2d' else 'device to host (D2H)'}")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("GB/s (1e9 bytes/s), median")
    axes[1].legend(loc="lower right", fontsize=8)
    fig.suptitle(f"Copy bandwidth on {cpp['device']}")
    fig.tight_layout()
    save_figure(fig, args.png, dpi=110)
    print(f"wrote {args.png}")

    print("targets (same run):")
    for direction in ("h2d", "d2h"):
        ours = row(cpp["bandwidth"], "pinned", direction, 256 * MiB)
        theirs = row(torch_run["bandwidth"], "pinned", direction, 256 * MiB)
        if ours is None or theirs is None:
            print(f"  {direction}: no 256 MiB measurement (a --quick run?)")
            continue
        best = max(r["gbps"] for r in cpp["bandwidth"] if r["direction"] == direction)
        verdict = versus_pytorch(ours, theirs)
        ok = verdict != "slower" and ours["gbps"] >= 0.9 * best
        print(f"  pinned {direction.upper()} 256 MiB: {ours['gbps']:.2f} GB/s (repeats spread {100 * spread(ours):.2f}%); "
              f"PyTorch pinned non_blocking {theirs['gbps']:.2f} GB/s (spread {100 * spread(theirs):.2f}%): "
              f"{100 * ours['gbps'] / theirs['gbps']:.2f}%, {verdict}; "
              f"{100 * ours['gbps'] / best:.1f}% of the best measured ({best:.2f} GB/s): {'met' if ok else 'NOT met'}")
    speedup = cpp["random_tensor"]["speedup"]
    print(f"  random {cpp['random_tensor']['bytes'] // MiB} MiB tensor made on the GPU: {speedup:.0f}x faster than "
          f"made on the host and copied (target 10x): {'met' if speedup >= 10 else 'NOT met'}; PyTorch: "
          f"{torch_run['random_tensor']['speedup']:.0f}x")
    return 0


if __name__ == "__main__":
    run(main)
