"""The named values of chapter 04's README.md.in and NOTES.md.in, computed from results/.

Every figure the two pages quote is computed here from the committed files (and, for the two
baselines of other chapters, from 03's and 05's results); the prose is in the templates.
"""
import re
import statistics

from readme_figures import count, faster_or_slower, fixed, percent, ratio, significant, spread

STEPS = ("forward", "loss", "backward", "step")
PIPES = ("pageable", "staged", "ring", "pinned_set", "batched")
KERNELS_PER_EPOCH = 6  # forward, two for the loss, two for the backward pass, the SGD step


def size(points):
    """4000 -> '4K', 1000000 -> '1M' (the flags' spelling)."""
    return f"{points // 10**6}M" if points % 10**6 == 0 else f"{points // 1000}K"


def span(values, digits=1):
    """'3.1-5.5' for a list of numbers, or one value when they round alike."""
    low, high = fixed(min(values), digits), fixed(max(values), digits)
    return low if low == high else f"{low}-{high}"


def sci(x):
    return "0" if x == 0 else f"{x:.1e}"


def vs(time, other, digits=2):
    """time against other: '1.20x slower'."""
    return f"{ratio(max(time, other), min(time, other), digits)} {faster_or_slower(time, other)}"


def by_pipeline(rows):
    """{'pageable': row, ...}: a pipeline's number ('1 pageable') left out."""
    return {row["pipeline"].split()[-1]: row for row in rows}


def timed(text, pattern):
    """A spread {median, min, max, runs} from a line such as '111.4 ms median (min 103.5, max 119.4) over 2 runs'."""
    for line in text:
        m = re.search(pattern, line)
        if m:
            median, low, high, runs = m.groups()
            return {"median": float(median), "min": float(low), "max": float(high), "runs": int(runs)}
    raise ValueError(f"no line matches {pattern!r}")


def values(book):
    r = book.results("04_linear_regression")
    r03 = book.results("03_streams_events")
    r05 = book.results("05_fused_kernels")

    # ------------------------------------------------------------------ part 1: the four versions
    cuda_run = r.json("cuda.json")
    cuda, cpu = cuda_run["result"][0], r.json("cpu.json")["result"][0]
    tgpu, tcpu = r.json("pytorch_cuda.json"), r.json("pytorch_cpu.json")
    epochs, train_points = cuda_run["epochs"], cuda_run["train_points"]
    t_cuda, t_cpu = cuda["training_ms"], cpu["training_ms"]
    t_eager, t_tcpu = tgpu["result"][0]["training_ms"], tcpu["result"][0]["training_ms"]
    t_prof = timed(r.text("pytorch_profile.txt"),
                   r"^training time, \d+ epochs: ([\d.]+) ms median \(min ([\d.]+), max ([\d.]+)\) over (\d+) runs")
    eager05 = next(row for row in r05.json("pytorch_sweep.json")["sweep"]
                   if row["variant"] == "eager" and row["points"] == cuda_run["points"])
    t_eager05 = eager05["training_ms"]

    ref_w, ref_b = (r.number("cuda.txt", r"^reference .*: w (\S+), b (\S+)", g) for g in (1, 2))
    tw, tb = tgpu["result"][0]["w"], tgpu["result"][0]["b"]
    tcw, tcb = tcpu["result"][0]["w"], tcpu["result"][0]["b"]
    losses_differ = [l.split()[1] for l in r.text("cuda.txt")
                     if l.startswith("  epoch") and l not in r.text("pytorch_cuda.txt")]

    # ------------------------------------------------------------------ each step
    steps = {s["step"]: s for s in r.json("cuda_steps.json")["steps"]}
    copy_gbps = r.json("cuda_steps.json")["copy_gbps"]
    tsteps = {s["step"]: s["time_ms"]["median"] for s in tgpu["steps"]}
    tsteps_min = {s["step"]: s["time_ms"]["min"] for s in tgpu["steps"]}
    tstep_max = max(s["time_ms"]["max"] for s in tgpu["steps"] if s["step"] in STEPS)
    tcsteps = {s["step"]: s["time_ms"]["median"] for s in tcpu["steps"]}
    csteps = {s["step"]: s["time_ms"]["median"] for s in r.json("cpu_steps.json")["steps"]}
    step_rows = [{"step": s, "cuda": fixed(1000 * steps[s]["time_ms"]["median"], 1), "eager": fixed(1000 * tsteps[s], 1),
                  "gap": ratio(tsteps[s], steps[s]["time_ms"]["median"], 1), "eager_min": fixed(1000 * tsteps_min[s], 1),
                  "cpu": fixed(1000 * csteps[s], 1),
                  "torch_cpu": fixed(1000 * tcsteps[s], 1)} for s in STEPS]
    gaps = {s: tsteps[s] / steps[s]["time_ms"]["median"] for s in STEPS}
    gb = [steps[s]["gbps"] for s in ("forward", "loss", "backward")]
    setup, tsetup = r.json("cuda_steps.json")["setup"], tgpu["setup"]
    setup_rows = [{"what": s["what"], "pytorch": s["pytorch"], "here": fixed(s["time_ms"]["median"], 4),
                   "there": fixed(t["time_ms"]["median"], 4)} for s, t in zip(setup, tsetup)]
    here, there = [s["time_ms"]["median"] for s in setup], [s["time_ms"]["median"] for s in tsetup]

    # ------------------------------------------------------------------ launches (03's figure beside 04's)
    launches = KERNELS_PER_EPOCH * epochs
    launch03 = r03.json("streams_events.json")["asynchrony"]["launch_us"]

    # ------------------------------------------------------------------ the loss read back every k epochs
    sync = {row["sync_every"]: row for row in r.json("sync_cost.json")["sync_cost"]}
    sync_ms = {k: row["training_ms"]["median"] for k, row in sync.items()}

    # ------------------------------------------------------------------ the profiler
    prof = "\n".join(r.text("pytorch_profile.txt"))
    busy, span_us, ops, per_epoch = (float(x) for x in re.search(
        r"GPU busy ([\d.]+)% of the (\d+) us .*\((\d+) operations, ([\d.]+) per epoch", prof).groups())
    prof_ms = lambda text: float(text[:-2]) / (1000 if text.endswith("us") else 1)  # '1.474ms', '198.5us' -> ms
    gpu_total = prof_ms(re.search(r"^Self CUDA time total: (\S+)", prof, re.M).group(1))
    table = [f for f in (re.split(r"\s{2,}", l.strip()) for l in prof.splitlines()) if len(f) == 11 and f[10].isdigit()]
    addmm = next(f for f in table if f[0] == "aten::addmm")
    top = max((f for f in table if f[2] == "0.000us"), key=lambda f: prof_ms(f[6]))
    tl = [e for e in r.json("pytorch_profile_timeline.json")["traceEvents"] if e.get("ph") == "X"]
    tl_busy, end = 0.0, -1e300
    for a, b in sorted((e["ts"], e["ts"] + e["dur"]) for e in tl if e["tid"] == 1):
        tl_busy, end = tl_busy + max(0.0, b - max(a, end)), max(end, b)
    tl_span = max(e["ts"] + e["dur"] for e in tl) - min(e["ts"] for e in tl)
    prof_epochs = ops / per_epoch

    # ------------------------------------------------------------------ part 2: mini-batches
    mbj = r.json("minibatch.json")
    mb = by_pipeline(mbj["minibatch"])
    mbt = {p: m["epoch_ms"]["median"] for p, m in mb.items()}
    batches = -(-mbj["train_points"] // mbj["batch_size"])
    sweep_j = r.json("batch_sweep.json")
    sweep = {(row["batch_size"], row["pipeline"]): row for row in sweep_j["batch_sweep"]}
    sizes = sorted({b for b, _ in sweep})
    st = lambda b, p: sweep[b, p]["epoch_ms"]["median"]
    small, big = sizes[0], sizes[-1]
    per_batch_us = lambda b, p: 1000 * st(b, p) / -(-train_points // b)
    slowest = [b for b in sizes if max(PIPES, key=lambda p: st(b, p)) == "staged"]
    ring_wins = [b for b in sizes if st(b, "ring") < st(b, "pageable")]
    fill = by_pipeline(r.json("minibatch_fill_threads_4.json")["minibatch"])
    cpu_mb = r.json("minibatch_cpu.json")["minibatch"][0]["epoch_ms"]["median"]
    over_100 = [f"{row['pipeline']} at {size(row['batch_size'])} ({fixed(row['bound_percent'], 1)}%)"
                for row in sweep_j["batch_sweep"] if row["bound_percent"] >= 100.05]
    sweep_rows = [{"batch": size(b), "cells": [f"{fixed(st(b, p), 3)} · {fixed(sweep[b, p]['bound_percent'], 1)} · "
                                               f"{fixed(sweep[b, p]['copy_share'], 1)}" for p in PIPES]} for b in sizes]

    trace = r.json("minibatch_trace.json")["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"].split(":")[0].split()[-1] for e in trace if e.get("name") == "thread_name"}
    traced = lambda pipeline, cat: [e["dur"] for e in trace if e.get("ph") == "X" and e["cat"] == cat
                                    and tracks[e["tid"]] == pipeline]
    copy_us = {p: statistics.median(traced(p, "copy_in")) for p in ("pageable", "ring", "pinned_set")}
    step_us = {p: statistics.median(traced(p, "compute")) for p in ("pageable", "ring", "pinned_set")}
    tr = by_pipeline(r.json("minibatch_trace_summary.json")["trace"]["pipelines"])

    sc = r.json("small_copies.json")
    cell = {(c["size"], c["way"]): c["bound_percent"] for c in sc["small_copies"] if c["check"] == "ok"}
    ways, csizes, cbound = list(dict.fromkeys(w for _, w in cell)), sorted({b for b, _ in cell}), sc["pcie_bound_gbps"]
    extra_us = [1e6 * b / (cbound * 1e9) * (100 / cell[b, "memcpy_async"] - 1) for b in csizes]
    near = max(abs(cell[b, w] - cell[b, "memcpy_async"]) for b in csizes for w in ("graph", "two_streams"))
    copy_rows = [{"size": size(b), "cells": [fixed(cell[b, w], 1) for w in ways]} for b in csizes]

    tm = r.json("pytorch_minibatch.json")
    tmb = {m["pipeline"]: m for m in tm["minibatch"]}
    tms = {p: m["epoch_ms"]["median"] for p, m in tmb.items() if "epoch_ms" in m}
    tbound = r.number("pytorch_minibatch.txt", r"^PCIe bound: .* ([\d.]+) GB/s")
    dl0, dlw = tms["dataloader, 0 workers"], tms[f"dataloader, {tm['num_workers']} workers"]

    # ------------------------------------------------------------------ exercises
    lr04 = r.number("exercise3_lr_0.04_cpu.txt", r"^reference .*: w (\S+), b (\S+)", 1), \
        r.number("exercise3_lr_0.04_cpu.txt", r"^reference .*: w (\S+), b (\S+)", 2)

    eager_files = ((r, "pytorch_cuda.json"), (r, "pytorch_profile.txt"), (r05, "pytorch_sweep.json"))
    return {
        "r": r,
        "book_runs_eager": book.runs_phrase(*eager_files),
        "same_run_cuda_eager": book.same_run((r, "cuda.json"), (r, "pytorch_cuda.json"), (r, "pytorch_profile.txt")),
        "same_run_steps": book.same_run((r, "cuda_steps.json"), (r, "pytorch_cuda.json")),
        "points": count(cuda_run["points"]), "train_points": count(train_points),
        "test_points": count(cuda_run["test_points"]), "epochs": epochs,
        "torch_version": tgpu["torch_version"], "torch_threads": tcpu["cpu_threads"],
        # the four versions and the three eager baselines
        "cuda_ms": spread(t_cuda, digits=3), "cpu_ms": spread(t_cpu, digits=0),
        "eager_ms": spread(t_eager, digits=1), "eager_prof_ms": spread(t_prof, digits=1),
        "eager05_ms": spread(t_eager05, digits=1), "torch_cpu_ms": spread(t_tcpu, digits=0),
        "speedup": ratio(t_eager["median"], t_cuda["median"], 1),
        "speedup_prof": ratio(t_prof["median"], t_cuda["median"], 1),
        "speedup05": ratio(t_eager05["median"], t_cuda["median"], 1),
        "speedup_cpu": ratio(t_cpu["median"], t_cuda["median"], 0),
        "speedup_torch_cpu": ratio(t_tcpu["median"], t_cuda["median"], 0),
        "eager_swing": ratio(t_eager["max"], t_eager["min"], 1),
        "gap_per_read_ms": fixed((t_eager["median"] - t_eager05["median"]) / (epochs // cuda_run["print_every"]), 1),
        "gap_per_read_epochs": fixed((t_eager["median"] - t_eager05["median"]) / (epochs // cuda_run["print_every"])
                                     / (t_eager["median"] / epochs), 1),
        "loss_reads": epochs // cuda_run["print_every"],
        "cuda_epoch_us": fixed(1000 * t_cuda["median"] / epochs, 1),
        "cuda_epoch_events_us": fixed(1000 * steps["total"]["time_ms"]["median"], 1),
        "eager_epoch_us": fixed(1000 * t_eager["median"] / epochs, 1),
        # the answer
        "ref_w": fixed(ref_w, 9),
        "cuda_loss_err": sci(cuda["loss_error"]),
        "all_same_w": fixed(cuda["w"], 9) == fixed(tw, 9) == fixed(cpu["w"], 9) == fixed(ref_w, 9),
        "gpu_b_same": fixed(cuda["b"], 9) == fixed(tb, 9) == fixed(ref_b, 9),
        "cpu_b_err": sci(cpu["b_error"]),
        "torch_cpu_w_err": sci(abs(tcw - ref_w) / ref_w), "torch_cpu_b_err": sci(abs(tcb - ref_b) / ref_b),
        "losses_differ": ", ".join(losses_differ),
        "test_mse_gap": sci(abs(tgpu["result"][0]["test_mse"] - cuda["test_mse"]) / cuda["test_mse"]),
        "diverge_epoch": int(r.number("diverge.txt", r"^diverged at epoch (\d+)")),
        # each step
        "step_rows": step_rows, "eager_step_max_ms": fixed(tstep_max, 1),
        "gap_forward": ratio(gaps["forward"], 1, 0), "gap_loss": ratio(gaps["loss"], 1, 1),
        "gap_backward": ratio(gaps["backward"], 1, 0), "gap_step": ratio(gaps["step"], 1, 0),
        "loss_gap_rank": "smallest" if min(gaps, key=gaps.get) == "loss" else "not the smallest",
        "step_gbps": span(gb, 0), "step_copy_low": percent(min(gb), copy_gbps), "step_copy_high": percent(max(gb), copy_gbps),
        "copy_gbps": fixed(copy_gbps, 0),
        "step_data_us": span([1000 * steps[s]["time_ms"]["median"] for s in ("forward", "loss", "backward")]),
        "sgd_us": fixed(1000 * steps["step"]["time_ms"]["median"], 1),
        "eager_sgd_us": fixed(1000 * tsteps["step"], 1),
        "setup_rows": setup_rows,
        "setup_copy_us": fixed(1000 * here[0], 1), "setup_copy_ratio": ratio(there[0], here[0], 0),
        "setup_data_us": fixed(1000 * here[2], 1), "setup_data_gbps": fixed(40 / here[2], 0),
        "setup_noise_ratio": ratio(here[3], here[2], 0),
        "setup_share": percent(here[0] + here[2], t_cuda["median"], 1),
        "setup_share_torch": percent(there[0] + there[2], t_eager["median"], 1),
        # launches
        "launches": count(launches),
        "per_launch_us": fixed(1000 * t_cuda["median"] / launches, 1),
        "launch03_us": spread(launch03, digits=1),
        # the loss read
        "sync_per_read_us": fixed(sync[1]["extra_us_per_sync"], 2),
        "sync_every_epoch_cost": percent(sync_ms[1] - sync_ms[200], sync_ms[200]),
        "sync_every_10_cost": percent(sync_ms[10] - sync_ms[200], sync_ms[200], 1),
        "sync_none_epoch_us": fixed(sync[200]["us_per_epoch"], 2),
        # the profiler
        "prof_busy": f"{busy:g}%", "prof_ops_per_epoch": f"{per_epoch:g}", "prof_gpu_ms": fixed(gpu_total, 3),
        "prof_epochs": f"{prof_epochs:.0f}", "prof_span_ms": fixed(span_us / 1000, 1),
        "prof_drawn_busy": percent(tl_busy, tl_span, 1),
        "prof_epoch_ms": fixed(span_us / 1000 / prof_epochs, 2), "timed_epoch_ms": fixed(t_prof["median"] / epochs, 2),
        "addmm_share": addmm[7], "top_kernel": re.sub(r"^void ", "", top[0]).split("<")[0], "top_share": top[7],
        "top_call_us": fixed(1000 * prof_ms(top[6]) / int(top[10]), 0),
        "forward_us": fixed(1000 * steps["forward"]["time_ms"]["median"], 1),
        # part 2
        "batch": size(mbj["batch_size"]), "batches": batches,
        "mb": {p: {"ms": fixed(m["epoch_ms"]["median"], 3), "bound": fixed(m["bound_percent"], 1),
                   "busy": fixed(m["copy_share"], 1)} for p, m in mb.items()},
        "mb_ratio": ratio(max(mbt.values()), min(mbt.values()), 1),
        "sweep_bound": fixed(sweep_j["pcie_bound_gbps"], 1), "sweep_rows": sweep_rows, "pipes": PIPES,
        "sizes": [size(b) for b in sizes], "small": size(small), "big": size(big),
        "pinned_set_small": fixed(sweep[small, "pinned_set"]["bound_percent"], 1),
        "pinned_set_big": fixed(sweep[big, "pinned_set"]["bound_percent"], 1),
        "pinned_set_over": sweep[big, "pinned_set"]["bound_percent"] >= 100.05,
        "pinned_set_sweep": ", ".join(f"{fixed(sweep[b, 'pinned_set']['bound_percent'], 1)}% at {size(b)}" for b in sizes),
        "batched_sweep": ", ".join(f"{fixed(sweep[b, 'batched']['bound_percent'], 1)}% at {size(b)}" for b in sizes),
        "over_100": ", ".join(over_100),
        "small_bound_span": span([sweep[small, p]["bound_percent"] for p in PIPES]),
        "small_batched_vs": vs(st(small, "batched"), st(small, "pinned_set")),
        "small_busy_batched": fixed(sweep[small, "batched"]["copy_share"], 1),
        "small_busy_pinned": fixed(sweep[small, "pinned_set"]["copy_share"], 1),
        "small_batch_us": fixed(per_batch_us(small, "batched"), 1), "small_pinned_us": fixed(per_batch_us(small, "pinned_set"), 1),
        "small_bytes_us": fixed(8 * small / 1e3 / sweep_j["pcie_bound_gbps"], 1), "small_kb": count(8 * small // 1000),
        "staged_slowest": "every size" if slowest == sizes else f"{len(slowest)} of the {len(sizes)} sizes",
        "pageable_plateau": span([st(b, "pageable") for b in sizes if b >= 256000], 2),
        "pageable_big_gbps": fixed(8 * train_points / 1e6 / st(big, "pageable"), 1),
        "ring_wins": ", ".join(f"{size(b)} ({vs(st(b, 'ring'), st(b, 'pageable'))})" for b in ring_wins) or "no size",
        "ring_vs_pageable": vs(mbt["ring"], mbt["pageable"]), "ring_min": fixed(mb["ring"]["epoch_ms"]["min"], 2),
        "ring_busy_big": span([sweep[b, "ring"]["copy_share"] for b in (256000, 1000000)], 0),
        "fill_threads": r.json("minibatch_fill_threads_4.json")["fill_threads"],
        "fill_ring_bound": fixed(fill["ring"]["bound_percent"], 1),
        "fill_ring_vs_pinned": ratio(fill["ring"]["epoch_ms"]["median"], fill["pinned_set"]["epoch_ms"]["median"], 1),
        "cpu_mb_ms": fixed(cpu_mb, 2), "cpu_mb_vs_pageable": vs(cpu_mb, mbt["pageable"]),
        "cpu_mb_vs_batched": vs(cpu_mb, mbt["batched"]),
        "big_batched_ms": fixed(st(big, "batched"), 3),
        "big_vs_part1": ratio(st(big, "batched"), sync_ms[200] / epochs, 1),
        "trace_copy_pageable_us": fixed(copy_us["pageable"], 1), "trace_copy_pinned_us": fixed(copy_us["pinned_set"], 1),
        "trace_copy_ring_us": fixed(copy_us["ring"], 1),
        "trace_step_pinned_us": fixed(step_us["pinned_set"], 1), "trace_step_ring_us": fixed(step_us["ring"], 1),
        "trace_idle_staged": fixed(tr["staged"]["idle_percent"], 1),
        "copy_ways": ways, "copy_rows": copy_rows, "copy_bound": fixed(cbound, 1), "copy_mb": sc["copy_pass_bytes"] // 10**6,
        "copy_extra_us": span(extra_us), "copy_256k": fixed(cell[256000, "memcpy_async"], 1), "copy_near": fixed(near, 1),
        "copy_kernel_span": span([cell[b, "kernel"] for b in csizes]),
        "copy_batched_span": span([cell[b, "batched"] for b in csizes]),
        "torch_mb": {p: fixed(t, 1) for p, t in tms.items()}, "torch_mb_workers": fixed(dlw, 1),
        "torch_mb_bound_span": span([tmb[p]["bound_percent"] for p in tms]),
        "torch_mb_batch_ms": span([t / batches for t in tms.values()], 2),
        "cpp_mb_batch_us": span([1000 * t / batches for t in mbt.values()], 0),
        "torch_bound": fixed(tbound, 1), "torch_batch_copy_us": fixed(512 / tbound, 0),
        "pinned_slices_vs": vs(tms["pinned_slices"], tms["pageable"]),
        "pinned_slices_vs_cpp": ratio(tms["pinned_slices"], mbt["pinned_set"], 0),
        "dl0_vs": vs(dl0, tms["pageable"]), "dlw_vs": vs(dlw, dl0), "num_workers": tm["num_workers"],
        "per_sample_s": fixed(tmb["per_sample"]["estimated_epoch_ms"] / 1000, 0),
        # exercises
        "lr04_w": fixed(lr04[0], 9), "lr04_b": fixed(lr04[1], 9),
        "lr05_epoch": int(r.number("exercise3_lr_0.05_cpu.txt", r"^diverged at epoch (\d+)")),
        "noise_loss190": significant(r.number("exercise3_noise_0.5_cuda.txt", r"^  epoch  190  loss (\S+)"), 4),
    }
