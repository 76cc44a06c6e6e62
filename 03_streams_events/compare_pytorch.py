#!/usr/bin/env python3
"""compare_pytorch.py: the C++ pipeline and the PyTorch one from the same run, side by side.

    python3 compare_pytorch.py streams_events.json pytorch_streams.json [comparison.csv]

Both files have the same fields (see the two programs); times are medians of CUDA-event timings.
The comparison is only like for like when both ran the same workload (chunks, bytes and multiply-adds
per element: run pytorch_streams.py with --iterations from the C++ JSON, as benchmark.sh does); when
they differ the script says so in one line and exits 1, with no table and no CSV. With OUT.csv it
also writes the table there (and nothing anywhere else).
"""
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from provenance import line, record  # noqa: E402  (the CSV's first line)
from workbook_cli import Parser, run  # noqa: E402  (usage errors and bad files: one line, exit 2)

# What this script reads of either program's --json (workbook_cli.shape_error): every time in the
# one shape of common/table.h timing(); the medians divide.
TIMING = {"median": "positive", "min": "number", "max": "number", "runs": "whole"}
SHAPE = {"stages": {"h2d_ms": TIMING, "compute_ms": TIMING, "d2h_ms": TIMING}, "serial_ms": TIMING,
         "pipeline": [{"streams": "whole", "time_ms": TIMING}], "two_stream": {"time_ms": TIMING},
         "workload": {"chunks": "whole", "chunk_elements": "whole", "iterations": "whole"}}


def main(cpp, pt, csv_path=None):
    keys = ("chunks", "chunk_elements", "iterations")
    if any(cpp["workload"][k] != pt["workload"][k] for k in keys):  # not like for like: no table, no CSV
        differs = ", ".join(f"{k} {cpp['workload'][k]} in C++ and {pt['workload'][k]} in PyTorch"
                            for k in keys if cpp["workload"][k] != pt["workload"][k])
        sys.stderr.write(f"error: the two runs did not run the same workload ({differs}): run pytorch_streams.py "
                         f"with the C++ run's --iterations and sizes, as benchmark.sh does\n")
        return 1
    rows = [("H2D copy alone", cpp["stages"]["h2d_ms"]["median"], pt["stages"]["h2d_ms"]["median"]),
            ("compute alone", cpp["stages"]["compute_ms"]["median"], pt["stages"]["compute_ms"]["median"]),
            ("D2H copy alone", cpp["stages"]["d2h_ms"]["median"], pt["stages"]["d2h_ms"]["median"]),
            ("serial", cpp["serial_ms"]["median"], pt["serial_ms"]["median"])]
    pt_by_k = {p["streams"]: p for p in pt["pipeline"]}
    for p in cpp["pipeline"]:
        if p["streams"] in pt_by_k:
            rows.append((f"K = {p['streams']} streams", p["time_ms"]["median"], pt_by_k[p["streams"]]["time_ms"]["median"]))
    rows.append(("two streams (article)", cpp["two_stream"]["time_ms"]["median"], pt["two_stream"]["time_ms"]["median"]))
    print(f"same workload: yes ({cpp['workload']['chunks']} chunks, "
          f"{cpp['workload']['iterations']} multiply-adds per element in C++, {pt['workload']['iterations']} in "
          f"PyTorch; PyTorch compute via {pt.get('compute_backend')})")
    print(f"{'schedule':<24}{'CUDA C++ ms':>12}{'PyTorch ms':>12}{'PyTorch / C++':>15}")
    for name, c, p in rows:
        print(f"{name:<24}{c:12.3f}{p:12.3f}{p / c:14.2f}x")
    best_cpp = min(p["time_ms"]["median"] for p in cpp["pipeline"])
    best_pt = min(p["time_ms"]["median"] for p in pt["pipeline"])
    print(f"best pipeline: C++ {best_cpp:.3f} ms, PyTorch {best_pt:.3f} ms -> C++ "
          f"{'at least as fast' if best_cpp <= best_pt else 'SLOWER'} ({best_pt / best_cpp:.2f}x)")
    if csv_path:
        with open(csv_path, "w", newline="") as f:
            f.write(line(record()) + "\n")  # the CSV's first line: where its rows came from
            w = csv.writer(f)
            w.writerow(["schedule", "cuda_cpp_ms", "pytorch_ms"])
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("cpp", metavar="CPP.json", help="streams_events --json")
    parser.add_argument("torch", metavar="TORCH.json", help="pytorch_streams.py --json")
    parser.add_argument("csv", metavar="OUT.csv", nargs="?", help="the table as CSV (none without it); its folder must exist")
    args = parser.parse_args()
    cpp, pt = parser.input_jsons((args.cpp, "streams_events", SHAPE), (args.torch, "pytorch_streams", SHAPE))
    if args.csv == "":  # a shell variable never set: refused, as `--json ''` is everywhere
        parser.fail("OUT.csv needs a name, and '' is none")
    if args.csv:
        parser.output_file(args.csv, ("csv",))
    run(lambda: main(cpp, pt, args.csv))
