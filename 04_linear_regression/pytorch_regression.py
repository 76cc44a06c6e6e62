#!/usr/bin/env python3
"""pytorch_regression.py: the PyTorch side of chapter 04, the same problem as `linear_regression`.

The same data (X = i * 2e-6 in float32, y = 0.7 X + 0.3, first 80% train), the same model
(nn.Linear(1, 1) from w = 0.83, b = 0.7645), loss (nn.MSELoss), optimizer (torch.optim.SGD) and
epochs, on cpu or cuda; prints the loss every --print-every epochs and writes the same JSON
fields as the C++ program. Timing as there: the whole epoch loop (loss.item() reads included),
warm-up runs first, then the median of repeated runs (CUDA events on cuda, the host clock on cpu).
On cuda it also times the setup rows linear_regression_bench writes: the model copied to the GPU
or made there, and the data made there without and with noise.

    python3 pytorch_regression.py --device cuda --json pytorch_cuda.json
    python3 pytorch_regression.py --device cpu
    python3 pytorch_regression.py --profile results/pytorch_profile.json   # + a torch.profiler trace

--profile runs --profile-epochs more epochs (untimed, after the timed runs) under torch.profiler and
writes its Chrome trace, on cuda only its GPU side: the kernels, copies and memsets on the GPU's
streams (open it in https://ui.perfetto.dev or chrome://tracing, beside the C++ program's trace). It
prints the profiler's top operations and how busy the GPU was between the first and the last GPU
operation: a loop of tiny kernels leaves the GPU waiting on Python between launches. It also writes
the last two epochs of the whole trace as a two-track timeline (the host's launch calls, the GPU's
operations) in the shape 03's plot_trace.py draws: FILE with .json replaced by _timeline.json.
"""
import copy
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import Parser, device_name, finish, integer, median_of, number, report_stream, size, timing  # noqa: E402  (cli.h's flag rules)
from torch_cuda import use_cuda_device  # noqa: E402  (no GPU: 77; no such --device: 2)
from provenance import record  # noqa: E402  (where the trace came from, as every --json says)
from regression_torch import make_data, train  # noqa: E402  (the data, the timer and the eager loop, shared with 05)

torch = needs("torch")

def check_arguments(p, args):
    """The C++ program's checks, with its words: a value out of range, or a flag that changes nothing."""
    if args.quick:
        args.points, args.epochs = 20_011, 60
    if args.points < 2:
        p.fail(f"--points must be at least 2 (one to train, one to test), got {args.points}")
    p.require_epochs(args.epochs)
    p.require_positive("--lr", args.lr)
    if not (math.isfinite(args.noise) and args.noise >= 0):
        p.fail(f"--noise must be a finite number of at least 0, got {args.noise}")
    if args.seed is not None and args.noise == 0:  # as linear_regression (regression_cli.h)
        p.fail("--seed seeds --noise: without it it changes nothing")
    args.seed = 42 if args.seed is None else args.seed
    p.require_at_least("--seed", args.seed, 0)
    p.require_at_least("--print-every", args.print_every, 1)
    if args.repeats is not None:
        p.require_at_least("--repeats", args.repeats, 1)
    if args.profile_epochs is not None and not args.profile:
        p.fail("--profile-epochs goes with --profile FILE")
    if args.profile_epochs is None:
        args.profile_epochs = 10
    p.require_at_least("--profile-epochs", args.profile_epochs, 1)


def main():
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("--device", type=device_name, default="cuda", help="cpu, N, cuda or cuda:N (default cuda)")
    p.add_argument("--points", type=size("--points"), default=5_000_000, metavar="SIZE",
                   help="points, e.g. 5000000 or 5M (K, M, G: 1e3, 1e6, 1e9)")
    p.add_argument("--epochs", type=integer("--epochs"), default=200)
    p.add_argument("--lr", type=number("--lr"), default=0.01)
    p.add_argument("--noise", type=number("--noise"), default=0.0)
    p.add_argument("--seed", type=integer("--seed", maximum=2**64 - 1), help="seed of the noise (default 42; with --noise)")
    p.add_argument("--print-every", type=integer("--print-every"), default=10)
    p.add_argument("--json", nargs="?", const="-", help="write the results as JSON to FILE (- for stdout)")
    p.add_argument("--quick", action="store_true", help="20011 points, 60 epochs, few repeats")
    p.add_argument("--repeats", type=integer("--repeats"), default=None, help="timed runs (default 10 on cuda, 3 on cpu)")
    p.add_argument("--profile", metavar="FILE", help="also run --profile-epochs epochs under torch.profiler; "
                   "write its Chrome trace to FILE")
    p.add_argument("--profile-epochs", type=integer("--profile-epochs"), default=None,
                   help="epochs run under the profiler (default 10; with --profile)")
    args = p.parse_args()
    check_arguments(p, args)
    require("torch")
    device = torch.device(args.device)
    if device.type == "cuda":
        use_cuda_device("pytorch_regression", device.index or 0)
    log = report_stream(args.json)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    train_points = args.points // 5 * 4 + args.points % 5 * 4 // 5
    threads = f", {torch.get_num_threads()} threads" if device.type == "cpu" else ""
    print(f"pytorch_regression: torch {torch.__version__}, {args.points} points ({train_points} train), "
          f"{args.epochs} epochs, lr {args.lr}, on {device} ({name}{threads})", file=log)
    data = make_data(args.points, args.noise, args.seed, device)

    result = train(args, data, device, log=log, time_steps=True)
    # The keys linear_regression writes: settings at the top, the run's outcome in "result".
    out = {"program": "pytorch_regression", "device": name, "torch_device": str(device), "implementation": "pytorch",
           "torch_version": torch.__version__, "quick": args.quick, "points": args.points,
           "train_points": train_points, "test_points": args.points - train_points, "epochs": args.epochs,
           "lr": args.lr, "noise": args.noise, "seed": args.seed, "print_every": args.print_every}
    if device.type == "cpu":
        out["cpu_threads"] = torch.get_num_threads()
    out["losses"] = result["losses"]
    row = {k: result[k] for k in ("w", "b", "test_mse") if k in result}
    out["result"] = [row]  # one row, as linear_regression's table: filled in below
    if result["diverged_at"] is not None:
        print(f"diverged at epoch {result['diverged_at']}", file=log)
        row["diverged_at"] = result["diverged_at"]
        failures = [f"diverged at epoch {result['diverged_at']}"]
    else:
        warmup = 2 if device.type == "cuda" else 1
        repeats = args.repeats or (2 if args.quick else 10 if device.type == "cuda" else 3)
        times = [train(args, data, device)["training_ms"] for _ in range(warmup + repeats)][warmup:]
        row["training_ms"] = timing(times)
        t = row["training_ms"]
        print(f"final: w {result['w']:.9g}, b {result['b']:.9g}, test MSE {result['test_mse']:.9g}", file=log)
        print(f"training time, {args.epochs} epochs: {t['median']:.4g} ms median "
              f"(min {t['min']:.4g}, max {t['max']:.4g}) over {t['runs']} runs after {warmup} warm-up", file=log)
        print("per-epoch time of each step (median over the epochs of the first run):", file=log)
        for step in result["steps"]:
            print(f"  {step['step']:10s}{step['time_ms']['median']:10.4f} ms", file=log)
        out["steps"] = result["steps"]
        if device.type == "cuda":
            out["setup"] = setup_costs(args, device, log)
        failures = []
        if args.profile:
            out["profile"] = profile(args, data, device, log)
    return finish(out, failures, args.json)


def setup_costs(args, device, log):
    """What the loop needs before its first epoch (issue #30), timed as linear_regression_bench
    times it: the host clock from the call until the result is on the GPU, after 2 warm-up runs.
    The same rows: the model copied to the GPU or made there, the data without and with noise."""
    noise = args.noise if args.noise > 0 else 0.1  # the run's noise, else a little
    made = [("parameters copied to the GPU", "nn.Linear(1, 1).to('cuda')", lambda: torch.nn.Linear(1, 1).to(device)),
            ("parameters made on the GPU", "nn.Linear(1, 1, device='cuda')", lambda: torch.nn.Linear(1, 1, device=device))]
    made += [(f"data made on the GPU, noise {sigma:g}", "make_data(..., device='cuda')",
              lambda sigma=sigma: make_data(args.points, sigma, args.seed, device)) for sigma in (0.0, noise)]
    timed = 3 if args.quick else 10
    rows = []
    for what, pytorch, make in made:
        times = []
        for i in range(2 + timed):
            start = time.perf_counter()
            make()
            torch.cuda.synchronize(device)
            if i >= 2:
                times.append(1e3 * (time.perf_counter() - start))
        rows.append({"what": what, "pytorch": pytorch, "time_ms": timing(times)})
    print(f"setup before the first epoch (host clock until the result is on the GPU, {median_of(timed, 'run', 'runs')} "
          "after 2 warm-up):", file=log)
    for r in rows:
        print(f"  {r['pytorch']:32s}{r['time_ms']['median']:10.4f} ms", file=log)
    return rows


GPU_TRACK_EVENTS = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")  # what the GPU's streams show


def gpu_side(trace):
    """A profiler trace (the dict torch.profiler writes) with only its GPU side: the events on the GPU's
    streams (kernels, copies, memsets, and the operator names drawn above them) and the names of
    those tracks; its top-level fields (device properties, versions) kept. The host's operators,
    CUDA calls and the flow arrows between the two are dropped: ten epochs of them are ~300 KB."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    kept = [e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_TRACK_EVENTS]
    gpu_pids = {e.get("pid") for e in kept}
    names = [e for e in events if e.get("ph") == "M" and e.get("pid") in gpu_pids]
    trimmed = dict(trace) if isinstance(trace, dict) else {}
    trimmed["traceEvents"] = names + kept
    return trimmed


def finish_trace(trace_file, gpu_only):
    """torch.profiler writes its own JSON: it is rewritten with the record of where it came from
    added, as to every JSON the workbook writes, and (gpu_only: a run on cuda) as its GPU side."""
    with open(trace_file) as f:
        trace = json.load(f)
    if gpu_only:
        trace = gpu_side(trace)
    trace["provenance"] = record()
    with open(trace_file, "w") as f:
        json.dump(trace, f)


def profile(args, data, device, log):
    """Runs a few epochs under torch.profiler, writes the Chrome trace, returns what it shows."""
    from torch.profiler import ProfilerActivity
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    short = copy.copy(args)
    short.epochs = args.profile_epochs
    with torch.profiler.profile(activities=activities) as prof:
        train(short, data, device)
    prof.export_chrome_trace(args.profile)
    sort_key = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
    print(f"torch.profiler, {short.epochs} epochs (trace: {args.profile}):", file=log)
    print(prof.key_averages().table(sort_by=sort_key, row_limit=12), file=log)
    busy = gpu_busy(args.profile)
    timeline = write_timeline(args.profile, 2 / short.epochs)  # from the whole trace: it draws the host's calls
    finish_trace(args.profile, gpu_only=device.type == "cuda")
    if busy is not None:
        print(f"GPU busy {100 * busy['fraction']:.1f}% of the {busy['span_us']:.0f} us from the first GPU "
              f"operation to the last ({busy['operations']} operations, {busy['operations'] / short.epochs:.1f} "
              "per epoch): the rest is the GPU waiting for Python to launch the next one", file=log)
    return {"file": args.profile, "epochs": short.epochs, "gpu_busy": busy, "timeline": timeline}


GPU_CATEGORY = {"kernel": "compute", "gpu_memcpy": "copy_out", "gpu_memset": "memset"}  # plot_trace.py's names
GPU_OPERATIONS = tuple(GPU_CATEGORY)
HOST_CALLS = {"cudaLaunchKernel": "launch", "cudaMemsetAsync": "launch", "cudaMemcpyAsync": "launch",
              "cudaStreamSynchronize": "sync"}  # the category plot_trace.py colours each by


def write_timeline(trace_file, fraction):
    """The last `fraction` of a profiler trace's GPU operations (the first epoch pays the profiler's
    start-up), and the host's CUDA calls in the same window, as a two-track trace for plot_trace.py;
    returns the file written (None: no GPU operations)."""
    with open(trace_file) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    gpu = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_OPERATIONS), key=lambda e: e["ts"])
    if not gpu:
        return None
    gpu = gpu[-max(1, round(fraction * len(gpu))):]
    begin, end = float(gpu[0]["ts"]), max(float(e["ts"]) + float(e["dur"]) for e in gpu)
    host = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cuda_runtime" and e["name"] in HOST_CALLS
            and begin - 50 <= float(e["ts"]) <= end]  # a launch runs a few us before its kernel
    origin = min([begin] + [float(e["ts"]) for e in host])
    tracks = ["PyTorch eager: host (CUDA calls)", "PyTorch eager: GPU"]
    out = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": t, "args": {"name": n}} for t, n in enumerate(tracks)]
    out += [{"ph": "X", "name": e["name"], "cat": HOST_CALLS[e["name"]], "pid": 1, "tid": 0,
             "ts": float(e["ts"]) - origin, "dur": float(e["dur"])} for e in host]
    out += [{"ph": "X", "name": e["name"][:60], "cat": GPU_CATEGORY[e["cat"]], "pid": 1,
             "tid": 1, "ts": float(e["ts"]) - origin, "dur": float(e["dur"])} for e in gpu]
    path = trace_file[:-5] + "_timeline.json" if trace_file.endswith(".json") else trace_file + "_timeline.json"
    with open(path, "w") as f:
        json.dump({"traceEvents": out, "provenance": record()}, f, indent=1)
    return path


def gpu_busy(trace_file):
    """The union of the GPU operations' intervals in a profiler trace, over their span."""
    with open(trace_file) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    gpu = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in events
                 if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    if not gpu:
        return None
    busy, end = 0.0, gpu[0][0]
    for a, b in gpu:  # merge overlapping intervals as we go
        if b > end:
            busy += b - max(a, end)
            end = b
    span = end - gpu[0][0]  # end: the latest finish seen
    return {"fraction": busy / span if span > 0 else 1.0, "span_us": span, "busy_us": busy, "operations": len(gpu)}


if __name__ == "__main__":
    sys.exit(main())
