"""The named values of chapter 01's README.md.in, from results/ (common/readme_figures.py)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
from readme_figures import fixed, percent, significant  # noqa: E402

PRECISIONS = ("fp32", "tf32", "bf16")
# NVIDIA's datasheets (dense tensor rates at tensor_mhz) for the cards the results may come from.
DATASHEETS = {
    "NVIDIA H100 80GB HBM3": {"card": "H100 SXM", "memory_tbs": "3.35", "fp32": 67, "tf32": 495, "bf16": 989, "tensor_mhz": 1830},
    "NVIDIA H200": {"card": "H200 SXM", "memory_tbs": "4.8", "fp32": 67, "tf32": 495, "bf16": 989, "tensor_mhz": 1830},
}


def gib(nbytes):
    return f"{nbytes / 2**30:.2f} GiB" if nbytes else "0 B"


def sci(x):
    return f"{x:.1e}".replace("e-0", "e-")


def matmul(results, precision, n):
    return next(o for o in results["operations"] if o["operation"] == "matmul" and o["precision"] == precision and o["n"] == n)


def axpy(results):
    return next(o for o in results["operations"] if o["operation"] == "axpy")


def share(row):
    return fixed(row["percent_of_peak"], 1) + "%"


def us(row):
    return fixed(row["time_ms"]["median"] * 1000, 0)


def device_values(dev, query, bench):
    """The device's properties and the peaks they imply (step 2), with the datasheet beside them."""
    sheet = DATASHEETS.get(dev["name"])
    steps = {s["step"]: s for s in query["memory_accounting"]["steps"]}
    free0 = steps["start (CUDA context created)"]["driver_free_bytes"]
    sms, lanes, mhz = dev["multiprocessors"], dev["fp32_lanes_per_sm"], dev["sm_clock_mhz"]
    bf16_per_clock = dev["peak_bf16_tensor_tflops"] * 1e12 / (sms * mhz * 1e6)
    return {
        "name": dev["name"], "cc": dev["compute_capability"], "sms": sms, "lanes": lanes, "mhz": mhz,
        "ghz": f"{mhz / 1000:g}", "cuda_cores": dev["cuda_cores"], "fp32_tflops": fixed(dev["peak_fp32_tflops"], 1),
        "bf16_per_clock": f"{bf16_per_clock:.0f}", "tf32_per_clock": f"{bf16_per_clock / 2:.0f}",
        "bf16_times": f"{bf16_per_clock / lanes / 2:.0f}", "tf32_times": f"{bf16_per_clock / lanes / 4:.0f}",
        "bf16_tflops": fixed(dev["peak_bf16_tensor_tflops"], 0), "tf32_tflops": fixed(dev["peak_tf32_tensor_tflops"], 0),
        "memory_mhz": dev["memory_clock_mhz"], "bus_bits": dev["memory_bus_width_bits"],
        "memory_gbps": fixed(dev["peak_memory_bandwidth_gbps"], 0), "copy_engines": dev["async_engine_count"],
        "copy_gbps": fixed(bench["copy_gbps"], 0), "copy_share": percent(bench["copy_gbps"], dev["peak_memory_bandwidth_gbps"]),
        "total": gib(dev["total_global_mem_bytes"]), "free0": gib(free0),
        "context": gib(dev["total_global_mem_bytes"] - free0), "sheet": sheet,
        "host_cpus": query["runtime"].get("host_cpus"),
        "after_malloc": gib(steps["cudaMalloc"]["driver_free_bytes"]), "after_free": gib(steps["cudaFree"]["driver_free_bytes"]),
        "pool_used": gib(steps["pool: cudaFreeAsync"]["pool_used_bytes"]),
        "pool_reserved": gib(steps["pool: cudaFreeAsync"]["pool_reserved_bytes"]),
        "pool_free": gib(steps["pool: cudaFreeAsync"]["driver_free_bytes"]),
    }


def bench_rows(bench, torch):
    """The bench's table, each cell as text, PyTorch's rate beside the bench's."""
    rows = []
    for o in (o for o in bench["operations"] if o["operation"] == "matmul"):
        nvml = {k: "" if o.get(k) is None else fixed(o[k], 0) for k in ("power_w", "temperature_c", "sm_clock_mhz")}
        rows.append({"precision": o["precision"], "n": o["n"], "intensity": f"{o['flop_per_byte']:.0f}",
                     "tflops": fixed(o["tflops"]), "share": share(o), **nvml,
                     "torch": fixed(matmul(torch, o["precision"], o["n"])["tflops"]), "error": sci(o["error_over_scale"])})
    return rows


def roofline_values(bench, torch):
    peaks, a, ta = bench["peaks"], axpy(bench), axpy(torch)
    ridge = {p: peaks[k] * 1e3 / peaks["memory_gbps"]
             for p, k in zip(PRECISIONS, ("fp32_tflops", "tf32_tensor_tflops", "bf16_tensor_tflops"))}
    return {"ridge": {p: f"{v:.0f}" for p, v in ridge.items()}, "peak_fp32": fixed(peaks["fp32_tflops"], 1),
            "peak_memory": fixed(peaks["memory_gbps"], 0), "below": f"{ridge['fp32'] / a['flop_per_byte']:.0f}",
            "axpy_n": f"{a['n'] / 1e6:.0f}M", "axpy_intensity": fixed(a["flop_per_byte"], 2), "axpy_tflops": fixed(a["tflops"]),
            "axpy_gbps": fixed(a["gbps"], 0), "axpy_share": fixed(a["percent_of_peak"], 1) + "%",
            "axpy_core_share": percent(a["tflops"], peaks["fp32_tflops"], 2), "axpy_error": fixed(a["error_over_scale"], 0),
            "torch_axpy_tflops": fixed(ta["tflops"]), "torch_axpy_gbps": fixed(ta["gbps"], 0),
            "axpy_over_copy": min(a["gbps"], ta["gbps"]) > bench["copy_gbps"]}


def matmul_values(bench, torch, dev):
    sizes = sorted(bench["sizes"])
    small, mid, big = sizes[0], sizes[-2], sizes[-1]
    f32, t32, b16 = (matmul(bench, p, big) for p in PRECISIONS)
    sheet = DATASHEETS.get(dev["name"])
    v = {"small": small, "mid": mid, "big": big,
         "tf32_gain": f"{t32['tflops'] / f32['tflops']:.1f}", "bf16_gain": f"{b16['tflops'] / f32['tflops']:.1f}",
         "big_rate": {p: fixed(matmul(bench, p, big)["tflops"]) for p in PRECISIONS},
         "big_share": {p: share(matmul(bench, p, big)) for p in PRECISIONS},
         "mid_share": {p: share(matmul(bench, p, mid)) for p in PRECISIONS},
         "big_error": {p: sci(matmul(bench, p, big)["error_over_scale"]) for p in PRECISIONS},
         "small_us": {p: us(matmul(bench, p, small)) for p in PRECISIONS},
         "small_share": {p: share(matmul(bench, p, small)) for p in PRECISIONS},
         "tiles": (small // 128) ** 2, "sms": dev["multiprocessors"],
         "above_sheet": percent(dev["sm_clock_mhz"] / sheet["tensor_mhz"] - 1) if sheet else None}
    nvml = bench["nvml"]["before"] if bench["nvml"].get("available") else None
    if nvml:
        runs = [o for o in bench["operations"] if o["operation"] == "matmul"]
        low = min(runs, key=lambda o: o["sm_clock_mhz"])
        longest = max((o for o in runs if o["n"] < big), key=lambda o: o["time_ms"]["median"])["time_ms"]
        v["nvml"] = {"before_w": fixed(nvml["power_w"], 0), "before_c": fixed(nvml["temperature_c"], 0),
                     "before_mhz": fixed(nvml["sm_clock_mhz"], 0), "dropped": low["sm_clock_mhz"] < nvml["sm_clock_mhz"],
                     "low_mhz": fixed(low["sm_clock_mhz"], 0), "low_where": f"{low['precision']}, n = {low['n']}",
                     "draw": {p: {"w": fixed(o["power_w"], 0), "c": fixed(o["temperature_c"], 0)}
                              for p, o in zip(PRECISIONS, (f32, t32, b16))},
                     "longest_runs": longest["runs"], "longest_ms": fixed(longest["median"], 3),
                     "longest_total": fixed(longest["runs"] * longest["median"], 0)}
    else:
        v["nvml"] = None
    gaps = {n: max((abs(matmul(torch, p, n)["tflops"] / matmul(bench, p, n)["tflops"] - 1), p) for p in PRECISIONS)
            for n in (mid, big)}
    worst = gaps[big][1]
    torch_share = {p: matmul(torch, p, small)["tflops"] / matmul(bench, p, small)["tflops"] for p in ("tf32", "bf16")}
    v["torch"] = {"mid_gap": percent(gaps[mid][0], digits=2), "big_gap": percent(gaps[big][0], digits=2),
                  "mid_close": gaps[mid][0] < 0.05, "big_close": gaps[big][0] < 0.05, "worst": worst.upper(),
                  "worst_bench": fixed(matmul(bench, worst, big)["tflops"]), "worst_torch": fixed(matmul(torch, worst, big)["tflops"]),
                  "worst_word": "faster" if matmul(torch, worst, big)["tflops"] > matmul(bench, worst, big)["tflops"] else "slower",
                  "small_share": {p: percent(s) for p, s in torch_share.items()}, "host_bound": min(torch_share.values()) < 0.9,
                  "small_us": {p: us(matmul(torch, p, small)) for p in ("tf32", "bf16")}}
    return v


def refusals(r):
    """The two refused requests of benchmark.sh, each as the command and its one line; none from a
    run that made no refusals.txt (a figure whose file is gone is cut)."""
    if not os.path.exists(r.path("refusals.txt")):
        return []
    lines = r.text("refusals.txt")
    found = []
    for i, line in enumerate(lines):
        if line.startswith("$ "):
            found.append({"command": line[2:], "says": lines[i + 1], "exit": lines[i + 2].strip("()")})
    return found


def values(book):
    r = book.results("01_device_query")
    query, bench, torch = r.json("device_query.json"), r.json("device_query_bench.json"), r.json("pytorch_matmul.json")
    dev = query["devices"][0]
    return {"r": r, "init_ms": fixed(query["runtime"]["init_ms"]["median"], 1),
            "timed_first": query["runtime"].get("init_timed_first", False),
            "dev": device_values(dev, query, bench), "rows": bench_rows(bench, torch),
            "roof": roofline_values(bench, torch), "mm": matmul_values(bench, torch, dev),
            "refused": refusals(r), "repeats": bench["repeats"], "significant": significant}
