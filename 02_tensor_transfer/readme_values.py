"""readme_values.py: every figure of 02_tensor_transfer/README.md and NOTES.md, computed from results/.

The templates (README.md.in, NOTES.md.in) drop these names into their prose; common/readme_render.py
renders them. Each value is a number formatted as text, a short phrase, a flag the template tests,
or a Results object (for r.output and r.link).
"""
from readme_figures import count, faster_or_slower, fixed, percent, ratio

KiB, MiB, GiB = 2**10, 2**20, 2**30
PCIE5_X16_GBPS = 32 * 16 * 128 / 130 / 8  # PCIe 5.0 x16, one direction: 32 GT/s x 16 lanes, 128b/130b coding, in GB/s


def size(n):
    """4096 -> '4 KiB', 268435456 -> '256 MiB'."""
    return f"{n // GiB} GiB" if n >= GiB else f"{n // MiB} MiB" if n >= MiB else f"{n // KiB} KiB"


def med(row, key="time_ms"):
    return row[key]["median"]


def span(values, digits=2):
    """The lowest and highest of some rates: '54.00-55.33'."""
    return f"{fixed(min(values), digits)}-{fixed(max(values), digits)}"


def timing(t, scale=1.0, digits=3):
    """A timing {"median", "min", "max", "runs"} as text, scaled (1e3: ms to us)."""
    return {key: fixed(t[key] * scale, digits) for key in ("median", "min", "max")} | {"runs": str(t["runs"])}


def rate_range(row, digits=2):
    """A copy's rate in GB/s at its median, slowest (min) and fastest (max) repeat."""
    t = row["time_ms"]
    return {"median": fixed(row["bytes"] / t["median"] / 1e6, digits), "min": fixed(row["bytes"] / t["max"] / 1e6, digits),
            "max": fixed(row["bytes"] / t["min"] / 1e6, digits), "runs": str(t["runs"])}


def step(lesson, what, kind):
    """A row of the lesson's step 4."""
    return next(t for t in lesson["transfers"] if t["what"] == what and t["kind"] == kind)


def bw(results, kind, direction, nbytes):
    """A row of a bandwidth sweep (the bench's or PyTorch's)."""
    return next(b for b in results["bandwidth"] if (b["kind"], b["direction"], b["bytes"]) == (kind, direction, nbytes))


def rates(results, kind, direction, low, high):
    """The GB/s of the sizes low..high."""
    return [b["gbps"] for b in results["bandwidth"] if (b["kind"], b["direction"]) == (kind, direction)
            and low <= b["bytes"] <= high]


def largest(bench):
    """The largest copy of the bench's sweep."""
    return max(b["bytes"] for b in bench["bandwidth"])


def values(book):
    r = book.results("02_tensor_transfer")
    lesson = r.json("tensor_transfer.json")
    bench = r.json("tensor_transfer_bench.json")
    torch = r.json("pytorch_transfer.json")
    query = book.results("01_device_query").json("device_query.json")
    v = {"r": r, "gpu": lesson["device"], "copy_mib": str(lesson["copy_mib"]), "random_mib": str(lesson["random_mib"]),
         "spin_ms": f"{lesson['spin_ms']:g}"}
    v |= lesson_copies(lesson, torch)
    v |= random_tensor(lesson, bench, torch)
    v |= the_sweep(bench, torch)
    v |= against_pytorch(bench, torch)
    v |= page_locking(r, bench, torch)
    v |= device_memory(r, torch)
    v |= against_the_article(bench, query)
    v |= exercises(r, bench)
    return v


def lesson_copies(lesson, torch):
    """Step 4 of the lesson: each copy, and the host's time in a non_blocking call behind a busy GPU."""
    ph, pd = step(lesson, "x.to('cuda')", "pageable"), step(lesson, "g.cpu()", "pageable")
    nh, nd = step(lesson, "x.to('cuda')", "pinned"), step(lesson, "g.cpu()", "pinned")
    nb = torch["non_blocking"]
    return {"pg_h2d_call": timing(ph["call_ms"]), "pg_d2h_call": timing(pd["call_ms"]),
            "pin_h2d_call": timing(nh["call_ms"]), "pin_d2h_call": timing(nd["call_ms"]),
            "pg_h2d_copy": timing(ph["time_ms"]), "pg_d2h_copy": timing(pd["time_ms"]),
            "pg_h2d_gbps": fixed(ph["gbps"], 1), "pg_d2h_gbps": fixed(pd["gbps"], 1),
            "pg_share_of_pinned": percent(max(ph["gbps"], pd["gbps"]), nh["gbps"]),
            "pinned_over_pageable": ratio(nh["gbps"], ph["gbps"], 0),
            "call_within": fixed(max(abs(med(row, "call_ms") - lesson["spin_ms"] - med(row)) for row in (ph, pd)), 2),
            "lesson_pinned_returned_early": nh["returned_while_busy"] and nd["returned_while_busy"],
            "lesson_pageable_returned_early": ph["returned_while_busy"] or pd["returned_while_busy"],
            "t_pg_h2d_call": timing(nb["pageable_h2d"]["call_ms"]), "t_pin_h2d_call": timing(nb["pinned_h2d"]["call_ms"]),
            "t_pinned_returned_early": nb["pinned_h2d"]["returned_while_busy"],
            "t_pageable_returned_early": nb["pageable_h2d"]["returned_while_busy"]}


def random_tensor(lesson, bench, torch):
    """Step 2: a random tensor made on the host and copied, or made on the GPU."""
    host, gpu = step(lesson, "torch.randn(n).to('cuda')", "pageable"), step(lesson, "torch.randn(n, device='cuda')", "none")
    rt, trt = bench["random_tensor"], torch["random_tensor"]
    copy, tcopy = bw(bench, "pageable", "h2d", rt["bytes"]), bw(torch, "pageable", "h2d", rt["bytes"])
    top = largest(bench)
    d2d_top = bw(bench, "device", "d2d", top)
    curand = rt["bytes"] / med(rt, "on_gpu_gpu_time_ms") / 1e6  # GB/s written
    ours_gen, torch_gen = med(rt, "host_then_copy_ms") - med(copy), med(trt, "host_then_copy_ms") - med(tcopy)  # no copy
    return {"rand_size": size(rt["bytes"]), "rand_host": timing(host["time_ms"]), "rand_gpu": timing(gpu["time_ms"]),
            "rand_speedup": ratio(med(host), med(gpu), 0),
            "bench_rand_host": timing(rt["host_then_copy_ms"]), "bench_rand_speedup": ratio(rt["speedup"], 1, 0),
            "rand_copy_ms": fixed(med(copy)), "rand_copy_share": percent(med(copy), med(rt, "host_then_copy_ms")),
            "curand_gbps": fixed(curand, 0), "top_size": size(top), "curand_vs_d2d": ratio(curand, d2d_top["gbps"]),
            "t_rand_host": timing(trt["host_then_copy_ms"]), "t_rand_speedup": ratio(trt["speedup"], 1, 0),
            "gen_ours_ms": fixed(ours_gen, 0), "gen_torch_ms": fixed(torch_gen, 0),
            "gen_ratio": ratio(max(ours_gen, torch_gen), min(ours_gen, torch_gen), 1),
            "gen_torch_word": faster_or_slower(torch_gen, ours_gen),
            "torch_gen_explains": torch_gen < ours_gen and trt["speedup"] < rt["speedup"],
            "target_met": med(host) >= 10 * med(gpu), "target_far": med(host) >= 100 * med(gpu)}


def the_sweep(bench, torch):
    """The bench's sweep: pinned and registered at the link's speed, pageable well below it."""
    h = bench["headline"]
    big = [b["gbps"] for b in bench["bandwidth"] if b["kind"] in ("pinned", "registered") and b["bytes"] >= 16 * MiB]
    best = max(h["best_h2d_gbps"], h["best_d2h_gbps"])
    fixed_us = med(bw(bench, "pinned", "h2d", 4 * KiB)) * 1e3
    top = largest(bench)
    return {"link_span": span(big), "link_gbps": fixed(PCIE5_X16_GBPS, 0),
            "link_low": percent(min(big), PCIE5_X16_GBPS), "link_high": percent(max(big), PCIE5_X16_GBPS),
            "pin_h2d_256": fixed(h["pinned_h2d_256mib_gbps"]), "reg_vs_pin": percent(registered_vs_pinned(bench), digits=1),
            "fixed_us": fixed(fixed_us, 1), "best_1": fixed(best, 1), "half_peak_kb": fixed(fixed_us * best, 0),
            "reg_256k": fixed(bw(bench, "registered", "h2d", 256 * KiB)["gbps"]),
            "reg_512k": fixed(bw(bench, "registered", "h2d", 512 * KiB)["gbps"]), "small_dips": ", ".join(small_dips(bench)),
            "half_between": bw(bench, "registered", "h2d", 256 * KiB)["gbps"] < best / 2
            < bw(bench, "registered", "h2d", 512 * KiB)["gbps"],
            "pg_h2d_mid": span(rates(bench, "pageable", "h2d", 256 * KiB, 32 * MiB)),
            "pg_h2d_big": span(rates(bench, "pageable", "h2d", 64 * MiB, top)),
            "pg_d2h_big": span(rates(bench, "pageable", "d2h", 32 * MiB, top)),
            "t_pg_top": rate_range(bw(torch, "pageable", "h2d", top)), "pg_top": fixed(bw(bench, "pageable", "h2d", top)["gbps"])}


def registered_vs_pinned(bench):
    """The widest gap between registered and pinned memory's rates, from 8 MiB up, as a fraction."""
    sizes_8m = {b["bytes"] for b in bench["bandwidth"] if b["bytes"] >= 8 * MiB}
    return max(abs(bw(bench, "registered", d, n)["gbps"] / bw(bench, "pinned", d, n)["gbps"] - 1)
               for d in ("h2d", "d2h") for n in sizes_8m)


def small_dips(bench):
    """The pinned copies up to 1 MiB slower than the size below them: ['H2D 8 KiB', ...]."""
    small = {d: sorted((x for x in bench["bandwidth"] if (x["kind"], x["direction"]) == ("pinned", d) and x["bytes"] <= MiB),
                       key=lambda x: x["bytes"]) for d in ("h2d", "d2h")}
    return [f"{d.upper()} {size(b['bytes'])}" for d, rows in small.items()
            for a, b in zip(rows, rows[1:]) if b["gbps"] < a["gbps"]]


def against_pytorch(bench, torch):
    """Against PyTorch: the same call at the link's limit; the cost of each call for small copies."""
    ours256 = {d: bw(bench, "pinned", d, 256 * MiB) for d in ("h2d", "d2h")}
    torch256 = {d: bw(torch, "pinned", d, 256 * MiB) for d in ("h2d", "d2h")}
    gap, gap_size = max((abs(bw(torch, "pinned", "h2d", n)["gbps"] / bw(bench, "pinned", "h2d", n)["gbps"] - 1), n)
                        for n in (2 * MiB, 4 * MiB, 8 * MiB, 16 * MiB))
    o4k, t4k = bw(bench, "pinned", "h2d", 4 * KiB), bw(torch, "pinned", "h2d", 4 * KiB)
    return {"ours_h2d_256": rate_range(ours256["h2d"]), "ours_d2h_256": rate_range(ours256["d2h"]),
            "torch_h2d_256": rate_range(torch256["h2d"]), "torch_d2h_256": rate_range(torch256["d2h"]),
            "ours_above_torch": any(ours256[d]["gbps"] > torch256[d]["gbps"] for d in ("h2d", "d2h")),
            "mid_gap": percent(gap, digits=1), "mid_size": size(gap_size),
            "t4k": timing(t4k["time_ms"], 1e3, 1), "o4k": timing(o4k["time_ms"], 1e3, 1), "t4k_slower": med(t4k) > med(o4k)}


def page_locking(r, bench, torch):
    """The cost of page-locking."""
    pin, tpin = bench["pinning"], torch["pinning"]
    n256 = pin["bytes"]
    pageable, registered = med(bw(bench, "pageable", "h2d", n256)), med(bw(bench, "registered", "h2d", n256))
    register_ms = (pin["host_register_ms_per_gib"] + pin["host_unregister_release_ms_per_gib"]) * n256 / GiB
    return {"pin_bytes": size(n256), "malloc_touch": fixed(pin["malloc_touch_ms_per_gib"], 1),
            "malloc_host": fixed(pin["malloc_host_ms_per_gib"], 1),
            "free_host": fixed(pin["free_host_release_ms_per_gib"], 1), "free": fixed(pin["free_release_ms_per_gib"], 1),
            "pinned_alloc_cheaper": pin["malloc_host_ms_per_gib"] + pin["free_host_release_ms_per_gib"]
            < pin["malloc_touch_ms_per_gib"] + pin["free_release_ms_per_gib"],
            "even_malloc_host": str(pin["break_even_copies_malloc_host"]),
            "even_register": str(pin["break_even_copies_host_register"]),
            "host_register": fixed(pin["host_register_ms_per_gib"], 1),
            "host_unregister": fixed(pin["host_unregister_release_ms_per_gib"], 1),
            "register_ms": fixed(register_ms, 0), "saved_ms": fixed(pageable - registered),
            "pg_copy_256": fixed(pageable), "reg_copy_256": fixed(registered),
            "t_pin_first": fixed(r.number("pytorch_transfer.txt", r"first call ([0-9.]+)"), 1),
            "t_pin_later": fixed(tpin["malloc_host_ms_per_gib"], 1),
            "t_touch": fixed(tpin["malloc_touch_ms_per_gib"], 1),
            "t_touch_faster": tpin["malloc_touch_ms_per_gib"] < pin["malloc_touch_ms_per_gib"]}


def device_memory(r, torch):
    """Device memory, as the driver and as PyTorch's caching allocator see it."""
    total = r.number("tensor_transfer.txt", r"total ([\d.]+) GiB")
    free = r.number("tensor_transfer.txt", r"free ([\d.]+) GiB before")
    mem = torch["memory"]
    return {"mem_total": fixed(total), "mem_free": fixed(free), "mem_held": fixed(total - free),
            "mem_fell": fixed(r.number("tensor_transfer.txt", r"free fell by ([0-9.]+) MiB"), 1),
            "t_buffer": size(mem["requested_bytes"] // 2), "t_allocated": count(mem["memory_allocated_bytes"] // MiB),
            "t_reserved": count(mem["memory_reserved_bytes"] // MiB),
            "t_kept": fixed((mem["free_before_bytes"] - mem["free_after_free_bytes"]) / GiB)}


def against_the_article(bench, query):
    """What the article gets wrong: the GPU's own memory against the link."""
    peak = query["devices"][0]["peak_memory_bandwidth_gbps"]
    d2d_top = bw(bench, "device", "d2d", largest(bench))
    return {"peak_gbps": fixed(peak, 0), "peak_vs_link": ratio(peak, bench["headline"]["pinned_h2d_256mib_gbps"], 0),
            "d2d_top_gbps": fixed(d2d_top["gbps"], 1), "d2d_traffic": fixed(2 * d2d_top["gbps"], 0),
            "d2d_traffic_share": percent(2 * d2d_top["gbps"], peak)}


def exercises(r, bench):
    """The exercises."""
    attempt, lesson_us, driver_us = (r.number("exercises.txt", p) for p in (
        r"copy_pageable_staged.*\(([\d.]+) us against", r"copy_pageable_staged.*us against ([\d.]+) us",
        r"cudaMemcpy from the same pageable memory: ([\d.]+) us"))
    one, many = bw(bench, "pinned", "h2d", MiB), bw(bench, "pinned", "h2d", 4 * KiB)
    return {"staged_gbps": fixed(64 * MiB / lesson_us / 1e3, 1), "driver_gbps": fixed(64 * MiB / driver_us / 1e3, 1),
            "driver_us": fixed(driver_us, 0), "staged_us": fixed(lesson_us, 0), "attempt_us": fixed(attempt, 0),
            "attempt_apart": percent(abs(attempt - lesson_us), lesson_us),
            "staged_share": percent(64 * MiB / min(driver_us, lesson_us, attempt) / 1e3,
                                    bench["headline"]["pinned_h2d_256mib_gbps"]),
            "small_us": fixed(med(many) * 1e3, 1), "small_total_ms": fixed(256 * med(many), 2),
            "one_mib_us": fixed(med(one) * 1e3, 1), "one_mib_gbps": fixed(one["gbps"]),
            "batch_gain": ratio(256 * med(many), med(one), 0)}
