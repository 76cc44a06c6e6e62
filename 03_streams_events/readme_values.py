"""readme_values.py: the figures of chapter 03's README.md.in and NOTES.md.in, from results/.

common/readme_render.py calls values(book) and drops each name into the templates.
"""
import re

from readme_figures import count, faster_or_slower, fixed, percent, ratio, spread

# The five C++ programs and the two PyTorch ones that measure a launch in the committed run.
CPP_RUNS = ["streams_events.json", "variant_slower_copy.json", "variant_compute_bound.json",
            "variant_8_chunks.json", "small_chunks_cpp.json"]
TORCH_RUNS = ["pytorch_streams.json", "small_chunks_pytorch.json"]
KERNELS_PER_EPOCH = 6  # chapter 04's loop: forward, loss (2), backward (2), step


def med(t):
    return t["median"] if isinstance(t, dict) else t


def ms(t):
    return fixed(med(t), 3)


def span_ms(t):
    """'6.133-6.434' of a timing, in ms."""
    return f"{fixed(t['min'], 3)}-{fixed(t['max'], 3)}"


def row(run, k):
    """The K-stream row of a run's pipeline table."""
    return next(p for p in run["pipeline"] if p["streams"] == k)


def best(run):
    return min(run["pipeline"], key=lambda p: med(p["time_ms"]))


def tie(a, b):
    """Chapter 02's rule: a gap between two medians inside the wider spread is a tie."""
    return abs(med(a) - med(b)) <= max(a["max"] - a["min"], b["max"] - b["min"])


def flags(command):
    """The flags of a provenance command line, its --json FILE left out."""
    words = command.split()
    program = words[1] if words[0] == "python3" else words[0]
    rest = words[2:] if words[0] == "python3" else words[1:]
    kept, skip = [], False
    for w in rest:
        if skip:
            skip = False
        elif w == "--json":
            skip = True
        else:
            kept.append(w)
    return program.rsplit("/", 1)[-1], " ".join(kept)


def chapter_04_loop(book):
    """Chapter 04's training loop: many launches back to back, the host never waiting between them."""
    r04 = book.results("04_linear_regression")
    c04 = r04.json("cuda.json")
    t04 = c04["result"][0]["training_ms"]
    n04 = KERNELS_PER_EPOCH * c04["epochs"]
    return {"epochs": c04["epochs"], "kernels": KERNELS_PER_EPOCH, "launches": count(n04),
            "reads": c04["epochs"] // c04["print_every"],
            "ms": fixed(med(t04), 2), "min_ms": fixed(t04["min"], 2), "max_ms": fixed(t04["max"], 2),
            "per_launch_us": fixed(1000 * med(t04) / n04, 1)}


def values(book):
    r = book.results("03_streams_events")
    j, pt = r.json("streams_events.json"), r.json("pytorch_streams.json")
    v = {"r": r}
    v |= workload(r, j)
    v |= launch(book, r, j, pt)
    v["ch04"] = lambda: chapter_04_loop(book)  # read only by the page that uses it (README, not NOTES)
    v["hundred"] = percent(1)
    v |= stages(j)
    v |= schedules(j)
    v |= timeline(r, j)
    v |= variants(r, j)
    v |= waits(j, pt)
    v |= default_stream(j)
    v |= against_pytorch(book, r, j, pt)
    v |= small_chunks(r)
    v |= drop_wait(r)
    v |= exercises(r)
    return v


def workload(r, j):
    """The workload and the sample output's header."""
    w, cal, b = j["workload"], j["workload"]["calibration"], j["bound"]
    kernel_len = r.number("streams_events.txt", r"== 2\..*: a (\d+) ms kernel")
    ds_kernel = r.number("streams_events.txt", r"== 6\..*two (\d+) ms kernels")
    return {"engines": j["async_engine_count"], "engines_per_direction": b["copy_engines_per_direction"],
            "chunks": w["chunks"], "iterations": w["iterations"], "iterations_slower": cal["iterations_for_slower_copy"],
            "cal_both_ms": ms(cal["copies_together_ms"]),
            "kernel_len_ms": f"{kernel_len:g}", "ds_kernel_ms": f"{ds_kernel:g}",
            "repeats": j["repeats"], "checked": count(j["ordering_check"]["checked_elements"]),
            "checked_chunks": j["ordering_check"]["checked_elements"] // w["chunk_elements"],
            "stale": j["ordering_check"]["stale_elements"], "producer_ms": f"{j['ordering_check']['producer_delay_us'] / 1000:g}",
            "passed": "PASS" if j["passed"] else "FAIL"}


def launch(book, r, j, pt):
    """Step 2: the launch, the read, and the launch figure across the run's programs."""
    a, pa = j["asynchrony"], pt["asynchrony"]
    launch = spread(a["launch_us"], 1, 1)
    v = {"launch_us": launch["median"], "launch_runs": a["launch_us"]["runs"],
         "read_ms": ms(a["read_blocked_ms"]), "kernel_ms": ms(a["kernel_ms"]),
         "read_share": percent(med(a["read_blocked_ms"]), med(a["kernel_ms"]), 1),
         "busy": "still busy" if a["returned_before_done"] else "already done",
         "torch_launch_us": fixed(med(pa["launch_us"]), 1), "torch_read_ms": ms(pa["read_blocked_ms"])}
    launches = [launch_row(r.json(name)) for name in CPP_RUNS + TORCH_RUNS]
    cpp_medians = [x["median_value"] for x in launches[:len(CPP_RUNS)]]
    cpp_all = [r.json(n)["asynchrony"]["launch_us"] for n in CPP_RUNS]
    return v | {"launches": launches,
                "launch_median_lo": fixed(min(cpp_medians), 1), "launch_median_hi": fixed(max(cpp_medians), 1),
                "launch_lo": fixed(min(t["min"] for t in cpp_all), 1), "launch_hi": fixed(max(t["max"] for t in cpp_all), 1),
                "launch_same_run": book.same_run(*[(r, n) for n in CPP_RUNS + TORCH_RUNS])}


def launch_row(run):
    """One program's launch figure: its name, its flags and the spread of its launch time."""
    program, args = flags(run["provenance"]["command"])
    t = spread(run["asynchrony"]["launch_us"], 1, 1)
    return {"program": program, "flags": args, **t, "median_value": run["asynchrony"]["launch_us"]["median"]}


def stages(j):
    """Step 3: the stages and the bounds."""
    s, b, w = j["stages"], j["bound"], j["workload"]
    h2d, comp, d2h, both = (med(s[k]) for k in ("h2d_ms", "compute_ms", "d2h_ms", "copies_both_directions_ms"))
    serial = j["serial_ms"]
    return {"h2d_ms": fixed(h2d, 3), "comp_ms": fixed(comp, 3), "d2h_ms": fixed(d2h, 3), "both_ms": fixed(both, 3),
            "both_span": span_ms(s["copies_both_directions_ms"]),
            "h2d_gbps": fixed(s["h2d_gbps"], 1), "both_gbps": fixed(w["total_bytes"] / both / 1e6, 1),
            "serial_ms": ms(serial), "serial_span": span_ms(serial),
            "bound": ratio(b["copies_together_speedup"], 1),
            "fill_cap": ratio(b["fill_drain_speedup"], 1),
            "busiest": "compute" if comp >= both else "both copies at once", "comp_plus_d2h": fixed(comp + d2h, 2)}


def schedules(j):
    """Step 4: the schedules."""
    b, serial = j["bound"], j["serial_ms"]
    k1, k2, k4, k8, ts = row(j, 1), row(j, 2), row(j, 4), row(j, 8), j["two_stream"]
    k4_ms = med(k4["time_ms"])
    gap, fill = k4_ms - b["copies_together_ms"], b["fill_drain_ms"] - b["copies_together_ms"]
    handoffs = 3 * j["workload"]["chunks"] - 1
    extra = med(k1["time_ms"]) - med(serial)
    return {"k1_ms": ms(k1["time_ms"]), "k1_span": span_ms(k1["time_ms"]), "k1_x": ratio(k1["speedup"], 1),
            "k1_word": faster_or_slower(med(k1["time_ms"]), med(serial)),
            "k2_x": ratio(k2["speedup"], 1),
            "k4_ms": ms(k4_ms), "k4_span": span_ms(k4["time_ms"]), "k4_x": ratio(k4["speedup"], 1),
            "k4_word": faster_or_slower(k4_ms, med(serial)), "k4_eff": percent(k4["efficiency"], digits=1),
            "k8_ms": ms(k8["time_ms"]), "k8_span": span_ms(k8["time_ms"]), "k8_ties_k4": tie(k4["time_ms"], k8["time_ms"]),
            "fill_in_gap": 0 < fill < gap, "fill_share": percent(fill, gap), "gap_ms": fixed(gap, 2),
            "fill_ms": fixed(fill, 2), "bound_ms": fixed(b["copies_together_ms"], 3),
            "ts_ms": ms(ts["time_ms"]), "ts_span": span_ms(ts["time_ms"]), "ts_x": ratio(ts["speedup"], 1),
            "ts_word": faster_or_slower(med(ts["time_ms"]), med(serial)),
            "handoffs": handoffs, "handoff_extra_ms": fixed(extra, 3), "per_handoff_us": fixed(1000 * extra / handoffs, 1)}


def timeline(r, j):
    """The timeline."""
    k4_ms = med(row(j, 4)["time_ms"])
    tl = {t["track"]: t for t in r.json("timeline.json")["tracks"]}
    traced = max(t["last_end_ms"] for n, t in tl.items() if n.startswith("K=4"))
    return {"traced_ms": fixed(traced, 3), "traced_diff": percent(abs(traced - k4_ms), k4_ms),
            "traced_word": faster_or_slower(traced, k4_ms),
            "transfer_end_ms": fixed(tl["two streams: transfer"]["last_end_ms"], 1)}


def variants(r, j):
    """The variants."""
    comp = med(j["stages"]["compute_ms"])
    vc, v8, vs = r.json("variant_compute_bound.json"), r.json("variant_8_chunks.json"), r.json("variant_slower_copy.json")
    vck4, v8k4, vsk4 = row(vc, 4), row(v8, 4), row(vs, 4)
    v8c, v8both = med(v8["stages"]["compute_ms"]), med(v8["stages"]["copies_both_directions_ms"])
    return {"vc_comp_ms": ms(vc["stages"]["compute_ms"]),
            "vc_comp_span": span_ms(vc["stages"]["compute_ms"]),
            "vc_k4_ms": ms(vck4["time_ms"]), "vc_k4_span": span_ms(vck4["time_ms"]),
            "vc_eff": percent(vck4["efficiency"], digits=1), "vc_over": vck4["efficiency"] > 1,
            "vc_bound": ratio(vc["bound"]["copies_together_speedup"], 1),
            "v8_chunks": v8["workload"]["chunks"], "v8_mib": f"{v8['workload']['chunk_bytes'] / 2**20:g}",
            "v8_k4_x": ratio(v8k4["speedup"], 1), "v8_eff": percent(v8k4["efficiency"], digits=1),
            "v8_bound": ratio(v8["bound"]["copies_together_speedup"], 1), "v8_cap": ratio(v8["bound"]["fill_drain_speedup"], 1),
            "v8_comp_ms": fixed(v8c, 3), "v8_comp_word": faster_or_slower(v8c, comp),
            "v8_both_sets": v8both > v8c, "v8_setter_ms": fixed(max(v8both, v8c), 3),
            "vs_comp_ms": ms(vs["stages"]["compute_ms"]), "vs_bound_alone": ratio(vs["bound"]["stages_alone_speedup"], 1),
            "vs_bound": ratio(vs["bound"]["copies_together_speedup"], 1), "vs_k4_x": ratio(vsk4["speedup"], 1),
            "vs_eff": percent(vsk4["efficiency"], digits=1), "vs_eff_alone": percent(vsk4["efficiency_stages_alone"], digits=1)}


def waits(j, pt):
    """Step 5: the waits."""
    waits = {m["call"]: m["blocked_us"] for m in j["waits"]["methods"]}
    tw = [med(m["blocked_us"]) for m in pt["waits"]["methods"]]
    cw = [med(m["blocked_us"]) for m in j["waits"]["methods"]]
    picture = lambda t: t[0] > max(t[1], t[2]) and t[3] < min(t[1], t[2])  # all streams; A only; nothing
    ev = waits["cudaStreamWaitEvent(C, a_done)"]
    return {"short_ms": f"{j['waits']['short_job_ms']:g}", "long_ms": f"{j['waits']['long_job_ms']:g}",
            "wait_device_us": fixed(med(waits["cudaDeviceSynchronize"]), 1),
            "wait_stream_us": fixed(med(waits["cudaStreamSynchronize(A)"]), 1),
            "wait_event_sync_us": fixed(med(waits["cudaEventSynchronize(a_done)"]), 1),
            "wait_gpu_us": fixed(med(ev), 1), "wait_gpu_min_us": fixed(ev["min"], 1), "wait_gpu_max_us": fixed(ev["max"], 1),
            "torch_waits": [fixed(t, 1) for t in tw], "torch_same_picture": picture(cw) == picture(tw)}


def default_stream(j):
    """Step 6: the default stream."""
    ds = j["default_stream"]
    return {"ds_only_first_waited": ds[0]["waited"] and not any(c["waited"] for c in ds[1:]),
            "ds_first_us": fixed(med(ds[0]["b_start_after_a_start_us"]), 0),
            "ds_others_lo_us": fixed(min(med(c["b_start_after_a_start_us"]) for c in ds[1:]), 0),
            "ds_others_hi_us": fixed(max(med(c["b_start_after_a_start_us"]) for c in ds[1:]), 0)}


def against_pytorch(book, r, j, pt):
    """C++ against PyTorch."""
    s, serial = j["stages"], j["serial_ms"]
    comp = med(s["compute_ms"])
    pairs = [("serial", serial, pt["serial_ms"]),
             ("the article's two streams", j["two_stream"]["time_ms"], pt["two_stream"]["time_ms"])]
    pairs += [(f"K = {k}", row(j, k)["time_ms"], row(pt, k)["time_ms"]) for k in j["streams"]]
    ties = [n for n, c, p in pairs if tie(c, p)]
    bc, bp = best(j), best(pt)
    pcomp, pk4, pb = med(pt["stages"]["compute_ms"]), row(pt, 4), pt["bound"]
    return {"cmp_ties": ", ".join(ties) or "none", "cmp_apart": apart_rows(pairs),
            "best_cpp_k": bc["streams"], "best_cpp_ms": ms(bc["time_ms"]), "best_cpp_span": span_ms(bc["time_ms"]),
            "best_torch_k": bp["streams"], "best_torch_ms": ms(bp["time_ms"]), "best_torch_span": span_ms(bp["time_ms"]),
            "best_tie": tie(bc["time_ms"], bp["time_ms"]),
            "torch_serial_ms": ms(pt["serial_ms"]), "torch_serial_span": span_ms(pt["serial_ms"]),
            "torch_k1_ms": ms(row(pt, 1)["time_ms"]), "torch_k1_span": span_ms(row(pt, 1)["time_ms"]),
            "torch_k1_x": ratio(row(pt, 1)["speedup"], 1),
            "torch_comp_ms": fixed(pcomp, 3), "torch_comp_span": span_ms(pt["stages"]["compute_ms"]),
            "comp_span": span_ms(s["compute_ms"]), "jit_extra_ms": fixed(abs(pcomp - comp), 3),
            "jit_word": faster_or_slower(pcomp, comp),
            "jit_share": percent(pcomp - comp, med(pt["serial_ms"]) - med(serial)),
            "torch_h2d_extra_ms": fixed(med(pt["stages"]["h2d_ms"]) - med(s["h2d_ms"]), 2),
            "torch_bound": ratio(pb["copies_together_speedup"], 1), "torch_k4_eff": percent(pk4["efficiency"], digits=1),
            "torch_k4_over": pk4["efficiency"] > 1,
            "cmp_same_run": book.same_run((r, "streams_events.json"), (r, "pytorch_streams.json"))}


def apart_rows(pairs):
    """The (name, C++ timing, PyTorch timing) pairs that are no tie, grouped by 'faster' or 'slower'."""
    apart = {}
    for n, c, p in pairs:
        if not tie(c, p):
            apart.setdefault(faster_or_slower(med(c), med(p)), []).append((n, abs(med(p) / med(c) - 1)))
    return [{"word": word, "names": ", ".join(n for n, _ in g),
             "lo": percent(min(d for _, d in g), digits=1), "hi": percent(max(d for _, d in g), digits=1)}
            for word, g in apart.items()]


def small_chunks(r):
    """Small chunks: where the API's cost per call shows."""
    sc, sp = r.json("small_chunks_cpp.json"), r.json("small_chunks_pytorch.json")
    sbc, sbp = best(sc), best(sp)
    return {"sc_chunks": sc["workload"]["chunks"], "sc_mib": f"{sc['workload']['chunk_bytes'] / 2**20:g}",
            "sc_torch_comp_ms": ms(sp["stages"]["compute_ms"]), "sc_cpp_comp_ms": ms(sc["stages"]["compute_ms"]),
            "sc_torch_best_ms": ms(sbp["time_ms"]), "sc_torch_best_span": span_ms(sbp["time_ms"]),
            "sc_torch_best_k": sbp["streams"],
            "sc_cpp_best_ms": ms(sbc["time_ms"]), "sc_cpp_best_span": span_ms(sbc["time_ms"]), "sc_cpp_best_k": sbc["streams"],
            "sc_ratio": ratio(med(sbp["time_ms"]), med(sbc["time_ms"])),
            "sc_word": faster_or_slower(med(sbc["time_ms"]), med(sbp["time_ms"])),
            "sc_torch_serial_ms": ms(sp["serial_ms"]), "sc_torch_serial_span": span_ms(sp["serial_ms"]),
            "sc_torch_best_slower_than_serial": med(sbp["time_ms"]) > med(sp["serial_ms"])}


def drop_wait(r):
    """The --drop-wait run: the K-stream rows that still matched (their stages share one stream)."""
    k_rows = [m[1] for m in (re.match(r"  K = (\d+) streams .* yes$", l) for l in r.text("drop_wait.txt")) if m]
    return {"dw_k_matched": " and ".join(f"K = {k}" for k in k_rows), "dw_k_rows": len(k_rows)}


def exercises(r):
    """The exercises' verdicts."""
    lines = r.text("exercises.txt")

    def verdict(name):
        after = lines[lines.index(f"$ check_{name}_answer") + 1:]
        m = next(re.search(r"\(([\d.]+) us against ([\d.]+) us", l) for l in after if re.search(r"us against", l))
        return [float(t) for t in m.groups()]
    answer, own = verdict("pipeline")
    return {"ex_pipe_ratio": ratio(max(answer, own), min(answer, own)), "ex_pipe_word": faster_or_slower(answer, own),
            "ex_pipe_slower": answer > own}
