"""The named values of the top README.md.in: the Quick start's times, the headline of each chapter,
and which run each chapter's figures come from (common/readme_figures.py says how this works)."""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "common"))
from readme_figures import ROOT, count, fixed, percent, ratio  # noqa: E402
from readme_render import page_records  # noqa: E402

CHAPTERS = ("01_device_query", "02_tensor_transfer", "03_streams_events", "04_linear_regression",
            "05_fused_kernels", "06_multi_gpu")


def median(timing):
    return timing["median"]


def minutes(seconds):
    return {"min": f"{seconds // 60:.0f}", "s": f"{seconds % 60:.0f}"}


def newest_log(book, pattern):
    """The Results of the newest test-logs/ folder matching `pattern`, or None."""
    found = sorted(glob.glob(os.path.join(ROOT, "test-logs", pattern)))
    return book.results("test-logs/" + found[-1].split("/")[-2]) if found else None


def summary_line(results, name):
    return next(l for l in results.text(name) if re.match(r"^\d+% tests passed", l))


def quick_start(book):
    q = newest_log(book, "*-core-no-GPU/quickstart.txt")
    t = newest_log(book, "*_1x*/run-tests.txt")
    v = {}
    if q:
        seconds = q.number("quickstart.txt", r"^quickstart: exit 0 after (\d+) s")
        tests = q.number("quickstart.txt", r"^Total Test time \(real\) = ([\d.]+) sec")
        v["quick"] = {"time": minutes(seconds), "summary": summary_line(q, "quickstart.txt"),
                      "setup_and_build": minutes(seconds - tests), "tests": minutes(tests),
                      "log": q.link("quickstart.txt", "its log"),
                      "machine": q.folder.split("_", 1)[1].replace("-core-no-GPU", " cores, no GPU"),
                      "skips": q.output("quickstart.txt", start=r"tests skipped, for these reasons:",
                                        grep=r"tests skipped|^\d+% tests passed|^ +\d+ x |^        \(", caption=False)}
    if t:
        seconds = t.number("run-tests.txt", r"^run-tests: exit 0 after (\d+) s")
        v["gpu_tests"] = {"time": minutes(seconds), "summary": summary_line(t, "run-tests.txt"),
                          "log": t.link("run-tests.txt", "its log"), "gpus": t.record("run-tests.txt")["gpus"]}
    return v


def gpu_test_log(book):
    """What the newest full GPU test log says: the exercises' checks, and how far it got."""
    logs = book.results("test-logs/2026-11-28_4xH200")
    log = logs.text("ctest.txt")

    def tests(pattern, outcome):  # the tests of the log whose name matches, with that outcome
        return sum(1 for l in log if re.search(r"Test +#\d+: .*" + pattern, l) and outcome in l)
    finished = [l for l in log if re.match(r"\s*\d+/\d+ Test +#", l)]
    done_ids = {re.search(r"Test +#(\d+):", l)[1] for l in finished}
    unfinished = [m[2] for l in log for m in [re.search(r"Start +(\d+): (.*)", l)] if m and m[1] not in done_ids]
    listed = int(re.match(r"\s*\d+/(\d+)", finished[-1])[1])
    record = logs.record("ctest.txt")
    forward = next(l for l in book.results("04_linear_regression").text("exercises.txt") if l.startswith("correct;"))
    return {"log": logs.link("ctest.txt", "its log"), "gpus": record["gpus"], "commit": record["commit"],
            "command": re.search(r": (ctest .*)$", open(logs.path("ctest.txt")).readline())[1],
            "listed": listed, "done": len(finished), "passed": tests("", "Passed"), "failed": tests("", "Failed"),
            "skipped": tests("", "Skipped"), "untouched": tests(r"exercise [a-z_]+ [.]", "***Skipped"),
            "caught": tests("catches", "Passed"), "planted": tests("catches", ""),
            "answers": tests("answer is correct", "Passed"), "running": unfinished[0] if unfinished else None,
            "not_started": listed - len(finished) - len(unfinished), "forward_verdict": forward}


def headline_01(book):
    r = book.results("01_device_query")
    query, bench = r.json("device_query.json"), r.json("device_query_bench.json")
    largest = max(o["n"] for o in bench["operations"] if o["operation"] == "matmul")
    mm = {o["precision"]: o for o in bench["operations"] if o["operation"] == "matmul" and o["n"] == largest}
    axpy = next(o for o in bench["operations"] if o["operation"] == "axpy")
    return {"init_ms": fixed(median(query["runtime"]["init_ms"]), 1), "n": largest,
            "cuda_cores": query["devices"][0]["cuda_cores"],
            **{p: fixed(mm[p]["tflops"], 1) for p in ("fp32", "tf32", "bf16")},
            "fp32_share": percent(mm["fp32"]["percent_of_peak"], 100),
            "axpy_gbps": fixed(axpy["gbps"], 0), "axpy_share": percent(axpy["percent_of_peak"], 100)}


def headline_02(book):
    r = book.results("02_tensor_transfer")
    bench, torch = r.json("tensor_transfer_bench.json"), r.json("pytorch_transfer.json")
    random = bench["random_tensor"]
    return {"pinned": fixed(bench["headline"]["pinned_h2d_256mib_gbps"], 1),
            "torch_pinned": fixed(torch["headline"]["pinned_h2d_256mib_gbps"], 1),
            "on_gpu_gain": fixed(median(random["host_then_copy_ms"]) / median(random["on_gpu_ms"]), 0)}


def headline_03(book):
    s = book.results("03_streams_events").json("streams_events.json")
    best = min(s["pipeline"], key=lambda x: median(x["time_ms"]))
    return {"streams": best["streams"], "speedup": ratio(median(s["serial_ms"]), median(best["time_ms"])),
            "best_ms": fixed(median(best["time_ms"]), 3), "serial_ms": fixed(median(s["serial_ms"]), 3),
            "share": percent(best["efficiency"], digits=1), "bound": ratio(s["bound"]["copies_together_speedup"], 1)}


def headline_04(book):
    r = book.results("04_linear_regression")
    cuda, torch = r.json("cuda.json")["result"][0], r.json("pytorch_cuda.json")["result"][0]
    batches = {m["pipeline"].split()[-1]: m for m in r.json("minibatch.json")["minibatch"]}
    return {"cuda_ms": fixed(median(cuda["training_ms"]), 2), "torch_ms": fixed(median(torch["training_ms"]), 1),
            "torch_min": fixed(torch["training_ms"]["min"], 1), "torch_max": fixed(torch["training_ms"]["max"], 1),
            "speedup": ratio(median(torch["training_ms"]), median(cuda["training_ms"])),
            "every": r.json("pytorch_cuda.json")["print_every"],
            "bitwise": (cuda["w"], cuda["b"]) == (torch["w"], torch["b"]),
            "pinned_set": fixed(batches["pinned_set"]["bound_percent"], 1),
            "batched": fixed(batches["batched"]["bound_percent"], 1)}


def headline_05(book):
    r = book.results("05_fused_kernels")
    variants = {v["variant"]: v for v in r.json("fused.json")["variants"]}
    torch = {x["variant"]: x for x in r.json("pytorch_sweep.json")["sweep"] if x["points"] == 5_000_000}
    chip = median(variants[8]["training_ms"])
    dram = min((v for k, v in variants.items() if k != 8), key=lambda v: median(v["training_ms"]))
    return {"chip_ms": fixed(chip, 3), "eager_ms": fixed(median(torch["eager"]["training_ms"]), 1),
            "eager_gain": ratio(median(torch["eager"]["training_ms"]), chip, 0),
            "graph_ms": fixed(median(torch["graph"]["training_ms"]), 1),
            "graph_gain": ratio(median(torch["graph"]["training_ms"]), chip, 0),
            "dram_variant": dram["variant"], "dram_ms": fixed(median(dram["training_ms"]), 3),
            "dram_gain": ratio(median(dram["training_ms"]), chip)}


def headline_06(book):
    r = book.results("06_multi_gpu")
    rows = r.json("scaling.json")["scaling"]["rows"]
    weak = [{"text": f"{percent(x['efficiency'], digits=1)} on {x['gpus']} GPUs"} for x in rows
            if x["kind"] == "weak" and x.get("exchange") == "one_shot" and x["gpus"] > 1]
    ddp, torch = r.json("ddp_2.json")["ddp"], r.json("ddp_pytorch_2.json")["ddp"]
    epochs = r.json("exchange.json")["exchange"]["epochs"]
    chip = [{"text": f"{fixed(x['us_per_epoch'], 2)} µs an epoch on {x['gpus']} GPUs"} for x in epochs
            if x["mode"] == "on_chip" and x["points"] == 10**7]
    one = next(x["us_per_epoch"] for x in epochs if x["mode"] == "one_gpu_best" and x["points"] == 10**7)
    faults = [{"text": f"{fixed(r.json(f'fault_{x}.json')['ddp']['launcher']['stopped_after_s'], 2)} s ({x})"}
              for x in ("nccl", "one_shot", "on_chip")]
    return {"weak": weak, "ddp_us": fixed(ddp["us_per_epoch"], 2), "torch_us": fixed(torch["us_per_epoch"], 2),
            "ddp_gain": ratio(torch["us_per_epoch"], ddp["us_per_epoch"], 1), "chip": chip,
            "one_gpu_us": fixed(one, 2), "faults": faults}


ROW = re.compile(r"^(\S+)\s+(-?\d+)\s+([\d.]+)\s+(-?\d+)\s\s(.*)$")  # small-gpu.sh's table


def small_gpu(book):
    """Every program's default run with all but a few GiB of the GPU held (scripts/small-gpu.sh)."""
    r = newest_log(book, "*/small-gpu.txt")
    if not r:
        return None
    lines = r.text("small-gpu.txt")
    rows = [{"program": m[1], "exit": int(m[2]), "seconds": float(m[3]), "peak": int(m[4]), "last": m[5]}
            for m in (ROW.match(l) for l in lines) if m]
    head = next(l for l in lines if " on GPU " in l)
    summary = re.match(r"small-gpu: (\d+) programs with (\d+) GiB free: (.*)$", lines[-1])
    top = max(rows, key=lambda x: x["peak"])
    chapters = []
    for chapter in CHAPTERS:
        mine = [x for x in rows if x["program"].startswith(chapter + "/")]
        if mine:
            most = max(mine, key=lambda x: x["peak"])
            chapters.append({"chapter": chapter, "programs": len(mine), "peak": count(most["peak"]),
                             "program": most["program"].split("/")[1],
                             "outcomes": ", ".join(sorted({outcome(x) for x in mine}))})
    return {"log": r.link("small-gpu.txt", "its table"), "gib": summary[2], "programs": summary[1],
            "summary": summary[3], "gpu": re.search(r"small-gpu: ([^,]+),", head)[1],
            "top": {"program": top["program"], "peak": count(top["peak"])}, "chapters": chapters,
            "refusals": [x for x in rows if outcome(x) == "refused for memory in one line"]}


def outcome(row):
    """As scripts/small-gpu.sh counts it: a refusal names the MiB it needs; a missing package, itself."""
    if row["exit"] == 1 and row["last"].startswith("error:") and "MiB" in row["last"]:
        return "refused for memory in one line"
    if row["exit"] == 77 or (row["exit"] == 1 and row["last"].startswith("error: this script needs ")):
        return "cannot run here"
    return "passed" if row["exit"] == 0 else "failed"


def ptx_jit(book):
    """Every lesson program forced through PTX, as on a GPU newer than its build (scripts/ptx-jit.sh)."""
    r = newest_log(book, "*/ptx-jit.txt")
    if not r:
        return None
    lines = r.text("ptx-jit.txt")
    rows = []
    for l in lines:
        m = re.match(r"^(\S+/\S+)\s+exit (\d+) ([\d.]+)s\s+exit (\d+) ([\d.]+)s\s+exit (\d+) ([\d.]+)s\s+(-?[\d.]+)s$", l)
        if m:
            rows.append({"program": m[1], "exits": {int(m[2]), int(m[4]), int(m[6])}, "built": float(m[3]),
                         "first": float(m[5]), "warm": float(m[7]), "extra": float(m[8])})
    ran = [x for x in rows if x["exits"] == {0}]
    worst = max(ran, key=lambda x: x["extra"])
    return {"log": r.link("ptx-jit.txt", "its table"), "programs": len(rows), "passed": len(ran),
            "worst": {"program": worst["program"], "extra": fixed(worst["extra"], 1)},
            "total_extra": fixed(sum(x["extra"] for x in ran), 1),
            "skipped": [x["program"] for x in rows if x["exits"] == {77}],
            "notes": [l[len("note: "):] for l in lines if l.startswith("note: ")],
            "ptx": re.search(r"PTX in \S+: (.*)$", next(l for l in lines if l.startswith("ptx-jit: ")))[1]}


def chapter_runs():
    """Each chapter's page, and the runs its figures come from: one row a run."""
    rows = []
    for chapter in CHAPTERS:
        for record, files, gpus in page_records(f"{chapter}/README.md.in"):
            folders = sorted({f.split("/")[0][:2] for f in files})
            rows.append({"chapter": chapter, "run": record["run"] or "none", "gpus": " and ".join(gpus),
                         "commit": record["commit"], "date": record["date"], "files": len(files),
                         "from": ", ".join(folders)})
    return rows


def values(book):
    runs = chapter_runs()
    return {"h01": headline_01(book), "h02": headline_02(book), "h03": headline_03(book), "h04": headline_04(book),
            "h05": headline_05(book), "h06": headline_06(book), "gpu_log": gpu_test_log(book),
            "runs": runs, "run_count": len({(r["run"], r["commit"]) for r in runs}),
            "small": small_gpu(book), "jit": ptx_jit(book), **quick_start(book)}
