#!/usr/bin/env python3
"""plot_multi_gpu.py RESULTS_DIR [--out DIR]: the chapter's figures and summary from benchmark.sh's JSON.

The figures go to --out DIR (benchmark.sh: its RESULTS_DIR; default build/plots/06_multi_gpu/):

allreduce_busbw.png  bus bandwidth vs size (this program; nccl-tests' out-of-place busbw beside it)
scaling.png          time per epoch and efficiency for 1/2/4 GPUs with each exchange; a black line across
                     each bar: the same sums and step timed alone (a measurement of its own, not subtracted)
exchange.png         the epoch's exchange alone, each way (multi_gpu_bench exchange) and PyTorch's
                     (pytorch_ddp.py --exchange nccl|symm_mem), at each GPU count
on_chip.png          time per epoch against points: on chip on 1 and 2 GPUs, chapter 05's best
                     DRAM-bound variant on one, and the room of 1 and 2 GPUs' chips
Prints summary.md: the chapter's targets, judged on from the same files. Any file may be
missing, or lack fields (a failed or partial run, a run split over two machines): what is there
is used, what is not is named.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import results_folder_arguments  # noqa: E402  (usage errors: one line, exit 2)
from workbook_plots import save_figure, say_figures_written  # noqa: E402  (the provenance in a figure's metadata, plain log ticks)

plt = needs("matplotlib.pyplot")

GIB = 1 << 30
NEAR = 0.05  # "within 5%" of nccl-tests' busbw

# The all-reduce is compared with nccl-tests' all_reduce_perf only where benchmark.sh could run it
# beside (nccl_tests_<n>gpus.txt in the same folder): a figure from another machine is no check.


# The files benchmark.sh writes that this script reads, by the start of their names.
JSON_PREFIXES = ("allreduce_", "scaling", "pytorch_scaling", "dp", "pytorch_data_parallel", "ddp_", "nonblocking_ddp_",
                 "exchange", "mpi_ddp_", "fault_", "one_gpu_sweep")


# What each file must hold, by its name (a file swapped with another, or another program's, is
# refused rather than read as this one): (pattern, "program" field or None, a top-level key, and
# for the per-rank-count files the path of the rank count that must equal the name's N).
SHAPES = (
    (r"allreduce_\d+gpus\.json", "multi_gpu_bench", "allreduce", None),
    (r"(nonblocking_)?ddp_(\d+)\.json", "multi_gpu_bench", "ddp", ("ddp", "launcher", "nproc")),
    (r"ddp_(\d+)_network\.json", "multi_gpu_bench", "ddp", ("ddp", "launcher", "nproc")),
    (r"fault_.*\.json", "multi_gpu_bench", "ddp", None),
    (r"(ddp|exchange)_pytorch_.*?(\d+)\.json", "pytorch_ddp", "ddp", ("ddp", "ranks")),
    (r"dp\.json", "multi_gpu", "ranks", None),
    (r"mpi_ddp_(\d+)\.json", "multi_gpu", "ranks", None),
    (r"exchange\.json", "multi_gpu_bench", "exchange", None),
    (r"scaling\.json", "multi_gpu_bench", "scaling", None),
    (r"pytorch_scaling\.json", "pytorch_ddp", "scaling", None),
    (r"topology\.json", "multi_gpu_bench", "topology", None),
    (r"one_gpu_sweep\.json", "fused_kernels_bench", "sweep", None),
    (r"pytorch_data_parallel\.json", "pytorch_data_parallel", "runs", None),
)


def shape_problem(name, j):
    """Why `j` is not what a file called `name` holds, or None (names not in SHAPES pass)."""
    for pattern, program, key, count_path in SHAPES:
        m = re.fullmatch(pattern, name)
        if not m:
            continue
        holds = j.get("program") if isinstance(j, dict) else None
        if not isinstance(j, dict) or key not in j or holds != program:
            return f"not the JSON a file of this name holds (wanted {program or 'a PyTorch script'}'s with '{key}'; " \
                   f"it holds {holds or 'no program field'})"
        want = m.groups()[-1] if m.groups() else None
        got = dig(j, *count_path) if count_path else None
        if want is not None and got is not None and str(got) != want:
            return f"its {'.'.join(count_path)} is {got}, its name says {want}"
        return None
    return None


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def dig(obj, *keys, default=None):
    """obj[k0][k1]... or default when any level is missing or not a dict/list."""
    for k in keys:
        try:
            obj = obj[k]
        except (KeyError, IndexError, TypeError):
            return default
    return obj


def nccl_tests_rows(path, column="busbw"):
    """{bytes: the out-of-place `column` (busbw GB/s, or time us)} from all_reduce_perf's output, or
    {} when absent."""
    try:
        with open(path) as f:
            text = f.read().splitlines()
    except OSError:
        return {}
    index = 7 if column == "busbw" else 5  # size count type redop root time algbw busbw (out of place first)
    for line in text:
        words = line.lstrip("#").split()
        if "size" in words and column in words:
            index = words.index(column)
            break
    rows = {}
    for line in text:
        words = line.split()
        if line.startswith("#") or len(words) <= index or not words[0].isdigit():
            continue
        try:
            rows[int(words[0])] = float(words[index])
        except ValueError:
            continue
    return rows


NCCL_TESTS_GRAPH = re.compile(r"nccl_tests_graph(_symmetric)?(_threads)?_(\d+)gpus\.txt")


def nccl_tests_graph_label(symmetric, threads):
    return (f"nccl-tests 16 B{', symmetric windows' if symmetric else ''}, "
            f"one {'thread' if threads else 'process'} per GPU, CUDA graph")


def nccl_tests_graph_us(results, lines):
    """all_reduce_perf at 8 to 64 bytes, one process per GPU as CUDA graphs (benchmark.sh's
    nccl_tests step): a summary line per file, and {(gpus, label): us at 16 B} for the exchange
    figure (16 B, 4 floats: the smallest size it ran that holds the exchange's 12 bytes)."""
    found = {}
    for name in sorted(os.listdir(results)):
        m = NCCL_TESTS_GRAPH.fullmatch(name)
        times = nccl_tests_rows(os.path.join(results, name), "time") if m else {}
        if not times:
            continue
        n, symmetric, threads = int(m.group(3)), bool(m.group(1)), bool(m.group(2))
        lines.append(f"- nccl-tests all_reduce_perf on {n} GPUs, one {'thread' if threads else 'process'} per GPU, "
                     f"CUDA graph{', symmetric windows' if symmetric else ''}: " +
                     ", ".join(f"{b} B {t:.2f} us" for b, t in sorted(times.items())))
        if 16 in times:
            found[(n, nccl_tests_graph_label(symmetric, threads))] = times[16]
    return found


def allreduce_part(results, lines):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    plotted = False
    for name in sorted(os.listdir(results)):
        if not (name.startswith("allreduce_") and name.endswith("gpus.json")):
            continue
        a = dig(load(os.path.join(results, name)), "allreduce")
        rows = [r for r in (dig(a, "rows") or []) if isinstance(r, dict) and "bytes" in r and "busbw_gbps" in r]
        if not rows:
            lines.append(f"- {name}: no all-reduce rows")
            continue
        n = dig(a, "gpus", default=name[len("allreduce_"):-len("gpus.json")])
        (line,) = ax.semilogx([r["bytes"] for r in rows], [r["busbw_gbps"] for r in rows], "o-", label=f"{n} GPUs")
        plotted = True
        top = rows[-1]
        lines.append(f"- all-reduce, {n} GPUs, {top['bytes']} B: busbw {top['busbw_gbps']:.1f} GB/s, "
                     f"{dig(top, 'time_us', 'median', default=float('nan')):.1f} us; "
                     f"wrong elements {dig(a, 'wrong', default='?')}")
        theirs = nccl_tests_rows(os.path.join(results, f"nccl_tests_{n}gpus.txt"))
        if theirs:
            ax.semilogx(sorted(theirs), [theirs[b] for b in sorted(theirs)], "x--", color=line.get_color(),
                        label=f"nccl-tests, {n} GPUs")
        ours_gib = next((r["busbw_gbps"] for r in rows if r["bytes"] == GIB), None)
        if ours_gib is not None and GIB in theirs:
            ratio = ours_gib / theirs[GIB] if theirs[GIB] > 0 else 0.0
            verdict = "within 5%" if ratio >= 1 - NEAR else f"MORE THAN 5% BELOW ({100 * (1 - ratio):.1f}% below)"
            lines.append(f"- 1 GiB busbw, {n} GPUs: {ours_gib:.1f} GB/s here vs nccl-tests {theirs[GIB]:.1f} GB/s "
                         f"(out of place): {100 * ratio:.1f}%, {verdict}")
        elif ours_gib is not None:
            lines.append(f"- 1 GiB busbw, {n} GPUs: {ours_gib:.1f} GB/s here; no nccl-tests run beside it to compare "
                         f"(all_reduce_perf was not installed where the benchmark ran)")
    if plotted:
        ax.set_xlabel("bytes per rank")
        ax.set_ylabel("bus bandwidth, GB/s")
        ax.set_title("NCCL all-reduce (float sum, one process)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        save_figure(fig, os.path.join(OUT[0], "allreduce_busbw.png"), dpi=120)
    plt.close(fig)


def size_of(row, kind):
    return row.get("points") if kind == "strong" else row.get("points_per_gpu")


def scaling_rows(results, name):
    """The rows of a scaling sweep (ours or PyTorch's) that carry every field the figure reads."""
    need = ("kind", "points", "points_per_gpu", "gpus", "us_per_epoch")
    return [r for r in (dig(load(os.path.join(results, name)), "scaling", "rows") or [])
            if isinstance(r, dict) and all(k in r for k in need)]


EXCHANGE_COLORS = {"nccl": "tab:blue", "nccl_symmetric": "tab:green", "one_shot": "tab:purple"}


def exchange_of(row):
    return row.get("exchange", "nccl")  # rows from before the bench ran each exchange: NCCL's


def exchange_bars(ax, sel, counts, offset, x, width, first):
    """One exchange's bars in a panel, `offset` bar widths from the centre of each GPU count, each
    labelled with its efficiency, the sums and step timed alone drawn across it as a black line."""
    mine = {r["gpus"]: r for r in sel if exchange_of(r) == x}
    pos = [i + offset * width for i, n in enumerate(counts) if n in mine]
    rows = [mine[n] for n in counts if n in mine]
    bars = ax.bar(pos, [r["us_per_epoch"] for r in rows], width, color=EXCHANGE_COLORS.get(x, "tab:gray"), label=x)
    alone = [(bar, r["compute_us"]) for bar, r in zip(bars, rows)
             if isinstance(r.get("compute_us"), (int, float)) and r["compute_us"] > 0]
    if alone:
        ax.hlines([u for _, u in alone], [b.get_x() for b, _ in alone], [b.get_x() + b.get_width() for b, _ in alone],
                  colors="black", linewidth=2, label="the sums and step timed alone (measured apart)" if first else None)
    for bar, r in zip(bars, rows):
        ax.annotate(f"{100 * r.get('efficiency', 0.0):.0f}%", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=7)


def panel_title(kind, size, torch_rows):
    """'strong, 5,000,000 points', with PyTorch DDP's epochs on a second line where it ran that size."""
    title = f"{kind}, {size:,} points{' per GPU' if kind == 'weak' else ''}"
    t = [r for r in torch_rows if r["kind"] == kind and size_of(r, kind) == size]
    if t:  # tens of times slower: a line of the title, not a bar that would flatten ours
        title += "\nPyTorch DDP: " + " / ".join(f"{r['us_per_epoch']:.0f}" for r in t) + " us"
    return title


def scaling_panel(ax, sel, kind, size, torch_rows):
    """One panel: the epoch of each GPU count as a bar per exchange, the exchange's cost beside it."""
    counts = sorted({r["gpus"] for r in sel})
    exchanges = list(dict.fromkeys(exchange_of(r) for r in sel))
    width = 0.8 / len(exchanges)
    # The bar is the timed epoch. The black line is the same sums and step timed alone on rank 0's shard
    # (multi_gpu_bench's compute_alone_us): a second measurement, drawn as measured. Their gap is
    # not a time of the exchange (timed apart, the two differ by noise either way, and the one-shot
    # epoch, one kernel, can take less than these two kernels), so it is never drawn as one.
    for k, x in enumerate(exchanges):
        exchange_bars(ax, sel, counts, k - (len(exchanges) - 1) / 2, x, width, k == 0)
    ax.set_xticks(range(len(counts)), [str(n) for n in counts])
    ax.set_ylim(0, 1.2 * max(r["us_per_epoch"] for r in sel))
    ax.set_title(panel_title(kind, size, torch_rows), fontsize=10)
    ax.set_xlabel("GPUs (bar: us per epoch; label: efficiency;\nblack line: the sums and step timed alone)")
    ax.set_ylabel("us per epoch")


def alone_words(r):
    """' (the sums and step timed alone: 8.66 us)' from a row's compute_us, or '' without one. Two
    measurements side by side: the epoch less the work alone is no time of the exchange (timed
    apart, the difference can even come out negative), so no line prints it."""
    alone = r.get("compute_us") if isinstance(r, dict) else None
    return f" (the sums and step timed alone: {alone:.2f} us)" if isinstance(alone, (int, float)) and alone > 0 else ""


def scaling_part(results, lines):
    rows = scaling_rows(results, "scaling.json")
    if not rows:
        lines.append("- scaling: no results")
        return
    torch_rows = scaling_rows(results, "pytorch_scaling.json")
    groups = list(dict.fromkeys((r["kind"], size_of(r, r["kind"])) for r in rows))
    fig, axes = plt.subplots(1, len(groups), figsize=(4 * len(groups), 4), squeeze=False)
    for ax, (kind, size) in zip(axes[0], groups):
        sel = [r for r in rows if r["kind"] == kind and size_of(r, kind) == size]
        scaling_panel(ax, sel, kind, size, torch_rows)
        for r in sel:
            ran = f" (ran {r['used']})" if r.get("used", exchange_of(r)) != exchange_of(r) else ""  # NCCL declined
            lines.append(f"- {kind} {r['points']} points on {r['gpus']} GPUs, {exchange_of(r)}{ran}: {r['us_per_epoch']:.2f} "
                         f"us/epoch, efficiency {100 * r.get('efficiency', 0.0):.1f}%{alone_words(r)}"
                         f"{'' if r.get('passed', True) else ' FAILED'}")
    for r in rows:  # the chapter's target: weak scaling at the hand exchange's cost
        if r["kind"] == "weak" and exchange_of(r) == "one_shot" and r["gpus"] > 1 and r.get("passed", True):
            eff = r.get("efficiency", 0.0)
            verdict = ("met" if eff >= 0.98 else "missed") if eff > 0 else "not judged (no 1-GPU run to compare with)"
            lines.append(f"- target, weak scaling with one_shot on {r['gpus']} GPUs >= 98%: {100 * eff:.1f}%, {verdict}")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    save_figure(fig, os.path.join(OUT[0], "scaling.png"), dpi=120)
    plt.close(fig)


def ddp_part(results, lines):
    for name in sorted(os.listdir(results)):
        if not (name.startswith("ddp_") and name.endswith(".json")) or name.startswith("ddp_pytorch"):
            continue
        if name.endswith("_network.json"):  # benchmark.sh's network step: NCCL over sockets, beside NVLink's
            network_line(results, name, lines)
            continue
        ours = dig(load(os.path.join(results, name)), "ddp")  # multi_gpu_bench ddp: the launch, rank 0's report
        theirs = dig(load(os.path.join(results, name.replace("ddp_", "ddp_pytorch_"))), "ddp")
        a, b = dig(ours, "us_per_epoch"), dig(theirs, "us_per_epoch")
        if a and b:
            lines.append(f"- DDP, {len(dig(ours, 'rank0', 'ranks', default=[])) or '?'} ranks: "
                         f"{a:.2f} us/epoch here vs PyTorch DDP {b:.2f} us/epoch ({b / a:.1f}x)")
        elif ours is not None:
            lines.append(f"- {name}: {'us_per_epoch missing' if not a else 'no PyTorch result beside it'}")
        nonblocking = dig(load(os.path.join(results, "nonblocking_" + name)), "ddp", "us_per_epoch")
        if a and nonblocking:
            lines.append(f"  - the same with --nccl-nonblocking: {nonblocking:.2f} us/epoch ({nonblocking / a:.1f}x)")


def network_line(results, name, lines):
    """ddp_N_network.json (NCCL's socket transport over loopback) beside ddp_N.json (NVLink)."""
    sockets = dig(load(os.path.join(results, name)), "ddp")
    nvlink = dig(load(os.path.join(results, name.replace("_network", ""))), "ddp")
    a = dig(sockets, "us_per_epoch")
    if not isinstance(a, (int, float)):
        lines.append(f"- {name}: us_per_epoch missing")
        return
    text = f"- DDP over NCCL's socket transport (loopback), {name.split('_')[1]} ranks: {a:.2f} us/epoch{alone_words(sockets)}"
    b = dig(nvlink, "us_per_epoch")
    if isinstance(b, (int, float)) and b > 0:
        text += f"; over NVLink: {b:.2f} us/epoch{alone_words(nvlink)}; sockets' epoch {a / b:.1f}x NVLink's"
    lines.append(text)


def dp_part(results, lines):
    """The lesson's dp run (multi_gpu dp) and nn.DataParallel (pytorch_data_parallel.py) beside it."""
    ranks = dig(load(os.path.join(results, "dp.json")), "ranks", default=[])
    if ranks:
        slowest = max(r.get("epoch_us", float("nan")) for r in ranks)
        lines.append(f"- DataParallel analog, {len(ranks)} GPUs: {slowest:.2f} us/epoch")
    torch = load(os.path.join(results, "pytorch_data_parallel.json"))
    for run in dig(torch, "runs", default=[]):
        if isinstance(run, dict) and "us_per_epoch" in run:
            lines.append(f"- PyTorch {'nn.DataParallel' if run.get('run') == 'data_parallel' else 'plain model'} on "
                         f"{run.get('gpus', '?')} GPU(s): {run['us_per_epoch']:.1f} us/epoch")
    stages = dig(torch, "stages_us")
    if isinstance(stages, dict) and stages:  # each a measured time: {median, min, max, runs}
        lines.append("  - nn.DataParallel's stages, us per step (median): " +
                     ", ".join(f"{k} {v['median']:.1f}" for k, v in stages.items()
                               if isinstance(dig(v, "median"), (int, float))))


def fault_part(results, lines):
    """benchmark.sh's fault runs: which rank the launcher named, and how soon every rank had stopped."""
    for name in sorted(os.listdir(results)):
        if not (name.startswith("fault_") and name.endswith(".json")):
            continue
        launcher = dig(load(os.path.join(results, name)), "ddp", "launcher")
        if not isinstance(launcher, dict):
            lines.append(f"- {name}: no launcher record")
            continue
        lines.append(f"- fault {name[len('fault_'):-len('.json')]}: rank {launcher.get('failed_rank', '?')} named; "
                     f"every rank stopped {launcher.get('stopped_after_s', float('nan')):.2f} s after the first exit "
                     f"(a rank still running {launcher.get('timeout_s', '?')} s after a failure is killed)")


def mpi_part(results, lines):
    for name in sorted(os.listdir(results)):
        if not (name.startswith("mpi_ddp_") and name.endswith(".json")):
            continue
        j = load(os.path.join(results, name))
        ranks = dig(j, "ranks", default=[])  # the lesson's report from rank 0
        slowest = max((r.get("epoch_us", float("nan")) for r in ranks), default=float("nan"))
        lines.append(f"- DDP under mpirun, {len(ranks)} ranks: {slowest:.2f} us/epoch, "
                     f"passed {dig(j, 'passed', default='?')}")


def pytorch_exchange_us(results):
    """(gpus, label): microseconds per exchange, from pytorch_ddp.py --exchange's files."""
    torch_us = {}
    for name in sorted(os.listdir(results)):
        if not (name.startswith("exchange_pytorch_") and name.endswith(".json")):
            continue
        r = dig(load(os.path.join(results, name)), "ddp")
        n = dig(r, "ranks")
        if not n:
            continue
        call = "dist.all_reduce" if r.get("exchange") == "nccl" else "symm_mem one_shot_all_reduce"
        for how, key in (("eager", "exchange_eager_us"), ("CUDA graph", "exchange_graph_us")):
            median = dig(r, key, "median")  # a measured time, {median, min, max, runs}; null: not captured
            if isinstance(median, (int, float)) and median >= 0:
                torch_us[(n, f"PyTorch {call}, {how}")] = median
    return torch_us


def label_alone_rows(alone):
    """Each row of the exchange alone gets the label of its bar: one process (dp), or one process
    per GPU (ddp: rows of one_shot only)."""
    how = {"launched": "", "graph": ", CUDA graph", "one_kernel": ", in one kernel"}
    for r in alone:
        if r.get("launch") == "empty_kernel":
            r["label"] = "empty kernel (the launch alone), CUDA graph"
        else:
            r["label"] = (r["exchange"] + how.get(r.get("launch", "launched"), "") +
                          (", one process per GPU" if r.get("form") == "ddp" else ""))


def exchange_figure(alone, beside_us):
    """exchange.png: a panel per GPU count, a horizontal bar per way of exchanging, its time on it."""
    counts = sorted({r["gpus"] for r in alone} | {n for n, _ in beside_us})
    labels = list(dict.fromkeys([r["label"] for r in alone] + [label for _, label in sorted(beside_us)]))
    fig, axes = plt.subplots(1, len(counts), figsize=(5.5 * len(counts), 0.35 * len(labels) + 1.5), sharey=True,
                             squeeze=False)
    for ax, n in zip(axes[0], counts):
        values = []
        for label in labels:
            ours = [r["time_us"]["median"] for r in alone if r["gpus"] == n and r["label"] == label]
            values.append(ours[0] if ours else beside_us.get((n, label)))
        ys = [k for k, v in enumerate(values) if v is not None]
        bars = ax.barh(ys, [values[k] for k in ys], color=["tab:gray" if labels[k].startswith(("PyTorch", "nccl-tests"))
                                                          else "tab:blue" for k in ys])
        for bar, k in zip(bars, ys):
            ax.annotate(f" {values[k]:.2f}", (bar.get_width(), bar.get_y() + bar.get_height() / 2), va="center", fontsize=7)
        ax.set_xlim(0, 1.15 * max(values[k] for k in ys))
        ax.set_title(f"{n} GPU{'s' if n > 1 else ''}", fontsize=10)
        ax.set_xlabel("us per exchange")
    axes[0][0].set_yticks(range(len(labels)), labels, fontsize=7)
    axes[0][0].invert_yaxis()
    fig.suptitle("the epoch's exchange alone: 3 floats (PyTorch: 4; nccl-tests: 16 B); grey: not this chapter's code",
                 fontsize=10)
    fig.tight_layout()
    save_figure(fig, os.path.join(OUT[0], "exchange.png"), dpi=120)
    plt.close(fig)


def exchange_lines(alone, beside_us, epochs, lines):
    for r in alone:
        # An exchange that ran as another (a fallback) says so; the empty kernel is no exchange at all.
        substituted = r.get("launch") != "empty_kernel" and r.get("used", r["exchange"]) != r["exchange"]
        note = f": {r['note']}" if r.get("note") else ""
        ran = f" (ran {r['used']}{note})" if substituted else ""
        gpus = f"{r['gpus']} GPU{'s' if r['gpus'] > 1 else ''}"
        lines.append(f"- exchange alone, {r['label']} on {gpus}: {r['time_us']['median']:.2f} us{ran}"
                     f"{'' if r.get('correct', True) else ' WRONG SUMS'}")
    for (n, label), v in sorted(beside_us.items()):
        lines.append(f"- exchange alone, {label} on {n} GPUs: {v:.2f} us")
    for r in epochs:
        failed = '' if r.get('passed', True) else ' FAILED'
        if r["mode"] in ("on_chip", "one_gpu_best"):
            what = "on chip" if r["mode"] == "on_chip" else f"chapter 05's best DRAM-bound variant ({r.get('used', '?')})"
            lines.append(f"- epoch at {r['points']} points, {what} on {r['gpus']} GPU{'s' if r['gpus'] > 1 else ''}: "
                         f"{r['us_per_epoch']:.2f} us{failed}")
            continue
        lines.append(f"- epoch at {r['points']} points, {r['mode']} on {r['gpus']} GPUs, --exchange {r['exchange']} "
                     f"(ran {r.get('used', '?')}): {r['us_per_epoch']:.2f} us{alone_words(r)}{failed}")


def exchange_targets(alone, epochs, lines):
    """The chapter's targets on 2 GPUs: the hand one-shot exchange at most 2.5 us (near the NVLink
    floor) as a CUDA graph of launches, in one process and in one per GPU; an epoch at 5M points
    at most 8 us."""
    for r in alone:
        if r["exchange"] == "one_shot" and r["gpus"] == 2 and r.get("launch") == "graph":
            v = r["time_us"]["median"]
            lines.append(f"- target, {r['label']} exchange on 2 GPUs <= 2.5 us: {v:.2f} us, "
                         f"{'met' if v <= 2.5 else 'missed'}")
    at_5m = [r for r in epochs if r["points"] == 5_000_000 and r["gpus"] == 2 and r.get("passed", True)]
    if at_5m:
        best = min(at_5m, key=lambda r: r["us_per_epoch"])
        lines.append(f"- target, epoch at 5M points on 2 GPUs <= 8 us: {best['us_per_epoch']:.2f} us "
                     f"({best['mode']}, {best['exchange']}), {'met' if best['us_per_epoch'] <= 8.0 else 'missed'}")


def exchange_part(results, lines):
    j = load(os.path.join(results, "exchange.json"))
    alone = [r for r in (dig(j, "exchange", "alone") or [])
             if isinstance(r, dict) and "gpus" in r and "exchange" in r and dig(r, "time_us", "median") is not None]
    epochs = [r for r in (dig(j, "exchange", "epochs") or [])
              if isinstance(r, dict) and all(k in r for k in ("points", "gpus", "mode", "exchange", "us_per_epoch"))]
    beside_us = pytorch_exchange_us(results)  # bars beside ours: PyTorch's, then nccl-tests' (if it ran)
    beside_us.update(nccl_tests_graph_us(results, lines))
    if not alone and not epochs and not beside_us:
        lines.append("- exchange: no results")
        return
    label_alone_rows(alone)
    exchange_figure(alone, beside_us)
    exchange_lines(alone, beside_us, epochs, lines)
    exchange_targets(alone, epochs, lines)
    on_chip_part(results, j, epochs, lines)  # the superlinear step's target: on chip at 10M on 2 GPUs


def on_chip_part(results, j, epochs, lines):
    """on_chip.png, and the superlinear step's target: on chip on 2 GPUs at 10M >= 2.5x one GPU's best."""
    series = {("on_chip", 1): "on chip, 1 GPU", ("on_chip", 2): "on chip, 2 GPUs",
              ("one_gpu_best", 1): "chapter 05's best DRAM-bound variant, 1 GPU"}
    rows = [r for r in epochs if (r["mode"], r["gpus"]) in series and r.get("passed", True)]
    if not rows:
        lines.append("- on chip: no results")
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, label in series.items():
        pts = sorted((r["points"], r["us_per_epoch"]) for r in rows if (r["mode"], r["gpus"]) == key)
        if pts:
            ax.plot([p / 1e6 for p, _ in pts], [u for _, u in pts], "o-", label=label)
    room = dig(j, "exchange", "on_chip_room", "train_points")
    if isinstance(room, (int, float)) and room > 0:
        for n in (1, 2):  # training points are 80% of the points
            ax.axvline(n * room / 0.8 / 1e6, color="gray", linestyle="--" if n == 1 else ":", linewidth=1)
            ax.text(n * room / 0.8 / 1e6, ax.get_ylim()[1] * 0.95, f" room of {n} GPU{'s' if n > 1 else ''}",
                    fontsize=7, va="top")
    ax.set_xlabel("points (millions; 80% train)")
    ax.set_ylabel("us per epoch")
    ax.set_title("training on chip: one GPU's room, two GPUs' room", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, os.path.join(OUT[0], "on_chip.png"), dpi=120)
    plt.close(fig)
    at = {(r["mode"], r["gpus"]): r["us_per_epoch"] for r in rows if r["points"] == 10_000_000}
    if ("on_chip", 2) in at and ("one_gpu_best", 1) in at:
        ratio = at[("one_gpu_best", 1)] / at[("on_chip", 2)]
        lines.append(f"- target, on chip on 2 GPUs at 10M points >= 2.5x chapter 05's best one-GPU epoch: "
                     f"{at[('on_chip', 2)]:.2f} us against {at[('one_gpu_best', 1)]:.2f} us, {ratio:.2f}x, "
                     f"{'met' if ratio >= 2.5 else 'missed'}")
    else:
        lines.append("- target, on chip at 10M points: no on_chip 2-GPU and one_gpu_best rows at 10M")


OUTPUTS = ("allreduce_busbw.png", "scaling.png", "exchange.png", "on_chip.png")
OUT = [None]  # where the figures go: --out DIR, or build/plots/06_multi_gpu/ (set once, in main)


def main():
    parser, results, OUT[0] = results_folder_arguments(__doc__.splitlines()[0], OUTPUTS)
    # Before any work: the JSON files this script reads are there, and each is JSON (a part whose
    # file is missing is named in the summary; a file that is there but broken is an error).
    read = [name for name in sorted(os.listdir(results)) if name.endswith(".json") and
            any(name.startswith(prefix) for prefix in JSON_PREFIXES)]
    if not read:
        parser.fail(f"{results}: no benchmark.sh results in it (none of {', '.join(p + '*.json' for p in JSON_PREFIXES)})")
    for name in read:
        path = os.path.join(results, name)
        try:
            with open(path) as f:
                json.load(f)
        except ValueError as e:
            parser.fail(f"{path}: not JSON ({str(e).split(':')[0]})")
        except OSError as e:
            parser.fail(f"{path}: cannot be read ({e.strerror})")
        problem = shape_problem(name, load(path))
        if problem:
            parser.fail(f"{path}: {problem}")
    parser.output_folder(OUT[0], OUTPUTS)
    require("matplotlib.pyplot")
    lines = ["# Chapter 06 results", ""]
    allreduce_part(results, lines)
    scaling_part(results, lines)
    dp_part(results, lines)
    ddp_part(results, lines)
    exchange_part(results, lines)
    mpi_part(results, lines)
    fault_part(results, lines)
    print("\n".join(lines))
    say_figures_written("plot_multi_gpu.py")


if __name__ == "__main__":
    main()
