#!/usr/bin/env python3
"""pytorch_minibatch.py: part 2 of chapter 04 in PyTorch, mini-batches from host memory.

The same data, batches (batch k: points [k B, min((k + 1) B, n)) of the training set), batch order
(regression_torch.batch_order, minibatch.cu's restated), loss and step as `linear_regression
--batch-size B`, the training set in host memory, fed to the GPU the PyTorch ways:

  pageable          x[s].to('cuda') per batch from plain host memory (the C++ pipeline 1)
  dataloader        DataLoader(..., pin_memory=True): each batch copied out and pinned on the
                    host, then copied with non_blocking=True (pipeline 3); run with 0 workers, then
                    with --num-workers worker processes doing the slicing
  pinned_slices     the training set pinned once, each batch sliced from it and copied on a side
                    stream while the previous batch trains (pipeline 4)
  per_sample        the textbook DataLoader(TensorDataset(x, y), batch_size=B, shuffle=True,
                    pin_memory=True): it shuffles points, not batches, so it is timed, not checked

Times are per epoch, from the host clock around all the epochs of a run (a DataLoader's worker
processes start inside it, once a run). Every other run is checked against a reference of the same
batch order (float64 sums, w and b stored in float32, as train_minibatch_reference), within 04's
tolerances (minibatch.h: w and b 1e-5 relative; each epoch's loss and the test MSE 1e-4 relative
plus 1e-9 absolute, the float32 rounding floor that noise-free mini-batch SGD reaches).

    python3 pytorch_minibatch.py --batch-size 64K --shuffle --repeats 1 --json pytorch_minibatch.json
    python3 pytorch_minibatch.py --quick --batch-size 4096 --shuffle    # what the tests run
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import Parser, device_index, finish, integer, median_of, number, report_stream, size, timing  # noqa: E402  (cli.h's flag rules)
from torch_cuda import use_cuda_device  # noqa: E402  (no GPU: 77; no such --device: 2)
from regression_torch import article_model, batch_order, make_data  # noqa: E402  (shared with 05: the data, the batch order)

np = needs("numpy")
torch = needs("torch")
nn = needs("torch.nn")
data_utils = needs("torch.utils.data")

MAX_STEPS = 200_000  # eager PyTorch costs some 100 us a step: beyond this, minutes a run
PARAMETER_REL, LOSS_REL, LOSS_ABS = 1e-5, 1e-4, 1e-9
PER_SAMPLE_BATCHES = 4  # the per-sample DataLoader builds each batch point by point: time a few


def batch_slices(n, batch_size):
    return [slice(k * batch_size, min((k + 1) * batch_size, n)) for k in range((n + batch_size - 1) // batch_size)]


def reference(x, y, x_test, y_test, args, slices):
    """Mini-batch SGD on the float32 data as train_minibatch_reference: sums and steps in float64,
    each step applied to w and b in float32 (a float64 w keeps fractions of an ulp no float32 run has)."""
    x, y = x.numpy().astype(np.float64).ravel(), y.numpy().astype(np.float64).ravel()
    w, b, losses = float(np.float32(0.83)), float(np.float32(0.7645)), []
    for epoch in range(args.epochs):
        total = 0.0
        for k in batch_order(len(slices), args.shuffle, args.seed, epoch):
            r = w * x[slices[k]] + b - y[slices[k]]
            total += float(np.dot(r, r)) / r.size
            # The step in float64, applied in float32 as a run applies it.
            w = float(np.float32(w) - np.float32(args.lr * 2.0 * float(np.dot(r, x[slices[k]])) / r.size))
            b = float(np.float32(b) - np.float32(args.lr * 2.0 * float(r.sum()) / r.size))
        losses.append(total / len(slices))
    r = w * x_test.numpy().astype(np.float64).ravel() + b - y_test.numpy().astype(np.float64).ravel()
    return {"w": w, "b": b, "losses": losses, "test_mse": float(np.dot(r, r)) / r.size}


class Batches:
    """A map-style dataset whose item k is batch k, a copy of its slice (the staging copy)."""

    def __init__(self, x, y, slices):
        self.x, self.y, self.slices = x, y, slices

    def __len__(self):
        return len(self.slices)

    def __getitem__(self, k):
        return self.x[self.slices[k]].clone(), self.y[self.slices[k]].clone()


class EpochOrder:
    """A sampler: the batch order of the epoch set in .epoch (the loader asks in the main process)."""

    def __init__(self, batches, args):
        self.batches, self.args, self.epoch = batches, args, 0

    def __len__(self):
        return self.batches

    def __iter__(self):
        return iter(batch_order(self.batches, self.args.shuffle, self.args.seed, self.epoch))


class Model:
    """04's model, loss and optimizer; step() trains on one batch already on the GPU."""

    def __init__(self, lr, device):
        self.model = article_model(device)
        self.loss_fn = nn.MSELoss()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)
        self.epoch_loss = torch.zeros((), device=device)

    def step(self, xb, yb):
        loss = self.loss_fn(self.model(xb), yb)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.epoch_loss += loss.detach()  # summed on the GPU: no host sync per step


def epochs_pageable(model, x, y, slices, args, device):
    for epoch in range(args.epochs):
        for k in batch_order(len(slices), args.shuffle, args.seed, epoch):
            model.step(x[slices[k]].to(device), y[slices[k]].to(device))
        yield epoch


def epochs_dataloader(model, x, y, slices, args, device, workers):
    order = EpochOrder(len(slices), args)
    loader = data_utils.DataLoader(Batches(x, y, slices), batch_size=None, sampler=order, pin_memory=True,
                                   num_workers=workers, persistent_workers=workers > 0)
    for epoch in range(args.epochs):
        order.epoch = epoch
        for xb, yb in loader:
            model.step(xb.to(device, non_blocking=True), yb.to(device, non_blocking=True))
        yield epoch


def epochs_pinned_slices(model, xp, yp, slices, args, device):  # xp, yp: already pinned (run)
    copy_stream, compute = torch.cuda.Stream(device), torch.cuda.current_stream(device)

    def fetch(k):  # on the copy stream; fresh device tensors, so nothing to wait for
        with torch.cuda.stream(copy_stream):
            xb, yb = xp[slices[k]].to(device, non_blocking=True), yp[slices[k]].to(device, non_blocking=True)
        landed = torch.cuda.Event()
        landed.record(copy_stream)
        return xb, yb, landed

    for epoch in range(args.epochs):
        order = batch_order(len(slices), args.shuffle, args.seed, epoch)
        pending = fetch(order[0])
        for i in range(len(order)):
            xb, yb, landed = pending
            compute.wait_event(landed)
            xb.record_stream(compute)  # the allocator may not reuse them until compute is done
            yb.record_stream(compute)
            if i + 1 < len(order):
                pending = fetch(order[i + 1])  # the next copy runs while this batch trains
            model.step(xb, yb)
        yield epoch


def run(pipeline, x, y, slices, args, device, workers):
    """One training run: the epoch losses, w, b, and the host time of the epoch loop."""
    model = Model(args.lr, device)
    if pipeline == "pinned_slices":  # pinned once, before the clock, as the C++ pinned_set is
        x, y = x.pin_memory(), y.pin_memory()
    epochs = {"pageable": lambda: epochs_pageable(model, x, y, slices, args, device),
              "dataloader": lambda: epochs_dataloader(model, x, y, slices, args, device, workers),
              "pinned_slices": lambda: epochs_pinned_slices(model, x, y, slices, args, device)}[pipeline]
    losses = []
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in epochs():
        losses.append(model.epoch_loss / len(slices))  # still on the GPU
        model.epoch_loss = torch.zeros((), device=device)
    torch.cuda.synchronize(device)
    ms = 1e3 * (time.perf_counter() - start)
    return {"losses": torch.stack(losses).tolist(), "w": model.model.weight.item(), "b": model.model.bias.item(),
            "model": model, "ms": ms}


def time_per_sample(x, y, args, device, batches):
    """ms per batch of the textbook DataLoader over `batches` batches (workers 0, pin_memory)."""
    loader = data_utils.DataLoader(data_utils.TensorDataset(x, y), batch_size=args.batch_size, shuffle=True,
                                   pin_memory=True, generator=torch.Generator().manual_seed(args.seed))
    model = Model(args.lr, device)
    torch.cuda.synchronize(device)
    start, done = time.perf_counter(), 0
    for xb, yb in loader:
        model.step(xb.to(device, non_blocking=True), yb.to(device, non_blocking=True))
        done += 1
        if done == batches:
            break
    torch.cuda.synchronize(device)
    return 1e3 * (time.perf_counter() - start) / done


def relative(got, want):
    return abs(got - want) / abs(want) if want else abs(got)


def check(got, want, x_test, y_test, device):
    with torch.no_grad():
        got["test_mse"] = got["model"].loss_fn(got["model"].model(x_test.to(device)), y_test.to(device)).item()
    failures = []
    for name in ("w", "b"):
        if not abs(got[name] - want[name]) <= PARAMETER_REL * abs(want[name]):
            failures.append(f"{name} {got[name]:.9g}, the reference {want[name]:.9g}")
    pairs = list(zip(got["losses"], want["losses"])) + [(got["test_mse"], want["test_mse"])]
    for i, (g, w) in enumerate(pairs):
        if not abs(g - w) <= LOSS_ABS + LOSS_REL * abs(w):
            what = "test MSE" if i == len(pairs) - 1 else f"epoch {i} loss"
            failures.append(f"{what} {g:.9g}, the reference {w:.9g}")
            break
    return failures


def pcie_bound_gbps(x, device):
    """The best host-to-device rate here: a pinned copy of x, median of 10, CUDA events."""
    pinned, times = x.pin_memory(), []
    for _ in range(11):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        pinned.to(device, non_blocking=True)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return x.numel() * x.element_size() / (statistics.median(times[1:]) * 1e6)


def minibatch_table(args, device, log):
    """Every run, checked then timed, and the table; returns (rows, failures)."""
    x, y, x_test, y_test = make_data(args.points, args.noise, args.seed, torch.device("cpu"))
    n = x.shape[0]
    slices = batch_slices(n, args.batch_size)
    print(f"mini-batch SGD: {len(slices)} batches of up to {args.batch_size} points an epoch"
          f"{', in a new order every epoch' if args.shuffle else ''} (seed {args.seed}); "
          f"the training set ({2 * 4 * n / 1e6:.0f} MB of x and y) in host memory", file=log)
    bound_gbps = pcie_bound_gbps(x, device)
    bound_ms = 8 * n / (bound_gbps * 1e6)
    print(f"PCIe bound: the best pinned host-to-device copy here, {bound_gbps:.1f} GB/s: {bound_ms:.3f} ms an epoch",
          file=log)
    want = reference(x, y, x_test, y_test, args, slices)
    rows, failures = [], []
    runs = [("pageable", 0), ("dataloader", 0), ("dataloader", args.num_workers), ("pinned_slices", 0)]
    for pipeline, workers in runs:
        name = pipeline if pipeline != "dataloader" else f"dataloader, {workers} workers"
        got = run(pipeline, x, y, slices, args, device, workers)
        problems = check(got, want, x_test, y_test, device)
        failures += [f"{name}: {p}" for p in problems[:1]]
        row = {"pipeline": name, "w": got["w"], "b": got["b"], "w_error": relative(got["w"], want["w"]),
               "b_error": relative(got["b"], want["b"]), "check": "FAILED" if problems else "ok"}
        if not problems:
            times = [run(pipeline, x, y, slices, args, device, workers)["ms"] / args.epochs for _ in range(args.repeats)]
            row["epoch_ms"] = timing(times)
            row["bound_percent"] = 100 * bound_ms / row["epoch_ms"]["median"]
        rows.append(row)
    per_batch = time_per_sample(x, y, args, device, min(PER_SAMPLE_BATCHES, len(slices)))
    # Not a measured epoch: the batches timed, scaled to an epoch's count (a plain number).
    rows.append({"pipeline": "per_sample", "estimated_epoch_ms": per_batch * len(slices),
                 "bound_percent": 100 * bound_ms / (per_batch * len(slices)), "check": "not checked"})
    print(f"checked against the reference of the same batch order (float64 sums, float32 w and b); time per epoch, "
          f"{median_of(args.repeats, 'run', 'runs')} (host clock); per_sample: {min(PER_SAMPLE_BATCHES, len(slices))} batches timed, "
          "times the batches of an epoch:", file=log)
    print(f"  {'pipeline':24s}{'ms/epoch':>10s}{'% of PCIe bound':>17s}{'w err':>9s}{'b err':>9s}  check", file=log)
    for r in rows:
        errors = f"{r['w_error']:9.1e}{r['b_error']:9.1e}" if "w_error" in r else f"{'':18s}"
        epoch_ms = r["epoch_ms"]["median"] if "epoch_ms" in r else r.get("estimated_epoch_ms")
        times = f"{epoch_ms:10.4f}{r['bound_percent']:17.1f}" if epoch_ms is not None else f"{'':27s}"
        print(f"  {r['pipeline']:24s}{times}{errors}  {r['check']}", file=log)
    return rows, failures


def parse_args():
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("--device", type=device_index, default=0, help="N, cuda or cuda:N (default 0)")
    p.add_argument("--points", type=size("--points"), default=5_000_000, metavar="SIZE",
                   help="points, e.g. 5000000 or 5M (K, M, G: 1e3, 1e6, 1e9)")
    p.add_argument("--epochs", type=integer("--epochs"), default=20,
                   help="epochs (default 20: eager PyTorch spends about 1 ms a step here, 63 steps an epoch)")
    p.add_argument("--lr", type=number("--lr"), default=0.01)
    p.add_argument("--seed", type=integer("--seed", maximum=2**64 - 1), default=42)
    p.add_argument("--batch-size", type=size("--batch-size"), default=None, metavar="SIZE",
                   help="points per step (default 65536; 4096 with --quick)")
    p.add_argument("--shuffle", action="store_true", help="visit the batches in a new order every epoch")
    p.add_argument("--num-workers", type=integer("--num-workers"), default=2,
                   help="worker processes of the second DataLoader run (default 2)")
    p.add_argument("--repeats", type=integer("--repeats"), default=None, help="timed runs (default 2; 1 with --quick)")
    p.add_argument("--json", nargs="?", const="-", help="write the results as JSON to FILE (- for stdout)")
    p.add_argument("--quick", action="store_true", help="20011 points, 60 epochs, one timed run")
    args = p.parse_args()
    if args.quick:
        args.points, args.epochs = 20_011, 60
    if args.batch_size is None:
        args.batch_size = 4096 if args.quick else 65_536
    args.noise = 0.0  # as linear_regression's mini-batch runs: y = 0.7 X + 0.3 exactly
    if args.points < 2:
        p.fail(f"--points must be at least 2 (one to train, one to test), got {args.points}")
    p.require_epochs(args.epochs)
    p.require_positive("--lr", args.lr)
    p.require_at_least("--seed", args.seed, 0)
    p.require_at_least("--num-workers", args.num_workers, 1)
    args.repeats = args.repeats if args.repeats is not None else 1 if args.quick else 2
    p.require_at_least("--repeats", args.repeats, 1)
    args.train_points = args.points // 5 * 4 + args.points % 5 * 4 // 5
    if not 1 <= args.batch_size <= args.train_points:
        p.fail(f"--batch-size must be 1 to the {args.train_points} training points, got {args.batch_size}")
    steps = -(-args.train_points // args.batch_size) * args.epochs
    if steps > MAX_STEPS:
        p.fail(f"--batch-size {args.batch_size} makes {steps} steps (batches x --epochs); at most {MAX_STEPS}")
    return args


def main():
    args = parse_args()
    require("torch")
    require("numpy")
    device = use_cuda_device("pytorch_minibatch", args.device)
    log = report_stream(args.json)
    name = torch.cuda.get_device_name(device)
    print(f"pytorch_minibatch: torch {torch.__version__}, {args.points} points ({args.train_points} train), "
          f"{args.epochs} epochs, lr {args.lr}, on {device} ({name})", file=log)
    rows, failures = minibatch_table(args, device, log)
    out = {"program": "pytorch_minibatch", "device": name, "torch_device": str(device),
           "torch_version": torch.__version__, "quick": args.quick, "points": args.points,
           "train_points": args.train_points, "epochs": args.epochs, "lr": args.lr, "seed": args.seed,
           "batch_size": args.batch_size, "shuffle": args.shuffle, "num_workers": args.num_workers,
           "timed_runs": args.repeats, "minibatch": rows}
    return finish(out, failures, args.json)


if __name__ == "__main__":
    sys.exit(main())
