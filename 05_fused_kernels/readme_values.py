"""readme_values.py: the named values of chapter 05's README.md.in and NOTES.md.in, from results/.

Every figure the two pages show is computed here from the committed results of chapter 05 (and,
for the baselines and the line counts, chapter 04's and 01's), never typed.
"""
import ast
import os

from readme_figures import ROOT, count, faster_or_slower, fixed, percent, ratio, significant, spread

CHAPTER = "05_fused_kernels"


# ------------------------------------------------------------------------- small helpers
class Lazy:
    """Values computed, and their files read, only when a page uses one: `{{ ch04.eager.median }}`.
    A page's sources list then names only the files that page's figures come from."""

    def __init__(self, make):
        self._make, self._values = make, None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._values is None:
            self._values = self._make()
        return self._values[name]


def pts(n):
    """5000000 -> '5M', 50000 -> '50K', 500 -> '500'."""
    return f"{n // 1000000}M" if n >= 1000000 else f"{n // 1000}K" if n >= 1000 else str(n)


def ms(row):
    return row["training_ms"]["median"]


def span(values, digits=2):
    """The range of some values: '3.12-3.48'."""
    return f"{fixed(min(values), digits)}-{fixed(max(values), digits)}"


def times(a, b, digits=1):
    """How many times faster or slower time a is than time b: ('4.8x', 'faster')."""
    return ratio(max(a, b), min(a, b), digits), faster_or_slower(a, b)


def nonblank_lines(*paths):
    """Non-blank lines of the workbook's files (paths from the root)."""
    total = 0
    for path in paths:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            total += sum(1 for line in f if line.strip())
    return total


def class_lines(path, name):
    """Non-blank lines of one class of a Python file."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        source = f.read()
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == name)
    lines = source.splitlines()[node.lineno - 1:node.end_lineno]
    return sum(1 for line in lines if line.strip())


def with_spread(timing, digits=1):
    """A timing as {'median', 'min', 'max', 'runs'} strings."""
    return spread(timing, 1.0, digits)


class Tables:
    """Chapter 05's results, indexed the ways the sections read them."""

    def __init__(self, r):
        self.fused, self.sw, self.bd, self.bar, self.pt = (r.json(f"{f}.json") for f in (
            "fused", "sweep", "breakdown", "barrier", "pytorch_sweep"))
        self.V = {v["variant"]: v for v in self.fused["variants"]}            # the lesson's table, by number
        self.NUM = {v["name"]: v["variant"] for v in self.fused["variants"]}  # name -> number
        self.S = {(s["points"], s["variant"]): s for s in self.sw["sweep"]}   # the sweep, by size and name
        self.P = {(s["points"], s["variant"]): s for s in self.pt["sweep"]}   # PyTorch's modes, the same way
        self.SIZES = sorted({s["points"] for s in self.sw["sweep"]})
        self.M5 = self.fused["points"]
        self.SMALL = [n for n in self.SIZES if n <= 100000]
        self.MID = [n for n in self.SIZES if n < self.M5]
        self.BIG = [n for n in self.SIZES if n > self.M5]
        self.train_mb = self.fused["train_points"] * 8 / 1e6  # X and y of the training points, float32
        self.sms = int(r.number("fused.txt", r"\((\d+) SMs"))
        self.l2_mib = r.number("fused.txt", r"(\d+) MiB L2")

    def us(self, n, name):
        return self.S[(n, name)]["us_per_epoch"]

    def sweep_pct(self, n, name):
        return percent(self.S[(n, name)]["copy_fraction"], digits=1)

    def fastest(self, n, names=None):
        names = self.NUM if names is None else names
        return min((s for s in self.sw["sweep"] if s["points"] == n and s["variant"] in names), key=ms)["variant"]

    def lesson_pct(self, number):
        return percent(self.V[number]["copy_percent"], 100, 1)


# ------------------------------------------------------------------------- the values
def values(book):
    r = book.results(CHAPTER)
    d = Tables(r)
    out = {"r": r, "gpu": d.fused["device"].replace("NVIDIA ", ""), "sms": d.sms, "l2_mib": f"{d.l2_mib:.0f}",
           "points": pts(d.M5), "train_mb": f"{d.train_mb:.0f}", "half_mb": f"{d.train_mb / 2:.0f}",
           "epochs": d.fused["epochs"]}
    out |= sample_output(d)
    out |= on_chip_room(r, d)
    out |= breakdown(d)
    out |= epoch_trace(r, d)
    out |= streams(d)
    out |= small_sizes(d)
    out |= barriers(d)
    out |= on_chip_and_atomics(d)
    out |= bandwidth(d)
    out |= nsight_compute(r, d)
    out |= l2_and_graph(d)
    out["ch01"] = Lazy(lambda: chapter01(book))
    out |= against_pytorch(d)
    out |= pytorch_modes(book, r, d)
    out["ch04"] = Lazy(lambda: chapter04(book, r))
    out |= effort(d)
    out |= notes_summary(r, d)
    return out


def sample_output(d):
    """The sample output and its legend."""
    V = d.V
    return {
        "pct": {n: d.lesson_pct(n) for n in V},
        "us": {n: fixed(V[n]["us_per_epoch"]) for n in V},
        "ms": {n: fixed(ms(V[n]), 3) for n in V},
        "launches": {n: V[n]["launches_per_epoch"] for n in V},
        "v2_loss_err": f"{V[2]['loss_error']:.1e}",
        "v2_vs_3": times(V[2]["us_per_epoch"], V[3]["us_per_epoch"]),
        "v1_bytes_pct": percent(V[1]["copy_percent"] * 28 / 8, 100, 0),  # 28 bytes a point moved, 8 counted
        "atomics_m": f"{3 * d.fused['train_points'] / 1e6:.0f}M",
        "v1_vs_4": times(V[4]["us_per_epoch"], V[1]["us_per_epoch"]),
        "fewer_launches": V[1]["launches_per_epoch"] - V[4]["launches_per_epoch"],
        "v8_vs_5": times(ms(V[8]), ms(V[5])),
        "v67_slower": min(ms(V[6]), ms(V[7])) > max(ms(V[n]) for n in (3, 4, 5)),
    }


def on_chip_room(r, d):
    """Variant 8's room on chip."""
    return {
        "room_blocks": d.sw["on_chip"]["blocks"], "room_threads": d.V[8]["threads"],
        "room_reg_mb": fixed(r.number("fused.txt", r"hold ([\d.]+) MB in registers"), 1),
        "room_shm_mb": fixed(r.number("fused.txt", r"([\d.]+) MB in shared memory"), 1),
        "skipped_sizes": ", ".join(pts(s["points"]) for s in d.sw["skipped"] if s["name"] == "on_chip"),
    }


def breakdown(d):
    """The breakdown: each kernel's time, here and in eager PyTorch."""
    V, P, M5 = d.V, d.P, d.M5
    B = {(b["variant"][0], b["operation"]): b["time_us"]["median"] for b in d.bd["breakdown"]}
    EAGER = {b["operation"]: b["time_us"] for b in d.pt["breakdown"]}
    return {
        "breakdown": {
            "v1": {op: fixed(B[("1", op)]) for op in ("forward", "loss", "backward", "step", "total")},
            "v3": {op: fixed(B[("3", op)]) for op in ("fused kernel", "update", "total")},
            "eager": {op: fixed(EAGER[op]["median"], 1) for op in ("forward", "loss", "backward", "step", "total")},
        },
        "breakdown_longer": (B[("1", "total")] > V[1]["us_per_epoch"] and B[("3", "total")] > V[3]["us_per_epoch"]
                             and EAGER["total"]["median"] > P[(M5, "eager")]["us_per_epoch"]),
        "eager_forward_vs_v1": ratio(EAGER["forward"]["median"], B[("1", "forward")], 0),
        "eager_total_range": (fixed(EAGER["total"]["min"], 1), fixed(EAGER["total"]["max"], 1)),
        "fused_vs_forward": "less" if B[("3", "fused kernel")] < B[("1", "forward")] else "more",
    }


def epoch_trace(r, d):
    """The trace of one epoch per variant: each kernel's durations, the gaps between them, the busy share."""
    events = [e for e in r.json("trace.json")["traceEvents"] if e["ph"] == "X"]
    track = {t: i for i, t in enumerate(d.bd["trace"]["tracks"])}
    T = {int(t["variant"][0]): t for t in d.bd["trace"]["variants"]}

    def durations(t, op):
        return span([e["dur"] for e in events if e["tid"] == track[t] and e["name"].split(" ", 1)[1] == op], 1)
    v1, v3, v4 = "1 unfused: stream", "3 block_reduce: stream", "4 last_block: stream"
    one = sorted((e for e in events if e["tid"] == track[v1]), key=lambda e: e["ts"])
    return {"trace": {
        "forward": durations(v1, "forward"), "loss": durations(v1, "loss"), "backward": durations(v1, "backward"),
        "step": durations(v1, "step"), "gap": span([b["ts"] - a["ts"] - a["dur"] for a, b in zip(one, one[1:])], 1),
        "fused": durations(v3, "fused kernel"), "update": durations(v3, "update"),
        "last_block": durations(v4, "fused kernel + last block's step"),
        "v1_epoch": fixed(T[1]["epoch_us"]), "longer": all(T[n]["epoch_us"] > d.V[n]["us_per_epoch"] for n in T),
        "busy": {n: percent(T[n]["busy_percent"], 100) for n in T},
    }}


def streams(d):
    """Streams (variant 6)."""
    S, SIZES = d.S, d.SIZES
    slower6 = [n for n in SIZES if d.us(n, "streams") > d.us(n, "block_reduce")]
    return {"streams_every_size": len(slower6) == len(SIZES),
            "streams_slower_sizes": f"{len(slower6)} of the {len(SIZES)}",
            "streams_big": [(pts(n), percent(abs(ms(S[(n, "streams")]) - ms(S[(n, "block_reduce")])),
                                             ms(S[(n, "block_reduce")]), 1),
                             faster_or_slower(ms(S[(n, "streams")]), ms(S[(n, "block_reduce")]))) for n in d.BIG[-2:]]}


def small_sizes(d):
    """Launches: the small sizes, the graph and the persistent kernels."""
    SMALL, MID, NUM = d.SMALL, d.MID, d.NUM
    cross = next((n for n in MID if d.us(n, "on_chip") < d.us(n, "persistent")), None)
    return {"small_first": pts(SMALL[0]), "small_last": pts(SMALL[-1]), "mid_last": pts(MID[-1]),
            "small_rows": [{"number": NUM[name], "name": name, "launches": d.V[NUM[name]]["launches_per_epoch"],
                            "range": span([d.us(n, name) for n in SMALL])} for name in NUM if name != "atomic"],
            "v7_wins_small": all(d.fastest(n) == "persistent" for n in SMALL),
            "v7_mid": fixed(d.us(MID[-1], "persistent")),
            "v8_beats_7_from": pts(cross) if cross else ""}


def barrier_table(d):
    """{barrier name: its row of barrier.json}."""
    return {b["barrier"].split(":")[0].split(" (")[0]: b for b in d.bar["barrier"]}


def barrier_what(row):
    """What a barrier is, from its row's name: 'grid.sync(): what' or 'name (what)'."""
    name = row["barrier"]
    return name.split(": ", 1)[1] if ": " in name else name.split(" (")[1].rstrip(")")


def grid_sync_us(d):
    return barrier_table(d)["grid.sync()"]["ns"] / 1000


def barriers(d):
    """The barrier inside a persistent kernel: grid.sync() and the hand-made ones, against a kernel boundary."""
    BAR = barrier_table(d)
    grid_us, epoch8 = grid_sync_us(d), d.bar["on_chip_epoch_us"]
    NS = {k: b["ns"] / 1000 for k, b in BAR.items() if "ns" in b}
    inside = {k: v for k, v in NS.items() if k != "kernel boundary"}
    return {"grid_us": fixed(grid_us), "grid_share": percent(grid_us, epoch8), "epoch8": fixed(epoch8),
            "grid_vs_v7_small": percent(grid_us, d.us(d.SMALL[0], "persistent")),
            "barriers": [{"name": k, "ns": f"{b['ns']:.0f}" if "ns" in b else "skipped", "what": barrier_what(b)}
                         for k, b in BAR.items()],
            "barrier_best": min(inside, key=inside.get),
            "boundary_cheaper": NS["kernel boundary"] < min(inside.values()),
            "flags_vs_counter": "more" if NS["flags"] > NS["counter"] else "less"}


def on_chip_and_atomics(d):
    """Variant 8 across the middle sizes, beside its barrier; the atomics' growth over the small sizes."""
    SMALL, M5, grid_us = d.SMALL, d.M5, grid_sync_us(d)
    flat = [d.us(n, "on_chip") for n in d.MID]
    base = min(flat)
    grow2 = d.us(SMALL[-1], "atomic") / d.us(SMALL[0], "atomic")
    scatter = max(max(d.us(n, name) for n in SMALL) / min(d.us(n, name) for n in SMALL) - 1 for name in d.NUM if name != "atomic")
    return {"v8_flat": span(flat), "v8_base": fixed(base, 1), "v8_besides_barrier": fixed(base - grid_us),
            "v8_5m": fixed(d.us(M5, "on_chip")), "v8_data_part": fixed(d.us(M5, "on_chip") - base),
            "v8_without_barrier": fixed(d.us(M5, "on_chip") - grid_us), "mid_first": pts(d.MID[0]),
            "atomic_growth": f"{grow2:.1f}", "others_within": percent(scatter)}


def best_big(d):
    """The fastest variant at the largest size, variant 8 (which skips it) aside."""
    return d.fastest(d.BIG[-1], [n for n in d.NUM if n != "on_chip"])


def bandwidth(d):
    """Bandwidth: the sweep's ceiling and the big sizes."""
    S, BIG, best = d.S, d.BIG, best_big(d)
    return {"sweep_copy_gbps": f"{d.sw['copy_gbps']:.0f}", "big": [pts(n) for n in BIG[-2:]],
            "best_big": best, "best_big_number": d.NUM[best],
            "best_big_pct": [d.sweep_pct(n, best) for n in BIG[-2:]],
            "best_big_over": any(S[(n, best)]["copy_fraction"] > 1 for n in BIG[-2:]),
            "v34_big": [f"{fixed(x, 1)}%" for x in (min(100 * S[(n, v)]["copy_fraction"] for n in BIG[-2:] for v in ("block_reduce", "last_block")),
                                                    max(100 * S[(n, v)]["copy_fraction"] for n in BIG[-2:] for v in ("block_reduce", "last_block")))]}


def nsight_compute(r, d):
    """Nsight Compute on the fused kernel at 50M points; variant 4's grid."""
    q = {k: r.number("ncu_fused_50M.txt", pattern + r"\s+\S*\s+([\d.,]+)") for k, pattern in (
        ("time", "Duration"), ("dram", "DRAM Throughput"), ("l2", "L2 Hit Rate"),
        ("spills", "Local Memory Spilling Requests"), ("sm", r"Compute \(SM\) Throughput"))}
    ncu_mb = r.number("ncu_fused_50M.txt", r"need ([\d.]+) MB")
    train_share = d.fused["train_points"] / d.M5
    ncu_points = next((n for n in d.SIZES if round(n * train_share * 8 / 1e6) == round(ncu_mb)), None)
    v4 = d.S[(ncu_points, "last_block")]["copy_fraction"] if ncu_points else None
    return {"ncu_v4_copy": percent(v4, digits=1) if v4 else None,
            "copy_of_peak": percent(q["dram"] / 100 / v4) if v4 else None,  # the copy's share of the DRAM peak
            "ncu": {"time": fixed(q["time"]), "dram": fixed(q["dram"]), "l2": fixed(q["l2"]),
                    "spills": f"{q['spills']:.0f}", "sm": fixed(q["sm"])},
            "ncu_mb": f"{ncu_mb:.0f}",
            "blocks_per_sm": d.V[4]["blocks"] // d.sms, "blocks4": d.V[4]["blocks"], "threads4": d.V[4]["threads"]}


def l2_and_graph(d):
    """The L2: variant 5's time as a fixed cost plus reading the data, below and above the L2's size."""
    SMALL, BIG, M5 = d.SMALL, d.BIG, d.M5
    fix = min(d.us(n, "graph") for n in SMALL)

    def sum_at(n):  # the small sizes' fixed cost, plus reading the data at the copy's rate
        return fixed(fix + n * 0.8 * 8 / d.sw["copy_gbps"] / 1e3, 1)
    best = best_big(d)
    return {"l2_fits": d.train_mb < d.l2_mib * 1.048576, "v5_small": span([d.us(n, "graph") for n in SMALL]),
            "v5_fix": fixed(fix, 1), "v5_sum_5m": sum_at(M5), "v5_5m": fixed(d.us(M5, "graph")),
            "big_first": pts(BIG[0]), "big_first_mb": f"{2 * d.train_mb:.0f}", "v5_sum_big": sum_at(BIG[0]),
            "v5_big": fixed(d.us(BIG[0], "graph")),
            "v5_5m_vs_big": "less" if d.V[5]["copy_percent"] / 100 < max(d.S[(n, best)]["copy_fraction"] for n in BIG[-2:])
            else "more"}


def chapter01(book):
    """The roofline: chapter 01's ridge point on its GPU (read when a page asks)."""
    r01 = book.results("01_device_query")
    ridge = r01.number("device_query_bench.txt", r"ridge points.*?fp32 (\d+)")
    return {"ridge_fp32": f"{ridge:.0f}",
            "gpu": r01.record("device_query_bench.txt")["gpus"].split(" x ", 1)[1].replace("NVIDIA ", "")}


def against_pytorch(d):
    """Against PyTorch: every size of both sweeps, the fastest CUDA variant against eager, graph and compile."""
    S, P, SIZES = d.S, d.P, d.SIZES
    rows, gaps = [], []
    for n in SIZES:
        best = d.fastest(n)
        e, g, c = (P[(n, m)]["training_ms"] for m in ("eager", "graph", "compile"))
        gap = e["median"] / ms(S[(n, best)])
        gaps.append((gap, n))
        rows.append({"points": pts(n), "variant": f"{d.NUM[best]} {best}", "cuda": significant(ms(S[(n, best)])),
                     "eager": with_spread(e), "graph": with_spread(g, 2), "compile": with_spread(c),
                     "gap": ratio(e["median"], ms(S[(n, best)]), 0),
                     "graph_gap": ratio(g["median"], ms(S[(n, best)]), 0)})

    def gap_range(n):  # eager's fastest and slowest runs over the fastest CUDA variant's median
        e = P[(n, "eager")]["training_ms"]
        return ratio(e["min"], ms(S[(n, d.fastest(n))]), 0), ratio(e["max"], ms(S[(n, d.fastest(n))]), 0)
    return {"torch_rows": rows, "torch_runs": P[(d.M5, "eager")]["training_ms"]["runs"],
            "gap_first": ratio(gaps[0][0], 1, 0), "gap_last": ratio(gaps[-1][0], 1, 0),
            "gap_first_range": gap_range(SIZES[0]), "gap_last_range": gap_range(SIZES[-1]),
            "gap_max": ratio(max(gaps)[0], 1, 0), "gap_max_at": pts(max(gaps)[1]),
            "gap_min": ratio(min(gaps)[0], 1, 0), "gap_min_at": pts(min(gaps)[1]),
            "saved_first_ms": fixed(ms(P[(SIZES[0], "eager")]) - ms(S[(SIZES[0], d.fastest(SIZES[0]))]), 0),
            "saved_last_ms": fixed(ms(P[(SIZES[-1], "eager")]) - ms(S[(SIZES[-1], d.fastest(SIZES[-1]))]), 0),
            "v1_vs_4_last": times(d.us(SIZES[-1], "last_block"), d.us(SIZES[-1], "unfused")),
            "size_first": pts(SIZES[0]), "size_last": pts(SIZES[-1])}


def pytorch_modes(book, r, d):
    """PyTorch's three modes against each other: eager, a CUDA graph's replay, torch.compile."""
    S, P, SIZES, M5 = d.S, d.P, d.SIZES, d.M5
    graph_gaps = [P[(n, "graph")]["training_ms"]["median"] / ms(S[(n, d.fastest(n))]) for n in SIZES]
    eager_epoch = [P[(n, "eager")]["us_per_epoch"] for n in SIZES if n <= M5]

    def compile_sizes(best):
        pick = min if best else max
        found = [pts(n) for n in SIZES if pick(("eager", "graph", "compile"), key=lambda m: ms(P[(n, m)])) == "compile"]
        return ", ".join(found) or "no size"
    e5, g5 = P[(M5, "eager")], P[(M5, "graph")]
    return {"graph_gap": (ratio(min(graph_gaps), 1, 0), ratio(max(graph_gaps), 1, 0)),
            "eager_epoch_range": (fixed(min(eager_epoch), 0), fixed(max(eager_epoch), 0)),
            "replay_vs_eager_big": max(percent(abs(ms(P[(n, "eager")]) - ms(P[(n, "graph")])), ms(P[(n, "graph")]), 1)
                                       for n in d.BIG[-2:]),
            "compile_fastest": compile_sizes(True), "compile_slowest": compile_sizes(False),
            "eager5": with_spread(e5["training_ms"]),
            "graph_vs_eager_5m": ratio(ms(e5), ms(g5), 1),
            "graph_vs_eager_first": ratio(ms(P[(SIZES[0], "eager")]), ms(P[(SIZES[0], "graph")]), 0),
            "graph_first_ms": fixed(ms(P[(SIZES[0], "graph")])), "eager_first_ms": fixed(ms(P[(SIZES[0], "eager")]), 1),
            "same_run_05": book.same_run((r, "fused.json"), (r, "sweep.json"), (r, "pytorch_sweep.json"))}


def chapter04(book, r):
    """Chapter 04's eager baseline and its CUDA program: one job, two loops (read when a page asks)."""
    r04 = book.results("04_linear_regression")
    t04, c04 = r04.json("pytorch_cuda.json"), r04.json("cuda.json")
    eager04, cuda04 = t04["result"][0]["training_ms"], c04["result"][0]["training_ms"]
    py04 = nonblank_lines("04_linear_regression/pytorch_regression.py")
    cu04 = nonblank_lines("04_linear_regression/linear_regression.cu")
    return {"eager": with_spread(eager04), "every": t04["print_every"],
            "same_run": book.same_run((r04, "pytorch_cuda.json"), (r04, "cuda.json")),
            "runs_with_05": book.runs_phrase((r04, "cuda.json"), (r, "fused.json")),
            "cuda_ms": fixed(cuda04["median"]), "cuda_vs_eager": ratio(eager04["median"], cuda04["median"]),
            "py_lines": py04, "cu_lines": cu04, "cu_over_py": f"{cu04 / py04:.1f}"}  # a ratio of line counts, no measurement


def effort(d):
    """Development effort: lines of code, counted now."""
    g5 = d.P[(d.M5, "graph")]
    lesson = nonblank_lines(f"{CHAPTER}/fused_kernels.cu", f"{CHAPTER}/persistent_kernels.cu", f"{CHAPTER}/ladder.cpp",
                            "common/fused_sums.cuh")
    return {"lesson_lines": count(lesson),
            "graph_lines": class_lines(f"{CHAPTER}/pytorch_fused.py", "Graph"),
            "eager_lines": class_lines(f"{CHAPTER}/pytorch_fused.py", "Eager"),
            "v5_vs_torch_graph": ratio(ms(g5), ms(d.S[(d.M5, "graph")]), 1),
            "v8_vs_torch_graph": ratio(ms(g5), ms(d.S[(d.M5, "on_chip")]), 0)}


def notes_summary(r, d):
    """NOTES: the sweep's summary table, as plot_fused.py wrote it, and the CPU's outlier in it."""
    cpu = sorted((s for s in d.pt["sweep"] if s["variant"] == "cpu"), key=lambda s: s["points"])
    out_of_order = next((a, b) for a, b in zip(cpu, cpu[1:]) if ms(a) > ms(b))
    slow = [s for s in cpu if s["points"] > out_of_order[0]["points"] and s["training_ms"]["max"] > 2 * ms(s)]
    cpu_wins = [pts(s["points"]) for s in cpu if ms(s) < ms(d.P[(s["points"], "eager")])]
    cpu_wins_slowest = all(s["training_ms"]["max"] < d.P[(s["points"], "eager")]["training_ms"]["min"]
                           for s in cpu if ms(s) < ms(d.P[(s["points"], "eager")]))
    return {"cpu_outlier": {"points": pts(out_of_order[0]["points"]), "runs": out_of_order[0]["training_ms"]["runs"],
                            "min": fixed(out_of_order[0]["training_ms"]["min"], 0),
                            "max": fixed(out_of_order[0]["training_ms"]["max"], 0),
                            "next": pts(out_of_order[1]["points"]), "next_ms": fixed(ms(out_of_order[1]), 0),
                            "slow_sizes": " and ".join(pts(s["points"]) for s in slow),
                            "slow_ms": " and ".join(fixed(s["training_ms"]["max"], 0) for s in slow)},
            "cpu_beats_eager_at": " and ".join(cpu_wins), "cpu_wins_slowest": cpu_wins_slowest,
            "summary": lambda: "\n".join(l for l in r.text("summary.md") if not l.startswith("plot_fused.py: wrote")).strip()}
