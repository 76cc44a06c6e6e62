#!/usr/bin/env python3
"""plot_multi_gpu.py RESULTS_DIR: the chapter's figures and summary from benchmark.sh's JSON.

allreduce_busbw.png  bus bandwidth vs size (this program; NCCL's own figures where given)
scaling.png          time per epoch, split into compute and all-reduce, for 1/2/4 GPUs
Prints summary.md: the issue's numbers to reach, computed from the same files.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main():
    results = sys.argv[1]
    lines = ["# Chapter 06 results", ""]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in sorted(os.listdir(results)):
        if name.startswith("allreduce_") and name.endswith("gpus.json"):
            j = load(os.path.join(results, name))
            if not j or "allreduce" not in j:
                continue
            a = j["allreduce"]
            rows = a["rows"]
            ax.semilogx([r["bytes"] for r in rows], [r["busbw_gbps"] for r in rows], "o-", label=f"{a['gpus']} GPUs")
            top = rows[-1]
            lines.append(f"- all-reduce, {a['gpus']} GPUs, {top['bytes']} B: busbw {top['busbw_gbps']:.1f} GB/s, "
                         f"{top['time_us']['median']:.1f} us; wrong elements {a['wrong']}")
    ax.set_xlabel("bytes per rank")
    ax.set_ylabel("bus bandwidth, GB/s")
    ax.set_title("NCCL all-reduce (float sum, one process)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(results, "allreduce_busbw.png"), dpi=120)

    ours = load(os.path.join(results, "scaling.json"))
    torch_rows = load(os.path.join(results, "pytorch_scaling.json"))
    if ours and "scaling" in ours:
        rows = ours["scaling"]["rows"]
        groups = [(k, p) for k, p in dict.fromkeys((r["kind"], r["points"] if r["kind"] == "strong" else r["points_per_gpu"]) for r in rows)]
        fig, axes = plt.subplots(1, len(groups), figsize=(4 * len(groups), 4), squeeze=False)
        for ax, (kind, size) in zip(axes[0], groups):
            sel = [r for r in rows if r["kind"] == kind and (r["points"] if kind == "strong" else r["points_per_gpu"]) == size]
            g = [str(r["gpus"]) for r in sel]
            ax.bar(g, [r["compute_us"] for r in sel], label="compute")
            ax.bar(g, [r["allreduce_us"] for r in sel], bottom=[r["compute_us"] for r in sel], label="all-reduce")
            ax.plot(g, [r["us_per_epoch"] for r in sel], "k_", markersize=20, label="epoch")
            if torch_rows:
                t = [r for r in torch_rows["scaling"]["rows"] if r["kind"] == kind and
                     (r["points"] if kind == "strong" else r["points_per_gpu"]) == size]
                if t:
                    ax.plot([str(r["gpus"]) for r in t], [r["us_per_epoch"] for r in t], "rx", label="PyTorch DDP")
            ax.set_title(f"{kind}, {size:,} points{' per GPU' if kind == 'weak' else ''}")
            ax.set_xlabel("GPUs")
            ax.set_ylabel("us per epoch")
            ax.legend(fontsize=8)
            for r in sel:
                lines.append(f"- {kind} {r['points']} points on {r['gpus']} GPUs: {r['us_per_epoch']:.2f} us/epoch "
                             f"(compute {r['compute_us']:.2f}, all-reduce {r['allreduce_us']:.2f}), "
                             f"efficiency {100 * r['efficiency']:.1f}%")
        fig.tight_layout()
        fig.savefig(os.path.join(results, "scaling.png"), dpi=120)
    for name in sorted(os.listdir(results)):
        if name.startswith("ddp_") and name.endswith(".json") and not name.startswith("ddp_pytorch"):
            ours_ddp = load(os.path.join(results, name))
            theirs = load(os.path.join(results, name.replace("ddp_", "ddp_pytorch_")))
            if ours_ddp and theirs and "ddp" in ours_ddp:
                a, b = ours_ddp["ddp"]["us_per_epoch"], theirs["pytorch_ddp"]["us_per_epoch"]
                lines.append(f"- DDP, {ours_ddp['ddp']['ranks']} ranks, {ours_ddp['ddp']['points']} points: "
                             f"{a:.2f} us/epoch here vs PyTorch DDP {b:.2f} us/epoch ({b / a:.1f}x)")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
