#!/usr/bin/env python3
"""plot_regression.py: chapter 04's figures and table from one benchmark run.

Reads cuda.json, cpu.json, pytorch_cuda.json and pytorch_cpu.json (whichever exist) in RESULTS_DIR,
with the per-step times of cuda and cpu from linear_regression_bench's cuda_steps.json and
cpu_steps.json (the PyTorch script times its steps itself), and writes loss_curves.png (the printed losses of each run), times.png (training time and the
per-epoch time of each step) and summary.md (the README's table).

    python3 plot_regression.py RESULTS_DIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import Parser  # noqa: E402  (usage errors: one line, exit 2)

plt = needs("matplotlib.pyplot")

RUNS = [("pytorch_cpu", "PyTorch CPU"), ("pytorch_cuda", "PyTorch GPU (eager)"),
        ("cpu", "this chapter, CPU (one core)"), ("cuda", "this chapter, CUDA kernels")]
STEPS = ["forward", "loss", "backward", "step"]


def main(results):
    runs = []
    for key, label in RUNS:
        path = os.path.join(results, key + ".json")
        if os.path.exists(path):
            with open(path) as f:
                j = json.load(f)
            if "ms" not in j:
                continue
            steps_path = os.path.join(results, key + "_steps.json")
            if "steps" not in j and os.path.exists(steps_path):
                with open(steps_path) as f:
                    j["steps"] = json.load(f)["steps"]
            if "steps" in j:
                j["per_epoch_ms"] = {row["step"]: row["ms"] for row in j["steps"]}
                runs.append((key, label, j))
    if not runs:
        print("no results to plot", file=sys.stderr)
        return 1

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (key, label, j), style in zip(runs, ["s-", "o-", "^--", "x--"]):
        ax.plot([p["epoch"] for p in j["losses"]], [p["loss"] for p in j["losses"]], style, label=label,
                markersize=5, alpha=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel("training MSE (printed every %d epochs)" % runs[0][2]["print_every"])
    ax.set_title("y = wX + b, %d points: the four runs' loss curves" % runs[0][2]["points"])
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(results, "loss_curves.png"), dpi=120)

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    labels = [label for _, label, _ in runs]
    times = [j["ms"] for _, _, j in runs]
    bars = left.barh(labels, times, color=["#8c8c8c", "#ee4c2c", "#6a9fd8", "#76b900"][: len(runs)])
    left.bar_label(bars, ["%.4g ms" % t for t in times])
    left.set_xscale("log")
    left.set_xlabel("training time, %d epochs (median, ms, log scale)" % runs[0][2]["epochs"])
    gpu_runs = [(label, j) for key, label, j in runs if key in ("pytorch_cuda", "cuda")]
    bottom = [0.0] * len(gpu_runs)
    for step in STEPS:
        values = [j["per_epoch_ms"][step] * 1e3 for _, j in gpu_runs]
        right.bar([label for label, _ in gpu_runs], values, bottom=bottom, label=step)
        bottom = [b + v for b, v in zip(bottom, values)]
    right.set_ylabel("GPU time per epoch (µs, median over epochs)")
    right.set_title("per-operation time, one epoch")
    right.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(results, "times.png"), dpi=120)

    lines = ["| run | device | training time, median (min-max) | per epoch: forward / loss / backward / step (µs) "
             "| w | b | test MSE |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for _, label, j in runs:
        s = j["per_epoch_ms"]
        lines.append("| %s | %s | %.4g ms (%.4g-%.4g) | %s | %.9g | %.9g | %.6g |" % (
            label, j["device_name"], j["ms"], j["min_ms"], j["max_ms"],
            " / ".join("%.1f" % (s[k] * 1e3) for k in STEPS), j["w"], j["b"], j["test_mse"]))
    by_key = {key: j for key, _, j in runs}
    if "cuda" in by_key and "pytorch_cuda" in by_key:
        c, p = by_key["cuda"], by_key["pytorch_cuda"]
        lines.append("")
        lines.append("CUDA kernels vs PyTorch eager on the same GPU: %.2fx faster; |w - w_torch| / |w| = %.2g, "
                     "|b - b_torch| / |b| = %.2g" % (p["ms"] / c["ms"],
                                                    abs(c["w"] - p["w"]) / abs(c["w"]),
                                                    abs(c["b"] - p["b"]) / abs(c["b"])))
    with open(os.path.join(results, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("results", metavar="RESULTS_DIR", nargs="?", default=".",
                        help="benchmark.sh's output folder (default: the current folder)")
    args = parser.parse_args()
    if not os.path.isdir(args.results):
        parser.error(f"{args.results}: no such folder")
    require("matplotlib.pyplot")
    sys.exit(main(args.results))
