#!/usr/bin/env python3
"""pytorch_fused.py: the PyTorch side of chapter 05: chapter 04's training loop in four modes.

eager    nn.Linear + nn.MSELoss + torch.optim.SGD, one Python step per epoch (chapter 04's loop);
graph    the same step captured once with torch.cuda.graph and replayed once per epoch;
compile  forward + loss through torch.compile (inductor, static shapes: one compile per size, outside
         the timing; backward by AOTAutograd);
cpu      eager on the CPU, up to --cpu-max-points (500K: the benchmark must fit its 3 minutes).

Same data as the C++ program (chapter 04's make_data: X = i * 2e-6, y = 0.7 X + 0.3, first 80%
train), same learning rate per size (scaled by (5M/N)^2 above 5M, as sweep.h), 200 epochs. Each
mode is checked against a float64 reference of the same recurrence before it is timed. Timing as
in the C++ program: the epoch loop alone, no host synchronization inside it, warm-up first, then
the median of repeats (CUDA events on the GPU, the host clock on the CPU). Writes the C++ sweep's
CSV columns and JSON fields, plus the per-step breakdown of eager at --breakdown-points.

    python3 pytorch_fused.py --csv pytorch_sweep.csv --json pytorch_sweep.json
    python3 pytorch_fused.py --quick --modes eager,graph
"""
import argparse
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import Parser, finish, integer, median_of, report_stream, name_list, number, size, size_list, timing  # noqa: E402  (cli.h's flag rules)
from torch_cuda import use_cuda_device  # noqa: E402  (no GPU: 77)
from provenance import line, record  # noqa: E402  (the CSV's first line)
from regression_torch import Timer, article_model, make_data, train as train_eager  # noqa: E402  (chapter 04's data, timer, eager loop)

torch = needs("torch")
nn = needs("torch.nn")

ARTICLE_POINTS = 5_000_000
PARAM_TOL, LOSS_TOL = 1e-5, 1e-4  # regression.h: kParameterTolerance, kLossTolerance (relative)
COLUMNS = ("implementation,variant,points,train_points,epochs,lr,median_ms,min_ms,max_ms,runs,us_per_epoch,gbps,"
           "copy_gbps,copy_fraction,passed,w,b").split(",")


def sweep_lr(lr, points):
    return lr if points <= ARTICLE_POINTS else lr * (ARTICLE_POINTS / points) ** 2


def reference(x, y, epochs, lr):
    """The float64 recurrence of regression.h's train_reference, on the same float32 data."""
    xd, yd = x.double().flatten(), y.double().flatten()
    n = xd.numel()
    w, b, losses = 0.83, 0.7645, []
    w, b = float(torch.tensor(w, dtype=torch.float32)), float(torch.tensor(b, dtype=torch.float32))
    for _ in range(epochs):
        r = w * xd + b - yd
        losses.append(float((r * r).sum()) / n)
        w, b = w - lr * 2.0 * float((r * xd).sum()) / n, b - lr * 2.0 * float(r.sum()) / n
    return w, b, losses


class Eager:
    """Chapter 04's loop without the per-epoch .item(): the losses stay on the device."""

    def __init__(self, x, y, lr, compiled=None):
        self.x, self.y, self.lr, self.loss_fn = x, y, lr, nn.MSELoss()
        self.forward = compiled

    def run(self, epochs, keep_losses=False):
        model = article_model(self.x.device)
        opt = torch.optim.SGD(model.parameters(), lr=self.lr)
        step = self.forward or (lambda m, x, y: self.loss_fn(m(x), y))
        losses = []
        timer = Timer(self.x.device)
        start = timer.mark()
        for _ in range(epochs):
            loss = step(model, self.x, self.y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if keep_losses:
                losses.append(loss.detach())
        ms = timer.ms(start, timer.mark())
        return ms, model, losses


class Graph:
    """One epoch captured with torch.cuda.graph (the whole-network recipe), replayed per epoch."""

    def __init__(self, x, y, lr):
        self.model = article_model(x.device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr)
        loss_fn = nn.MSELoss()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up before capture, as the CUDA-graph docs require
            for _ in range(3):
                self.opt.zero_grad(set_to_none=True)
                loss_fn(self.model(x), y).backward()
                self.opt.step()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            self.loss = loss_fn(self.model(x), y)
            self.loss.backward()
            self.opt.step()

    def run(self, epochs, keep_losses=False):
        with torch.no_grad():  # back to the start values, outside the timed loop
            self.model.weight.fill_(0.83)
            self.model.bias.fill_(0.7645)
        losses = []
        timer = Timer(self.loss.device)
        start = timer.mark()
        for _ in range(epochs):
            self.graph.replay()
            if keep_losses:
                losses.append(self.loss.clone())
        ms = timer.ms(start, timer.mark())
        return ms, self.model, losses


MODES = ("eager", "graph", "compile", "cpu")


def copy_gbps(mib=1024):
    src = torch.ones(mib << 18, device="cuda")  # mib MiB of float32
    dst = torch.empty_like(src)
    times = []
    for i in range(12):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src)
        b.record()
        b.synchronize()
        if i >= 2:
            times.append(a.elapsed_time(b))
    return 2 * src.numel() * 4 / (statistics.median(times) * 1e6)


def parse_args():
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=size_list("--sizes", 2, 2_000_000_000), default="500,5K,50K,100K,500K,5M,10M,50M,100M",
                   metavar="LIST", help="points per run, e.g. 500,5K,5M (K, M, G: 1e3, 1e6, 1e9)")
    p.add_argument("--modes", type=name_list("--modes", MODES), default=",".join(MODES), metavar="LIST",
                   help="a list of " + ", ".join(MODES))
    p.add_argument("--epochs", type=integer("--epochs"), default=200)
    p.add_argument("--lr", type=number("--lr"), default=0.01)
    p.add_argument("--repeats", type=integer("--repeats"), default=3)
    p.add_argument("--cpu-max-points", type=size("--cpu-max-points"), default=500_000, metavar="SIZE")
    p.add_argument("--breakdown-points", type=size("--breakdown-points"), default=5_000_000, metavar="SIZE",
                   help="points of eager's per-step breakdown (0: none)")
    p.add_argument("--csv")
    p.add_argument("--json")
    p.add_argument("--quick", action="store_true", help="20011 points, 20 epochs, 1 repeat")
    args = p.parse_args()
    if args.quick:
        args.sizes, args.epochs, args.repeats, args.breakdown_points = [20011], 20, 1, 0
    p.require_epochs(args.epochs)
    p.require_positive("--lr", args.lr)
    p.require_at_least("--repeats", args.repeats, 1)
    if args.breakdown_points == 1:
        p.fail("--breakdown-points must be 0 (none) or at least 2, got 1")
    p.require_at_least("--cpu-max-points", args.cpu_max_points, 2)
    return args


def compiled_loss(modes):
    """Forward + loss through torch.compile, for mode compile (None without it)."""
    if "compile" not in modes:
        return None
    loss_fn = nn.MSELoss()
    # Static shapes: inductor specializes each size (a dynamic-shape build ran 6x slower than eager
    # at 50M points on the H200). One compile per size, in the check run, outside the timing.
    for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit", "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 64)
    return torch.compile(lambda m, x, y: loss_fn(m(x), y), dynamic=False)


def make_runner(mode, x, y, lr, compiled):
    if mode == "cpu":
        return Eager(x.cpu(), y.cpu(), lr)
    if mode == "graph":
        return Graph(x, y, lr)
    return Eager(x, y, lr, compiled if mode == "compile" else None)


def check_run(runner, epochs, want):
    """The check run (also a warm-up) against the float64 reference `want` = (w, b, losses): ok, w, b."""
    want_w, want_b, want_losses = want
    _, model, losses = runner.run(epochs, keep_losses=True)
    w, b = model.weight.item(), model.bias.item()
    got_losses = [float(v) for v in torch.stack(losses).cpu()]
    ok = (abs(w - want_w) <= PARAM_TOL * abs(want_w) and abs(b - want_b) <= PARAM_TOL * abs(want_b)
          and all(abs(g - r) <= LOSS_TOL * abs(r) for g, r in zip(got_losses, want_losses)))
    return ok, w, b


def measure_mode(args, mode, points, data, ceiling, compiled, failures):
    """One mode at one size: checked, then timed if the check passed; its row of the sweep."""
    x, y, lr, want = data
    runner = make_runner(mode, x, y, lr, compiled)
    ok, w, b = check_run(runner, args.epochs, want)
    times = []
    if ok:
        repeats = 1 if mode == "cpu" and points >= 1_000_000 else args.repeats
        runner.run(args.epochs)  # warm-up
        times = [runner.run(args.epochs)[0] for _ in range(repeats)]
    else:
        failures.append(f"{mode} at {points} points differs from the float64 reference")
    train = x.shape[0]
    med = statistics.median(times) if times else 0.0
    gbps = 8.0 * train * args.epochs / (med * 1e6) if med else 0.0
    row = dict(implementation="pytorch", variant=mode, points=points, train_points=train, epochs=args.epochs,
               lr=lr, us_per_epoch=med * 1e3 / args.epochs, gbps=gbps, copy_gbps=ceiling,
               copy_fraction=gbps / ceiling, passed=ok, w=w, b=b)
    if times:  # as fused_kernels_bench's rows: a run whose check failed has no time
        row["training_ms"] = timing(times)
    print(f"{points:>13}  {mode:8s} {med:11.3f} ms {row['us_per_epoch']:10.2f} us/epoch {gbps:8.0f} GB/s"
          f"{'' if ok else '  FAILED check'}", flush=True)
    return row


def sweep(args, ceiling, compiled, failures):
    rows = []
    for points in args.sizes:
        lr = sweep_lr(args.lr, points)
        gpu_data = make_data(points, 0.0, 0, torch.device("cuda"))
        x, y = gpu_data[0], gpu_data[1]
        want = reference(x, y, args.epochs, lr)
        for mode in args.modes:
            if mode == "cpu" and points > args.cpu_max_points:
                continue
            rows.append(measure_mode(args, mode, points, (x, y, lr, want), ceiling, compiled, failures))
        del gpu_data, x, y
    return rows


def breakdown(args, out):
    """Chapter 04's step-timed eager loop: forward, loss, backward, step, at --breakdown-points."""
    data = make_data(args.breakdown_points, 0.0, 0, torch.device("cuda"))
    ns = argparse.Namespace(epochs=args.epochs, lr=sweep_lr(args.lr, args.breakdown_points), print_every=10)
    train_eager(ns, data, torch.device("cuda"))  # warm-up
    step_rows = train_eager(ns, data, torch.device("cuda"), time_steps=True)["steps"]
    out["breakdown_points"] = args.breakdown_points
    out["breakdown"] = [{"variant": "eager", "operation": row["step"],
                         "time_us": {k: v * 1e3 if k != "runs" else v for k, v in row["time_ms"].items()}}
                        for row in step_rows]  # in us, as fused_kernels_bench --breakdown
    print(f"eager per-epoch steps at {args.breakdown_points} points: " +
          ", ".join(f"{r['operation']} {r['time_us']['median']:.1f} us" for r in out["breakdown"]))


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        f.write(line(record()) + "\n")  # the CSV's first line: where its rows came from
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            t = r.get("training_ms", {"median": 0.0, "min": 0.0, "max": 0.0, "runs": 0})
            flat = dict(r, median_ms=t["median"], min_ms=t["min"], max_ms=t["max"], runs=t["runs"])
            w.writerow({k: (int(v) if isinstance(v, bool) else v) for k, v in flat.items()})


def main():
    args = parse_args()
    require("torch")
    use_cuda_device("pytorch_fused", 0)
    sys.stdout = report_stream(args.json)  # keep stdout for the JSON object under --json -
    name = torch.cuda.get_device_name()
    ceiling = copy_gbps(64 if args.quick else 1024)
    print(f"pytorch_fused: torch {torch.__version__} on {name}; {args.epochs} epochs, {median_of(args.repeats, 'run', 'runs')} "
          f"after 1 warm-up; D2D copy {ceiling:.0f} GB/s; cpu sizes <= {args.cpu_max_points} "
          f"({torch.get_num_threads()} threads)", flush=True)
    compiled = compiled_loss(args.modes)
    failures = []
    rows = sweep(args, ceiling, compiled, failures)
    # The keys fused_kernels_bench writes: settings at the top, then its "sweep" and "breakdown" tables.
    out = {"program": "pytorch_fused", "device": name, "torch_version": torch.__version__, "quick": args.quick,
           "epochs": args.epochs, "lr": args.lr, "repeats": args.repeats, "copy_gbps": ceiling, "sweep": rows}
    if args.breakdown_points:
        breakdown(args, out)
    if args.csv:
        write_csv(args.csv, rows)
    return finish(out, failures, args.json)


if __name__ == "__main__":
    sys.exit(main())
