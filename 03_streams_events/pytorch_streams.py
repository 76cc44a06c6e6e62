#!/usr/bin/env python3
"""pytorch_streams.py: chapter 03's pipeline written with torch.cuda streams and events.

The same workload as the C++ program streams_events (chunks copied in from pinned memory, the same
multiply-add chain per element, copied out), the same schedules (serial, K streams, the article's
transfer + compute streams ordered by an event), the same timing (CUDA events, warm-up, median)
and the same JSON fields, so that the two can be compared line by line.

    python3 pytorch_streams.py --iterations N       # full run, N from the C++ run's JSON (like for like)
    python3 pytorch_streams.py                      # full run, calibrated on its own (as C++ calibrates)
    python3 pytorch_streams.py --quick --json -     # what the tests run
    python3 pytorch_streams.py --drop-wait          # the missing-wait bug: the check FAILs

The compute stage is one elementwise kernel per chunk, compiled at run time by PyTorch's jiterator
(torch.cuda.jiterator._create_jit_fn, beta): in eager PyTorch a loop of N multiply-adds would be N
kernel launches, which would measure Python, not streams.
"""
import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import Parser, device_index, finish, int_list, integer, report_stream, size, timing  # noqa: E402  (cli.h's flag rules)
from torch_cuda import sleep_cycles_per_ms, use_cuda_device  # noqa: E402  (no GPU: 77; no such --device: 2)

np = needs("numpy")
torch = needs("torch")

DECAY = struct.unpack("f", struct.pack("f", 0.999))[0]  # the C++ kDecay: 0.999f, as a Python float

# y <- fmaf(y, 0.999f, x), `iterations` times: one rounding per step, as the C++ transform_kernel.
# (No comments inside the string: it is pasted into jiterator's generated source as it is.)
KERNEL = """
template <typename T> T decay_steps(T x, T iterations) {
  T y = x;
  const int n = static_cast<int>(iterations);
  for (int k = 0; k < n; ++k) y = __fmaf_rn(y, 0.999f, x);
  return y;
}
"""


def parse_args():
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", type=device_index, default=0, help="CUDA device: N, cuda or cuda:N (default 0)")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--chunks", type=integer("--chunks"), help="chunks in the batch (default 64; --quick 4)")
    p.add_argument("--chunk-elements", type=size("--chunk-elements"), metavar="SIZE",
                   help="floats per chunk, e.g. 65536 or 1M (default 1048576; --quick 65536)")
    p.add_argument("--iterations", type=integer("--iterations"),
                   help="multiply-adds per element; 0 or absent: calibrate like the C++ program (compute as long "
                        "as both copies at once). To compare with a C++ run, pass that run's workload.iterations")
    p.add_argument("--streams", type=int_list("--streams", 1, 64), metavar="LIST",
                   help="stream counts K, e.g. 1,2,4 (default 1,2,4,8; --quick 1,2,4)")
    p.add_argument("--repeats", type=integer("--repeats"), help="timed repeats of each schedule (default 20; --quick 3)")
    p.add_argument("--drop-wait", action="store_true")
    p.add_argument("--producer-delay-us", type=integer("--producer-delay-us"), default=1000)
    a = p.parse_args()
    quick = a.quick
    if a.chunks is None:
        a.chunks = 4 if quick else 64
    if a.chunk_elements is None:
        a.chunk_elements = 1 << 16 if quick else 1 << 20
    if a.iterations is None:
        a.iterations = 64 if quick else 0
    if a.streams is None:
        a.streams = [1, 2, 4] if quick else [1, 2, 4, 8]
    if a.repeats is None:
        a.repeats = 3 if quick else 20
    # The C++ program's ranges (finish_workload_options in workload.cpp, parse in streams_events.cu).
    for flag, value, low, high in (("--chunks", a.chunks, 1, 4096), ("--chunk-elements", a.chunk_elements, 1, 1 << 28),
                                   ("--chunks x --chunk-elements", a.chunks * a.chunk_elements, 1, 1 << 30),
                                   ("--iterations", a.iterations, 0, 1_000_000), ("--repeats", a.repeats, 1, 1000),
                                   ("--producer-delay-us", a.producer_delay_us, 1, 1_000_000)):
        p.require_at_least(flag, value, low)
        p.require_at_most(flag, value, high)
    return a


def make_compute():
    """The compute stage as one kernel: jiterator, or (without NVRTC) an eager loop of launches."""
    try:
        fn = torch.cuda.jiterator._create_jit_fn(KERNEL, iterations=0.0)
        fn(torch.ones(4, device="cuda"), iterations=2.0)  # compile now, not inside a timing
        return (lambda x, n: fn(x, iterations=float(n))), "jiterator"
    except Exception as e:  # noqa: BLE001 - any failure means "no run-time compilation here"
        print(f"note: jiterator unavailable ({e}); using an eager loop of launches", file=sys.stderr)

        def eager(x, n):
            y = x.clone()
            for _ in range(n):
                y = torch.addcmul(x, y, torch.tensor(float(DECAY), device=x.device))
            return y
        return eager, "eager-loop"


class Batch:
    def __init__(self, chunks, chunk_elements, iterations, compute):
        self.chunks, self.chunk_elements, self.iterations, self.compute = chunks, chunk_elements, iterations, compute
        i = np.arange(chunks * chunk_elements, dtype=np.uint64)  # the C++ fill_input, bit for bit
        h = (i * np.uint64(2654435761) + np.uint64(0x9E3779B9)) & np.uint64(0xFFFFFFFF)
        h ^= h >> np.uint64(16)
        h = (h * np.uint64(0x85EBCA6B)) & np.uint64(0xFFFFFFFF)
        h ^= h >> np.uint64(13)
        x = (h >> np.uint64(8)).astype(np.float32) / np.float32(8388608.0) - np.float32(1.0)
        self.h_in = torch.from_numpy(x.reshape(chunks, chunk_elements)).pin_memory()
        self.h_out = torch.empty(self.h_in.shape, dtype=torch.float32, pin_memory=True)
        self.d_in = torch.empty(self.h_in.shape, device="cuda")
        self.d_out = [None] * chunks  # each chunk's result, allocated on the stream that computes it

    def copy_in(self, c):
        self.d_in[c].copy_(self.h_in[c], non_blocking=True)  # cudaMemcpyAsync H2D on the current stream

    def compute_chunk(self, c):
        self.d_out[c] = self.compute(self.d_in[c], self.iterations)

    def copy_out(self, c):
        self.h_out[c].copy_(self.d_out[c], non_blocking=True)  # cudaMemcpyAsync D2H, pinned: no host wait

    def poison(self):
        self.d_in.fill_(float("nan"))
        self.h_out.fill_(float("nan"))
        torch.cuda.synchronize()


def time_on_stream(stream, warmup, repeats, work):
    """Like workbook::time_on_stream: an event pair per repeat on `stream`; {"median", "min", "max", "runs"}."""
    for _ in range(warmup):
        work()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for start, stop in zip(starts, stops):
        start.record(stream)
        work()
        stop.record(stream)
    stops[-1].synchronize()
    return timing([a.elapsed_time(b) for a, b in zip(starts, stops)])


def enqueue_serial(b, stream):
    with torch.cuda.stream(stream):
        for c in range(b.chunks):
            b.copy_in(c)
        for c in range(b.chunks):
            b.compute_chunk(c)
        for c in range(b.chunks):
            b.copy_out(c)


def enqueue_multi_stream(b, streams):
    """Chunk c on stream c % K; fork from and join back into streams[0] with wait_stream."""
    origin = streams[0]
    for s in streams[1:]:
        s.wait_stream(origin)
    for c in range(b.chunks):
        with torch.cuda.stream(streams[c % len(streams)]):
            b.copy_in(c)
            b.compute_chunk(c)
            b.copy_out(c)
    for s in streams[1:]:
        origin.wait_stream(s)


def enqueue_two_stream(b, transfer, compute, copied, wait=True, chunks=None, delay_cycles=0):
    """The article's pattern: copies on `transfer`, an event per chunk, `compute.wait_event`."""
    transfer.wait_stream(compute)
    for c in range(chunks or b.chunks):
        with torch.cuda.stream(transfer):
            if delay_cycles:
                torch.cuda._sleep(delay_cycles)  # a late producer, to make a missing wait show
            b.copy_in(c)
            copied[c].record()  # on the current stream: transfer
        with torch.cuda.stream(compute):
            if wait:
                compute.wait_event(copied[c])  # the GPU waits; this Python thread does not
            b.compute_chunk(c)
            b.copy_out(c)
    compute.wait_stream(transfer)


def copy_engine_count(device):
    try:
        from cuda.bindings import runtime
        err, value = runtime.cudaDeviceGetAttribute(runtime.cudaDeviceAttr.cudaDevAttrAsyncEngineCount, device)
        return int(value) if int(err) == 0 else None
    except Exception:  # noqa: BLE001 - cuda-python is optional
        return None


def reference(b, h_out, sample):
    """fmaf emulated in float64 (the product of two floats is exact there), rounded to float32."""
    x = b.h_in.reshape(-1).numpy()[sample].astype(np.float64)
    y = x.astype(np.float32)
    for _ in range(b.iterations):
        y = (y.astype(np.float64) * np.float64(DECAY) + x).astype(np.float32)
    got = h_out.reshape(-1).numpy()[sample].astype(np.float64)
    err = np.abs(got - y)
    bad = ~(err <= 1e-6 + 1e-5 * np.abs(y))  # NaN is bad too
    worst = float(np.nanmax(err)) if not np.isnan(err).any() else float("inf")
    return int(bad.sum()), worst


class Run:
    """One run: the options, the batch and its streams, the report `out` and the failures, step by step."""

    def __init__(self, a):
        self.a = a
        self.warmup = 1 if a.quick else 3
        self.log = report_stream(a.json)
        self.out = {"program": "pytorch_streams", "device": torch.cuda.get_device_name(a.device), "quick": a.quick,
                    "streams": a.streams, "repeats": a.repeats}
        engines = copy_engine_count(a.device)
        self.out["async_engine_count"] = engines
        self.per_direction = engines is None or engines >= 2
        compute, backend = make_compute()
        self.out["compute_backend"] = backend
        self.failures = []
        print(f"device {a.device}: {self.out['device']}, {engines} copy engine(s); compute stage via {backend}",
              file=self.log)
        self.b = Batch(a.chunks, a.chunk_elements, a.iterations or 64, compute)
        self.n = a.chunks * a.chunk_elements
        self.total_bytes = 4.0 * self.n
        self.main_stream = torch.cuda.Stream()
        self.other = torch.cuda.Stream()
        self.short_ms = 0.2 if a.quick else 2.0  # steps 5 and 6: the short job, and the kernels' length

    def timed(self, stream, work):
        return time_on_stream(stream, self.warmup, self.a.repeats, work)

    def stage(self, fn):
        """One stage (copy in, compute or copy out) of every chunk, in order on main_stream, timed."""
        def work():
            with torch.cuda.stream(self.main_stream):
                for c in range(self.b.chunks):
                    fn(c)
        return self.timed(self.main_stream, work)

    def both_ways(self):
        """Every H2D on main_stream and every D2H on `other`, at once: the link's two-way floor."""
        b, main_stream, other = self.b, self.main_stream, self.other
        other.wait_stream(main_stream)
        with torch.cuda.stream(main_stream):
            for c in range(b.chunks):
                b.copy_in(c)
        with torch.cuda.stream(other):
            for c in range(b.chunks):
                b.copy_out(c)
        main_stream.wait_stream(other)

    def calibrate(self):
        """Compute as long as both copies at once (the copies' floor), as the C++ program does."""
        b = self.b
        enqueue_serial(b, self.main_stream)
        copies_in, copies_out = self.stage(b.copy_in), self.stage(b.copy_out)
        copies_both = self.timed(self.main_stream, self.both_ways)
        t_in, t_out, t_both = copies_in["median"], copies_out["median"], copies_both["median"]
        times = {}
        for it in (64, 2048):
            b.iterations = it
            times[it] = self.stage(b.compute_chunk)["median"]
        slope = (times[2048] - times[64]) / (2048 - 64)

        def iterations_for(target_ms):
            return int(min(max(64 + (target_ms - times[64]) / slope, 1), 1e6)) if slope > 0 else 2048
        b.iterations = iterations_for(max(t_both, t_in, t_out))  # overlap_bound.h copy_floor_ms
        return {"target": "both copies at once", "target_ms": max(t_both, t_in, t_out), "h2d_ms": copies_in,
                "d2h_ms": copies_out, "copies_together_ms": copies_both,
                "iterations_for_slower_copy": iterations_for(max(t_in, t_out))}

    def describe_workload(self):
        a, b = self.a, self.b
        calibrated = a.iterations == 0
        calibration = self.calibrate() if calibrated else None
        self.out["workload"] = {"chunks": a.chunks, "chunk_elements": a.chunk_elements,
                                "chunk_bytes": 4 * a.chunk_elements, "total_bytes": self.total_bytes,
                                "iterations": b.iterations, "iterations_calibrated": calibrated}
        if calibration:
            self.out["workload"]["calibration"] = calibration
        print(f"workload: {a.chunks} chunks x {a.chunk_elements} floats, {b.iterations} multiply-adds per element"
              f"{' (calibrated: as long as both copies at once)' if calibrated else ''}", file=self.log)

    # 1. Checks: serial result vs the float64 emulation; every schedule vs serial; the ordering
    # between the article's two streams, with a late producer.
    def check_serial_against_reference(self):
        a, b, n = self.a, self.b, self.n
        print("== 1. every schedule checked before it is timed", file=self.log)
        b.poison()
        enqueue_serial(b, self.main_stream)
        self.main_stream.synchronize()
        self.serial_result = b.h_out.clone()
        sample = np.unique(np.concatenate([np.arange(0, n, max(1, n // 65536)),
                                           np.arange(a.chunks) * a.chunk_elements,
                                           np.arange(1, a.chunks + 1) * a.chunk_elements - 1]))
        mismatches, worst = reference(b, self.serial_result, sample)
        self.out["reference_check"] = {"sampled": int(sample.size), "mismatches": mismatches, "worst_error": worst}
        if mismatches:
            self.failures.append("serial GPU result differs from the float64 reference")
        print(f"check: serial result vs reference on {sample.size} sampled elements: "
              f"{'match' if not mismatches else 'MISMATCH'} (worst |error| {worst:g})", file=self.log)

    def check_multi_stream(self):
        b = self.b
        self.pipelines = {k: [torch.cuda.Stream() for _ in range(k)] for k in self.a.streams}
        self.identical = {}
        for k, streams in self.pipelines.items():
            b.poison()
            enqueue_multi_stream(b, streams)
            streams[0].synchronize()
            self.identical[k] = torch.equal(b.h_out, self.serial_result)
            if not self.identical[k]:
                self.failures.append(f"K={k} streams: result differs from the serial result")

    def enqueue_article(self, **kwargs):
        """The article's two streams, as this run sets them (--drop-wait)."""
        enqueue_two_stream(self.b, self.transfer, self.compute_stream, self.copied, wait=not self.a.drop_wait,
                           **kwargs)

    def check_two_stream(self):
        self.transfer, self.compute_stream = torch.cuda.Stream(), torch.cuda.Stream()
        self.copied = [torch.cuda.Event() for _ in range(self.a.chunks)]
        self.b.poison()
        self.enqueue_article()
        self.compute_stream.synchronize()
        self.two_identical = torch.equal(self.b.h_out, self.serial_result)
        if not self.two_identical:
            self.failures.append("two-stream pattern: result differs from the serial result")

    def check_ordering(self):
        """The article's two streams with a late producer: without wait_event, chunks are read stale."""
        a, b = self.a, self.b
        few = min(a.chunks, 8)
        b.poison()
        self.enqueue_article(chunks=few, delay_cycles=int(a.producer_delay_us / 1000 * self.cpm))
        self.compute_stream.synchronize()
        got, want = b.h_out[:few].reshape(-1), self.serial_result[:few].reshape(-1)
        stale = int((got.view(torch.int32) != want.view(torch.int32)).sum())
        self.out["ordering_check"] = {"waits_dropped": a.drop_wait, "producer_delay_us": a.producer_delay_us,
                                      "checked_elements": int(want.numel()), "stale_elements": stale}
        print(f"ordering check ({'wait_event DROPPED' if a.drop_wait else 'wait_event'}): {stale} of {want.numel()} "
              "elements read before their copy landed", file=self.log)
        if stale:
            self.failures.append(f"{stale} of {want.numel()} elements were read before their copy landed "
                                 "(no wait_event)")

    def check_schedules(self):
        self.check_serial_against_reference()
        self.check_multi_stream()
        self.check_two_stream()
        self.cpm = sleep_cycles_per_ms()  # torch.cuda._sleep spins for GPU clock cycles
        self.check_ordering()
        print(f"check: every schedule gives the serial result bit for bit: "
              f"{'yes' if self.two_identical and all(self.identical.values()) else 'NO'}", file=self.log)

    # 2. The stream is a queue: a long kernel's launch returns at once; reading a result waits for it.
    def show_queue(self):
        kernel_ms_target = 5 if self.a.quick else 20
        launch_us, read_ms, kernel_ms, before_done = [], [], [], True
        result = torch.zeros(1, device="cuda")
        for r in range(6 if not self.a.quick else 3):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            t0 = time.perf_counter()
            torch.cuda._sleep(int(kernel_ms_target * self.cpm))
            t1 = time.perf_counter()
            stop.record()
            running = not stop.query()
            result += 1  # the "tensor" the host wants to print, queued behind the long kernel
            t2 = time.perf_counter()
            value = result.item()  # print(gpu_tensor) does this: a copy, then a wait for the stream
            t3 = time.perf_counter()
            assert value > 0
            if r == 0:
                continue
            before_done = before_done and running
            launch_us.append(1e6 * (t1 - t0))
            read_ms.append(1e3 * (t3 - t2))
            kernel_ms.append(start.elapsed_time(stop))
        self.out["asynchrony"] = {"kernel_ms": timing(kernel_ms), "launch_us": timing(launch_us),
                                  "read_blocked_ms": timing(read_ms), "returned_before_done": before_done}
        print(f"== 2. the stream is a queue: launch returned after {timing(launch_us)['median']:.1f} us (GPU still "
              f"busy: {'yes' if before_done else 'no'}); .item() blocked {timing(read_ms)['median']:.3f} ms "
              f"(kernel {timing(kernel_ms)['median']:.3f} ms)", file=self.log)

    # 3. Each stage alone, and the bounds.
    def time_stages(self):
        b, main_stream = self.b, self.main_stream
        copy_in, comp, copy_out = self.stage(b.copy_in), self.stage(b.compute_chunk), self.stage(b.copy_out)
        together = self.timed(main_stream, self.both_ways)
        serial = self.timed(main_stream, lambda: enqueue_serial(b, main_stream))
        t_in, t_c, t_out, t_both = copy_in["median"], comp["median"], copy_out["median"], together["median"]
        total = t_in + t_c + t_out
        alone_ms = max(t_in, t_c, t_out) if self.per_direction else max(t_in + t_out, t_c)  # overlap_bound.h
        self.textbook = total / alone_ms
        duplex_ms = max(t_c, t_both, t_in, t_out)
        self.bound = total / duplex_ms
        floor_ms = duplex_ms + max(0.0, total - duplex_ms) / self.a.chunks
        self.out["stages"] = {"h2d_ms": copy_in, "compute_ms": comp, "d2h_ms": copy_out,
                              "h2d_gbps": self.total_bytes / t_in / 1e6, "d2h_gbps": self.total_bytes / t_out / 1e6,
                              "compute_gflops": 2.0 * b.iterations * self.n / (t_c * 1e6),
                              "copies_both_directions_ms": together}
        self.serial = self.out["serial_ms"] = serial
        self.out["bound"] = {"copy_engines_per_direction": self.per_direction, "stages_alone_ms": alone_ms,
                             "stages_alone_speedup": self.textbook, "copies_together_ms": duplex_ms,
                             "copies_together_speedup": self.bound, "fill_drain_ms": floor_ms,
                             "fill_drain_speedup": total / floor_ms}
        print(f"== 3. the stages alone: H2D {t_in:.3f} ms, compute {t_c:.3f} ms, D2H {t_out:.3f} ms; both copies at "
              f"once {t_both:.3f} ms; serial {serial['median']:.3f} ms", file=self.log)
        print(f"bound: {self.textbook:.2f}x from the stages alone, {self.bound:.2f}x with both copies at once "
              "(efficiency below)", file=self.log)

    # 4. K streams and the article's two streams, against the bounds.
    def schedule_row(self, name, t, same):
        speedup = self.serial["median"] / t["median"]
        print(f"  {name:<18s} {t['median']:8.3f} ms  {speedup:5.2f}x  {100 * speedup / self.bound:5.1f}%  "
              f"({100 * speedup / self.textbook:5.1f}% of the stages-alone bound)  {'yes' if same else 'NO'}",
              file=self.log)
        return {"time_ms": t, "speedup": speedup, "efficiency": speedup / self.bound,
                "efficiency_stages_alone": speedup / self.textbook, "bit_identical": same}

    def time_schedules(self):
        print(f"== 4. K streams and the article's two streams, each timed {self.a.repeats} runs "
              f"(median ms, vs serial, of bound, of the stages-alone bound, bit-identical):", file=self.log)
        self.out["pipeline"] = []
        for k, streams in self.pipelines.items():
            t = self.timed(streams[0], lambda s=streams: enqueue_multi_stream(self.b, s))
            self.out["pipeline"].append(dict(self.schedule_row(f"K = {k} streams", t, self.identical[k]), streams=k))
        t = self.timed(self.compute_stream, self.enqueue_article)
        self.out["two_stream"] = self.schedule_row("article's 2 streams", t, self.two_identical)

    # 5. What each way of waiting costs the host.
    def time_waits(self):
        short_ms, cpm = self.short_ms, self.cpm
        sa, sb, sc = torch.cuda.Stream(), torch.cuda.Stream(), torch.cuda.Stream()
        a_done = torch.cuda.Event()
        methods = [("torch.cuda.synchronize()", torch.cuda.synchronize), ("stream_a.synchronize()", sa.synchronize),
                   ("a_done.synchronize()", a_done.synchronize),
                   ("stream_c.wait_event(a_done)", lambda: sc.wait_event(a_done))]
        self.out["waits"] = {"short_job_ms": short_ms, "long_job_ms": 4 * short_ms, "methods": []}
        print(f"== 5. waiting for stream A's {short_ms:g} ms job while stream B runs a {4 * short_ms:g} ms one "
              "(host blocked, median):", file=self.log)
        for name, wait in methods:
            us = []
            for r in range(3 if self.a.quick else 6):
                with torch.cuda.stream(sa):
                    torch.cuda._sleep(int(short_ms * cpm))
                    a_done.record()
                with torch.cuda.stream(sb):
                    torch.cuda._sleep(int(4 * short_ms * cpm))
                t0 = time.perf_counter()
                wait()
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                if r:
                    us.append(1e6 * (t1 - t0))
            self.out["waits"]["methods"].append({"call": name, "blocked_us": timing(us)})
            print(f"  {name:<30s} {timing(us)['median']:10.1f} us", file=self.log)

    # 6. The default stream. PyTorch's streams (torch.cuda.Stream()) come from a pool made with
    # cudaStreamNonBlocking, so the legacy default stream does not wait for them, nor they for it:
    # only wait_stream / wait_event orders them. Kernel A on one stream, then B on another; B's
    # start is read as (A's start to B's end) minus B's own length, both from CUDA events.
    def a_then_b(self, first, second, wait, kernel_ms):
        torch.cuda.synchronize()
        a_start, b_end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(first):
            a_start.record()
            torch.cuda._sleep(int(kernel_ms * self.cpm))
        with torch.cuda.stream(second):
            if wait:
                second.wait_stream(first)
            torch.cuda._sleep(int(kernel_ms * self.cpm))
            b_end.record()
        torch.cuda.synchronize()
        after_us = 1e3 * (a_start.elapsed_time(b_end) - kernel_ms)
        return {"waited": after_us >= 0.9e3 * kernel_ms, "b_start_after_a_start_us": timing([after_us])}  # one run

    def show_default_stream(self):
        kernel_ms = 2.5 * self.short_ms
        side, other_side, default = torch.cuda.Stream(), torch.cuda.Stream(), torch.cuda.default_stream()
        cases = [("torch.cuda.Stream(), then the default stream", side, default, False),
                 ("torch.cuda.Stream(), then the default stream after wait_stream", side, default, True),
                 ("the default stream, then torch.cuda.Stream()", default, side, False),
                 ("two torch.cuda.Stream()s", side, other_side, False)]
        self.out["default_stream"] = []
        print(f"== 6. the default stream: two {kernel_ms:g} ms kernels, A then B (B's start from CUDA events):",
              file=self.log)
        for name, first, second, wait in cases:
            row = dict(case=name, **self.a_then_b(first, second, wait, kernel_ms))
            self.out["default_stream"].append(row)
            print(f"  {name:<62s} waited {'yes' if row['waited'] else 'no ':3s} "
                  f"B started {row['b_start_after_a_start_us']['median']:8.0f} us after A", file=self.log)
        if not self.out["default_stream"][1]["waited"]:
            self.failures.append("the default stream did not wait for a side stream after wait_stream")


def main():
    a = parse_args()
    require("torch", "numpy")  # torch first: without it, it is the one to name
    use_cuda_device("pytorch_streams", a.device)
    run = Run(a)
    run.describe_workload()
    run.check_schedules()
    run.show_queue()
    run.time_stages()
    run.time_schedules()
    run.time_waits()
    run.show_default_stream()
    return finish(run.out, run.failures, a.json)


if __name__ == "__main__":
    sys.exit(main())
