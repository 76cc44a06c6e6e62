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


def training(run):
    """The training time {median, min, max, runs} of a run's first result."""
    return run["result"][0]["training_ms"]


def profiled(r):
    """The eager loop's training time as the profiling run timed it."""
    return timed(r.text("pytorch_profile.txt"),
                 r"^training time, \d+ epochs: ([\d.]+) ms median \(min ([\d.]+), max ([\d.]+)\) over (\d+) runs")


def step_times(run):
    """{step: median ms} of a run's per-step table."""
    return {s["step"]: s["time_ms"]["median"] for s in run["steps"]}


def values(book):
    r = book.results("04_linear_regression")
    r03 = book.results("03_streams_events")
    r05 = book.results("05_fused_kernels")
    cuda_run, cpu_run = r.json("cuda.json"), r.json("cpu.json")
    tgpu, tcpu = r.json("pytorch_cuda.json"), r.json("pytorch_cpu.json")
    v = {"r": r, "points": count(cuda_run["points"]), "train_points": count(cuda_run["train_points"]),
         "test_points": count(cuda_run["test_points"]), "epochs": cuda_run["epochs"],
         "torch_version": tgpu["torch_version"], "torch_threads": tcpu["cpu_threads"]}
    v |= four_versions(r, r05, cuda_run, cpu_run, tgpu, tcpu)
    v |= the_answer(r, cuda_run, cpu_run, tgpu, tcpu)
    v |= each_step(r, cuda_run, tgpu, tcpu)
    v |= launches(r03, cuda_run)
    v |= loss_reads(r)
    v |= the_profiler(r, cuda_run)
    v |= eager_gpu_work(r, cuda_run, tgpu)
    v |= reader_figures(r, cuda_run, cpu_run, tcpu)
    v |= minibatches(r)
    v |= batch_sweep(r)
    v |= sweep_ends(r, cuda_run)
    v |= fill_threads(r)
    v |= cpu_minibatch(r)
    v |= minibatch_trace(r)
    v |= small_copies(r)
    v |= pytorch_minibatches(r)
    v |= other_flags(r)
    v |= run_claims(book, r, r05)
    return v


# ------------------------------------------------------------------ part 1: the four versions
def four_versions(r, r05, cuda_run, cpu_run, tgpu, tcpu):
    """The four versions and the three eager baselines."""
    epochs = cuda_run["epochs"]
    t_cuda, t_cpu, t_eager, t_tcpu = training(cuda_run), training(cpu_run), training(tgpu), training(tcpu)
    t_prof = profiled(r)
    eager05 = next(row for row in r05.json("pytorch_sweep.json")["sweep"]
                   if row["variant"] == "eager" and row["points"] == cuda_run["points"])
    t_eager05 = eager05["training_ms"]
    loss_reads = epochs // cuda_run["print_every"]
    return {"cuda_ms": spread(t_cuda, digits=3), "cpu_ms": spread(t_cpu, digits=0),
            "eager_ms": spread(t_eager, digits=1), "eager_prof_ms": spread(t_prof, digits=1),
            "eager05_ms": spread(t_eager05, digits=1), "torch_cpu_ms": spread(t_tcpu, digits=0),
            "speedup": ratio(t_eager["median"], t_cuda["median"], 1),
            "speedup_prof": ratio(t_prof["median"], t_cuda["median"], 1),
            "speedup05": ratio(t_eager05["median"], t_cuda["median"], 1),
            "speedup_cpu": ratio(t_cpu["median"], t_cuda["median"], 0),
            "speedup_torch_cpu": ratio(t_tcpu["median"], t_cuda["median"], 0),
            "eager_swing": ratio(t_eager["max"], t_eager["min"], 1),
            "gap_per_read_ms": fixed((t_eager["median"] - t_eager05["median"]) / loss_reads, 1),
            "gap_per_read_epochs": fixed((t_eager["median"] - t_eager05["median"]) / loss_reads
                                         / (t_eager["median"] / epochs), 1),
            "loss_reads": loss_reads,
            "cuda_epoch_us": fixed(1000 * t_cuda["median"] / epochs, 1),
            "eager_epoch_us": fixed(1000 * t_eager["median"] / epochs, 1)}


def the_answer(r, cuda_run, cpu_run, tgpu, tcpu):
    """The answer: w and b of each version against the float64 reference, and the losses printed."""
    cuda, cpu = cuda_run["result"][0], cpu_run["result"][0]
    ref_w, ref_b = (r.number("cuda.txt", r"^reference .*: w (\S+), b (\S+)", g) for g in (1, 2))
    tw, tb = tgpu["result"][0]["w"], tgpu["result"][0]["b"]
    tcw, tcb = tcpu["result"][0]["w"], tcpu["result"][0]["b"]
    losses_differ = [l.split()[1] for l in r.text("cuda.txt")
                     if l.startswith("  epoch") and l not in r.text("pytorch_cuda.txt")]
    return {"ref_w": fixed(ref_w, 9),
            "cuda_loss_err": sci(cuda["loss_error"]),
            "all_same_w": fixed(cuda["w"], 9) == fixed(tw, 9) == fixed(cpu["w"], 9) == fixed(ref_w, 9),
            "gpu_b_same": fixed(cuda["b"], 9) == fixed(tb, 9) == fixed(ref_b, 9),
            "cpu_b_err": sci(cpu["b_error"]),
            "torch_cpu_w_err": sci(abs(tcw - ref_w) / ref_w), "torch_cpu_b_err": sci(abs(tcb - ref_b) / ref_b),
            "losses_differ": ", ".join(losses_differ),
            "test_mse_gap": sci(abs(tgpu["result"][0]["test_mse"] - cuda["test_mse"]) / cuda["test_mse"])}


def each_step(r, cuda_run, tgpu, tcpu):
    """Each step of an epoch, here and in eager PyTorch (on the GPU and the CPU)."""
    steps = {s["step"]: s for s in r.json("cuda_steps.json")["steps"]}
    copy_gbps = r.json("cuda_steps.json")["copy_gbps"]
    tsteps = step_times(tgpu)
    gaps = {s: tsteps[s] / steps[s]["time_ms"]["median"] for s in STEPS}
    gb = [steps[s]["gbps"] for s in ("forward", "loss", "backward")]
    return {"cuda_epoch_events_us": fixed(1000 * steps["total"]["time_ms"]["median"], 1),
            "step_rows": step_rows(steps, tgpu, tcpu, step_times(r.json("cpu_steps.json"))),
            "eager_step_max_ms": fixed(max(s["time_ms"]["max"] for s in tgpu["steps"] if s["step"] in STEPS), 1),
            "gap_forward": ratio(gaps["forward"], 1, 0), "gap_loss": ratio(gaps["loss"], 1, 1),
            "gap_backward": ratio(gaps["backward"], 1, 0), "gap_step": ratio(gaps["step"], 1, 0),
            "loss_gap_rank": "smallest" if min(gaps, key=gaps.get) == "loss" else "not the smallest",
            "step_gbps": span(gb, 0), "step_copy_low": percent(min(gb), copy_gbps), "step_copy_high": percent(max(gb), copy_gbps),
            "copy_gbps": fixed(copy_gbps, 0),
            "step_data_us": span([1000 * steps[s]["time_ms"]["median"] for s in ("forward", "loss", "backward")]),
            "sgd_us": fixed(1000 * steps["step"]["time_ms"]["median"], 1),
            "eager_sgd_us": fixed(1000 * tsteps["step"], 1),
            "eager_epoch_events_us": fixed(1000 * tsteps["total"], 1)} | setup(r, cuda_run, tgpu)


def step_rows(steps, tgpu, tcpu, csteps):
    """The table of each step's time: CUDA, eager PyTorch (median and fastest), the CPU loop, PyTorch on the CPU."""
    tsteps, tcsteps = step_times(tgpu), step_times(tcpu)
    tsteps_min = {s["step"]: s["time_ms"]["min"] for s in tgpu["steps"]}
    return [{"step": s, "cuda": fixed(1000 * steps[s]["time_ms"]["median"], 1), "eager": fixed(1000 * tsteps[s], 1),
             "gap": ratio(tsteps[s], steps[s]["time_ms"]["median"], 1), "eager_min": fixed(1000 * tsteps_min[s], 1),
             "cpu": fixed(1000 * csteps[s], 1),
             "torch_cpu": fixed(1000 * tcsteps[s], 1)} for s in STEPS]


def setup(r, cuda_run, tgpu):
    """The set-up before the loop (copies, data, noise), here and in PyTorch."""
    setup, tsetup = r.json("cuda_steps.json")["setup"], tgpu["setup"]
    setup_rows = [{"what": s["what"], "pytorch": s["pytorch"], "here": fixed(s["time_ms"]["median"], 4),
                   "there": fixed(t["time_ms"]["median"], 4)} for s, t in zip(setup, tsetup)]
    here, there = [s["time_ms"]["median"] for s in setup], [s["time_ms"]["median"] for s in tsetup]
    data_mb = r.json("cuda_steps.json")["points"] * 2 * 4 / 1e6  # x and y, one float each per point
    return {"setup_rows": setup_rows, "setup_data_mb": fixed(data_mb, 0),
            "setup_copy_us": fixed(1000 * here[0], 1), "setup_copy_ratio": ratio(there[0], here[0], 0),
            "setup_data_us": fixed(1000 * here[2], 1), "setup_data_gbps": fixed(data_mb / here[2], 0),
            "setup_noise_ratio": ratio(here[3], here[2], 0),
            "setup_share": percent(here[0] + here[2], training(cuda_run)["median"], 1),
            "setup_share_torch": percent(there[0] + there[2], training(tgpu)["median"], 1)}


def launches(r03, cuda_run):
    """Launches: 03's figure beside 04's."""
    launches = KERNELS_PER_EPOCH * cuda_run["epochs"]
    launch03 = r03.json("streams_events.json")["asynchrony"]["launch_us"]
    return {"launches": count(launches),
            "per_launch_us": fixed(1000 * training(cuda_run)["median"] / launches, 1),
            "launch03_us": spread(launch03, digits=1)}


def sync_cost(r):
    """{k: the sync_cost row of the run that reads the loss back every k epochs}."""
    return {row["sync_every"]: row for row in r.json("sync_cost.json")["sync_cost"]}


def loss_reads(r):
    """The loss read back every k epochs."""
    sync = sync_cost(r)
    sync_ms = {k: row["training_ms"]["median"] for k, row in sync.items()}
    return {"sync_per_read_us": fixed(sync[1]["extra_us_per_sync"], 2),
            "sync_every_epoch_cost": percent(sync_ms[1] - sync_ms[200], sync_ms[200]),
            "sync_every_10_cost": percent(sync_ms[10] - sync_ms[200], sync_ms[200], 1),
            "sync_none_epoch_us": fixed(sync[200]["us_per_epoch"], 2)}


# ------------------------------------------------------------------ the profiler
def prof_ms(text):
    """'1.474ms', '198.5us' -> ms."""
    return float(text[:-2]) / (1000 if text.endswith("us") else 1)


def the_profiler(r, cuda_run):
    """The profiler's table and its timeline."""
    epochs = cuda_run["epochs"]
    prof = "\n".join(r.text("pytorch_profile.txt"))
    busy, span_us, ops, per_epoch = (float(x) for x in re.search(
        r"GPU busy ([\d.]+)% of the (\d+) us .*\((\d+) operations, ([\d.]+) per epoch", prof).groups())
    gpu_total = prof_ms(re.search(r"^Self CUDA time total: (\S+)", prof, re.M).group(1))
    table = [f for f in (re.split(r"\s{2,}", l.strip()) for l in prof.splitlines()) if len(f) == 11 and f[10].isdigit()]
    addmm = next(f for f in table if f[0] == "aten::addmm")
    top = max((f for f in table if f[2] == "0.000us"), key=lambda f: prof_ms(f[6]))
    prof_epochs = ops / per_epoch
    forward = next(s for s in r.json("cuda_steps.json")["steps"] if s["step"] == "forward")
    return {"prof_busy": f"{busy:g}%", "prof_ops_per_epoch": f"{per_epoch:g}", "prof_gpu_ms": fixed(gpu_total, 3),
            "prof_epochs": f"{prof_epochs:.0f}", "prof_span_ms": fixed(span_us / 1000, 1),
            "prof_drawn_busy": timeline_busy(r),
            "prof_epoch_ms": fixed(span_us / 1000 / prof_epochs, 2), "timed_epoch_ms": fixed(profiled(r)["median"] / epochs, 2),
            "addmm_share": addmm[7], "top_kernel": re.sub(r"^void ", "", top[0]).split("<")[0], "top_share": top[7],
            "top_call_us": fixed(1000 * prof_ms(top[6]) / int(top[10]), 0),
            "forward_us": fixed(1000 * forward["time_ms"]["median"], 1)}


def timeline_busy(r):
    """The share of the drawn timeline's span in which the GPU's track is busy."""
    tl = [e for e in r.json("pytorch_profile_timeline.json")["traceEvents"] if e.get("ph") == "X"]
    tl_busy, end = 0.0, -1e300
    for a, b in sorted((e["ts"], e["ts"] + e["dur"]) for e in tl if e["tid"] == 1):
        tl_busy, end = tl_busy + max(0.0, b - max(a, end)), max(end, b)
    tl_span = max(e["ts"] + e["dur"] for e in tl) - min(e["ts"] for e in tl)
    return percent(tl_busy, tl_span, 1)


def eager_gpu_work(r, cuda_run, tgpu):
    """Eager's GPU operations under the profiler (pytorch_profile.json): how many each epoch runs,
    how many run once, and the GPU time of a median epoch against the two loops' epochs."""
    profiled_epochs = int(r.number("pytorch_profile.txt", r"^torch\.profiler, (\d+) epochs"))
    gpu = sorted((e for e in r.json("pytorch_profile.json")["traceEvents"]
                  if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")), key=lambda e: e["ts"])
    calls = {}
    for e in gpu:
        calls[e["name"]] = calls.get(e["name"], 0) + 1
    steady = sum(n // profiled_epochs for n in calls.values())  # the operations every epoch runs
    # addmm copies the bias into its output first: that copy opens each forward pass (the last, the test loss's)
    starts = [i for i, e in enumerate(gpu) if "direct_copy_kernel" in e["name"]]
    epoch_ms = statistics.median(sum(e["dur"] for e in gpu[a:b]) for a, b in zip(starts, starts[1:])) / 1000
    epochs = cuda_run["epochs"]
    cuda_epoch, eager_epoch = training(cuda_run)["median"] / epochs, training(tgpu)["median"] / epochs
    return {"prof_ops": len(gpu), "prof_ops_steady": steady, "prof_ops_extra": steady - KERNELS_PER_EPOCH,
            "prof_ops_once": len(gpu) - steady * profiled_epochs, "prof_gpu_epoch_us": fixed(1000 * epoch_ms, 0),
            "gap_gpu_work": ratio(epoch_ms, cuda_epoch, 1), "gap_host": ratio(eager_epoch, epoch_ms, 1)}


def reader_figures(r, cuda_run, cpu_run, tcpu):
    """Figures readers asked for: each data step's bytes, PyTorch CPU's backward pass, the bench's
    k = 10 loop, and the CPU versions' worst distance from the reference."""
    steps = {s["step"]: s for s in r.json("cuda_steps.json")["steps"]}
    mb = [steps[s]["gbps"] * steps[s]["time_ms"]["median"] for s in ("forward", "loss", "backward")]  # GB/s x ms = MB
    tc, c = step_times(tcpu), step_times(r.json("cpu_steps.json"))
    sync = sync_cost(r)
    ref_w, ref_b = (r.number("cuda.txt", r"^reference .*: w (\S+), b (\S+)", g) for g in (1, 2))
    cpu, torch_cpu = cpu_run["result"][0], tcpu["result"][0]
    worst = max(cpu["w_error"], cpu["b_error"], abs(torch_cpu["w"] - ref_w) / ref_w, abs(torch_cpu["b"] - ref_b) / ref_b)
    return {"step_mb": f"{mb[0]:.0f}, {mb[1]:.0f} and {mb[2]:.0f}",
            "torch_cpu_backward_share": percent(tc["backward"], sum(tc[s] for s in STEPS)),
            "torch_cpu_backward_vs": ratio(tc["backward"], c["backward"], 0),
            "torch_cpu_vs_cpu": ratio(training(tcpu)["median"], training(cpu_run)["median"], 1),
            "sync_10_ms": fixed(sync[10]["training_ms"]["median"], 3), "sync_runs": sync[10]["training_ms"]["runs"],
            "cpu_worst_err": sci(worst),
            "pinned_set_batch_us": fixed(1000 * minibatch_times(r)["pinned_set"] / batches_per_epoch(r), 1)}


# ------------------------------------------------------------------ part 2: mini-batches
def minibatch_times(r):
    """{pipeline: median epoch ms} of the mini-batch run."""
    return {p: m["epoch_ms"]["median"] for p, m in by_pipeline(r.json("minibatch.json")["minibatch"]).items()}


def batches_per_epoch(r):
    mbj = r.json("minibatch.json")
    return -(-mbj["train_points"] // mbj["batch_size"])


def minibatches(r):
    """The mini-batch run: one epoch through each pipeline."""
    mbj = r.json("minibatch.json")
    mb = by_pipeline(mbj["minibatch"])
    mbt = minibatch_times(r)
    return {"batch": size(mbj["batch_size"]), "batches": batches_per_epoch(r),
            "mb": {p: {"ms": fixed(m["epoch_ms"]["median"], 3), "bound": fixed(m["bound_percent"], 1),
                       "busy": fixed(m["copy_share"], 1)} for p, m in mb.items()},
            "mb_ratio": ratio(max(mbt.values()), min(mbt.values()), 1),
            "ring_vs_pageable": vs(mbt["ring"], mbt["pageable"]), "ring_min": fixed(mb["ring"]["epoch_ms"]["min"], 2)}


def load_sweep(r):
    """The sweep over batch sizes: (its JSON, {(batch size, pipeline): row}, the batch sizes in order)."""
    sweep_j = r.json("batch_sweep.json")
    sweep = {(row["batch_size"], row["pipeline"]): row for row in sweep_j["batch_sweep"]}
    return sweep_j, sweep, sorted({b for b, _ in sweep})


def batch_sweep(r):
    """The sweep's table: each pipeline's time, share of the PCIe bound and copy engine's busy share."""
    sweep_j, sweep, sizes = load_sweep(r)
    st = lambda b, p: sweep[b, p]["epoch_ms"]["median"]
    small, big = sizes[0], sizes[-1]
    over_100 = [f"{row['pipeline']} at {size(row['batch_size'])} ({fixed(row['bound_percent'], 1)}%)"
                for row in sweep_j["batch_sweep"] if row["bound_percent"] >= 100.05]
    sweep_rows = [{"batch": size(b), "cells": [f"{fixed(st(b, p), 3)} · {fixed(sweep[b, p]['bound_percent'], 1)} · "
                                               f"{fixed(sweep[b, p]['copy_share'], 1)}" for p in PIPES]} for b in sizes]
    return {"sweep_bound": fixed(sweep_j["pcie_bound_gbps"], 1), "sweep_rows": sweep_rows, "pipes": PIPES,
            "sizes": [size(b) for b in sizes], "small": size(small), "big": size(big),
            "pinned_set_small": fixed(sweep[small, "pinned_set"]["bound_percent"], 1),
            "pinned_set_big": fixed(sweep[big, "pinned_set"]["bound_percent"], 1),
            "pinned_set_over": sweep[big, "pinned_set"]["bound_percent"] >= 100.05,
            "pinned_set_sweep": ", ".join(f"{fixed(sweep[b, 'pinned_set']['bound_percent'], 1)}% at {size(b)}" for b in sizes),
            "batched_sweep": ", ".join(f"{fixed(sweep[b, 'batched']['bound_percent'], 1)}% at {size(b)}" for b in sizes),
            "over_100": ", ".join(over_100)}


def sweep_ends(r, cuda_run):
    """The sweep's smallest and largest batches, and where each pipeline wins."""
    sweep_j, sweep, sizes = load_sweep(r)
    st = lambda b, p: sweep[b, p]["epoch_ms"]["median"]
    small, big = sizes[0], sizes[-1]
    per_batch_us = lambda b, p: 1000 * st(b, p) / -(-cuda_run["train_points"] // b)
    slowest = [b for b in sizes if max(PIPES, key=lambda p: st(b, p)) == "staged"]
    ring_wins = [b for b in sizes if st(b, "ring") < st(b, "pageable")]
    return {"small_bound_span": span([sweep[small, p]["bound_percent"] for p in PIPES]),
            "small_batched_vs": vs(st(small, "batched"), st(small, "pinned_set")),
            "small_busy_batched": fixed(sweep[small, "batched"]["copy_share"], 1),
            "small_busy_pinned": fixed(sweep[small, "pinned_set"]["copy_share"], 1),
            "small_batch_us": fixed(per_batch_us(small, "batched"), 1),
            "small_pinned_us": fixed(per_batch_us(small, "pinned_set"), 1),
            "small_bytes_us": fixed(8 * small / 1e3 / sweep_j["pcie_bound_gbps"], 1), "small_kb": count(8 * small // 1000),
            "staged_slowest": "every size" if slowest == sizes else f"{len(slowest)} of the {len(sizes)} sizes",
            "pageable_plateau": span([st(b, "pageable") for b in sizes if b >= 256000], 2),
            "pageable_big_gbps": fixed(8 * cuda_run["train_points"] / 1e6 / st(big, "pageable"), 1),
            "ring_wins": ", ".join(f"{size(b)} ({vs(st(b, 'ring'), st(b, 'pageable'))})" for b in ring_wins) or "no size",
            "ring_busy_big": span([sweep[b, "ring"]["copy_share"] for b in (256000, 1000000)], 0),
            "big_batched_ms": fixed(st(big, "batched"), 3),
            "big_vs_part1": ratio(st(big, "batched"), sync_cost(r)[200]["training_ms"]["median"] / cuda_run["epochs"], 1)}


def fill_threads(r):
    """The ring with more threads filling its pinned slots."""
    run = r.json("minibatch_fill_threads_4.json")
    fill = by_pipeline(run["minibatch"])
    return {"fill_threads": run["fill_threads"],
            "fill_ring_bound": fixed(fill["ring"]["bound_percent"], 1),
            "fill_ring_vs_pinned": ratio(fill["ring"]["epoch_ms"]["median"], fill["pinned_set"]["epoch_ms"]["median"], 1)}


def cpu_minibatch(r):
    """The same mini-batches on the CPU."""
    cpu_mb = r.json("minibatch_cpu.json")["minibatch"][0]["epoch_ms"]["median"]
    mbt = minibatch_times(r)
    return {"cpu_mb_ms": fixed(cpu_mb, 2), "cpu_mb_vs_pageable": vs(cpu_mb, mbt["pageable"]),
            "cpu_mb_vs_batched": vs(cpu_mb, mbt["batched"])}


def minibatch_trace(r):
    """The mini-batch trace: each copy's and each step's median duration, the staged pipeline's idle share."""
    trace = r.json("minibatch_trace.json")["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"].split(":")[0].split()[-1] for e in trace if e.get("name") == "thread_name"}
    traced = lambda pipeline, cat: [e["dur"] for e in trace if e.get("ph") == "X" and e["cat"] == cat
                                    and tracks[e["tid"]] == pipeline]
    copy_us = {p: statistics.median(traced(p, "copy_in")) for p in ("pageable", "ring", "pinned_set")}
    step_us = {p: statistics.median(traced(p, "compute")) for p in ("pageable", "ring", "pinned_set")}
    tr = by_pipeline(r.json("minibatch_trace_summary.json")["trace"]["pipelines"])
    return {"trace_copy_pageable_us": fixed(copy_us["pageable"], 1), "trace_copy_pinned_us": fixed(copy_us["pinned_set"], 1),
            "trace_copy_ring_us": fixed(copy_us["ring"], 1),
            "trace_step_pinned_us": fixed(step_us["pinned_set"], 1), "trace_step_ring_us": fixed(step_us["ring"], 1),
            "trace_idle_staged": fixed(tr["staged"]["idle_percent"], 1)}


def small_copies(r):
    """Small copies, each way, as a share of the PCIe bound."""
    sc = r.json("small_copies.json")
    cell = {(c["size"], c["way"]): c["bound_percent"] for c in sc["small_copies"] if c["check"] == "ok"}
    ways, csizes, cbound = list(dict.fromkeys(w for _, w in cell)), sorted({b for b, _ in cell}), sc["pcie_bound_gbps"]
    extra_us = [1e6 * b / (cbound * 1e9) * (100 / cell[b, "memcpy_async"] - 1) for b in csizes]
    near = max(abs(cell[b, w] - cell[b, "memcpy_async"]) for b in csizes for w in ("graph", "two_streams"))
    copy_rows = [{"size": size(b), "cells": [fixed(cell[b, w], 1) for w in ways]} for b in csizes]
    return {"copy_ways": ways, "copy_rows": copy_rows, "copy_bound": fixed(cbound, 1), "copy_mb": sc["copy_pass_bytes"] // 10**6,
            "copy_extra_us": span(extra_us), "copy_256k": fixed(cell[256000, "memcpy_async"], 1), "copy_near": fixed(near, 1),
            "copy_kernel_span": span([cell[b, "kernel"] for b in csizes]),
            "copy_batched_span": span([cell[b, "batched"] for b in csizes])}


def pytorch_minibatches(r):
    """PyTorch's ways to feed mini-batches, beside this chapter's pipelines."""
    tm = r.json("pytorch_minibatch.json")
    tmb = {m["pipeline"]: m for m in tm["minibatch"]}
    tms = {p: m["epoch_ms"]["median"] for p, m in tmb.items() if "epoch_ms" in m}
    tbound = r.number("pytorch_minibatch.txt", r"^PCIe bound: .* ([\d.]+) GB/s")
    dl0, dlw = tms["dataloader, 0 workers"], tms[f"dataloader, {tm['num_workers']} workers"]
    mbt, batches = minibatch_times(r), batches_per_epoch(r)
    return {"torch_mb": {p: fixed(t, 1) for p, t in tms.items()}, "torch_mb_workers": fixed(dlw, 1),
            "torch_mb_bound_span": span([tmb[p]["bound_percent"] for p in tms]),
            "torch_mb_batch_ms": span([t / batches for t in tms.values()], 2),
            "cpp_mb_batch_us": span([1000 * t / batches for t in mbt.values()], 0),
            "torch_bound": fixed(tbound, 1), "torch_batch_copy_us": fixed(512 / tbound, 0),
            "pinned_slices_vs": vs(tms["pinned_slices"], tms["pageable"]),
            "pinned_slices_vs_cpp": ratio(tms["pinned_slices"], mbt["pinned_set"], 0),
            "dl0_vs": vs(dl0, tms["pageable"]), "dlw_vs": vs(dlw, dl0), "num_workers": tm["num_workers"],
            "per_sample_s": fixed(tmb["per_sample"]["estimated_epoch_ms"] / 1000, 0)}


# ------------------------------------------------------------------ runs with other flags
def other_flags(r):
    """Runs with one flag changed: exercise 3's rates and noise, and --lr 1.0 (the answer's section)."""
    lr04 = r.number("exercise3_lr_0.04_cpu.txt", r"^reference .*: w (\S+), b (\S+)", 1), \
        r.number("exercise3_lr_0.04_cpu.txt", r"^reference .*: w (\S+), b (\S+)", 2)
    return {"diverge_epoch": int(r.number("diverge.txt", r"^diverged at epoch (\d+)")),
            "lr04_w": fixed(lr04[0], 9), "lr04_b": fixed(lr04[1], 9),
            "lr05_epoch": int(r.number("exercise3_lr_0.05_cpu.txt", r"^diverged at epoch (\d+)")),
            "noise_loss190": significant(r.number("exercise3_noise_0.5_cuda.txt", r"^  epoch  190  loss (\S+)"), 4)}


def run_claims(book, r, r05):
    """Which figures come from one regeneration, once every file behind them is read."""
    eager_files = ((r, "pytorch_cuda.json"), (r, "pytorch_profile.txt"), (r05, "pytorch_sweep.json"))
    return {"book_runs_eager": book.runs_phrase(*eager_files),
            "same_run_cuda_eager": book.same_run((r, "cuda.json"), (r, "pytorch_cuda.json"), (r, "pytorch_profile.txt")),
            "same_run_steps": book.same_run((r, "cuda_steps.json"), (r, "pytorch_cuda.json"))}
