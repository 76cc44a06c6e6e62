#!/usr/bin/env python3
"""compare-results.py YOURS_DIR: your run's headline figures beside the committed ones.

YOURS_DIR holds one folder per chapter with what that chapter's benchmark.sh wrote (as
scripts/gpu-report.sh leaves them: build-gpu/report/<chapter>/). For each chapter's headline
figures (those the top README quotes) it prints your value, the committed value of
<chapter>/results/ with the GPU and run that made it, the ratio yours / committed, and whether
yours is better or worse (times: lower is better; rates and shares: higher), or the same within
3%. A figure whose file is missing on either side reads "-" with the reason. Exit 0; 2 on bad
usage, or a folder that holds no chapter's folder.

    python3 scripts/compare-results.py build-gpu/report
"""
import json
import os
import signal
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "common"))
from workbook_cli import Parser  # noqa: E402  (usage errors: one line, exit 2)


def median(timing):
    return timing["median"]


def matmul_fp32(j):  # the largest FP32 matmul of device_query_bench
    ops = [o for o in j["operations"] if o["operation"] == "matmul" and o["precision"] == "fp32"]
    return max(ops, key=lambda o: o["n"])["tflops"]


def best_pipeline_ms(j):
    return min(median(p["time_ms"]) for p in j["pipeline"])


def fused_variant(j, number):
    return median(next(v for v in j["variants"] if v["variant"] == number)["training_ms"])


def epoch_row(j, mode, gpus, points):
    return next(x["us_per_epoch"] for x in j["exchange"]["epochs"]
                if x["mode"] == mode and x["gpus"] == gpus and x["points"] == points)


def weak_scaling(j, gpus):
    return next(x["efficiency"] for x in j["scaling"]["rows"] if x["kind"] == "weak" and x["gpus"] == gpus) * 100


# chapter, file, what, unit, how to read it: the figures the top README's Headline results quote.
FIGURES = [
    ("01_device_query", "device_query.json", "first CUDA call", "ms", lambda j: median(j["runtime"]["init_ms"])),
    ("01_device_query", "device_query_bench.json", "largest FP32 matmul", "TFLOP/s", matmul_fp32),
    ("01_device_query", "device_query_bench.json", "y = a x + y", "GB/s",
     lambda j: next(o for o in j["operations"] if o["operation"] == "axpy")["gbps"]),
    ("02_tensor_transfer", "tensor_transfer_bench.json", "pinned H2D copy, 256 MiB", "GB/s",
     lambda j: j["headline"]["pinned_h2d_256mib_gbps"]),
    ("03_streams_events", "streams_events.json", "kernel launch, host side", "us",
     lambda j: median(j["asynchrony"]["launch_us"])),
    ("03_streams_events", "streams_events.json", "best copy-compute-copy pipeline", "ms", best_pipeline_ms),
    ("04_linear_regression", "cuda.json", "training, 5M points, 200 epochs", "ms",
     lambda j: median(j["result"][0]["training_ms"])),
    ("04_linear_regression", "minibatch.json", "64K mini-batches, best pipeline", "% of PCIe",
     lambda j: max(m["bound_percent"] for m in j["minibatch"] if "bound_percent" in m)),
    ("05_fused_kernels", "fused.json", "variant 8 (on chip), 5M points", "ms", lambda j: fused_variant(j, 8)),
    ("05_fused_kernels", "fused.json", "variant 5 (graph), 5M points", "ms", lambda j: fused_variant(j, 5)),
    ("06_multi_gpu", "ddp_2.json", "DDP analog epoch, 2 GPUs, 5M points", "us", lambda j: j["ddp"]["us_per_epoch"]),
    ("06_multi_gpu", "exchange.json", "on-chip epoch, 2 GPUs, 10M points", "us",
     lambda j: epoch_row(j, "on_chip", 2, 10**7)),
    ("06_multi_gpu", "scaling.json", "weak scaling, 2 GPUs", "%", lambda j: weak_scaling(j, 2)),
]


def read(folder, name, how):
    """(value, None) or (None, why not)."""
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        return None, "not run"
    try:
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
        return float(how(j)), None
    except (OSError, ValueError):
        return None, "unreadable"
    except (KeyError, IndexError, StopIteration, TypeError):
        return None, "not in the file"


def made_by(folder, name):
    """The GPU and run of a committed file, from its provenance record."""
    try:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            p = json.load(f).get("provenance", {})
        gpus = p.get("gpus") or []
        return f"{gpus[0]['name'].replace('NVIDIA ', '')}, {p.get('run') or str(p.get('commit', '?'))[:12]}" if gpus else "?"
    except (OSError, ValueError, AttributeError, KeyError, IndexError):
        return "?"


LOWER_IS_BETTER = {"ms", "us"}  # times; every other unit here is a rate or a share


def verdict(mine, theirs, unit):
    """"better" or "worse" for you, or "same" within 3%."""
    ratio = mine / theirs
    if abs(ratio - 1) <= 0.03:
        return "same"
    return "better" if (ratio < 1) == (unit in LOWER_IS_BETTER) else "worse"


def number(value, why):
    return f"{value:.4g}" if value is not None else f"- ({why})"


def main(yours):
    rows = [("chapter", "figure", "unit", "yours", "committed", "made on", "yours / committed", "")]
    for chapter, name, what, unit, how in FIGURES:
        mine, why_mine = read(os.path.join(yours, chapter), name, how)
        theirs, why_theirs = read(os.path.join(ROOT, chapter, "results"), name, how)
        both = mine is not None and bool(theirs)
        rows.append((chapter[:2], what, unit, number(mine, why_mine), number(theirs, why_theirs),
                     made_by(os.path.join(ROOT, chapter, "results"), name),
                     f"{mine / theirs:.2f}" if both else "-", verdict(mine, theirs, unit) if both else ""))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the table quietly
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("yours", metavar="YOURS_DIR", help="one folder per chapter, as benchmark.sh wrote them")
    args = parser.parse_args()
    parser.input_folder(args.yours, "YOURS_DIR")
    if not any(os.path.isdir(os.path.join(args.yours, chapter)) for chapter in {f[0] for f in FIGURES}):
        parser.fail(f"{args.yours}: no chapter's folder in it (01_device_query/, ...: as gpu-report.sh leaves its run)")
    sys.exit(main(args.yours))
