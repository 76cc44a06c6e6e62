#!/usr/bin/env python3
"""pytorch_transfer.py: what tensor_transfer and tensor_transfer_bench measure, made through PyTorch.

    python3 pytorch_transfer.py                  # 4 KiB .. 1 GiB, as tensor_transfer_bench does
    python3 pytorch_transfer.py --quick          # up to 64 MiB (what the test runs)
    python3 pytorch_transfer.py --json out.json  # the bench's JSON fields (random_tensor, bandwidth,
                                                 # pinning) and the lesson's steps (tensor, non_blocking,
                                                 # memory) as objects of their own

Same sizes, same timing method (CUDA events around each repeat, warm-up, median; the host clock
with a synchronize where the host's own work is part of the cost), same checks (every copied size
is compared with its source), so plot_transfer.py can draw both programs on one chart.
Exit codes as the C++ programs: 0 PASS, 1 FAIL, 2 bad usage (a GPU that does not exist), 77 no GPU.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import Parser, device_index, finish, median_of, report_stream, timing  # noqa: E402  (cli.h's flag rules)
from torch_cuda import sleep_cycles_per_ms, time_on_stream, use_cuda_device  # noqa: E402  (the GPU check; events, as event_timer.h)

torch = needs("torch")

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def repeats_for(nbytes, base):
    """Same rule as transfer::repeats_for in bandwidth.cpp."""
    warmup = 2 if nbytes < 64 * MiB else 1
    scale = 1.0 if nbytes <= 16 * MiB else 16 * MiB / nbytes
    return warmup, max(min(max(base, 3), 10), round(base * scale))


def events_stats(work, warmup, timed):
    """{"median", "min", "max", "runs"} in ms from CUDA events, as the bench's time_ms."""
    return timing(time_on_stream(work, warmup, timed))


def time_on_host(work, warmup, timed):
    for _ in range(warmup):
        work()
    samples = []
    for _ in range(timed):
        t0 = time.perf_counter()
        work()
        samples.append((time.perf_counter() - t0) * 1e3)
    return timing(samples)


def format_bytes(n):
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def pattern(nbytes, seed):
    """A byte pattern that depends on the seed and on the position (any shifted copy differs)."""
    g = torch.Generator().manual_seed(seed)
    return torch.empty(nbytes, dtype=torch.uint8).random_(generator=g)


class Registered:
    """A plain (pageable) tensor page-locked in place by cudaHostRegister, as tensor_transfer does."""

    def __init__(self, tensor):
        self.tensor = tensor
        err = torch.cuda.cudart().cudaHostRegister(tensor.data_ptr(), tensor.numel() * tensor.element_size(), 0)
        if int(err) != 0:
            raise RuntimeError(f"cudaHostRegister failed: {err}")

    def close(self):
        torch.cuda.cudart().cudaHostUnregister(self.tensor.data_ptr())


def host_tensor(nbytes, kind):
    t = torch.empty(nbytes, dtype=torch.uint8)
    if kind == "pinned":
        return t.pin_memory(), None
    if kind == "registered":
        t.fill_(0)  # touch the pages: memory you already have
        return t, Registered(t)
    return t, None


def tensor_semantics(report, failures, dev):
    print("== 1. a tensor: metadata on the host, elements where the device says")
    x = pattern(3 * 1000 * 257 * 4, 1).view(torch.float32).view(3, 1000, 257)
    g = x.cuda(dev.index)
    same = g.to(dev)
    back = g.cpu()
    back_pinned = x.pin_memory().cuda(dev.index).cpu()
    print(f"   x = {tuple(x.shape)} {x.dtype}: device {x.device}, get_device() {x.get_device()}")
    print(f"   g = x.cuda({dev.index}): device {g.device}, get_device() {g.get_device()}")
    print(f"   g.to({dev}) shares g's storage (no copy): {'yes' if same.data_ptr() == g.data_ptr() else 'no'}")
    exact = torch.equal(back.view(torch.uint8), x.view(torch.uint8)) and torch.equal(
        back_pinned.view(torch.uint8), x.view(torch.uint8))
    boundaries = all(torch.equal(h.cuda(dev.index).cpu(), h)
                     for h in (pattern(n, n) for n in (0, 1, 4095, 4096, 4097, 1000003)))
    print(f"   round trips (pageable, pinned, 0 .. 1000003 bytes) bit-exact: {'yes' if exact and boundaries else 'NO'}")
    if not (exact and boundaries):
        failures.append("a tensor round trip host -> GPU -> host changed bytes")
    report["tensor"] = {"host_get_device": x.get_device(), "cuda_get_device": g.get_device(),
                        "same_device_to_shares_storage": same.data_ptr() == g.data_ptr(),
                        "round_trips_bit_exact": exact and boundaries}


def random_tensor(report, failures, dev, quick):
    nbytes = (16 if quick else 256) * MiB
    n = nbytes // 4
    print(f"== 2. a {format_bytes(nbytes)} Normal(0, 1) float32 tensor: torch.randn(n).to(cuda) vs "
          "torch.randn(n, device=cuda)")
    host = torch.empty(n)
    gpu = torch.empty(n, device=dev)
    for what, t in (("host", torch.randn(n, out=host)), ("GPU", torch.randn(n, out=gpu).cpu())):
        mean, std = t.double().mean().item(), t.double().std().item()
        tol = 6.0 / n ** 0.5
        ok = abs(mean) <= tol and abs(std - 1.0) <= tol
        print(f"   check {what}-made numbers: mean {mean:+.5f}, std {std:.5f} (tolerance {tol:.5f}): "
              f"{'ok' if ok else 'FAILED'}")
        if not ok:
            failures.append(f"{what}-made random numbers are not Normal(0, 1)")

    def on_host():
        torch.randn(n, out=host)
        gpu.copy_(host)  # pageable -> device: what .to('cuda') does after allocating
        torch.cuda.synchronize()

    def on_device():
        torch.randn(n, out=gpu)  # out= on the GPU: the numbers are made there
        torch.cuda.synchronize()

    t_host = time_on_host(on_host, 1, 2 if quick else 3)
    t_dev = time_on_host(on_device, 2, 10)
    t_dev_gpu = events_stats(lambda: torch.randn(n, out=gpu), 2, 10)
    speedup = t_host["median"] / t_dev["median"]
    print(f"   host: torch.randn(n), then copy       {t_host['median']:10.3f} ms  (min {t_host['min']:.3f}, "
          f"max {t_host['max']:.3f})")
    print(f"   GPU:  torch.randn(n, device=cuda)     {t_dev['median']:10.3f} ms  (GPU time "
          f"{t_dev_gpu['median']:.3f} ms)")
    print(f"   made on the GPU: {speedup:.0f}x faster")
    report["random_tensor"] = {"bytes": nbytes, "host_then_copy_ms": t_host, "on_gpu_ms": t_dev,
                               "on_gpu_gpu_time_ms": t_dev_gpu, "speedup": speedup}


def copy_sizes(max_bytes):
    """4 KiB, 8 KiB, ... up to max_bytes, doubling."""
    sizes = []
    b = 4 * KiB
    while b <= max_bytes:
        sizes.append(b)
        b *= 2
    return sizes


def copy_rows(kind, nbytes, host, device, dev, base_repeats, failures):
    """One size of one kind of host memory: H2D, D2D (pinned only: it is the same copy for every kind)
    and D2H timed, the round trip checked; a row per direction."""
    src_all, dst_all = host
    d_a, d_b = device
    non_blocking = kind != "pageable"  # the idiom: non_blocking=True with pinned memory
    src, dst = src_all[:nbytes], dst_all[:nbytes]
    dst.fill_(0xA5)  # poison: a copy that did not happen cannot pass
    d_a[:nbytes].fill_(0x5A)
    d_b[:nbytes].fill_(0x5A)
    warmup, timed = repeats_for(nbytes, base_repeats)
    holder = {}

    def h2d():  # .to() allocates from the caching allocator (cheap after warm-up), then copies
        holder["g"] = src.to(dev, non_blocking=non_blocking)

    t_h2d = events_stats(h2d, warmup, timed)
    d_a[:nbytes].copy_(holder.pop("g"))
    d2d = None
    if kind == "pinned":
        d2d = events_stats(lambda: d_b[:nbytes].copy_(d_a[:nbytes]), warmup, timed)
    else:
        d_b[:nbytes].copy_(d_a[:nbytes])
    t_d2h = events_stats(lambda: dst.copy_(d_b[:nbytes], non_blocking=non_blocking), warmup, timed)
    torch.cuda.synchronize()
    ok = torch.equal(dst, src)
    if not ok:
        failures.append(f"{kind} copies of {format_bytes(nbytes)} did not reproduce the source")
    rows = []
    for direction, t in (("h2d", t_h2d), ("d2h", t_d2h), ("d2d", d2d)):
        if t is None:
            continue
        gbps = nbytes / (t["median"] * 1e-3) / 1e9
        row = dict(time_ms=t, kind="device" if direction == "d2d" else kind, direction=direction,
                   bytes=nbytes, gbps=gbps, verified=ok)
        if direction == "d2d":
            row["dram_gbps"] = 2 * gbps
        rows.append(row)
    return rows


def rate(rows, kind, direction, nbytes):
    return next((r["gbps"] for r in rows if r["kind"] == kind and r["direction"] == direction
                 and r["bytes"] == nbytes), 0.0)


def print_bandwidth_table(rows, sizes):
    print("== 3. copy bandwidth in GB/s, median of repeats after warm-up; every size verified")
    print(f"   {'size':>8} | {'pageable':>8} {'':>8} | {'pinned':>8} {'':>8} | {'registered':>10} {'':>8} | {'D2D':>8}")
    print(f"   {'':>8} | {'H2D':>8} {'D2H':>8} | {'H2D':>8} {'D2H':>8} | {'H2D':>10} {'D2H':>8} | {'':>8}")
    for nbytes in sizes:
        print(f"   {format_bytes(nbytes):>8} | {rate(rows, 'pageable', 'h2d', nbytes):8.2f}"
              f" {rate(rows, 'pageable', 'd2h', nbytes):8.2f}"
              f" | {rate(rows, 'pinned', 'h2d', nbytes):8.2f} {rate(rows, 'pinned', 'd2h', nbytes):8.2f}"
              f" | {rate(rows, 'registered', 'h2d', nbytes):10.2f} {rate(rows, 'registered', 'd2h', nbytes):8.2f}"
              f" | {rate(rows, 'device', 'd2d', nbytes):8.1f}")


def bandwidth_headline(rows):
    """Pinned at 256 MiB against the best rate measured, each direction (nothing under --quick's sizes)."""
    headline = {}
    for direction in ("h2d", "d2h"):
        best = max((r for r in rows if r["direction"] == direction), key=lambda r: r["gbps"])
        pinned = rate(rows, "pinned", direction, 256 * MiB)
        if pinned:
            headline[f"pinned_{direction}_256mib_gbps"] = pinned
            headline[f"best_{direction}_gbps"] = best["gbps"]
            headline[f"pinned_{direction}_fraction_of_best"] = pinned / best["gbps"]
            print(f"   pinned {direction.upper()} at 256 MiB: {pinned:.2f} GB/s = {100 * pinned / best['gbps']:.1f}% "
                  f"of the best {direction} rate measured ({best['gbps']:.2f} GB/s)")
    return headline


def bandwidth(report, failures, dev, quick, base_repeats):
    max_bytes = (64 if quick else 1024) * MiB
    sizes = copy_sizes(max_bytes)
    d_a = torch.empty(max_bytes, dtype=torch.uint8, device=dev)
    d_b = torch.empty(max_bytes, dtype=torch.uint8, device=dev)
    report["memory"] = {"free_after_alloc_bytes": torch.cuda.mem_get_info(dev)[0], "requested_bytes": 2 * max_bytes,
                        "memory_allocated_bytes": torch.cuda.memory_allocated(dev),
                        "memory_reserved_bytes": torch.cuda.memory_reserved(dev)}
    rows = []
    master = pattern(max_bytes, 7)  # random bytes: a dropped, repeated or shifted block cannot match
    for kind in ("pageable", "pinned", "registered"):
        src_all, reg_src = host_tensor(max_bytes, kind)
        dst_all, reg_dst = host_tensor(max_bytes, kind)
        src_all.copy_(master)
        for nbytes in sizes:
            rows += copy_rows(kind, nbytes, (src_all, dst_all), (d_a, d_b), dev, base_repeats, failures)
        for reg in (reg_src, reg_dst):
            if reg:
                reg.close()
        del src_all, dst_all
    print_bandwidth_table(rows, sizes)
    report["bandwidth"] = rows
    report["bandwidth_all_verified"] = all(r["verified"] for r in rows)
    report["headline"] = bandwidth_headline(rows)
    return rows


def pinning(report, rows, quick):
    nbytes = (64 if quick else 256) * MiB
    repeats = 2 if quick else 3
    touch, pin, reg, unreg = [], [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        t = torch.empty(nbytes, dtype=torch.uint8).fill_(0)  # a fresh allocation, first touch
        touch.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        p = t.pin_memory()  # cudaHostAlloc (cached by PyTorch after the first time) + a copy
        pin.append((time.perf_counter() - t0) * 1e3)
        del p
        t0 = time.perf_counter()
        r = Registered(t)
        reg.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        r.close()
        unreg.append((time.perf_counter() - t0) * 1e3)
        del t

    def row(kind):
        return next(r["time_ms"]["median"] for r in rows if r["kind"] == kind and r["direction"] == "h2d" and r["bytes"] == nbytes)

    def break_even(cost, pageable_ms, pinned_ms):
        saving = pageable_ms - pinned_ms
        if cost <= 0:
            return 0
        return None if saving <= 0 else int(-(-cost // saving))

    per_gib = GiB / nbytes
    t_touch, t_pin, t_reg = (statistics.median(s) for s in (touch, pin, reg))
    print(f"== 4. the cost of page-locking {format_bytes(nbytes)}, per GiB ({median_of(repeats, 'run', 'runs')})")
    print(f"   torch.empty + first touch            {t_touch * per_gib:8.1f} ms per GiB")
    print(f"   tensor.pin_memory()                  {t_pin * per_gib:8.1f} ms per GiB  (first call {pin[0] * per_gib:.1f}:"
          " PyTorch caches pinned blocks)")
    print(f"   cudaHostRegister (touched memory)    {t_reg * per_gib:8.1f} ms per GiB  (cudaHostUnregister "
          f"{statistics.median(unreg) * per_gib:.1f})")
    report["pinning"] = {
        "bytes": nbytes, "malloc_touch_ms": timing(touch), "malloc_host_ms": timing(pin),
        "host_register_ms": timing(reg),
        "malloc_touch_ms_per_gib": t_touch * per_gib, "malloc_host_ms_per_gib": t_pin * per_gib,
        "host_register_ms_per_gib": t_reg * per_gib,
        "host_unregister_release_ms_per_gib": statistics.median(unreg) * per_gib,
        # The first pin_memory() of a size is the real cost; later ones reuse PyTorch's cached block.
        "break_even_copies_malloc_host": break_even(pin[0] - t_touch, row("pageable"), row("pinned")),
        "break_even_copies_host_register": break_even(t_reg + statistics.median(unreg), row("pageable"),
                                                      row("registered")),
    }


def non_blocking(report, dev, quick):
    nbytes = (16 if quick else 64) * MiB
    spin_ms = 10.0 if quick else 20.0
    cycles_per_ms = sleep_cycles_per_ms()  # torch.cuda._sleep spins for GPU clock cycles
    gpu = torch.empty(nbytes, dtype=torch.uint8, device=dev).fill_(1)
    print(f"== 5. non_blocking=True: host time inside the copy call, queued behind a {spin_ms:.0f} ms kernel "
          f"({format_bytes(nbytes)})")
    result = {"bytes": nbytes, "spin_ms": spin_ms}
    for kind in ("pageable", "pinned"):
        host = pattern(nbytes, 99)
        if kind == "pinned":
            host = host.pin_memory()
        for direction in ("h2d", "d2h"):
            samples, early = [], True
            for i in range(4):
                torch.cuda._sleep(int((1.0 if i == 0 else spin_ms) * cycles_per_ms))
                step_done = torch.cuda.Event()
                step_done.record()
                t0 = time.perf_counter()
                if direction == "h2d":
                    gpu.copy_(host, non_blocking=True)
                else:
                    host.copy_(gpu, non_blocking=True)
                call_ms = (time.perf_counter() - t0) * 1e3
                busy = not step_done.query()  # the kernel ahead of the copy, not the copy's own tail
                torch.cuda.synchronize()
                if i > 0:  # the first is the warm-up
                    samples.append(call_ms)
                    early = early and busy
            call = timing(samples)
            print(f"   {kind:<8} {direction.upper()}: {call['median']:9.3f} ms in the call (min {call['min']:.3f}, "
                  f"max {call['max']:.3f}, {call['runs']} calls); returned before the kernel ahead of it finished: "
                  f"{'yes' if early else 'no'}")
            result[f"{kind}_{direction}"] = {"call_ms": call, "returned_while_busy": early}
    report["non_blocking"] = result


def main():
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", type=device_index, default=0, help="CUDA device: N, cuda or cuda:N (default 0)")
    parser.add_argument("--json", nargs="?", const="-", help="write the results as JSON to FILE (stdout: -)")
    parser.add_argument("--quick", action="store_true", help="up to 64 MiB, few repeats")
    args = parser.parse_args()
    require("torch")
    dev = use_cuda_device("pytorch_transfer", args.device)
    sys.stdout = report_stream(args.json)  # keep stdout for the JSON object under --json -
    # The bench's settings, as its --quick sets them (the sizes below follow the same rule).
    report = {"program": "pytorch_transfer", "device": torch.cuda.get_device_name(dev), "quick": args.quick,
              "max_mib": 64 if args.quick else 1024, "repeats": 5 if args.quick else 20,
              "random_mib": 16 if args.quick else 256}
    failures = []
    print(f"device {args.device}: {report['device']} (PyTorch {torch.__version__})"
          f"{' (--quick)' if args.quick else ''}")
    tensor_semantics(report, failures, dev)
    random_tensor(report, failures, dev, args.quick)
    free_before, total = torch.cuda.mem_get_info(dev)
    rows = bandwidth(report, failures, dev, args.quick, report["repeats"])
    pinning(report, rows, args.quick)
    non_blocking(report, dev, args.quick)
    free_after, _ = torch.cuda.mem_get_info(dev)
    print("== 6. device memory: torch.cuda.mem_get_info (the driver's view) vs PyTorch's own accounting")
    m = report["memory"]
    print(f"   total {total / GiB:.2f} GiB, free {free_before / GiB:.2f} GiB before the two copy buffers; with them: "
          f"free {m['free_after_alloc_bytes'] / GiB:.2f} GiB,\n   memory_allocated {m['memory_allocated_bytes'] / MiB:.0f} MiB, "
          f"memory_reserved {m['memory_reserved_bytes'] / MiB:.0f} MiB; free at the end {free_after / GiB:.2f} GiB "
          "(the caching allocator keeps what it reserved)")
    m.update(total_bytes=total, free_before_bytes=free_before, free_after_free_bytes=free_after)
    return finish(report, failures, args.json)


if __name__ == "__main__":
    sys.exit(main())
