#!/usr/bin/env python3
"""pytorch_matmul.py: what device_query_bench measures, through PyTorch: torch.matmul in FP32, TF32 and BF16.

    python3 pytorch_matmul.py                   # sizes 1024, 4096, 8192; y = a x + y on 100M floats
    python3 pytorch_matmul.py --quick           # sizes 256 and 257, 1000003 floats (what the test runs)
    python3 pytorch_matmul.py --json out.json   # the bench's keys and row fields, for a side-by-side

The same cuBLAS calls as the bench: torch.matmul on float32 tensors with TF32 off (fp32), then on
(tf32), then on bfloat16 tensors (bf16, FP32 accumulate); and y.add_(x, alpha=a), one element-wise
kernel. The same checks: 64 sampled outputs of each matmul against float64 on the CPU with the
bench's tolerance (each precision's input and output rounding, scaled by the size of the terms),
every element of y within two roundings. The same timing: CUDA events around each repeat after
warm-up, each row's time_ms {median, min, max, runs}. Exit codes as the C++ programs: 0 PASS, 1 FAIL, 2 bad usage, 77 no GPU.
"""
import math
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workbook_needs import needs, require  # noqa: E402  (imports a package at first use, or names it and stops)
from workbook_cli import Parser, device_index, finish, integer, median_of, report_stream, size, size_list, timing  # noqa: E402  (cli.h's rules)
from torch_cuda import time_on_stream, use_cuda_device  # noqa: E402  (the GPU check; events, as event_timer.h)

torch = needs("torch")

# Relative rounding of each input before it is multiplied, and of C when it is stored (bench_matmul.cu's
# kPrecisions): TF32 keeps 10 mantissa bits (2^-10 allows truncation too), BF16 7, rounded to nearest.
PRECISIONS = {"fp32": (0.0, 0.0), "tf32": (2.0**-10, 0.0), "bf16": (2.0**-8, 2.0**-8)}
TORCH_SETTING = {"fp32": "allow_tf32=False", "tf32": "allow_tf32=True", "bf16": "bfloat16 tensors"}


def allowed_error(precision, n, want, scale):
    """bench_matmul.cu's allowed_error: input rounding and FP32 accumulation grow with the terms' size."""
    u_in, u_out = PRECISIONS[precision]
    return 4.0 * (2.0 * u_in + math.sqrt(n) * 2.0**-22) * scale + 2.0 * u_out * abs(want)


def set_tf32(allowed):
    """torch.backends.cuda.matmul.allow_tf32, or its replacement from PyTorch 2.9 on (one API only:
    mixing the two is refused)."""
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        matmul.fp32_precision = "tf32" if allowed else "ieee"
    else:
        matmul.allow_tf32 = allowed


def timed(work, warmup, repeats):
    """{"median", "min", "max", "runs"} in ms, the bench's time_ms."""
    return timing(time_on_stream(work, warmup, repeats))


def sample_positions(n):
    """The four corners and 60 positions drawn with a fixed seed."""
    pick = random.Random(12345)
    return [(0, 0), (n - 1, n - 1), (0, n - 1), (n - 1, 0)] + [(pick.randrange(n), pick.randrange(n)) for _ in range(60)]


def reference(a, b, at):
    """Each sampled C[i, j] in float64 from the float32 inputs, and the size of its terms."""
    rows = a[[i for i, _ in at]].double().cpu()
    cols = b[:, [j for _, j in at]].double().cpu()
    terms = rows * cols.t()
    return terms.sum(dim=1).tolist(), terms.pow(2).sum(dim=1).sqrt().tolist()


def uniform(shape, generator, device):
    return torch.rand(shape, generator=generator, device=device) * 2 - 1  # [-1, 1), float32


def measure_matmuls(n, args, dev, tensor_cores, rows, failures):
    gen = torch.Generator(device=dev).manual_seed(n)
    a, b = uniform((n, n), gen, dev), uniform((n, n), gen, dev)
    at = sample_positions(n)
    want, scale = reference(a, b, at)
    index_i, index_j = torch.tensor([i for i, _ in at], device=dev), torch.tensor([j for _, j in at], device=dev)
    for precision in PRECISIONS:
        bf16 = precision == "bf16"
        x, y = (a.bfloat16(), b.bfloat16()) if bf16 else (a, b)
        flop, nbytes = 2.0 * n**3, 3.0 * n * n * (2 if bf16 else 4)
        row = dict(operation="matmul", precision=precision, size=f"{n}^3", n=n, flop=flop, bytes=nbytes,
                   flop_per_byte=flop / nbytes, torch=TORCH_SETTING[precision])
        rows.append(row)
        if precision != "fp32" and not tensor_cores:
            row.update(skipped="TF32 and BF16 need tensor cores of compute capability 8.0 or newer",
                       check="skipped")
            continue
        set_tf32(precision == "tf32")
        c = torch.full((n, n), float("nan"), dtype=x.dtype, device=dev)  # an output not written cannot pass
        torch.matmul(x, y, out=c)
        got = c[index_i, index_j].double().cpu().tolist()
        errors = [abs(g - w) if not math.isnan(g) else math.inf for g, w in zip(got, want)]
        ok = all(e <= allowed_error(precision, n, w, s) for e, w, s in zip(errors, want, scale))
        worst = max(e / s for e, s in zip(errors, scale))
        row.update(error_over_scale=worst if math.isfinite(worst) else None, passed=ok, check="ok" if ok else "FAILED")
        if not ok:
            failures.append(f"{precision} matmul of size {n} differs from the reference")
            continue
        row["time_ms"] = timed(lambda: torch.matmul(x, y, out=c), 1 if args.quick else 3, args.repeats)
        ms = row["time_ms"]["median"]
        row.update(tflops=flop / (ms * 1e9), gbps=nbytes / (ms * 1e6))
    set_tf32(False)


def measure_axpy(args, dev, rows, failures):
    n, alpha = args.axpy_elements, 0.5
    gen = torch.Generator(device=dev).manual_seed(1)
    x, y = uniform(n, gen, dev), uniform(n, gen, dev)
    y_before = y.clone()
    y.add_(x, alpha=alpha)
    # One rounding of the product and one of the sum, each at most 2^-24 of what it rounds.
    worst, chunk = 0.0, 1 << 24
    for start in range(0, n, chunk):
        xs, ys, got = (t[start:start + chunk].double().cpu() for t in (x, y_before, y))
        size_of = ys.abs() + (alpha * xs).abs()
        worst = max(worst, float(((got - (ys + alpha * xs)).abs() / (2.0**-23 * size_of).clamp_min(1e-300)).max()))
    ok = worst <= 1.0
    flop, nbytes = 2.0 * n, 12.0 * n
    row = dict(operation="axpy", precision="fp32", size=str(n), n=n, flop=flop, bytes=nbytes, flop_per_byte=flop / nbytes,
               torch="y.add_(x, alpha=a)", passed=ok, check="ok" if ok else "FAILED")
    rows.append(row)
    if not ok:
        failures.append("y.add_(x, alpha=a) differs from the float64 reference by more than two roundings")
        return
    row["time_ms"] = timed(lambda: y.add_(x, alpha=alpha), 1 if args.quick else 3, args.repeats)
    ms = row["time_ms"]["median"]
    row.update(tflops=flop / (ms * 1e9), gbps=nbytes / (ms * 1e6))


def copy_gbps(dev, mib):
    src = torch.ones(mib << 18, device=dev)  # mib MiB of float32
    dst = torch.empty_like(src)
    t = timed(lambda: dst.copy_(src), 2, 10)
    return 2.0 * src.numel() * 4 / (t["median"] * 1e6)  # read + written, as common/copy_ceiling.h


def print_table(rows):
    print(f"  {'operation':9} {'precision':9} {'size':>10} {'FLOP/byte':>9} {'ms':>9} {'min':>9} {'max':>9} {'runs':>4} "
          f"{'TFLOP/s':>8} {'GB/s':>7} {'error/scale':>11}  check")
    for r in rows:
        t = r.get("time_ms")
        print(f"  {r['operation']:9} {r['precision']:9} {r['size']:>10} {r['flop_per_byte']:9.1f} "
              + (f"{t['median']:9.3f} {t['min']:9.3f} {t['max']:9.3f} {t['runs']:4} {r['tflops']:8.2f} {r['gbps']:7.0f} "
                 if t else f"{'':52}")
              + (f"{r['error_over_scale']:11.1e}  " if r.get("error_over_scale") is not None else f"{'':11}  ")
              + (r["check"] if "skipped" not in r else "skipped: " + r["skipped"]))


def main():
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("--device", type=device_index, default=0, help="CUDA device: N, cuda or cuda:N (default 0)")
    p.add_argument("--sizes", type=size_list("--sizes", 1, 32768), default=None, metavar="LIST",
                   help="matrix sizes n, e.g. 1024,4096 (default 1024,4096,8192; --quick: 256,257)")
    p.add_argument("--repeats", type=integer("--repeats"), default=None, help="timed repeats (default 20; --quick: 3)")
    p.add_argument("--axpy-elements", type=size("--axpy-elements"), default=None, metavar="SIZE",
                   help="floats in y = a x + y (default 100M; --quick: 1000003)")
    p.add_argument("--json", nargs="?", const="-", help="write the results as JSON to FILE (stdout: -)")
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats (what the test runs)")
    args = p.parse_args()
    quick = args.quick  # --quick sets smaller defaults; flags given explicitly still win
    args.sizes = args.sizes or ([256, 257] if quick else [1024, 4096, 8192])
    args.repeats = args.repeats if args.repeats is not None else (3 if quick else 20)
    args.axpy_elements = args.axpy_elements if args.axpy_elements is not None else (1_000_003 if quick else 100_000_000)
    p.require_at_least("--repeats", args.repeats, 1)
    p.require_at_least("--axpy-elements", args.axpy_elements, 1)
    p.require_at_most("--axpy-elements", args.axpy_elements, 2_000_000_000)
    require("torch")
    dev = use_cuda_device("pytorch_matmul", args.device)
    sys.stdout = report_stream(args.json)  # keep stdout for the JSON object under --json -
    props = torch.cuda.get_device_properties(dev)
    tensor_cores = props.major >= 8
    print(f"device {args.device}: {props.name} ({props.multi_processor_count} SMs, cc {props.major}.{props.minor}), "
          f"PyTorch {torch.__version__}{' (--quick)' if quick else ''}")
    rows, failures = [], []
    for n in args.sizes:
        measure_matmuls(n, args, dev, tensor_cores, rows, failures)
    measure_axpy(args, dev, rows, failures)
    ceiling = copy_gbps(dev, 64 if quick else 1024)
    print(f"checked against float64 on the CPU, then timed: {median_of(args.repeats, 'repeat', 'repeats')} after warm-up (CUDA events)")
    print_table(rows)
    print(f"  (a device-to-device copy reached {ceiling:.0f} GB/s, read + written)")
    report = {"program": "pytorch_matmul", "device": props.name, "quick": quick, "sizes": args.sizes,
              "repeats": args.repeats, "axpy_elements": args.axpy_elements, "torch_version": torch.__version__,
              "device_properties": {"index": args.device, "compute_capability": f"{props.major}.{props.minor}",
                                    "multiprocessors": props.multi_processor_count},
              "copy_gbps": ceiling, "operations": rows}
    return finish(report, failures, args.json)


if __name__ == "__main__":
    sys.exit(main())
