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


# ------------------------------------------------------------------------- the values
def values(book):
    r = book.results(CHAPTER)
    fused, sw, bd, bar, pt = (r.json(f"{f}.json") for f in ("fused", "sweep", "breakdown", "barrier", "pytorch_sweep"))
    V = {v["variant"]: v for v in fused["variants"]}            # the lesson's table, by number
    NUM = {v["name"]: v["variant"] for v in fused["variants"]}  # name -> number
    S = {(s["points"], s["variant"]): s for s in sw["sweep"]}   # the sweep, by size and name
    P = {(s["points"], s["variant"]): s for s in pt["sweep"]}   # PyTorch's modes, the same way
    SIZES = sorted({s["points"] for s in sw["sweep"]})
    M5 = fused["points"]
    SMALL = [n for n in SIZES if n <= 100000]
    MID = [n for n in SIZES if n < M5]
    BIG = [n for n in SIZES if n > M5]
    train_mb = fused["train_points"] * 8 / 1e6  # X and y of the training points, float32
    gpu = fused["device"].replace("NVIDIA ", "")
    sms = int(r.number("fused.txt", r"\((\d+) SMs"))
    l2_mib = r.number("fused.txt", r"(\d+) MiB L2")

    def us(n, name):
        return S[(n, name)]["us_per_epoch"]

    def sweep_pct(n, name):
        return percent(S[(n, name)]["copy_fraction"], digits=1)

    def fastest(n, names=NUM):
        return min((s for s in sw["sweep"] if s["points"] == n and s["variant"] in names), key=ms)["variant"]

    def lesson_pct(number):
        return percent(V[number]["copy_percent"], 100, 1)

    out = {"r": r, "gpu": gpu, "sms": sms, "l2_mib": f"{l2_mib:.0f}", "points": pts(M5),
           "train_mb": f"{train_mb:.0f}", "half_mb": f"{train_mb / 2:.0f}", "epochs": fused["epochs"]}

    # --- the sample output and its legend
    out |= {
        "pct": {n: lesson_pct(n) for n in V},
        "us": {n: fixed(V[n]["us_per_epoch"]) for n in V},
        "ms": {n: fixed(ms(V[n]), 3) for n in V},
        "launches": {n: V[n]["launches_per_epoch"] for n in V},
        "v2_loss_err": f"{V[2]['loss_error']:.1e}",
        "v2_vs_4": times(V[2]["us_per_epoch"], V[4]["us_per_epoch"])[0],
        "v2_vs_4_word": times(V[2]["us_per_epoch"], V[4]["us_per_epoch"])[1],
        "atomics_m": f"{3 * fused['train_points'] / 1e6:.0f}M",
        "v1_vs_4": times(V[4]["us_per_epoch"], V[1]["us_per_epoch"]),
        "fewer_launches": V[1]["launches_per_epoch"] - V[4]["launches_per_epoch"],
        "v8_vs_5": times(ms(V[8]), ms(V[5])),
        "v67_slower": min(ms(V[6]), ms(V[7])) > max(ms(V[n]) for n in (3, 4, 5)),
    }

    # --- variant 8's room on chip
    room = sw["on_chip"]
    out |= {
        "room_blocks": room["blocks"], "room_threads": V[8]["threads"],
        "room_reg_mb": fixed(r.number("fused.txt", r"hold ([\d.]+) MB in registers"), 1),
        "room_shm_mb": fixed(r.number("fused.txt", r"([\d.]+) MB in shared memory"), 1),
        "skipped_sizes": ", ".join(pts(s["points"]) for s in sw["skipped"] if s["name"] == "on_chip"),
    }

    # --- the breakdown (per kernel) and the trace
    B = {(b["variant"][0], b["operation"]): b["time_us"]["median"] for b in bd["breakdown"]}
    EAGER = {b["operation"]: b["time_us"] for b in pt["breakdown"]}
    out["breakdown"] = {
        "v1": {op: fixed(B[("1", op)]) for op in ("forward", "loss", "backward", "step", "total")},
        "v3": {op: fixed(B[("3", op)]) for op in ("fused kernel", "update", "total")},
        "eager": {op: fixed(EAGER[op]["median"], 1) for op in ("forward", "loss", "backward", "step", "total")},
    }
    out["breakdown_longer"] = (B[("1", "total")] > V[1]["us_per_epoch"] and B[("3", "total")] > V[3]["us_per_epoch"]
                               and EAGER["total"]["median"] > P[(M5, "eager")]["us_per_epoch"])
    out["eager_forward_vs_v1"] = ratio(EAGER["forward"]["median"], B[("1", "forward")], 0)
    out["eager_total_range"] = (fixed(EAGER["total"]["min"], 1), fixed(EAGER["total"]["max"], 1))
    out["fused_vs_forward"] = "less" if B[("3", "fused kernel")] < B[("1", "forward")] else "more"

    events = [e for e in r.json("trace.json")["traceEvents"] if e["ph"] == "X"]
    track = {t: i for i, t in enumerate(bd["trace"]["tracks"])}
    T = {int(t["variant"][0]): t for t in bd["trace"]["variants"]}

    def durations(t, op):
        return span([e["dur"] for e in events if e["tid"] == track[t] and e["name"].split(" ", 1)[1] == op], 1)
    v1, v3, v4 = "1 unfused: stream", "3 block_reduce: stream", "4 last_block: stream"
    one = sorted((e for e in events if e["tid"] == track[v1]), key=lambda e: e["ts"])
    out["trace"] = {
        "forward": durations(v1, "forward"), "loss": durations(v1, "loss"), "backward": durations(v1, "backward"),
        "step": durations(v1, "step"), "gap": span([b["ts"] - a["ts"] - a["dur"] for a, b in zip(one, one[1:])], 1),
        "fused": durations(v3, "fused kernel"), "update": durations(v3, "update"),
        "last_block": durations(v4, "fused kernel + last block's step"),
        "v1_epoch": fixed(T[1]["epoch_us"]), "longer": all(T[n]["epoch_us"] > V[n]["us_per_epoch"] for n in T),
        "busy": {n: percent(T[n]["busy_percent"], 100) for n in T},
    }

    # --- streams (variant 6)
    slower6 = [n for n in SIZES if us(n, "streams") > us(n, "block_reduce")]
    out["streams_every_size"] = len(slower6) == len(SIZES)
    out["streams_slower_sizes"] = f"{len(slower6)} of the {len(SIZES)}"
    out["streams_big"] = [(pts(n), percent(abs(ms(S[(n, "streams")]) - ms(S[(n, "block_reduce")])),
                                         ms(S[(n, "block_reduce")]), 1),
                           faster_or_slower(ms(S[(n, "streams")]), ms(S[(n, "block_reduce")]))) for n in BIG[-2:]]

    # --- launches: small sizes, the graph, the persistent kernels, the barrier
    out["small_first"], out["small_last"], out["mid_last"] = pts(SMALL[0]), pts(SMALL[-1]), pts(MID[-1])
    out["small_rows"] = [{"number": NUM[name], "name": name, "launches": V[NUM[name]]["launches_per_epoch"],
                          "range": span([us(n, name) for n in SMALL])} for name in NUM if name != "atomic"]
    out["v7_wins_small"] = all(fastest(n) == "persistent" for n in SMALL)
    out["v7_mid"] = fixed(us(MID[-1], "persistent"))
    cross = next((n for n in MID if us(n, "on_chip") < us(n, "persistent")), None)
    out["v8_beats_7_from"] = pts(cross) if cross else ""
    BAR = {b["barrier"].split(":")[0].split(" (")[0]: b for b in bar["barrier"]}
    grid_us = BAR["grid.sync()"]["ns"] / 1000
    epoch8 = bar["on_chip_epoch_us"]
    out |= {"grid_us": fixed(grid_us), "grid_share": percent(grid_us, epoch8), "epoch8": fixed(epoch8),
            "grid_vs_v7_small": percent(grid_us, us(SMALL[0], "persistent"))}
    out["barriers"] = [{"name": k, "ns": f"{b['ns']:.0f}" if "ns" in b else "skipped",
                        "what": b["barrier"].split(": ", 1)[1] if ": " in b["barrier"] else b["barrier"].split(" (")[1].rstrip(")")}
                       for k, b in BAR.items()]
    NS = {k: b["ns"] / 1000 for k, b in BAR.items() if "ns" in b}
    inside = {k: v for k, v in NS.items() if k != "kernel boundary"}
    out["barrier_best"] = min(inside, key=inside.get)
    out["boundary_cheaper"] = NS["kernel boundary"] < min(inside.values())
    out["flags_vs_counter"] = "more" if NS["flags"] > NS["counter"] else "less"
    flat = [us(n, "on_chip") for n in MID]
    base = min(flat)
    out |= {"v8_flat": span(flat), "v8_base": fixed(base, 1), "v8_besides_barrier": fixed(base - grid_us),
            "v8_5m": fixed(us(M5, "on_chip")), "v8_data_part": fixed(us(M5, "on_chip") - base),
            "v8_without_barrier": fixed(us(M5, "on_chip") - grid_us), "mid_first": pts(MID[0])}
    grow2 = us(SMALL[-1], "atomic") / us(SMALL[0], "atomic")
    scatter = max(max(us(n, name) for n in SMALL) / min(us(n, name) for n in SMALL) - 1 for name in NUM if name != "atomic")
    out |= {"atomic_growth": f"{grow2:.1f}", "others_within": percent(scatter)}

    # --- bandwidth: the sweep's ceiling, the big sizes, Nsight Compute, the L2
    best_big = fastest(BIG[-1], [n for n in NUM if n != "on_chip"])
    out |= {"sweep_copy_gbps": f"{sw['copy_gbps']:.0f}", "big": [pts(n) for n in BIG[-2:]],
            "best_big": best_big, "best_big_number": NUM[best_big],
            "best_big_pct": [sweep_pct(n, best_big) for n in BIG[-2:]],
            "best_big_over": any(S[(n, best_big)]["copy_fraction"] > 1 for n in BIG[-2:]),
            "v34_big": [f"{fixed(x, 1)}%" for x in (min(100 * S[(n, v)]["copy_fraction"] for n in BIG[-2:] for v in ("block_reduce", "last_block")),
                                                    max(100 * S[(n, v)]["copy_fraction"] for n in BIG[-2:] for v in ("block_reduce", "last_block")))]}
    q = {k: r.number("ncu_fused_50M.txt", pattern + r"\s+\S*\s+([\d.,]+)") for k, pattern in (
        ("time", "Duration"), ("dram", "DRAM Throughput"), ("l2", "L2 Hit Rate"),
        ("spills", "Local Memory Spilling Requests"), ("sm", r"Compute \(SM\) Throughput"))}
    out["ncu"] = {"time": fixed(q["time"]), "dram": fixed(q["dram"]), "l2": fixed(q["l2"]),
                  "spills": f"{q['spills']:.0f}", "sm": fixed(q["sm"])}
    ncu_mb = r.number("ncu_fused_50M.txt", r"need ([\d.]+) MB")
    out["ncu_mb"] = f"{ncu_mb:.0f}"
    out["blocks_per_sm"], out["blocks4"] = V[4]["blocks"] // sms, V[4]["blocks"]
    out["threads4"] = V[4]["threads"]
    fix = min(us(n, "graph") for n in SMALL)
    def sum_at(n):  # the small sizes' fixed cost, plus reading the data at the copy's rate
        return fixed(fix + n * 0.8 * 8 / sw["copy_gbps"] / 1e3, 1)
    out |= {"l2_fits": train_mb < l2_mib * 1.048576, "v5_small": span([us(n, "graph") for n in SMALL]),
            "v5_fix": fixed(fix, 1), "v5_sum_5m": sum_at(M5), "v5_5m": fixed(us(M5, "graph")),
            "big_first": pts(BIG[0]), "big_first_mb": f"{2 * train_mb:.0f}", "v5_sum_big": sum_at(BIG[0]),
            "v5_big": fixed(us(BIG[0], "graph")),
            "v5_5m_vs_big": "less" if V[5]["copy_percent"] / 100 < max(S[(n, best_big)]["copy_fraction"] for n in BIG[-2:]) else "more"}

    # --- the roofline: chapter 01's ridge point on its GPU
    def chapter01():
        r01 = book.results("01_device_query")
        ridge = r01.number("device_query_bench.txt", r"ridge points.*?fp32 (\d+)")
        return {"ridge_fp32": f"{ridge:.0f}",
                "gpu": r01.record("device_query_bench.txt")["gpus"].split(" x ", 1)[1].replace("NVIDIA ", "")}
    out["ch01"] = Lazy(chapter01)

    # --- against PyTorch: every size of both sweeps
    rows, gaps = [], []
    for n in SIZES:
        best = fastest(n)
        e, g, c = (P[(n, m)]["training_ms"] for m in ("eager", "graph", "compile"))
        gap = e["median"] / ms(S[(n, best)])
        gaps.append((gap, n))
        rows.append({"points": pts(n), "variant": f"{NUM[best]} {best}", "cuda": significant(ms(S[(n, best)])),
                     "eager": with_spread(e), "graph": with_spread(g, 2), "compile": with_spread(c),
                     "gap": ratio(e["median"], ms(S[(n, best)]), 0),
                     "graph_gap": ratio(g["median"], ms(S[(n, best)]), 0)})
    out["torch_rows"] = rows
    out["torch_runs"] = P[(M5, "eager")]["training_ms"]["runs"]
    out["gap_first"], out["gap_last"] = ratio(gaps[0][0], 1, 0), ratio(gaps[-1][0], 1, 0)
    def gap_range(n):  # eager's fastest and slowest runs over the fastest CUDA variant's median
        e = P[(n, "eager")]["training_ms"]
        return ratio(e["min"], ms(S[(n, fastest(n))]), 0), ratio(e["max"], ms(S[(n, fastest(n))]), 0)
    out["gap_first_range"], out["gap_last_range"] = gap_range(SIZES[0]), gap_range(SIZES[-1])
    out["gap_max"], out["gap_max_at"] = ratio(max(gaps)[0], 1, 0), pts(max(gaps)[1])
    out["gap_min"], out["gap_min_at"] = ratio(min(gaps)[0], 1, 0), pts(min(gaps)[1])
    out["size_first"], out["size_last"] = pts(SIZES[0]), pts(SIZES[-1])
    graph_gaps = [P[(n, "graph")]["training_ms"]["median"] / ms(S[(n, fastest(n))]) for n in SIZES]
    out["graph_gap"] = (ratio(min(graph_gaps), 1, 0), ratio(max(graph_gaps), 1, 0))
    eager_epoch = [P[(n, "eager")]["us_per_epoch"] for n in SIZES if n <= M5]
    out["eager_epoch_range"] = (fixed(min(eager_epoch), 0), fixed(max(eager_epoch), 0))
    out["replay_vs_eager_big"] = max(percent(abs(ms(P[(n, "eager")]) - ms(P[(n, "graph")])), ms(P[(n, "graph")]), 1)
                                     for n in BIG[-2:])
    def compile_sizes(best):
        pick = min if best else max
        found = [pts(n) for n in SIZES if pick(("eager", "graph", "compile"), key=lambda m: ms(P[(n, m)])) == "compile"]
        return ", ".join(found) or "no size"
    out["compile_fastest"], out["compile_slowest"] = compile_sizes(True), compile_sizes(False)
    e5, g5 = P[(M5, "eager")], P[(M5, "graph")]
    out |= {"eager5": with_spread(e5["training_ms"]),
            "graph_vs_eager_5m": ratio(ms(e5), ms(g5), 1),
            "graph_vs_eager_first": ratio(ms(P[(SIZES[0], "eager")]), ms(P[(SIZES[0], "graph")]), 0),
            "graph_first_ms": fixed(ms(P[(SIZES[0], "graph")])), "eager_first_ms": fixed(ms(P[(SIZES[0], "eager")]), 1),
            "same_run_05": book.same_run((r, "fused.json"), (r, "sweep.json"), (r, "pytorch_sweep.json"))}

    # --- chapter 04's eager baseline and its CUDA program: one job, two loops (read when a page asks)
    def chapter04():
        r04 = book.results("04_linear_regression")
        t04, c04 = r04.json("pytorch_cuda.json"), r04.json("cuda.json")
        eager04, cuda04 = t04["result"][0]["training_ms"], c04["result"][0]["training_ms"]
        py04 = nonblank_lines("04_linear_regression/pytorch_regression.py")
        cu04 = nonblank_lines("04_linear_regression/linear_regression.cu")
        return {"eager": with_spread(eager04), "every": t04["print_every"],
                "same_run": book.same_run((r04, "pytorch_cuda.json"), (r04, "cuda.json")),
                "cuda_ms": fixed(cuda04["median"]), "cuda_vs_eager": ratio(eager04["median"], cuda04["median"]),
                "py_lines": py04, "cu_lines": cu04, "cu_over_py": ratio(cu04, py04, 1)}
    out["ch04"] = Lazy(chapter04)

    # --- development effort: lines of code, counted now
    lesson = nonblank_lines(f"{CHAPTER}/fused_kernels.cu", f"{CHAPTER}/persistent_kernels.cu", f"{CHAPTER}/ladder.cpp",
                            "common/fused_sums.cuh")
    out |= {"lesson_lines": count(lesson),
            "graph_lines": class_lines(f"{CHAPTER}/pytorch_fused.py", "Graph"),
            "eager_lines": class_lines(f"{CHAPTER}/pytorch_fused.py", "Eager"),
            "v5_vs_torch_graph": ratio(ms(g5), ms(S[(M5, "graph")]), 1),
            "v8_vs_torch_graph": ratio(ms(g5), ms(S[(M5, "on_chip")]), 0)}

    # --- NOTES: the sweep's summary table, as plot_fused.py wrote it
    cpu = sorted((s for s in pt["sweep"] if s["variant"] == "cpu"), key=lambda s: s["points"])
    out_of_order = next((a, b) for a, b in zip(cpu, cpu[1:]) if ms(a) > ms(b))
    slow = [s for s in cpu if s["points"] > out_of_order[0]["points"] and s["training_ms"]["max"] > 2 * ms(s)]
    out["cpu_outlier"] = {"points": pts(out_of_order[0]["points"]), "runs": out_of_order[0]["training_ms"]["runs"],
                          "min": fixed(out_of_order[0]["training_ms"]["min"], 0),
                          "max": fixed(out_of_order[0]["training_ms"]["max"], 0),
                          "next": pts(out_of_order[1]["points"]), "next_ms": fixed(ms(out_of_order[1]), 0),
                          "slow_sizes": " and ".join(pts(s["points"]) for s in slow),
                          "slow_ms": " and ".join(fixed(s["training_ms"]["max"], 0) for s in slow)}
    out["summary"] = lambda: "\n".join(l for l in r.text("summary.md") if not l.startswith("plot_fused.py: wrote")).strip()
    return out
