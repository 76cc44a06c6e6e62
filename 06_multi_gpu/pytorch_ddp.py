#!/usr/bin/env python3
"""pytorch_ddp.py: the PyTorch side of chapter 06: chapter 04's regression with DistributedDataParallel.

One process per GPU (torch.multiprocessing.spawn), backend NCCL, nn.Linear(1, 1) wrapped in DDP,
full-batch MSE + SGD on each rank's contiguous shard of the global dataset (X = i * 2e-6,
y = 0.7 X + 0.3, first 80% train; shards as multi_gpu's shard_of: remainders to the lowest ranks).
DDP averages gradients over ranks, so each rank's loss is scaled by world * n_rank / n: the
average is then exactly the full-batch MSE gradient, as in the C++ program. Learning rate as
chapter 05: 0.01 up to 5M points, scaled by (5M/N)^2 above.

Timing as the C++ program: one untimed run (the warm-up: DDP rebuilds its buckets after its
first iteration), then --repeats runs of the epoch loop between two CUDA events, no host
synchronization inside, each from the same initial parameters (reset in place; the model, DDP and
optimizer are built once); the slowest rank's runs are reported. Its JSON has the C++ programs' top
level (program, gpus, the settings, then `ddp` or `scaling`, passed, failures) and their fields
(training_ms as {median, min, max, runs}, us_per_epoch, w, b, ...).

--exchange picks how the gradients meet, as multi_gpu --exchange does in C++:
  nccl      DDP's hook: dist.all_reduce (NCCL) of the gradient bucket (the default, as above)
  symm_mem  no DDP: after backward, the two gradients and the loss go into a buffer of
            torch.distributed._symmetric_memory (symm_mem.empty, symm_mem.rendezvous), summed by
            torch.ops.symm_mem.one_shot_all_reduce: each GPU reads every peer's buffer over NVLink
            and adds them, as multi_gpu --exchange one_shot does by hand
Outside --scaling, the exchange of 16 bytes (4 floats) is also timed alone, eager (one launch each,
between two CUDA events) and replayed from a CUDA graph (torch.cuda.graph), the slowest rank's
runs (exchange_eager_us, exchange_graph_us). A PyTorch build without symmetric memory is refused
with one line (exit 77).

    python3 pytorch_ddp.py --nproc 2 --points 5000000 --json ddp.json
    python3 pytorch_ddp.py --nproc 2 --exchange symm_mem --json symm_mem.json
    python3 pytorch_ddp.py --scaling --strong 5M,100M --weak 100M --json pytorch_scaling.json
"""
import argparse
import importlib
import os
import statistics
import sys
import warnings

# NVLink multicast (NVLS) stays off in every process, as in the C++ program (launcher.cpp says why);
# it must be set before torch loads NCCL.
for name, value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[name] = value

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import (Parser, finish, int_list, integer, number, report_stream, size,  # noqa: E402  (cli.h's
                          size_list, timing, median_of)  # flag rules; timing(): {median, min, max, runs}, as table.h's
from regression_torch import article_model  # noqa: E402  (nn.Linear(1, 1) from w = 0.83, b = 0.7645)

torch = needs("torch")
dist = needs("torch.distributed")
mp = needs("torch.multiprocessing")
nn = needs("torch.nn")
parallel = needs("torch.nn.parallel")

ARTICLE_POINTS = 5_000_000
EXCHANGES = ("nccl", "symm_mem")
EXCHANGE_ITERATIONS = 100  # exchanges per timed sample


def symm_mem_missing():
    """Why this PyTorch build cannot run --exchange symm_mem, or None when it can."""
    try:
        importlib.import_module("torch.distributed._symmetric_memory")
    except ImportError as e:
        return f"torch.distributed._symmetric_memory does not import ({e})"
    try:
        torch.ops.symm_mem.one_shot_all_reduce
    except (AttributeError, RuntimeError) as e:
        return f"torch.ops.symm_mem.one_shot_all_reduce is missing ({' '.join(str(e).split())})"
    return None


def symmetric_buffer(device):
    """4 floats of symmetric memory, rendezvoused over the default group: (group name, tensor)."""
    symm_mem = importlib.import_module("torch.distributed._symmetric_memory")
    group_name = dist.group.WORLD.group_name
    if hasattr(symm_mem, "enable_symm_mem_for_group"):  # needed before rendezvous up to PyTorch 2.7
        symm_mem.enable_symm_mem_for_group(group_name)
    buffer = symm_mem.empty(4, dtype=torch.float32, device=device)
    buffer.zero_()
    symm_mem.rendezvous(buffer, group_name)
    return group_name, buffer


def time_eager(exchange, repeats):
    """Microseconds per exchange, one sample per run of EXCHANGE_ITERATIONS launches between two events."""
    samples = []
    for _ in range(repeats + 1):  # the first is the warm-up
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dist.barrier()
        torch.cuda.synchronize()
        begin.record()
        for _ in range(EXCHANGE_ITERATIONS):
            exchange()
        end.record()
        torch.cuda.synchronize()
        samples.append(1e3 * begin.elapsed_time(end) / EXCHANGE_ITERATIONS)
    return samples[1:]


def time_graphed(exchange, repeats):
    """The same, replayed from one CUDA graph of EXCHANGE_ITERATIONS exchanges; None (and why) if
    this exchange cannot be captured on some rank (then no rank replays: a graph of collectives
    replayed by one rank alone would wait for the others forever)."""
    why_not = None
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up on a side stream, as torch.cuda.graph asks
            for _ in range(3):
                exchange()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.cuda.graph(graph):
                for _ in range(EXCHANGE_ITERATIONS):
                    exchange()
        for w in caught:  # one rank: NCCL queues no GPU work at all, and PyTorch warns of an empty graph
            if "CUDA Graph is empty" in str(w.message):
                why_not = "the graph is empty: this exchange queued no GPU work to capture"
            else:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    except RuntimeError as e:
        why_not = " ".join(str(e).split())[:200]
    captured = torch.tensor([0 if why_not else 1], dtype=torch.int32, device=torch.cuda.current_device())
    dist.all_reduce(captured, op=dist.ReduceOp.MIN)  # every rank replays, or none does
    if captured.item() == 0:
        return None, why_not or "another rank could not capture it"
    samples = []
    for _ in range(repeats + 1):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dist.barrier()
        torch.cuda.synchronize()
        begin.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        samples.append(1e3 * begin.elapsed_time(end) / EXCHANGE_ITERATIONS)
    return samples[1:], None


def lr_for(points, lr=None):
    if lr is not None:
        return lr
    return 0.01 if points <= ARTICLE_POINTS else 0.01 * (ARTICLE_POINTS / points) ** 2


def shard_of(total, ranks, rank, first=0):
    base, extra = divmod(total, ranks)
    return first + rank * base + min(rank, extra), base + (1 if rank < extra else 0)


def make_shard(start, count, device):
    # float(i) rounded to nearest, then two float32 roundings per y, as the C++ data kernel.
    x = torch.arange(start, start + count, dtype=torch.int64, device=device).to(torch.float32) * 2e-6
    y = x * 0.7 + 0.3
    return x[:, None], y[:, None]


def ddp_epoch(model, opt, x, y, rank, world, share):
    """The epoch and the exchange alone with DDP: its hook all-reduces the gradient bucket."""
    ddp = parallel.DistributedDataParallel(model, device_ids=[rank])
    scale = world * share  # DDP averages: this makes the average the full-batch gradient
    buffer = torch.zeros(4, dtype=torch.float32, device=x.device)  # for the exchange alone
    loss_fn = nn.MSELoss()

    def epoch():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y) * scale
        loss.backward()  # DDP's hook all-reduces the gradient bucket here
        opt.step()

    return epoch, lambda: dist.all_reduce(buffer), buffer


def symm_mem_epoch(model, opt, x, y, share):
    """The epoch and the exchange alone with symm_mem's one_shot_all_reduce of the 12 bytes."""
    group_name, buffer = symmetric_buffer(x.device)
    loss_fn = nn.MSELoss()

    def epoch():
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y) * share  # summed over the ranks: the full-batch gradient
        loss.backward()
        buffer[0:1].copy_(model.weight.grad.view(-1))  # the 12 bytes multi_gpu exchanges
        buffer[1:2].copy_(model.bias.grad.view(-1))
        buffer[2:3].copy_(loss.detach().view(-1))
        total = torch.ops.symm_mem.one_shot_all_reduce(buffer, "sum", group_name)
        model.weight.grad.view(-1).copy_(total[0:1])
        model.bias.grad.view(-1).copy_(total[1:2])
        opt.step()

    return epoch, lambda: torch.ops.symm_mem.one_shot_all_reduce(buffer, "sum", group_name), buffer


def timed_runs(model, epoch, epochs, repeats):
    """One untimed run (cuBLAS handles, NCCL connections and DDP's bucket rebuild after its first
    iteration happen there), then `repeats` timed ones, each from the same w and b: ms each."""
    def run():
        with torch.no_grad():
            model.weight.fill_(0.83)
            model.bias.fill_(0.7645)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dist.barrier()
        begin.record()
        for _ in range(epochs):
            epoch()
        end.record()
        torch.cuda.synchronize()
        return begin.elapsed_time(end)

    run()
    return [run() for _ in range(repeats)]


def worker(rank, world, args, port, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    train = args.points // 5 * 4 + args.points % 5 * 4 // 5
    start, count = shard_of(train, world, rank)
    x, y = make_shard(start, count, device)
    # Model, DDP wrapper (or symmetric buffer) and optimizer are built once, as a training script
    # does; each run puts the parameters back in place (the same tensors DDP's buckets view).
    model = article_model(device)
    opt = torch.optim.SGD(model.parameters(), lr=lr_for(args.points, args.lr))  # no momentum: no state to reset
    if args.exchange == "nccl":
        epoch, exchange, buffer = ddp_epoch(model, opt, x, y, rank, world, count / train)
    else:
        epoch, exchange, buffer = symm_mem_epoch(model, opt, x, y, count / train)
    times = timed_runs(model, epoch, args.epochs, args.repeats)
    w, b = model.weight.item(), model.bias.item()
    eager = graphed = [-1.0] * args.repeats  # -1: not measured
    why_not = None
    if not args.scaling:  # the exchange alone, after the training (the buffer's values do not matter)
        buffer.zero_()
        eager = time_eager(exchange, args.repeats)
        graphed, why_not = time_graphed(exchange, args.repeats)
        graphed = [-1.0] * args.repeats if graphed is None else graphed
    # Every sample goes to rank 0 (split again by unpack): repeats times, w, b, repeats of each exchange.
    row = torch.tensor(times + [w, b] + eager + graphed, dtype=torch.float64, device=device)
    rows = [torch.zeros_like(row) for _ in range(world)]
    dist.all_gather(rows, row)
    if rank == 0:
        queue.put(([r.tolist() for r in rows], why_not))
    dist.destroy_process_group()


def unpack(row, repeats):
    """One rank's all-gathered row (worker): its run times (ms), w, b, and the exchange's samples (us)."""
    n = repeats
    return {"ms": row[:n], "w": row[n], "b": row[n + 1], "eager": row[n + 2:2 * n + 2], "graph": row[2 * n + 2:]}


def slowest(ranks, key):
    """The samples of the rank with the largest median of `key`: every rank waits for it."""
    return max((r[key] for r in ranks), key=statistics.median)


def measure(points, nproc, args):
    args = argparse.Namespace(**vars(args))
    args.points = points
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = 29500 + (os.getpid() + points + nproc) % 2000
    mp.spawn(worker, args=(nproc, args, port, queue), nprocs=nproc, join=True)
    rows, graph_why_not = queue.get()
    ranks = [unpack(r, args.repeats) for r in rows]
    training_ms = timing(slowest(ranks, "ms"))
    result = {
        "implementation": "pytorch_ddp" if args.exchange == "nccl" else "pytorch_symm_mem",
        "exchange": args.exchange,
        "mode": "ddp",
        "ranks": nproc,
        "points": points,
        "epochs": args.epochs,
        "lr": lr_for(points, args.lr),
        "training_ms": training_ms,
        "us_per_epoch": 1e3 * training_ms["median"] / args.epochs,
        "w": ranks[0]["w"],
        "b": ranks[0]["b"],
        "bit_identical": all(r["w"] == ranks[0]["w"] and r["b"] == ranks[0]["b"] for r in ranks),
    }
    if not args.scaling:  # the exchange alone: the slowest rank's samples; the graph where every rank captured it
        captured = all(s >= 0 for r in ranks for s in r["graph"])
        result.update(exchange_eager_us=timing(slowest(ranks, "eager")),
                      exchange_graph_us=timing(slowest(ranks, "graph")) if captured else None,
                      graph_not_captured=graph_why_not)
    return result


def parse_args():
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("--nproc", type=integer("--nproc"), default=None,
                   help="ranks, one per GPU (default: every GPU)")
    p.add_argument("--points", type=size("--points"), default=5_000_000, metavar="SIZE",
                   help="points, e.g. 5000000 or 5M (K, M, G: 1e3, 1e6, 1e9)")
    p.add_argument("--epochs", type=integer("--epochs"), default=200)
    p.add_argument("--lr", type=number("--lr"), default=None)
    p.add_argument("--repeats", type=integer("--repeats"), default=5)
    p.add_argument("--exchange", choices=EXCHANGES, default="nccl",
                   help="how the gradients meet: nccl (DDP, the default) or symm_mem (one_shot_all_reduce)")
    p.add_argument("--scaling", action="store_true", help="strong and weak scaling over --gpu-counts")
    p.add_argument("--strong", type=size_list("--strong", 2, 2_000_000_000), default="5M,100M", metavar="LIST",
                   help="strong scaling: total points, e.g. 5M,100M")
    p.add_argument("--weak", type=size_list("--weak", 2, 2_000_000_000), default="100M", metavar="LIST",
                   help="weak scaling: points per GPU, e.g. 100M")
    p.add_argument("--gpu-counts", type=int_list("--gpu-counts", 1, 1024), default="1,2,4", metavar="LIST")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    given = {word.split("=")[0] for word in sys.argv[1:] if word.startswith("--")}
    if not args.scaling and given & {"--strong", "--weak", "--gpu-counts"}:
        p.fail("--strong, --weak and --gpu-counts are for --scaling")
    if args.nproc is not None:  # left out: one rank per GPU
        p.require_at_least("--nproc", args.nproc, 1)
    p.require_at_least("--points", args.points, 2)
    p.require_epochs(args.epochs)
    if args.lr is not None:
        p.require_positive("--lr", args.lr)
    p.require_at_least("--repeats", args.repeats, 1)
    return args


def why_no_run(args, gpus):
    """One line when this machine cannot run what was asked (exit 77), else None."""
    if gpus == 0:
        return "pytorch_ddp needs a CUDA GPU: torch.cuda.device_count() is 0"
    if args.exchange == "symm_mem" and symm_mem_missing():
        return (f"pytorch_ddp: --exchange symm_mem needs a PyTorch build with symmetric memory (2.5 or newer, "
                f"CUDA): {symm_mem_missing()}")
    if not args.scaling and args.nproc is not None and args.nproc > gpus:
        return f"pytorch_ddp: --nproc {args.nproc} needs {args.nproc} GPUs; this machine has {gpus}"
    return None


def run_ddp(args, report, failures, log):
    result = measure(args.points, args.nproc, args)
    what = "PyTorch DDP" if args.exchange == "nccl" else "PyTorch, symm_mem one_shot_all_reduce"
    print(f"{what}, {args.nproc} ranks, {args.points} points, {args.epochs} epochs: "
          f"{result['us_per_epoch']:.2f} us per epoch ({median_of(args.repeats, 'run', 'runs')}); w {result['w']:.9g}, "
          f"b {result['b']:.9g}, ranks bit-identical: {result['bit_identical']}", file=log)
    graph = result["exchange_graph_us"]
    graphed = f"{graph['median']:.2f} us" if graph else f"not captured ({result['graph_not_captured']})"
    call = "dist.all_reduce" if args.exchange == "nccl" else "torch.ops.symm_mem.one_shot_all_reduce"
    print(f"the exchange alone ({call} of 16 bytes, slowest rank, {median_of(args.repeats, 'run', 'runs')}): eager "
          f"{result['exchange_eager_us']['median']:.2f} us, CUDA graph {graphed}", file=log)
    report.update(points=args.points, lr=result["lr"], ddp=result)
    if not result["bit_identical"]:
        failures.append(f"ddp: ranks ended with different w or b on {args.nproc} ranks")


def run_scaling(args, gpus, report, failures, log):
    counts = [n for n in args.gpu_counts if n <= gpus]
    rows = []
    print("  kind      points  GPUs   epoch us  efficiency", file=log)
    for kind, sizes in (("strong", args.strong), ("weak", args.weak)):
        for given in sizes:
            t1 = None
            for n in counts:
                points = given if kind == "strong" else given * n
                r = measure(points, n, args)
                us = r["us_per_epoch"]
                t1 = us if n == 1 else t1
                eff = (t1 / (n * us) if kind == "strong" else t1 / us) if t1 else 0.0
                r.update({"kind": kind, "gpus": n, "points_per_gpu": points // n, "efficiency": eff})
                rows.append(r)
                print(f"  {kind:7} {points:10} {n:5} {us:10.2f} {100 * eff:10.1f}%", file=log, flush=True)
                if not r["bit_identical"]:
                    failures.append(f"scaling: {kind} {points} points on {n} GPUs: ranks ended with different w or b")
    report.update(gpus=max(counts, default=0), strong=args.strong, weak=args.weak,
                  scaling={"gpu_counts": counts, "rows": rows, "repeats": args.repeats})


def main():
    args = parse_args()
    require("torch", "torch.distributed", "torch.multiprocessing")
    gpus = torch.cuda.device_count()
    why = why_no_run(args, gpus)
    if why:
        print(why, file=sys.stderr)
        return 77
    if args.nproc is None:  # one rank per GPU, as the C++ launcher without --nproc
        args.nproc = gpus
    log = report_stream(args.json)
    failures = []
    # The C++ programs' top level: program, the GPUs, the settings; then the run (ddp) or the sweep (scaling).
    report = {"program": "pytorch_ddp", "gpus": args.nproc, "gpu_name": torch.cuda.get_device_name(0),
              "torch_version": torch.__version__, "exchange": args.exchange, "epochs": args.epochs,
              "repeats": args.repeats}
    if args.scaling:
        run_scaling(args, gpus, report, failures, log)
    else:
        run_ddp(args, report, failures, log)
    return finish(report, failures, args.json)


if __name__ == "__main__":
    sys.exit(main())
