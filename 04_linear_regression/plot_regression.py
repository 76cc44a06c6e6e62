#!/usr/bin/env python3
"""plot_regression.py: chapter 04's figures and table from one benchmark run.

Reads cuda.json, cpu.json, pytorch_cuda.json and pytorch_cpu.json (whichever exist) in RESULTS_DIR,
with the per-step times of cuda and cpu from linear_regression_bench's cuda_steps.json and
cpu_steps.json (the PyTorch script times its steps itself), and writes loss_curves.png (the printed
losses of each run), times.png (training time and the per-epoch time of each step) and summary.md
(the README's table) into --out DIR (benchmark.sh: its RESULTS_DIR; by default
build/plots/04_linear_regression/); nothing else.

    python3 plot_regression.py RESULTS_DIR [--out DIR]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from provenance import line, record  # noqa: E402  (summary.md's first line)
from workbook_cli import results_folder_arguments, run  # noqa: E402  (usage errors and bad files: one line, exit 2)
from workbook_plots import save_figure, say_figures_written  # noqa: E402  (the provenance in a figure's metadata, plain log ticks)

plt = needs("matplotlib.pyplot")

RUNS = [("pytorch_cpu", "PyTorch CPU"), ("pytorch_cuda", "PyTorch GPU (eager)"),
        ("cpu", "this chapter, CPU (one core)"), ("cuda", "this chapter, CUDA kernels")]
STEPS = ["forward", "loss", "backward", "step"]
OUTPUTS = ["loss_curves.png", "times.png", "summary.md"]

# What this script reads of each run's --json (workbook_cli.shape_error), and which program wrote it.
TIMING = {"median": "positive", "min": "number", "max": "number", "runs": "whole"}  # every measured time
STEP_ROWS = [{"step": "text", "time_ms": TIMING}]
RESULT = {"result": [{}]}  # the run's one row; a run whose check failed has no training_ms in it
RUN = {"device": "text", "points": "whole", "epochs": "whole", "print_every": "whole",
       "losses": [{"epoch": "number", "loss": "number"}],
       "result": [{"w": "number", "b": "number", "test_mse": "number", "training_ms": TIMING}], "steps?": STEP_ROWS}
PROGRAM = {"pytorch_cpu": "pytorch_regression", "pytorch_cuda": "pytorch_regression",
           "cpu": "linear_regression", "cuda": "linear_regression"}


def load_runs(parser, results):
    """(key, label, JSON) of each run in RESULTS_DIR with its times and per-step times, every file
    checked, and a note for each run left out: one with no times (its check failed) or no per-step
    times (printed once the checks have passed, so that a refusal stays one line)."""
    runs, notes = [], []
    for key, label in RUNS:
        path = os.path.join(results, key + ".json")
        if not os.path.exists(path):
            continue
        j = parser.input_json(path, PROGRAM[key])
        torch_device = str(j.get("torch_device", j.get("device", "no device")))  # "cpu", "cuda:0"
        on_cpu = torch_device == "cpu"
        if on_cpu != key.endswith("cpu"):  # two files swapped: refused, not plotted under each other's name
            parser.fail(f"{path}: its run is on {torch_device}, its name says "
                        f"{'the CPU' if key.endswith('cpu') else 'the GPU'}")
        parser.check_shape(path, j, RESULT)
        if "training_ms" not in j["result"][0]:
            notes.append(f"note: {path} left out: it has no training time (its check failed)")
            continue
        parser.check_shape(path, j, RUN)
        j.update(j["result"][0])  # w, b, test_mse, training_ms: read below as the run's own
        steps_path = os.path.join(results, key + "_steps.json")
        if "steps" not in j and os.path.exists(steps_path):
            steps = parser.input_json(steps_path, "linear_regression_bench", {"steps": STEP_ROWS})
            if ("copy_gbps" in steps) == on_cpu:  # the copy ceiling is measured on a GPU run only
                parser.fail(f"{steps_path}: its steps are from a {'GPU' if on_cpu else 'CPU'} run, its name says "
                            f"{'the CPU' if on_cpu else 'the GPU'}")
            j["steps"] = steps["steps"]
            path = steps_path
        if "steps" not in j:
            notes.append(f"note: {path} left out: no per-step times ({key}_steps.json is missing)")
            continue
        j["per_epoch_ms"] = {row["step"]: row["time_ms"]["median"] for row in j["steps"]}
        missing = [step for step in STEPS if step not in j["per_epoch_ms"]]
        if missing:
            parser.fail(f"{path}: steps has no {', '.join(missing)}")
        runs.append((key, label, j))
    if not runs:
        parser.fail(f"{results}: no run to plot (none of {', '.join(k + '.json' for k, _ in RUNS)} with its times)")
    return runs, notes


def device_label(j):
    """The GPU's name, or the CPU with the threads it ran on (PyTorch's; the C++ twins run on one core)."""
    if j["device"] != "CPU":
        return j["device"]
    return f"CPU ({j['cpu_threads']} threads)" if "cpu_threads" in j else "CPU (one core)"


def relative(x, reference):
    return abs(x - reference) / abs(reference) if reference else float("nan")


def main(runs, notes, out):
    for note in notes:
        print(note, file=sys.stderr)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (key, label, j), style in zip(runs, ["s-", "o-", "^--", "x--"]):
        ax.plot([p["epoch"] for p in j["losses"]], [p["loss"] for p in j["losses"]], style, label=label,
                markersize=5, alpha=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"training MSE (printed every {runs[0][2]['print_every']} epochs)")
    ax.set_title(f"y = wX + b, {runs[0][2]['points']} points: the four runs' loss curves")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(fig, os.path.join(out, "loss_curves.png"), dpi=120)

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    labels = [label for _, label, _ in runs]
    times = [j["training_ms"]["median"] for _, _, j in runs]
    bars = left.barh(labels, times, color=["#8c8c8c", "#ee4c2c", "#6a9fd8", "#76b900"][: len(runs)])
    left.bar_label(bars, [f"{t:.4g} ms" for t in times])
    left.set_xscale("log")
    left.set_xlabel(f"training time, {runs[0][2]['epochs']} epochs (median, ms, log scale)")
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
    save_figure(fig, os.path.join(out, "times.png"), dpi=120)

    lines = ["| run | device | training time, median (min-max) | per epoch: forward / loss / backward / step (µs) "
             "| w | b | test MSE |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for _, label, j in runs:
        s, t = j["per_epoch_ms"], j["training_ms"]
        steps = " / ".join(f"{s[k] * 1e3:.1f}" for k in STEPS)
        lines.append(f"| {label} | {device_label(j)} | {t['median']:.4g} ms ({t['min']:.4g}-{t['max']:.4g}) | {steps} "
                     f"| {j['w']:.9g} | {j['b']:.9g} | {j['test_mse']:.6g} |")
    by_key = {key: j for key, _, j in runs}
    if "cuda" in by_key and "pytorch_cuda" in by_key:
        c, p = by_key["cuda"], by_key["pytorch_cuda"]
        lines.append("")
        speedup = p["training_ms"]["median"] / c["training_ms"]["median"]
        lines.append(f"CUDA kernels vs PyTorch eager on the same GPU: {speedup:.2f}x faster; "
                     f"|w - w_torch| / |w| = {relative(p['w'], c['w']):.2g}, "
                     f"|b - b_torch| / |b| = {relative(p['b'], c['b']):.2g}")
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(line(record(), markdown=True) + "\n")  # where the table came from, hidden when rendered
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    say_figures_written("plot_regression.py")
    return 0


if __name__ == "__main__":
    parser, results, out = results_folder_arguments(__doc__.splitlines()[0], OUTPUTS)
    runs, notes = load_runs(parser, results)
    parser.output_folder(out, OUTPUTS)
    require("matplotlib.pyplot")
    run(lambda: main(runs, notes, out))
