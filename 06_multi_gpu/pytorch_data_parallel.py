#!/usr/bin/env python3
"""pytorch_data_parallel.py: chapter 04's regression with nn.DataParallel, the way PyTorch does it.

nn.DataParallel is one process driving every GPU, like this chapter's DataParallel analog, but it
does not all-reduce. Every forward it (1) scatters the input batch from GPU 0 to every GPU, (2)
replicates the module onto every GPU, (3) runs the replicas in host threads, (4) gathers the
outputs back onto GPU 0; the loss is computed on GPU 0, and backward sends gradients back through
the gather and reduces the replicas' parameter gradients onto GPU 0, where the optimizer steps.
So every step copies the whole batch twice across GPUs and funnels everything through GPU 0.

This script times the same full-batch training (5M points, 4M trained, nn.Linear(1, 1) from w = 0.83,
b = 0.7645, MSE, SGD) three ways on the same machine: the plain model on GPU 0, nn.DataParallel
over every GPU, and, for one epoch's worth of calls, each of DataParallel's four stages on its own;
it checks that w and b agree with the plain model. Compare with pytorch_ddp.py (one process per
GPU, each with its own shard, all-reducing 8 bytes of gradients): that is why PyTorch recommends DDP.

    python3 pytorch_data_parallel.py --json results/pytorch_data_parallel.json
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import Parser, finish, integer, median_of, report_stream, size, timing  # noqa: E402  (cli.h's flag rules)
from regression_torch import article_model, make_data  # noqa: E402  (chapter 04's data, first 80% train)

torch = needs("torch")
nn = needs("torch.nn")

RELATIVE_TOLERANCE = 1e-4  # w and b: the same math, summed in another order over the shards


def train(model, params_of, x, y, epochs, lr):
    """The article's loop, no host synchronization inside; returns (ms, w, b), timed on GPU 0."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loss_fn = nn.MSELoss()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    begin.record()
    for _ in range(epochs):
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
    end.record()
    torch.cuda.synchronize()
    w, b = params_of(model)
    return begin.elapsed_time(end), w.item(), b.item()


def timed(runs, make_and_train):
    """The training `runs` times after one warm-up (cuBLAS, threads): {training_ms, w, b}."""
    results = [make_and_train() for _ in range(runs + 1)][1:]
    return {"training_ms": timing([r[0] for r in results]), "w": results[-1][1], "b": results[-1][2]}


def stages(dp, x, y, repeats):
    """DataParallel's forward, one stage at a time, each timed from the host with a sync after it."""
    loss_fn = nn.MSELoss()
    ids = dp.device_ids
    times = {"scatter": [], "replicate": [], "parallel_apply": [], "gather": [], "loss + backward + reduce": []}

    def clock(name, work):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        value = work()
        for i in ids:
            torch.cuda.synchronize(i)
        times[name].append(1e6 * (time.perf_counter() - t0))
        return value

    for _ in range(repeats + 1):
        dp.zero_grad(set_to_none=True)
        inputs, kwargs = clock("scatter", lambda: dp.scatter((x,), {}, ids))
        replicas = clock("replicate", lambda: dp.replicate(dp.module, ids[:len(inputs)]))
        outputs = clock("parallel_apply", lambda: dp.parallel_apply(replicas, inputs, kwargs))
        out = clock("gather", lambda: dp.gather(outputs, dp.output_device))
        clock("loss + backward + reduce", lambda: loss_fn(out, y).backward())
    return {name: timing(t[1:]) for name, t in times.items()}  # the first pass warms up


def main():
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", type=integer("--gpus"), default=None, help="GPUs to use (default: all)")
    p.add_argument("--points", type=size("--points"), default=5_000_000, metavar="SIZE")
    p.add_argument("--epochs", type=integer("--epochs"), default=200)
    p.add_argument("--repeats", type=integer("--repeats"), default=5)
    p.add_argument("--quick", action="store_true", help="200K points, 40 epochs, 2 repeats")
    p.add_argument("--json", default=None, help="write the results as JSON to FILE (- for stdout)")
    args = p.parse_args()
    if args.quick:
        args.points, args.epochs, args.repeats = 200_000, 40, 2
    p.require_at_least("--points", args.points, 2)
    p.require_epochs(args.epochs)
    p.require_at_least("--repeats", args.repeats, 1)
    if args.gpus is not None:
        p.require_at_least("--gpus", args.gpus, 1)
    require("torch")
    if not torch.cuda.is_available():
        print("pytorch_data_parallel needs a CUDA GPU: torch.cuda.is_available() is False", file=sys.stderr)
        return 77
    available = torch.cuda.device_count()
    gpus = args.gpus or available
    if gpus > available:
        print(f"error: --gpus {gpus}: this machine has {available} GPU(s)", file=sys.stderr)
        return 2
    log = report_stream(args.json)
    print(f"pytorch_data_parallel: torch {torch.__version__}, {args.points} points, {args.epochs} epochs, "
          f"{gpus} x {torch.cuda.get_device_name(0)}", file=log)
    gpu0 = torch.device("cuda", 0)
    x, y = make_data(args.points, 0.0, 0, gpu0)[:2]  # the training set, on GPU 0 as x.to('cuda') leaves it
    lr = 0.01 if args.points <= 5_000_000 else 0.01 * (5_000_000 / args.points) ** 2  # as pytorch_ddp.py

    def plain():
        return train(article_model(gpu0), lambda m: (m.weight, m.bias), x, y, args.epochs, lr)

    def data_parallel():
        dp = nn.DataParallel(article_model(gpu0), device_ids=list(range(gpus)))
        return train(dp, lambda m: (m.module.weight, m.module.bias), x, y, args.epochs, lr)

    single = timed(args.repeats, plain)
    spread = timed(args.repeats, data_parallel)
    stage_us = stages(nn.DataParallel(article_model(gpu0), device_ids=list(range(gpus))), x, y, args.repeats)

    failures = []
    for name in ("w", "b"):
        error = abs(spread[name] - single[name]) / abs(single[name])
        if not error <= RELATIVE_TOLERANCE:
            failures.append(f"{name}: DataParallel {spread[name]:.9g} vs one GPU {single[name]:.9g} "
                            f"(relative error {error:.2e} > {RELATIVE_TOLERANCE:g})")
    rows = [("one GPU, plain model", single), (f"nn.DataParallel, {gpus} GPUs", spread)]
    print(f"{'run':28s}{'us/epoch':>12s}{'w':>14s}{'b':>14s}", file=log)
    for name, r in rows:
        print(f"{name:28s}{1e3 * r['training_ms']['median'] / args.epochs:12.1f}{r['w']:14.9f}{r['b']:14.9f}", file=log)
    print(f"nn.DataParallel's stages, one forward + backward each ({median_of(args.repeats, 'run', 'runs')}, host-timed, "
          "synchronized after each stage):", file=log)
    for name, us in stage_us.items():
        print(f"  {name:26s}{us['median']:10.1f} us", file=log)
    # The C++ programs' top level: program, the GPUs, the settings, one key per table or step.
    report = {"program": "pytorch_data_parallel", "gpus": gpus, "gpu_name": torch.cuda.get_device_name(0),
              "torch_version": torch.__version__, "quick": args.quick, "points": args.points,
              "epochs": args.epochs, "repeats": args.repeats,
              "runs": [{"run": "single", "gpus": 1, "us_per_epoch": 1e3 * single["training_ms"]["median"] / args.epochs,
                        **single},
                       {"run": "data_parallel", "gpus": gpus,
                        "us_per_epoch": 1e3 * spread["training_ms"]["median"] / args.epochs, **spread}],
              "stages_us": stage_us}
    return finish(report, failures, args.json)


if __name__ == "__main__":
    sys.exit(main())
