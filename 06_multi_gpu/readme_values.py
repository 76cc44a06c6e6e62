"""readme_values.py: the figures of chapter 06's README.md.in and NOTES.md.in, from the committed results/.

values(book) returns one group per part of the pages (`{{ dp.analog }}`, `{{ hand.alone.ddp_one_shot_graph }}`).
A group reads its files when a page first names one of its values, so each page's sources list
names the files that page quotes (common/readme_figures.py; common/readme_render.py renders).
"""
import os
import re

from readme_figures import count, faster_or_slower, fixed, ratio, percent

CHAPTER = "06_multi_gpu"
M5 = 5 * 10**6  # the lesson's problem: 5M points, 200 epochs
UP_TO = 1 << 20  # the all-reduce sizes that cost the same: up to 1 MiB


class Later:
    """A group of values computed on first use: `{{ group.name }}` in a template."""

    def __init__(self, make):
        self._make, self._got = make, None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._got is None:
            self._got = self._make()
        if name not in self._got:
            raise AttributeError(f"no value {name!r} in this group")
        return self._got[name]


# ------------------------------------------------------------------------- small helpers
def us(x):
    return fixed(x, 2)


def big(x):
    """A time of PyTorch's (hundreds of µs or more): whole microseconds."""
    return fixed(x, 0)


def span(values, digits=2):
    """'17.71 to 21.78', or one figure when they round alike."""
    low, high = fixed(min(values), digits), fixed(max(values), digits)
    return low if low == high else f"{low} to {high}"


def per_epoch(training_ms, epochs, digits=0):
    """A {median, min, max, runs} of whole trainings as µs per epoch: 'median (min–max)'."""
    m = {k: training_ms[k] * 1000.0 / epochs for k in ("median", "min", "max")}
    return f"{fixed(m['median'], digits)} ({fixed(m['min'], digits)}–{fixed(m['max'], digits)})"


def timing(t, digits=1):
    """A {median, min, max} timing as 'median (min–max)'."""
    return f"{fixed(t['median'], digits)} ({fixed(t['min'], digits)}–{fixed(t['max'], digits)})"


def cells(items):
    return " | ".join(items)


def plural(n, word):
    return f"{n} {word}{'s' * (n != 1)}"


def millions(points):
    return f"{points // 10**6}M"


def slowest(j):
    """The slowest rank's µs per epoch of a lesson program's JSON."""
    return max(x["epoch_us"] for x in j["ranks"])


# ------------------------------------------------------------------------- the groups
def run_group(r):
    topo = r.json("topology.json")["topology"]
    link = next(m[1] for m in (re.match(r"^GPU0\s+X\s+(\S+)", l) for l in r.text("nvidia_smi_topo.txt")) if m)
    return {
        "gpus": str(len(topo["names"])), "gpu": " and ".join(sorted(set(topo["names"]))), "link": link,
        "links": link[2:] if re.fullmatch(r"NV\d+", link) else "?",
        "nccl": r.json("allreduce_2gpus.json")["allreduce"]["nccl_version"],
        "commit": r.record("dp.json")["commit"],
    }


def sample_group(r):
    dp, ex = r.json("dp.json"), r.json("exchange.json")["exchange"]
    epoch = {(x["mode"], x["gpus"], x["exchange"]): x["us_per_epoch"] for x in ex["epochs"] if x["points"] == M5}
    wb = sorted({(x["w"], x["b"]) for x in dp["ranks"]})
    return {
        "gpus": str(dp["gpus"]), "epochs": str(dp["epochs"]), "runs": str(dp["repeats"]),
        "epoch": us(slowest(dp)), "one_gpu": us(epoch["dp", 1, "nccl"]),
        "by_hand": us(slowest(r.json("by_hand.json"))), "on_chip": us(slowest(r.json("by_hand_on_chip.json"))),
        "ddp": us(r.json(f"ddp_{dp['gpus']}.json")["ddp"]["us_per_epoch"]),
        "w": f"{wb[0][0]:.9f}", "b": f"{wb[0][1]:.9f}",
    }


def dp_group(r):
    pdp, dp = r.json("pytorch_data_parallel.json"), r.json("dp.json")
    ex = r.json("exchange.json")["exchange"]
    epoch = {(x["mode"], x["gpus"], x["exchange"]): x["us_per_epoch"] for x in ex["epochs"] if x["points"] == M5}
    run = {x["run"]: x for x in pdp["runs"]}
    n, top = pdp["gpus"], max(ex["gpu_counts"])
    return {
        "torch_gpus": str(n), "stage_runs": str(min(v["runs"] for v in pdp["stages_us"].values())),
        "stage": {k.split()[0]: timing(v) for k, v in pdp["stages_us"].items()},
        "torch_epoch": per_epoch(run["data_parallel"]["training_ms"], pdp["epochs"], 1),
        "torch_single": per_epoch(run["single"]["training_ms"], pdp["epochs"], 1),
        "torch_dp_slower": ratio(run["data_parallel"]["training_ms"]["median"],
                                 run["single"]["training_ms"]["median"], 1),
        "analog": us(slowest(dp)), "analog_faster": ratio(run["data_parallel"]["us_per_epoch"], slowest(dp), 0),
        "top": str(top), "step_dp": us(epoch["dp", top, "nccl"]),
    }


def ddp_group(r):
    d = _ddp_runs(r)
    return {**_ddp_table(d), **_ddp_figures(d)}


def _ddp_runs(r):
    """The DDP step's files, read in the order the pages' sources list them."""
    ranks = sorted(n for n in (1, 2, 4, 8) if _has(r, f"ddp_{n}.json"))
    d = {"ranks": ranks, "ours": {n: r.json(f"ddp_{n}.json")["ddp"] for n in ranks},
         "torch": {n: r.json(f"ddp_pytorch_{n}.json")["ddp"] for n in ranks}}
    d["mpi"] = {n: slowest(r.json(f"mpi_ddp_{n}.json")) for n in ranks if _has(r, f"mpi_ddp_{n}.json")}
    d["nb"] = {n: r.json(f"nonblocking_ddp_{n}.json")["ddp"]["us_per_epoch"] for n in ranks if _has(r, f"nonblocking_ddp_{n}.json")}
    d["net"] = {n: r.json(f"ddp_{n}_network.json")["ddp"]["us_per_epoch"] for n in ranks if _has(r, f"ddp_{n}_network.json")}
    d["pdp"] = r.json("pytorch_data_parallel.json")
    return d


def _ddp_table(d):
    """The README's DDP table: a column per rank count."""
    ranks, ours, torch, net = d["ranks"], d["ours"], d["torch"], d["net"]
    mine = lambda values: cells(us(values[n]) if n in values else "" for n in ranks)
    return {
        "head": cells(plural(n, "rank") for n in ranks), "align": cells("---:" for _ in ranks),
        "analog": mine({n: ours[n]["us_per_epoch"] for n in ranks}),
        "torch": cells(per_epoch(torch[n]["training_ms"], torch[n]["epochs"]) for n in ranks),
        "torch_runs": str(min(torch[n]["training_ms"]["runs"] for n in ranks)),
        "runs": str(min(ours[n]["rank0"]["repeats"] for n in ranks)),
        "mpi": mine(d["mpi"]), "nonblocking": mine(d["nb"]), "sockets": mine(net), "sockets_two": us(net[2]) if 2 in net else "",
    }


def _ddp_figures(d):
    """The figures the DDP section's prose quotes."""
    ranks, ours, torch, nb, pdp = d["ranks"], d["ours"], d["torch"], d["nb"], d["pdp"]
    top = max(n for n in ranks if n <= pdp["gpus"])
    dp_torch = next(x for x in pdp["runs"] if x["run"] == "data_parallel")["us_per_epoch"]
    slower = [torch[n]["us_per_epoch"] / ours[n]["us_per_epoch"] for n in ranks]
    return {
        "torch_slower": f"{fixed(min(slower), 0)}x to {fixed(max(slower), 0)}x",
        "two": us(ours[2]["us_per_epoch"]),
        "two_alone": us(ours[2]["compute_us"]), "two_vs_one": faster_or_slower(ours[2]["us_per_epoch"], ours[1]["us_per_epoch"]),
        "top": str(top), "top_epoch": us(ours[top]["us_per_epoch"]),
        "ddp_vs_dp_torch": ratio(dp_torch, torch[top]["us_per_epoch"], 1),
        "nb_slower": f"{ratio(min(nb[n] / ours[n]['us_per_epoch'] for n in nb), 1)}" if nb else "",
        "nb_slower_max": ratio(max(nb[n] / ours[n]["us_per_epoch"] for n in nb), 1) if nb else "",
    }


def cost_group(r):
    ar = {n: r.json(f"allreduce_{n}gpus.json")["allreduce"] for n in (2, 4, 8) if _has(r, f"allreduce_{n}gpus.json")}
    small = {n: [x for x in a["rows"] if x["bytes"] <= UP_TO] for n, a in ar.items()}
    topo = r.json("topology.json")["topology"]
    on = lambda key, state: [x[key][state] for x in topo["links"]]
    # nccl-tests' all_reduce_perf beside it (benchmark.sh's nccl_tests step): its out-of-place busbw
    # at the largest size the bench ran, where it ran that size
    theirs = {n: _nccl_tests(r, f"nccl_tests_{n}gpus.txt", "busbw").get(a["rows"][-1]["bytes"]) for n, a in ar.items()}
    theirs = {n: v for n, v in theirs.items() if v}
    two = ar[2]
    return {
        "counts": sorted(ar), "small": {n: span([x["time_us"]["median"] for x in rows]) for n, rows in small.items()},
        "small_from": small[2][0]["size"], "small_to": small[2][-1]["size"],
        "big_size": two["rows"][-1]["size"], "big_us": us(two["rows"][-1]["time_us"]["median"]),
        "busbw": {n: fixed(a["rows"][-1]["busbw_gbps"], 1) for n, a in ar.items()},
        "big": {n: us(a["rows"][-1]["time_us"]["median"]) for n, a in ar.items()},
        "wrong": str(sum(a["wrong"] for a in ar.values())),
        "theirs": {n: fixed(v, 1) for n, v in theirs.items()},
        "of_theirs": {n: percent(ar[n]["rows"][-1]["busbw_gbps"], v, 1) for n, v in theirs.items()},
        "copy_mib": str(topo["bytes"] >> 20),
        "one_way_on": span(on("one_way_gbps", "on"), 1), "both_on": span(on("bidirectional_gbps", "on"), 1),
        "one_way_off": span(on("one_way_gbps", "off"), 1), "both_off": span(on("bidirectional_gbps", "off"), 1),
        "latency_on": span(on("latency_us", "on")), "latency_off": span(on("latency_us", "off")),
    }


def hand_group(r):
    d = _hand_runs(r)
    return {**_hand_alone(d), **_hand_against_best(d), **_hand_epoch(d)}


def _hand_runs(r):
    """The exchange step's files, and nccl-tests' beside them, read in the order the pages' sources
    list them: {al: (form, exchange, launch, GPUs) -> median µs alone, ep: (mode, GPUs, exchange) ->
    the epoch at 5M points, torch, tests, best: NCCL's best time per GPU count, ...}."""
    ex = r.json("exchange.json")["exchange"]
    counts = ex["gpu_counts"]
    multi = [n for n in counts if n > 1]
    d = {"ex": ex, "counts": counts, "multi": multi,
         "al": {(x["form"], x["exchange"], x["launch"], x["gpus"]): x["time_us"]["median"] for x in ex["alone"]},
         "ep": {(x["mode"], x["gpus"], x["exchange"]): x for x in ex["epochs"] if x["points"] == M5}}
    d["torch"] = {(x, n): r.json(f"exchange_pytorch_{x}_{n}.json")["ddp"] for x in ("nccl", "symm_mem") for n in multi
                  if _has(r, f"exchange_pytorch_{x}_{n}.json")}
    tests = {(sym, n): _nccl_tests(r, f"nccl_tests_graph{'_symmetric' * sym}_{n}gpus.txt") for sym in (False, True) for n in multi}
    d["tests"] = tests
    d["best"] = {n: min(d["al"]["ddp", "nccl_symmetric", "graph", n], *tests[True, n].values()) for n in multi}
    lines = r.text("nccl_tests_graph_symmetric_2gpus.txt")
    d["version"] = next((m[1] for m in (re.search(r"nccl-tests version (\S+)", l) for l in lines) if m), "?")
    return d


def _hand_alone(d):
    """The tables of each exchange timed alone, ours and PyTorch's and nccl-tests'."""
    ex, counts, multi, al, torch, tests = d["ex"], d["counts"], d["multi"], d["al"], d["torch"], d["tests"]
    row = lambda form, x, launch, ns=counts: cells(us(al[form, x, launch, n]) if (form, x, launch, n) in al else "" for n in ns)
    return {
        "head": cells(plural(n, "GPU") for n in counts), "align": cells("---:" for _ in counts),
        "head_multi": cells(plural(n, "GPU") for n in multi), "align_multi": cells("---:" for _ in multi),
        "alone": {f"{form}_{x}_{launch}": row(form, x, launch) for form, x, launch, _ in al},
        "alone_multi": {f"{form}_{x}_{launch}": row(form, x, launch, multi) for form, x, launch, _ in al},
        "torch": {f"{x}_{how}": cells(timing(torch[x, n][f"exchange_{how}_us"], 2) if torch.get((x, n), {}).get(f"exchange_{how}_us")
                                      else "" for n in multi) for x in ("nccl", "symm_mem") for how in ("eager", "graph")},
        "torch_runs": str(min(t["exchange_eager_us"]["runs"] for t in torch.values())),
        "tests": {("symmetric" if sym else "plain"): cells(us(tests[sym, n][16]) if 16 in tests[sym, n] else "" for n in multi)
                  for sym in (False, True)},
        "tests_version": d["version"], "batches": str(ex["batches"]), "iterations": str(ex["iterations"]),
    }


def _hand_against_best(d):
    """The hand exchange against NCCL at its best, and the round trip inside one kernel."""
    multi, al, best = d["multi"], d["al"], d["best"]
    k1, k2 = al["dp", "one_shot", "one_kernel", 1], al["dp", "one_shot", "one_kernel", 2]
    return {
        "vs_best": {n: ratio(best[n], al["ddp", "one_shot", "graph", n]) for n in multi},
        "best": {n: us(best[n]) for n in multi}, "mine": {n: us(al["ddp", "one_shot", "graph", n]) for n in multi},
        "words": {n: faster_or_slower(al["ddp", "one_shot", "graph", n], best[n]) for n in multi},
        "kernel_one": us(k1), "kernel_two": us(k2), "round_trip": us(k2 - k1),
        "launch": us(al["dp", "none", "empty_kernel", 2]), "graphed_two": us(al["dp", "one_shot", "graph", 2]),
    }


def _hand_epoch(d):
    """The epoch at 5M points with each exchange."""
    counts, ep = d["counts"], d["ep"]
    epoch_cells = lambda x: cells(us(ep[m, n, x]["us_per_epoch"]) for n in counts for m in ("dp", "ddp"))
    return {
        "epoch_head": cells(f"{m}, {plural(n, 'GPU')}" for n in counts for m in ("dp", "ddp")),
        "epoch_align": cells("---:" for _ in counts for _m in ("dp", "ddp")),
        "epoch": {x: epoch_cells(x) for x in ("nccl", "nccl_symmetric", "one_shot")},
        "epoch_alone": cells(us(ep[m, n, "nccl"]["compute_us"]) for n in counts for m in ("dp", "ddp")),
        "epoch_points": millions(M5),
        "one_shot_two": us(ep["ddp", 2, "one_shot"]["us_per_epoch"]), "nccl_two": us(ep["ddp", 2, "nccl"]["us_per_epoch"]),
        "alone_two": us(ep["ddp", 2, "nccl"]["compute_us"]),
        "one_shot_vs_alone": faster_or_slower(ep["ddp", 2, "one_shot"]["us_per_epoch"], ep["ddp", 2, "nccl"]["compute_us"]),
    }


def _nccl_tests(r, name, column="time"):
    """all_reduce_perf's out-of-place figure at each size, {bytes: µs} or {bytes: busbw GB/s}.
    Its columns: size count type redop root time algbw busbw #wrong, out of place first."""
    if not _has(r, name):
        return {}
    index = {"time": 5, "busbw": 7}[column]
    return {int(w[0]): float(w[index]) for w in (l.split() for l in r.text(name)) if len(w) > index and w[0].isdigit()}


def scaling_group(r):
    sc, pts = r.json("scaling.json")["scaling"], r.json("pytorch_scaling.json")["scaling"]
    xs = sc["exchanges"]
    key = lambda x: (x["kind"], x["points"] // (x["gpus"] if x["kind"] == "weak" else 1), x["gpus"])
    ours = {(x["exchange"],) + key(x): x for x in sc["rows"]}
    theirs = {key(x): x for x in pts["rows"]}
    rows, slower, better = [], [], []
    for kind, size, n in dict.fromkeys(key(x) for x in sc["rows"]):
        mine, t = [ours[x, kind, size, n] for x in xs], theirs[kind, size, n]
        rows.append({
            "label": f"{kind}, {millions(size)}{' per GPU' * (kind == 'weak')}" if n == 1 else "", "gpus": str(n),
            "alone": us(mine[0]["compute_us"]),
            "cells": cells(f"{us(c['us_per_epoch'])} ({percent(c['efficiency'])})" for c in mine),
            "cell": {x: f"{us(c['us_per_epoch'])} ({percent(c['efficiency'])})" for x, c in zip(xs, mine)},
            "torch": f"{big(t['us_per_epoch'])} ({percent(t['efficiency'])})",
            "torch_spread": f"{big(t['training_ms']['min'] * 1000 / t['epochs'])}–{big(t['training_ms']['max'] * 1000 / t['epochs'])}",
        })
        slower += [t["us_per_epoch"] / c["us_per_epoch"] for c in mine]
        better += [t["efficiency"] > c["efficiency"] for c in mine if n > 1]
    weak = {(x, n): ours[x, "weak", 10**8, n] for x in xs for n in sc["gpu_counts"] if (x, "weak", 10**8, n) in ours}
    strong = lambda x, size, n: ours[x, "strong", size, n]
    last = sc["gpu_counts"][-1]
    return {
        "rows": rows, "head": cells(f"`{x}`" for x in xs), "align": cells("---:" for _ in xs),
        "runs": str(sc["repeats"]), "torch_runs": str(pts["repeats"]),
        "better": str(sum(better)), "cells": str(len(better)),
        "slower_low": ratio(min(slower), 1, 1), "slower_high": ratio(max(slower), 1, 1),
        "weak": {x: ", ".join(percent(weak[x, n]["efficiency"], digits=1) for n in sc["gpu_counts"][1:]) for x in xs},
        "weak_counts": " and ".join(str(n) for n in sc["gpu_counts"][1:]), "last": str(last),
        "weak_growth": us(weak["one_shot", last]["us_per_epoch"] - weak["one_shot", 1]["us_per_epoch"]),
        "small_two": {x: percent(strong(x, M5, 2)["efficiency"]) for x in xs},
        "large_two": {x: percent(strong(x, 10**8, 2)["efficiency"]) for x in xs},
        "alone_one": us(strong("nccl", M5, 1)["compute_us"]), "alone_two": us(strong("nccl", M5, 2)["compute_us"]),
        "saved": us(strong("nccl", M5, 1)["compute_us"] - strong("nccl", M5, 2)["compute_us"]),
        "nccl_two": us(strong("nccl", M5, 2)["us_per_epoch"]),
        # one GPU's pass at 100M points reads x and y of its 80M training points: 8 bytes each
        "read_mb": fixed(10**8 * 0.8 * 8 / 1e6, 0),
        "read_rate": fixed(10**8 * 0.8 * 8 / strong("nccl", 10**8, 1)["us_per_epoch"] / 1e6, 1),
    }


def chip_group(r):
    d = _chip_runs(r)
    return {**_chip_table(d), **_chip_figures(d)}


def _chip_runs(r):
    """The on-chip epochs beside 05's best, from the exchange step: {best: points -> µs, oc: (GPUs,
    points) -> µs, skip: (GPUs, points) -> the room it needed, fits and past: the sizes within and
    beyond one GPU's room, ...}."""
    ex = r.json("exchange.json")["exchange"]
    best = {x["points"]: x["us_per_epoch"] for x in ex["epochs"] if x["mode"] == "one_gpu_best"}
    room = ex["on_chip_room"]
    return {
        "counts": ex["gpu_counts"], "best": best, "room": room,
        "oc": {(x["gpus"], x["points"]): x["us_per_epoch"] for x in ex["epochs"] if x["mode"] == "on_chip"},
        "skip": {(x["gpus"], x["points"]): re.search(r"[\d.]+ MB(?= needed)", x["skipped"])[0] for x in ex["on_chip_skipped"]},
        "l2": next(m[1] for m in (re.search(r"(\d+) MiB L2", l) for l in r.text("one_gpu_sweep.txt")) if m),
        "fits": [p for p in sorted(best) if p * 0.8 <= room["train_points"]],
        "past": [p for p in sorted(best) if p * 0.8 > room["train_points"]],
    }


def _chip_table(d):
    """The README's on-chip table: a row per size."""
    counts, best, oc, skip = d["counts"], d["best"], d["oc"], d["skip"]
    cell = lambda n, p: us(oc[n, p]) if (n, p) in oc else f"does not fit ({skip[n, p]})" if (n, p) in skip else ""
    rows = [{"points": millions(p), "best": us(best[p]), "cells": cells(cell(n, p) for n in counts),
             "vs_two": ratio(best[p], oc[2, p]) if (2, p) in oc else ""} for p in sorted(best)]
    return {"rows": rows, "head": cells(f"on chip, {plural(n, 'GPU')}" for n in counts),
            "align_short": cells("---:" for _ in counts)}


def _chip_figures(d):
    """The figures the on-chip section's prose quotes."""
    best, oc, room, fits, past = d["best"], d["oc"], d["room"], d["fits"], d["past"]
    p10 = past[min(1, len(past) - 1)]
    one_wins = [millions(p) for p in fits if (1, p) in oc and (2, p) in oc and oc[1, p] < oc[2, p]]
    two = sorted(p for (n, p) in oc if n == 2)
    return {
        "mb": fixed(room["bytes"] / 1e6, 1), "room_points": fixed(room["train_points"] / 0.8 / 1e6, 1), "l2": d["l2"],
        "last_fit": millions(fits[-1]), "last_fit_us": us(best[fits[-1]]),
        "first_past": millions(past[0]), "first_past_us": us(best[past[0]]), "first_past_mb": fixed(past[0] * 0.8 * 8 / 1e6, 1),
        "one_wins": ", ".join(one_wins) or "no size", "all_fit_one_wins": len(one_wins) == len(fits),
        "p10": millions(p10), "p10_vs": ratio(best[p10], oc[2, p10]), "p10_over_twice": best[p10] > 2 * oc[2, p10],
        "two_from": millions(two[0]), "two_to": millions(two[-1]), "two_growth": us(oc[2, two[-1]] - oc[2, two[0]]),
    }


def fault_group(r):
    names = ("nccl", "one_shot", "nccl_symmetric", "on_chip", "stop_one_shot", "stop_on_chip")
    rows = []
    for f in names:
        launcher = r.json(f"fault_{f}.json")["ddp"]["launcher"]
        text = " ".join(r.text(f"fault_{f}.txt"))
        rows.append({"signal": "SIGSTOP" if f.startswith("stop") else "SIGKILL",
                     "exchange": f.replace("stop_", "").replace("on_chip", "on chip"),
                     "rank": str(launcher["failed_rank"]) + ", stopped" * ("unresponsive_rank" in launcher),
                     "after": fixed(launcher["stopped_after_s"], 2), "last_resort": "teardown was still running" in text,
                     "timeout": fixed(launcher["timeout_s"], 0)})
    quick = [float(x["after"]) for x in rows if not x["last_resort"]]
    slow = [x for x in rows if x["last_resort"]]
    grace = next((m[1] for m in (re.search(r"still running after (\d+) s", l) for f in names for l in r.text(f"fault_{f}.txt")) if m), "?")
    return {"rows": rows, "quick": span(quick), "slow": slow, "slow_after": slow[0]["after"] if slow else "",
            "grace": grace, "named": ", ".join(sorted({x["rank"].split(",")[0] for x in rows}))}


def article_group(book):
    r04, r05 = book.results("04_linear_regression"), book.results("05_fused_kernels")
    d = _article_04(r04)
    sweep = _article_sweep(r05)
    return {**d, "link_04": r04.link("pytorch_cpu.json", "pytorch_cpu.json"),
            "link_05": r05.link("pytorch_sweep.json", "pytorch_sweep.json"), **_article_range(sweep), **_article_outlier(sweep)}


def _article_04(r04):
    """Chapter 04's one job, 5M points, on the CPU and the GPU (PyTorch's both)."""
    cpu, gpu = r04.json("pytorch_cpu.json"), r04.json("pytorch_cuda.json")
    tc, tg = cpu["result"][0]["training_ms"], gpu["result"][0]["training_ms"]
    return {
        "cpu_s": fixed(tc["median"] / 1000, 2), "cpu_min_s": fixed(tc["min"] / 1000, 2), "cpu_max_s": fixed(tc["max"] / 1000, 2),
        "cpu_runs": str(tc["runs"]), "threads": str(cpu["cpu_threads"]), "points": count(cpu["points"]),
        "gpu_ms": fixed(tg["median"], 1), "gpu_min_ms": fixed(tg["min"], 1), "gpu_max_ms": fixed(tg["max"], 1),
        "gpu_runs": str(tg["runs"]), "gain_04": ratio(tc["median"], tg["median"], 1),
    }


def _article_sweep(r05):
    """Chapter 05's PyTorch sweep, CPU against eager: {rows: (variant, points) -> row, sizes, cpu_us,
    gain: points -> the GPU's gain, outliers and others}."""
    rows = {(x["variant"], x["points"]): x for x in r05.json("pytorch_sweep.json")["sweep"] if x["passed"]}
    sizes = sorted(p for v, p in rows if v == "cpu" and ("eager", p) in rows)
    cpu_us = {p: rows["cpu", p]["us_per_epoch"] for p in sizes}
    # An outlier: a size whose CPU epoch is longer than a larger size's (the time falls as the data grows).
    outliers = [p for p in sizes if any(cpu_us[q] < cpu_us[p] / 2 for q in sizes if q > p)]
    return {"rows": rows, "sizes": sizes, "cpu_us": cpu_us, "outliers": outliers,
            "gain": {p: cpu_us[p] / rows["eager", p]["us_per_epoch"] for p in sizes},
            "others": [p for p in sizes if p not in outliers]}


def _article_range(s):
    """The range of the GPU's gain over the sweep, with the size at each end."""
    rows, sizes, cpu_us, gain = s["rows"], s["sizes"], s["cpu_us"], s["gain"]
    lo, hi = min(gain, key=gain.get), max(gain, key=gain.get)
    return {
        "sweep_from": count(sizes[0]), "sweep_to": count(sizes[-1]), "sweep_sizes": str(len(sizes)),
        "low": ratio(gain[lo], 1), "low_at": count(lo), "high": ratio(gain[hi], 1, 1), "high_at": count(hi),
        "low_cpu": per_epoch(rows["cpu", lo]["training_ms"], rows["cpu", lo]["epochs"], 2), "low_gpu": fixed(rows["eager", lo]["us_per_epoch"], 2),
        "low_word": faster_or_slower(cpu_us[lo], rows["eager", lo]["us_per_epoch"]),
    }


def _article_outlier(s):
    """The sweep's outlier, if any: its CPU epoch beside its neighbours', and the range without it."""
    rows, sizes, cpu_us, gain, others = s["rows"], s["sizes"], s["cpu_us"], s["gain"], s["others"]
    def neighbour(p, step):
        near = [q for q in others if (q < p if step < 0 else q > p)]
        return (max(near) if step < 0 else min(near)) if near else None
    o = s["outliers"][0] if s["outliers"] else None
    spiky = [p for p in sizes if rows["cpu", p]["training_ms"]["max"] > 3 * rows["cpu", p]["training_ms"]["median"]]
    t = lambda p, k: fixed(rows["cpu", p]["training_ms"][k] / 1000, 2)
    return {
        "outlier": bool(o),
        "o_points": count(o) if o else "", "o_cpu": count(round(cpu_us[o])) if o else "",
        "o_below": count(neighbour(o, -1)) if o and neighbour(o, -1) else "",
        "o_below_cpu": count(round(cpu_us[neighbour(o, -1)])) if o and neighbour(o, -1) else "",
        "o_above": count(neighbour(o, 1)) if o and neighbour(o, 1) else "",
        "o_above_cpu": count(round(cpu_us[neighbour(o, 1)])) if o and neighbour(o, 1) else "",
        "o_spread": f"{t(o, 'min')} to {t(o, 'max')}" if o else "",
        "o_runs": str(rows["cpu", o]["training_ms"]["runs"]) if o else "",
        "rest_low": ratio(min(gain[p] for p in others), 1, 2) if others else "",
        "rest_high": ratio(max(gain[p] for p in others), 1, 1) if others else "",
        "spiky": [{"points": count(p), "max": t(p, "max"), "median": t(p, "median"), "min": t(p, "min")} for p in spiky],
    }


def _has(r, name):
    return os.path.exists(r.path(name))


def values(book):
    r = book.results(CHAPTER)
    return {
        "r": r,
        "run": Later(lambda: run_group(r)),
        "sample": Later(lambda: sample_group(r)),
        "dp": Later(lambda: dp_group(r)),
        "ddp": Later(lambda: ddp_group(r)),
        "cost": Later(lambda: cost_group(r)),
        "hand": Later(lambda: hand_group(r)),
        "scaling": Later(lambda: scaling_group(r)),
        "chip": Later(lambda: chip_group(r)),
        "fault": Later(lambda: fault_group(r)),
        "article": Later(lambda: article_group(book)),
    }
