#!/usr/bin/env python3
"""test_scripts.py: what the workbook's scripts promise on their command line, as tables ctest runs.

The contract (DESIGN.md): `--help` answers; a bad flag, value, input or output is refused with ONE
line and exit 2 before any work (and before torch, numpy or matplotlib is imported: the scripts run
here with tests/support/no_packages on PYTHONPATH, which makes those look missing); a missing package
is named in one line, exit 1; a script writes only where it is told. Each row of the tables below
is one ctest test, named by what holds.

    python3 tests/test_scripts.py                    # every case, four at a time: ok, skipped or FAIL
    python3 tests/test_scripts.py -k plot_trace      # the cases whose name holds that text
    python3 tests/test_scripts.py --list             # their names and labels
    python3 tests/test_scripts.py --case NAME        # one case, with what it ran and saw (ctest runs this)
    python3 tests/test_scripts.py --ctest FILE       # writes FILE, the add_test lines ctest reads

--build-dir DIR (default build/) and --cmake PATH (default cmake) name the build whose programs
the exercise cases run, and the CMake a configure case runs. Exit codes: 0 passed, 1 failed,
2 bad usage, and a case's own skip code (77, or 125 where a GPU is present) when it was skipped.
"""
import argparse
import concurrent.futures
import glob
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_PACKAGES = os.path.join(ROOT, "tests", "support", "no_packages")
COMMON = os.path.join(ROOT, "common")
PYTHON = sys.executable

# Places the arguments and the expected lines name in braces: the committed results of each chapter,
# and the root of the workbook.
PLACES = {f"r{n}": os.path.join(ROOT, chapter, "results") for n, chapter in (
    ("02", "02_tensor_transfer"), ("03", "03_streams_events"), ("04", "04_linear_regression"),
    ("05", "05_fused_kernels"), ("06", "06_multi_gpu"))}
PLACES["root"] = ROOT
TRANSFER = "{r02}/tensor_transfer_bench.json {r02}/pytorch_transfer.json"  # plot_transfer.py's two inputs
STREAMS = "{r03}/streams_events.json {r03}/pytorch_streams.json"  # compare_pytorch.py's two inputs


def place(text):
    return re.sub(r"\{(r0[2-6]|root)\}", lambda m: PLACES[m.group(1)], text)


def arguments(shown):
    """A row's arguments as the shell would split them, with the places filled in."""
    return [place(a) for a in shlex.split(shown)]


# ------------------------------------------------------------------------------ the tables
# Refused in one line: script -> rows of (what holds, exit code, how the line begins, arguments).
# Each runs in a folder of its own holding the bad files of make_inputs(), with the packages hidden.
# Exit 2 is bad usage or a bad file; exit 1 a missing package, or runs that cannot be compared.
JSON_NO_FOLDER = ("--json into a folder that does not exist is refused in one line", 2,
                  "error: --json /no/such/folder/x.json: the folder", "--json /no/such/folder/x.json")
JSON_A_FOLDER = ("--json naming a folder is refused in one line", 2, "error: --json /: is a folder", "--json /")
NEEDS_TORCH = ("names the missing torch in one line", 1, "error: this script needs torch", "--quick")
NEEDS_MATPLOTLIB = "names the missing matplotlib in one line"
MODULE = "run as a program, it says it is a module the scripts import, in one line"
RESULTS_DIR_ROWS = [  # the plots that read benchmark.sh's folder (workbook_cli.results_folder_arguments)
    ("without RESULTS_DIR it names what is missing in one line", 2, "error: the following arguments are required", ""),
    ("a RESULTS_DIR that does not exist is refused in one line", 2, "error: RESULTS_DIR no_such_folder: no such folder",
     "no_such_folder")]
RESULTS_DIR_A_FILE = ("a file given as RESULTS_DIR is refused in one line", 2,
                      "error: RESULTS_DIR empty.json: is a file, not a folder", "empty.json")

ONE_LINE = {
    "01_device_query/pytorch_matmul.py": [
        ("a size list with an empty item is refused in one line", 2, "error: --sizes", "--sizes 1,,2"),
        NEEDS_TORCH,
        ("a count beyond a C++ int is refused in one line", 2, "error: --repeats: 99999999999 is out of range",
         "--repeats 99999999999"),
        JSON_NO_FOLDER,
        ("--json naming a file the workbook did not write is refused in one line", 2,
         "error: --json {root}/CMakePresets.json: is there and is not a file the workbook wrote",
         "--json {root}/CMakePresets.json"),
    ],
    "02_tensor_transfer/pytorch_transfer.py": [
        ("a device that is not N, cuda or cuda:N is refused in one line", 2, "error: --device", "--device cuda:x"),
        JSON_NO_FOLDER,
        ("an empty --device= is refused in one line, not read as no value", 2,
         "error: --device needs a value, and '' is none", "--device="),
    ],
    "03_streams_events/pytorch_streams.py": [
        ("a stream list with an empty item is refused in one line", 2, "error: --streams", "--streams 1,,2"),
        NEEDS_TORCH,
        ("a stream count listed twice is refused in one line", 2, "error: --streams: '4,2,4' lists 4 twice",
         "--streams 4,2,4"),
        JSON_NO_FOLDER,
    ],
    "04_linear_regression/pytorch_regression.py": [
        ("a size with a suffix other than K, M or G is refused in one line", 2, "error: --points", "--points 5X"),
        ("--epochs beyond a C++ int is refused in one line", 2, "error: --epochs: 2147483648 is out of range",
         "--epochs 2147483648"),
        ("--profile-epochs below 1 is refused in one line", 2, "error: --profile-epochs",
         "--profile x.json --profile-epochs 0"),
        # numbers in decimal only, sizes with capital K, M, G, as the C++ programs read them
        ("a hex number is refused in one line", 2, "error: --lr: '0x10' is not a decimal number", "--lr 0x10"),
        ("a whole number with a leading zero is refused in one line", 2,
         "error: --epochs: '010' is not a whole number", "--epochs 010"),
        ("a size suffix on a count is refused in one line", 2,
         "error: --epochs: '1K' is not a number here (K, M and G are for sizes", "--epochs 1K"),
        ("a lower-case size suffix is refused in one line", 2, "error: --points: '5m' is not a size", "--points 5m"),
        ("--seed without --noise is refused in one line", 2, "error: --seed seeds --noise", "--seed 7"),
        JSON_NO_FOLDER,
        ("--profile into a folder that does not exist is refused in one line", 2,
         "error: --profile /no/such/folder/x.json: the folder", "--profile /no/such/folder/x.json"),
        # a name that is not the kind of file written: a slip that would overwrite a source
        ("--json naming a file that is not .json is refused in one line", 2,
         "error: --json README.md: name a .json file (it is overwritten)", "--json README.md"),
        ("--profile naming a file that is not .json is refused in one line", 2,
         "error: --profile t.txt: name a .json file", "--profile t.txt"),
    ],
    "04_linear_regression/pytorch_minibatch.py": [
        ("a batch size of 1 is refused in one line", 2, "error: --batch-size", "--batch-size 1"),
        NEEDS_TORCH,
        JSON_A_FOLDER,
    ],
    "05_fused_kernels/pytorch_fused.py": [
        ("a size list with an empty item is refused in one line", 2, "error: --sizes", "--sizes 1,,2"),
        NEEDS_TORCH,
        JSON_NO_FOLDER,
        ("--csv naming a folder is refused in one line", 2, "error: --csv /: is a folder", "--csv /"),
        ("--csv naming a file that is not .csv is refused in one line", 2, "error: --csv x.txt: name a .csv file",
         "--csv x.txt"),
        ("an empty --json= is refused in one line, not read as no value", 2,
         "error: --json needs a value, and '' is none", "--json="),
    ],
    "06_multi_gpu/pytorch_ddp.py": [
        ("--epochs beyond a C++ int is refused in one line", 2, "error: --epochs: 2147483648 is out of range",
         "--epochs 2147483648"),
        ("a GPU-count list with an empty item is refused in one line", 2, "error: --gpu-counts", "--gpu-counts 1,,2"),
        ("an exchange it does not have is refused in one line", 2, "error: argument --exchange", "--exchange one_shot"),
        ("--exchange symm_mem names the missing torch in one line", 1, "error: this script needs torch",
         "--exchange symm_mem"),
        JSON_A_FOLDER,
        ("--strong without --scaling is refused in one line", 2,
         "error: --strong, --weak and --gpu-counts are for --scaling", "--strong 5M"),
        ("--nproc below 1 is refused in one line", 2, "error: --nproc must be at least 1", "--nproc 0"),
    ],
    "06_multi_gpu/pytorch_data_parallel.py": [
        ("--gpus below 1 is refused in one line", 2, "error: --gpus", "--gpus 0"),
        JSON_NO_FOLDER,
        ("--json where nothing can be created is refused in one line", 2,
         "error: --json /proc/self/x.json: cannot be written", "--json /proc/self/x.json"),
    ],
    "common/workbook_cli.py": [
        (MODULE, 2, "error: common/workbook_cli.py is a module the workbook's scripts import", "--help"),
    ],
    "common/workbook_plots.py": [
        (MODULE, 2, "error: common/workbook_plots.py is a module the workbook's scripts import", "--help"),
    ],
    "common/regression_torch.py": [
        (MODULE, 2, "error: common/regression_torch.py is a module the workbook's scripts import", "--quick"),
    ],
    "scripts/compare-results.py": [
        ("without YOURS_DIR it names what is missing in one line", 2,
         "error: the following arguments are required: YOURS_DIR", ""),
        ("a YOURS_DIR that does not exist is refused in one line", 2,
         "error: YOURS_DIR no_such_folder: no such folder", "no_such_folder"),
    ],
    # The plots and comparisons: every bad input (missing, not JSON or CSV, another program's file,
    # two files swapped) and every bad output (no such folder, an extension the script cannot write,
    # a folder, a reader's own file) is one line, before matplotlib is looked for and before any work.
    "02_tensor_transfer/plot_transfer.py": [
        ("an unknown flag is named before the missing files, in one line", 2,
         "error: unrecognized arguments: --bogus", "--bogus"),
        ("without arguments it names the files it needs in one line", 2,
         "error: the following arguments are required", ""),
        ("a missing input is refused in one line", 2, "error: missing.json: no such file",
         "missing.json {r02}/pytorch_transfer.json out.png"),
        ("a folder given as an input is refused in one line", 2, "error: a_folder: is a folder",
         "a_folder {r02}/pytorch_transfer.json out.png"),
        ("an input that is not JSON is refused in one line", 2, "error: not_json.json: not JSON",
         "not_json.json {r02}/pytorch_transfer.json out.png"),
        ("a JSON no program wrote is refused in one line", 2,
         "error: empty.json: not tensor_transfer_bench's JSON", "empty.json {r02}/pytorch_transfer.json out.png"),
        ("another program's JSON is refused in one line, naming that program", 2,
         "error: {r03}/streams_events.json: written by streams_events, not by tensor_transfer_bench",
         "{r03}/streams_events.json {r02}/pytorch_transfer.json out.png"),
        ("two inputs in each other's place are named as swapped, in one line", 2,
         "error: the files are in the wrong order",
         "{r02}/pytorch_transfer.json {r02}/tensor_transfer_bench.json out.png"),
        ("a figure into a folder that does not exist is refused in one line", 2,
         "error: no_such_folder/out.png: there is no folder", TRANSFER + " no_such_folder/out.png"),
        ("a figure format it cannot write is refused in one line", 2, "error: out.txt: cannot write a .txt file",
         TRANSFER + " out.txt"),
        ("a folder given as the figure is refused in one line", 2, "error: a_folder: is a folder",
         TRANSFER + " a_folder"),
        (NEEDS_MATPLOTLIB, 1, "error: this script needs matplotlib", TRANSFER + " out.png"),
        ("a reader's own picture is not overwritten: refused in one line", 2,
         "error: notes.png: is there and is not a figure the workbook drew", TRANSFER + " notes.png"),
    ],
    "03_streams_events/plot_trace.py": [
        ("without arguments it names what it needs in one line", 2,
         "error: the following arguments are required", ""),
        ("a missing trace is refused in one line", 2, "error: missing.json: no such file", "missing.json out.png"),
        ("a trace that is not JSON is refused in one line", 2, "error: not_json.json: not JSON",
         "not_json.json out.png"),
        ("a JSON without traceEvents is refused in one line", 2, "error: empty.json: traceEvents is missing",
         "empty.json out.png"),
        ("an operation lasting a negative time is refused in one line", 2,
         "error: negative_dur.json: traceEvents[1].dur is not a finite number of 0 or more",
         "negative_dur.json out.png"),
        ("an operation lasting NaN is refused in one line", 2,
         "error: nan_dur.json: traceEvents[1].dur is not a finite number of 0 or more", "nan_dur.json out.png"),
        ("another program's JSON is refused in one line", 2, "error: {r03}/timeline.json: traceEvents is missing",
         "{r03}/timeline.json out.png"),
        ("a picture given as the trace is refused in one line", 2, "error: {r03}/timeline.png: not JSON",
         "{r03}/timeline.png {r03}/trace.json"),
        ("a figure into a folder that does not exist is refused in one line", 2,
         "error: no_such_folder/out.png: there is no folder", "{r03}/trace.json no_such_folder/out.png"),
        ("a figure format it cannot write is refused in one line", 2, "error: out.txt: cannot write a .txt file",
         "{r03}/trace.json out.txt"),
        ("a folder given as the figure is refused in one line", 2, "error: a_folder: is a folder",
         "{r03}/trace.json a_folder"),
        (NEEDS_MATPLOTLIB, 1, "error: this script needs matplotlib", "{r03}/trace.json out.png"),
        # a shell variable never set: refused by name, not read as "no extension"
        ("an empty name for the figure is refused in one line", 2,
         "error: the output file needs a name, and '' is none", "{r03}/trace.json ''"),
    ],
    "03_streams_events/compare_pytorch.py": [
        ("without arguments it names what it needs in one line", 2,
         "error: the following arguments are required", ""),
        ("a missing input is refused in one line", 2, "error: missing.json: no such file",
         "missing.json {r03}/pytorch_streams.json"),
        ("an input that is not JSON is refused in one line", 2, "error: not_json.json: not JSON",
         "{r03}/streams_events.json not_json.json"),
        ("a JSON no program wrote is refused in one line", 2, "error: empty.json: not streams_events's JSON",
         "empty.json {r03}/pytorch_streams.json"),
        ("another program's JSON is refused in one line, naming that program", 2,
         "error: {r02}/pytorch_transfer.json: written by pytorch_transfer, not by pytorch_streams",
         "{r03}/streams_events.json {r02}/pytorch_transfer.json"),
        ("two inputs in each other's place are named as swapped, in one line", 2,
         "error: the files are in the wrong order", "{r03}/pytorch_streams.json {r03}/streams_events.json"),
        ("a CSV into a folder that does not exist is refused in one line", 2,
         "error: no_such_folder/out.csv: there is no folder", STREAMS + " no_such_folder/out.csv"),
        ("an output that is not .csv is refused in one line", 2, "error: out.txt: cannot write a .txt file",
         STREAMS + " out.txt"),
        ("a folder given as the output is refused in one line", 2, "error: a_folder: is a folder",
         STREAMS + " a_folder"),
        ("a reader's own CSV is not overwritten: refused in one line", 2,
         "error: mine.csv: is there and is not a file the workbook wrote", STREAMS + " mine.csv"),
        ("runs of two different workloads are not compared: it says so in one line", 1,
         "error: the two runs did not run the same workload",
         "{r03}/small_chunks_cpp.json {r03}/pytorch_streams.json out.csv"),
    ],
    "04_linear_regression/plot_regression.py": [
        ("a cpu.json holding the GPU run is refused in one line", 2,
         "error: 04_cpu_is_gpu/cpu.json: its run is on cuda:0, its name says the CPU",
         "04_cpu_is_gpu --out 04_cpu_is_gpu"),
        *RESULTS_DIR_ROWS, RESULTS_DIR_A_FILE,
        ("a folder with no run in it is refused in one line", 2, "error: empty_folder: no run to plot", "empty_folder"),
        ("a cuda.json that is not JSON is refused in one line", 2, "error: 04_not_json/cuda.json: not JSON",
         "04_not_json"),
        ("a cuda.json no program wrote is refused in one line", 2,
         "error: 04_empty_json/cuda.json: not linear_regression's JSON", "04_empty_json"),
        ("a cuda.json of another chapter's program is refused in one line", 2,
         "error: 04_other/cuda.json: written by fused_kernels, not by linear_regression", "04_other"),
        ("a cuda.json holding the bench's steps is refused in one line", 2,
         "error: 04_swapped/cuda.json: written by linear_regression_bench, not by linear_regression", "04_swapped"),
        ("another chapter's results are refused in one line", 2, "error: {r05}: no run to plot", "{r05}"),
        ("an --out folder that does not exist is refused in one line", 2,
         "error: --out no_such_folder: no such folder", "{r04} --out no_such_folder"),
        ("a file given as --out is refused in one line", 2, "error: --out empty.json: is a file, not a folder",
         "{r04} --out empty.json"),
        ("a folder where a figure would go is refused in one line", 2,
         "error: times_png_a_folder/times.png: is a folder", "{r04} --out times_png_a_folder"),
        (NEEDS_MATPLOTLIB, 1, "error: this script needs matplotlib", "{r04} --out empty_folder"),
    ],
    "05_fused_kernels/plot_fused.py": [
        ("an unknown flag is refused in one line", 2, "error: unrecognized", "--bogus"),
        (NEEDS_MATPLOTLIB, 1, "error: this script needs matplotlib", "{r05}"),
        ("a sweep.csv holding PyTorch's sweep is refused in one line", 2,
         "error: 05_sweep_is_pytorch/sweep.csv: its rows are pytorch's, its name says cuda's",
         "05_sweep_is_pytorch --out 05_sweep_is_pytorch"),
        ("a reader's own figure in --out is not overwritten: refused in one line", 2,
         "error: 05_foreign_out/time_vs_size.png: is there and is not a file the workbook wrote",
         "{r05} --out 05_foreign_out"),
        *RESULTS_DIR_ROWS, RESULTS_DIR_A_FILE,
        ("a folder with nothing to plot is refused in one line", 2, "error: empty_folder: nothing to plot",
         "empty_folder"),
        ("a sweep.csv that is not CSV is refused in one line", 2, "error: 05_not_csv/sweep.csv: not the expected CSV",
         "05_not_csv"),
        ("a breakdown.json that is not JSON is refused in one line", 2,
         "error: 05_not_json/breakdown.json: not JSON", "05_not_json"),
        ("a breakdown.json no program wrote is refused in one line", 2,
         "error: 05_empty_json/breakdown.json: not fused_kernels_bench's JSON", "05_empty_json"),
        ("a breakdown.json holding PyTorch's JSON is refused in one line", 2,
         "error: 05_swapped/breakdown.json: written by pytorch_fused, not by fused_kernels_bench", "05_swapped"),
        ("another chapter's results are refused in one line", 2, "error: {r04}: nothing to plot", "{r04}"),
        ("an --out folder that does not exist is refused in one line", 2,
         "error: --out no_such_folder: no such folder", "{r05} --out no_such_folder"),
        ("a file given as --out is refused in one line", 2, "error: --out empty.json: is a file, not a folder",
         "{r05} --out empty.json"),
    ],
    "06_multi_gpu/plot_multi_gpu.py": [
        ("a ddp_1.json holding the 2-rank run is refused in one line", 2,
         "error: 06_swapped/ddp_1.json: its ddp.launcher.nproc is 2, its name says 1", "06_swapped"),
        ("an exchange.json holding another program's JSON is refused in one line", 2,
         "error: 06_foreign/exchange.json: not the JSON a file of this name holds", "06_foreign"),
        *RESULTS_DIR_ROWS,
        ("a folder with no benchmark.sh results is refused in one line", 2,
         "error: empty_folder: no benchmark.sh results in it", "empty_folder"),
        ("an exchange.json that is not JSON is refused in one line", 2,
         "error: 06_not_json/exchange.json: not JSON", "06_not_json"),
        ("an --out folder that does not exist is refused in one line", 2,
         "error: --out no_such_folder: no such folder", "{r06} --out no_such_folder"),
        ("a file given as --out is refused in one line", 2, "error: --out empty.json: is a file, not a folder",
         "{r06} --out empty.json"),
    ],
    # The shell scripts: usage errors in one line, before they build or look for a GPU.
    "scripts/check-exercise.sh": [
        ("a chapter that does not exist is refused in one line", 2, "error: no chapter 09 (the chapters are 01",
         "09 x"),
        ("an exercise the chapter lacks is refused in one line naming its exercises", 2,
         "error: chapter 04 has no exercise 'nope' (it has: forward gradient)", "04 nope"),
        ("one argument gets the usage in one line", 2,
         "error: usage: scripts/check-exercise.sh CHAPTER EXERCISE", "04"),
    ],
    "scripts/run-tests.sh": [
        ("an option it does not pass on is refused in one line, before the build", 2,
         "error: run-tests.sh: '--bogus' is not a ctest option it passes on", "--bogus"),
        ("-R without its value is refused in one line, before the build", 2,
         "error: run-tests.sh: -R needs a value", "-R"),
    ],
    "scripts/run-chapters.sh": [
        ("an option other than --quick and --device is refused in one line, before the build", 2,
         "error: run-chapters.sh passes only --quick and --device to the programs, got '--bogus'", "--bogus"),
    ],
    "scripts/install-deps.sh": [
        ("an argument is refused in one line", 2, "error: install-deps.sh takes no arguments, got '--bogus'",
         "--bogus"),
    ],
    "scripts/regenerate.sh": [
        ("an unknown step is refused in one line", 2, "error: no step '--bogus'", "--bogus"),
        ("a step 06's benchmark.sh lacks is refused in one line naming its steps", 2,
         "error: no step 'bogus' in 06_multi_gpu/benchmark.sh (its steps: topology,", "06:dp,bogus"),
        ("an empty step in a chapter's list is refused in one line", 2,
         "error: '06:dp,': 06: takes a comma list of benchmark.sh's steps", "06:dp,"),
    ],
    "scripts/small-gpu.sh": [
        ("a --gib that is not a whole number is refused in one line", 2,
         "error: small-gpu.sh: --gib and --timeout take a positive whole number", "--gib 8G build out.txt"),
        ("one argument gets the usage in one line", 2, "error: usage: scripts/small-gpu.sh", "build"),
        ("a build folder that does not exist is refused in one line", 2,
         "error: small-gpu.sh: no build folder 'no_such_build'", "no_such_build out.txt"),
    ],
    "scripts/ptx-jit.sh": [
        ("one argument gets the usage in one line", 2, "error: usage: scripts/ptx-jit.sh BUILD_DIR OUT_FILE", "build"),
        ("an output folder that does not exist is refused in one line", 2,
         "error: ptx-jit.sh: no folder for 'no_such_folder/out.txt'", ". no_such_folder/out.txt"),
    ],
    "scripts/docs.sh": [
        ("an unknown command is refused in one line", 2, "error: unknown command '--bogus'", "--bogus"),
    ],
    # Each chapter's benchmark.sh (common/benchmark_start.sh), before it looks for a build or a GPU.
    "01_device_query/benchmark.sh": [
        ("an unknown option is refused in one line", 2,
         "error: 01_device_query/benchmark.sh: unknown option or empty argument '--bogus'", "--bogus"),
    ],
    "04_linear_regression/benchmark.sh": [
        ("three arguments are refused in one line", 2, "error: 04_linear_regression/benchmark.sh: 3 arguments, at most 2",
         "a b c"),
    ],
    "06_multi_gpu/benchmark.sh": [
        ("a step it does not have is refused in one line", 2, "error: 06_multi_gpu/benchmark.sh: no step 'bogus_step'",
         "build/06_multi_gpu 06_multi_gpu/results dp,bogus_step"),
    ],
}

# Written where told and nowhere else (run in an empty folder, {out} a second one), exit 0; skipped
# without the package the script draws with: script -> (what it writes, the package, arguments).
WRITES_ONLY = {
    "02_tensor_transfer/plot_transfer.py": ("transfer_bandwidth.png", "matplotlib",
                                            TRANSFER + " {out}/transfer_bandwidth.png"),
    "03_streams_events/plot_trace.py": ("timeline.svg", "matplotlib", "{r03}/trace.json {out}/timeline.svg"),
    "03_streams_events/compare_pytorch.py": ("comparison.csv", None, STREAMS + " {out}/comparison.csv"),
    "04_linear_regression/plot_regression.py": ("loss_curves.png times.png summary.md", "matplotlib", "{r04} --out {out}"),
    "05_fused_kernels/plot_fused.py": ("time_vs_size.png per_operation.png", "matplotlib", "{r05} --out {out}"),
    "06_multi_gpu/plot_multi_gpu.py": ("allreduce_busbw.png scaling.png exchange.png on_chip.png", "matplotlib",
                                       "{r06} --out {out}"),
}

# With PyTorch and a GPU (label pytorch): a --device index that does not exist is one line and exit 2
# (common/torch_cuda.py), as in C++.
DEVICE_99 = ["01_device_query/pytorch_matmul.py", "02_tensor_transfer/pytorch_transfer.py",
             "03_streams_events/pytorch_streams.py", "04_linear_regression/pytorch_minibatch.py",
             "04_linear_regression/pytorch_regression.py"]

# The bad files the one-line cases read, made afresh in each case's folder: name -> its text, or
# a committed file (from the root) to copy. A name ending in / is an empty folder.
BAD_INPUTS = {
    "a_folder/": None, "empty_folder/": None, "times_png_a_folder/times.png/": None,
    "empty.json": "{}\n",
    "not_json.json": "not JSON {\n",
    # A reader's own files where a script would write: kept, whatever their shape (only provenance
    # the workbook wrote into a file proves it may be replaced).
    "mine.csv": "a,b\n1,2\n",
    "notes.png": "a reader's picture\n",
    "05_foreign_out/time_vs_size.png": "a reader's picture\n",
    # A trace whose one operation lasts a negative time, and one whose duration is NaN.
    "negative_dur.json": '{"traceEvents": [{"ph": "M", "name": "thread_name", "tid": 1, "args": {"name": "s"}}, '
                         '{"ph": "X", "tid": 1, "ts": 5, "dur": -3}]}\n',
    "nan_dur.json": '{"traceEvents": [{"ph": "M", "name": "thread_name", "tid": 1, "args": {"name": "s"}}, '
                    '{"ph": "X", "tid": 1, "ts": 5, "dur": NaN}]}\n',
    "04_not_json/cuda.json": '{"ms": \n',
    "04_empty_json/cuda.json": "{}\n",
    "04_other/cuda.json": ("05_fused_kernels/results/fused.json",),
    "04_swapped/cuda.json": ("04_linear_regression/results/cuda_steps.json",),
    "04_cpu_is_gpu/cpu.json": ("04_linear_regression/results/cuda.json",),  # cpu.json holding the GPU run
    "05_not_csv/sweep.csv": '{"rows": []}\n',
    "05_not_json/breakdown.json": "not JSON\n",
    "05_empty_json/breakdown.json": "{}\n",
    "05_swapped/breakdown.json": ("05_fused_kernels/results/pytorch_sweep.json",),
    "05_sweep_is_pytorch/sweep.csv": ("05_fused_kernels/results/pytorch_sweep.csv",),  # sweep.csv holding PyTorch's
    "06_not_json/exchange.json": "not JSON\n",
    "06_swapped/ddp_1.json": ("06_multi_gpu/results/ddp_2.json",),  # two files swapped: the 2-rank run
    "06_foreign/exchange.json": ("02_tensor_transfer/results/pytorch_transfer.json",),  # another program's JSON
}


def make_inputs(folder):
    for name, content in BAD_INPUTS.items():
        path = os.path.join(folder, name)
        os.makedirs(path if name.endswith("/") else os.path.dirname(path), exist_ok=True)
        if isinstance(content, tuple):
            with open(os.path.join(ROOT, content[0]), "rb") as f:
                content = f.read().decode()
        if content is not None:
            with open(path, "w") as f:
                f.write(content)


# ------------------------------------------------------------------------------ running a command


class Log:
    """What a case ran and saw, printed when ctest runs it (and on a failure when run by hand)."""

    def __init__(self):
        self.lines = []

    def say(self, text):
        self.lines.append(text.rstrip("\n"))

    def fail(self, text):
        self.say(f"FAIL: {text}")
        return 1


def shown(command):
    return " ".join(shlex.quote(a.replace(ROOT + "/", "")) for a in command)


def run(log, command, cwd=None, env=None, timeout=50, merge=True):
    """The command's exit code and output: stdout and stderr together, or stdout alone where
    `merge` is False (its stderr then goes into the log after it)."""
    log.say(f"$ {shown(command)}")
    try:
        done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True, timeout=timeout,
                              stderr=subprocess.STDOUT if merge else subprocess.PIPE)
    except subprocess.TimeoutExpired:
        log.say(f"(still running after {timeout} s: stopped)")
        return None, ""
    log.say(done.stdout + (done.stderr or ""))
    return done.returncode, done.stdout


def with_path(*folders):
    return dict(os.environ, PYTHONPATH=os.pathsep.join(folders))


def script_command(script, args):
    """A script as a reader starts it: bash for a .sh, this Python for a .py."""
    path = os.path.join(ROOT, script)
    return ["bash", path, *args] if script.endswith(".sh") else [PYTHON, path, *args]


def expect_one_line(log, command, code, prefix, cwd=None, env=None):
    """Passes when `command` exits with `code` and prints exactly one line (stdout and stderr
    together), which begins with `prefix`: the workbook's contract for a usage error (2, "error:
    ...") and for a missing package (1, "error: this script needs ...")."""
    status, output = run(log, command, cwd, env)
    lines = output.rstrip("\n").split("\n")
    if status != code:
        return log.fail(f"expected exit code {code}, got {status}")
    if len(lines) != 1:
        return log.fail(f"expected one line, got {len(lines)}")
    if not output.startswith(prefix):
        return log.fail(f"expected the line to begin with '{prefix}'")
    return 0


def expect_output(log, command, pattern, env=None):
    """Passes when what `command` prints (stdout and stderr together) matches `pattern` from its
    start, whatever its exit code."""
    _, output = run(log, command, env=env)
    return 0 if re.match(pattern, output) else log.fail(f"expected the output to match {pattern!r}")


def has_gpu():
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.startswith("GPU ") for line in listing.splitlines())


# ------------------------------------------------------------------------------ the cases


class Case:
    """One ctest test: its name (what holds), label, time limit and skip code, and the check."""

    def __init__(self, name, check, label="cpu", timeout=60, skip=None):
        self.name, self.check, self.label, self.timeout, self.skip = name, check, label, timeout, skip


def one_line_case(script, holds, code, prefix, shown_args):
    def check(log, ctx):
        env = with_path(NO_PACKAGES) if script.endswith(".py") else None
        with tempfile.TemporaryDirectory() as folder:
            make_inputs(folder)
            return expect_one_line(log, script_command(script, arguments(shown_args)), code, place(prefix),
                                   cwd=folder, env=env)
    return Case(f"{script}: {holds}", check)


def help_case(script):
    def check(log, ctx):
        status, _ = run(log, script_command(script, ["--help"]))
        return 0 if status == 0 else log.fail(f"expected exit code 0, got {status}")
    return Case(f"{script}: --help shows how to use it", check)


def writes_only_check(script, files, module, shown_args):
    """Runs the script in an empty folder and passes when it exits 0, leaves that folder empty and
    writes exactly `files` into the folder named by {out}; 77 where `module` cannot be imported."""
    def check(log, ctx):
        if module and run(Log(), [PYTHON, "-c", f"import {module}"])[0] != 0:
            log.say(f"skipped: needs {module} for {PYTHON}")
            return 77
        with tempfile.TemporaryDirectory() as work:
            cwd, out = os.path.join(work, "cwd"), os.path.join(work, "out")
            os.mkdir(cwd)
            os.mkdir(out)
            args = [a.replace("{out}", out) for a in arguments(shown_args)]
            status, _ = run(log, script_command(script, args), cwd=cwd, timeout=110)
            if status != 0:
                return log.fail(f"expected exit code 0, got {status}")
            if os.listdir(cwd):
                return log.fail(f"wrote into the current folder: {' '.join(sorted(os.listdir(cwd)))}")
            if sorted(os.listdir(out)) != sorted(files.split()):
                return log.fail(f"expected to write '{files}', wrote '{' '.join(sorted(os.listdir(out)))}'")
        return 0
    return check


def device_99_case(script):
    def check(log, ctx):
        env = with_path(COMMON)
        if run(Log(), [PYTHON, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"],
               env=env, timeout=100)[0] != 0:
            log.say("skipped: needs PyTorch that imports and sees a GPU")
            return 77
        with tempfile.TemporaryDirectory() as folder:
            return expect_one_line(log, script_command(script, ["--device", "99"]), 2,
                                   "error: --device 99: CUDA error: invalid device ordinal", cwd=folder, env=env)
    return Case(f"{script}: a GPU index that does not exist is refused in one line", check, label="pytorch",
                timeout=120, skip=77)


FUNCTION_CASES = []


def case(name, **properties):
    """Registers a function (log, ctx) -> exit code as the case `name`."""
    def register(check):
        FUNCTION_CASES.append(Case(name, check, **properties))
        return check
    return register


def exists(relative):
    return os.path.exists(os.path.join(ROOT, relative))


def all_cases():
    """Every case whose script is in this checkout, in the tables' order."""
    scripts = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "[0-9][0-9]_*", "*.py")))
    # A chapter's readme_values.py is no script: scripts/docs.sh imports it to make the README.
    cases = [help_case(s) for s in scripts if os.path.basename(s) != "readme_values.py"]
    cases += [one_line_case(script, *row) for script, rows in ONE_LINE.items() if exists(script) for row in rows]
    cases += [Case(f"{script}: writes {files} where it is told, and nothing else", writes_only_check(script, files, *row),
                   timeout=120, skip=77)
              for script, (files, *row) in WRITES_ONLY.items() if exists(script)]
    cases += [device_99_case(s) for s in DEVICE_99 if exists(s)]
    cases += [c for c in FUNCTION_CASES if not getattr(c.check, "needs", None) or exists(c.check.needs)]
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    return cases


def needs(relative):
    """Lists the case only where `relative` (from the root) is in this checkout."""
    def mark(check):
        check.needs = relative
        return check
    return mark


# A title is text as written: a '$' (TeX to matplotlib by default) once stopped a plot with a traceback.
case("03_streams_events/plot_trace.py: a title holding TeX ('$\\frac{') is drawn as written", timeout=120,
     skip=77)(needs("03_streams_events/plot_trace.py")(writes_only_check(
         "03_streams_events/plot_trace.py", "title.png", "matplotlib", "{r03}/trace.json {out}/title.png 'cost $\\frac{ x$'")))


@case("common/regression_torch.py: batch_order gives minibatch.cu's order")
def batch_order(log, ctx):
    """The Python restatement of 04's mini-batch order gives the C++ values (test_04's "mini-batch
    order"), and needs neither torch nor numpy to do it."""
    wanted = {(8, True, 42, 0): [0, 6, 7, 3, 5, 2, 1, 4], (8, True, 42, 1): [2, 5, 0, 6, 3, 4, 1, 7],
              (8, True, 7, 0): [6, 3, 4, 5, 1, 2, 7, 0], (5, False, 42, 3): [0, 1, 2, 3, 4]}
    code = f"import json, regression_torch as r; print(json.dumps([r.batch_order(*a) for a in {list(wanted)!r}]))"
    status, output = run(log, [PYTHON, "-c", code], env=with_path(COMMON, NO_PACKAGES), merge=False)
    if status != 0:
        return log.fail(f"exit code {status}")
    got = dict(zip(wanted, json.loads(output)))
    wrong = [f"batch_order{a} = {got[a]}, minibatch.cu gives {w}" for a, w in wanted.items() if got[a] != w]
    return log.fail("; ".join(wrong)) if wrong else 0


# --json FILE and --json - of every script go through workbook_cli.write_json.
WRITE_JSON = """
import json, os, sys, tempfile, workbook_cli as c
path = os.path.join(tempfile.mkdtemp(), "r.json")
c.write_json(path, {"a": [1, 2]})
with open(path) as f:
    j = json.load(f)
assert "commit" in j.pop("provenance"), "no commit in the file's provenance"
assert j == {"a": [1, 2]}, j
print("report", file=sys.stderr)
c.write_json("-", {"b": 3})
"""


@case("common/workbook_cli.py: --json FILE gets the object and its provenance, --json - the same alone on stdout")
def write_json(log, ctx):
    status, output = run(log, [PYTHON, "-c", WRITE_JSON], env=with_path(COMMON), merge=False)
    if status != 0:
        return log.fail(f"exit code {status}")
    try:
        j = json.loads(output)
    except json.JSONDecodeError as e:
        return log.fail(f"stdout is not the JSON object alone: {e}")
    if "gpus" not in j.pop("provenance", {}) or j != {"b": 3}:
        return log.fail(f"stdout holds {j}, not {{'b': 3}} with its provenance")
    return 0


@case("common/workbook_cli.py: every figure format the scripts take is one matplotlib writes", skip=77)
def plot_formats(log, ctx):
    """workbook_cli.PLOT_FORMATS, which the scripts check before matplotlib is imported, are formats
    the installed matplotlib writes (skipped without matplotlib)."""
    if not importlib.util.find_spec("matplotlib"):
        log.say("skipped: needs matplotlib")
        return 77
    sys.path.insert(0, COMMON)
    import matplotlib.figure
    import workbook_cli
    missing = set(workbook_cli.PLOT_FORMATS) - set(matplotlib.figure.Figure().canvas.get_supported_filetypes())
    return log.fail(f"matplotlib cannot write {sorted(missing)}") if missing else 0


@case("common/provenance.py: prints the line provenance.cpp prints")
def provenance_line(log, ctx):
    pattern = (r"# provenance: commit ([0-9a-f]+|unknown) \((clean|modified|unknown)\), (no GPU|[0-9]+ x [^,]+), "
               r"driver [^,]+, CUDA runtime [^,]+, toolkit [^,]+, host [^,]+(, run [^,]+)?, [0-9-]+T[0-9:]+Z: "
               r"prog --json x.json\n\Z")
    return expect_output(log, [PYTHON, os.path.join(COMMON, "provenance.py"), "prog", "--json",
                               os.path.join(ROOT, "x.json")], pattern)


@case("06_multi_gpu/benchmark.sh: --help prints its header")
@needs("06_multi_gpu/benchmark.sh")
def benchmark_help(log, ctx):
    return expect_output(log, script_command("06_multi_gpu/benchmark.sh", ["--help"]),
                         r"benchmark.sh \[BUILD_DIR \[RESULTS_DIR \[STEPS\]\]\]: ")


# Without a GPU: gpu-report.sh says so in one line (exit 77) before building or writing anything,
# and a configure for CUDA architectures `native` stops with one message instead of CMake's CUDA
# checks failing over and over. On a machine with a GPU both would do real work: skipped there (125).
@case("scripts/gpu-report.sh: without a GPU it says so in one line and writes nothing", timeout=120, skip=125)
def gpu_report_without_gpu(log, ctx):
    if has_gpu():
        log.say("this machine has a GPU")
        return 125
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "out")
        failed = expect_one_line(log, script_command("scripts/gpu-report.sh", [out]), 77, "gpu-report.sh needs a GPU")
        return failed or (log.fail(f"{out} was written") if os.path.exists(out) else 0)


@case("cmake: CUDAARCHS=native without a GPU stops configure with one message", timeout=120, skip=125)
def native_without_gpu(log, ctx):
    if has_gpu():
        log.say("this machine has a GPU")
        return 125
    with tempfile.TemporaryDirectory() as build:
        status, output = run(log, [ctx.cmake, "-S", ROOT, "-B", build], env=dict(os.environ, CUDAARCHS="native"),
                             timeout=110)
    if status == 0:
        return log.fail("configure went on")
    said = sum("CUDA architectures 'native' need a GPU" in line for line in output.splitlines())
    return log.fail(f"the message came {said} times, not once") if said != 1 else 0


# check-exercise.sh --list names every exercise, with whether it is attempted yet.
EXERCISES = ["facts", "bandwidth", "timed_copy", "staged_copy", "pipeline", "fork_join", "gradient", "forward",
             "last_block", "graph", "all_reduce", "mailbox"]


@case("scripts/check-exercise.sh: --list names every exercise")
def exercise_list(log, ctx):
    status, output = run(log, script_command("scripts/check-exercise.sh", ["--list"]), merge=False)
    if status != 0:
        return log.fail(f"exit code {status}")
    missing = [e for e in EXERCISES if not any(f" {e} " in line for line in output.splitlines())]
    return log.fail(f"missing {', '.join(missing)}") if missing else 0


@case("exercises: each skeleton's marker is one line; deleting it makes an attempt")
def exercise_markers(log, ctx):
    """Every skeleton holds its marker on exactly one line, so deleting that line (what its header
    says to do) makes it an attempt; the header's own words are not a marker. The C++ checkers look
    for the same text (common/exercise.h)."""
    with open(os.path.join(COMMON, "exercise.h")) as f:
        if 'kTodoMarker = "TODO(exercise):"' not in f.read():
            return log.fail("exercise.h: another marker")
    skeletons = [p for p in sorted(glob.glob(os.path.join(ROOT, "[0-9][0-9]_*", "exercises", "*.cu")))
                 if not os.path.basename(p).startswith("check_")]
    for path in skeletons:
        with open(path) as f:
            count = sum("TODO(exercise):" in line for line in f)
        if count != 1:
            return log.fail(f"{os.path.relpath(path, ROOT)}: {count} marker lines")
    log.say(f"{len(skeletons)} skeletons")
    return 0 if len(skeletons) >= 12 else log.fail("fewer than 12 skeletons")


# Two checkers are built everywhere (tests/CMakeLists.txt): an answer's, whose --help names its
# attempt from the workbook's root, as check-exercise.sh does, wherever it runs; and a planted
# mistake's, a program of its own, whose lines name it, not the checker it is built from.
@case("exercises: a checker's --help names its attempt from the workbook's root")
@needs("02_tensor_transfer/exercises")
def checker_help(log, ctx):
    return expect_output(log, [os.path.join(ctx.build_dir, "02_tensor_transfer/exercises/check_timed_copy_answer"),
                               "--help"],
                         r"Checks exercise 02 timed_copy \(02_tensor_transfer/exercises/answers/timed_copy_lesson\.cu\)")


@case("exercises: a planted-mistake checker without a GPU names itself")
@needs("04_linear_regression/exercises")
def planted_mistake_names_itself(log, ctx):
    return expect_output(log, [os.path.join(ctx.build_dir, "04_linear_regression/exercises/check_forward_tail")],
                         r"check_forward_tail needs a CUDA GPU: ", env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))


# ------------------------------------------------------------------------------ ctest and by hand


def run_case(c, ctx):
    """(exit code, log) of one case; an exception in the check is its failure, with the traceback."""
    log = Log()
    try:
        code = c.check(log, ctx)
    except Exception:  # noqa: BLE001  (a broken check is a failed case, named, not a stopped run)
        import traceback
        code = log.fail(traceback.format_exc())
    return code, log


def bracket(text):
    """`text` as a CMake bracket argument, which takes every character as it is."""
    fence = "=" * next(n for n in range(1, 10) if f"]{'=' * n}]" not in text)
    return f"[{fence}[{text}]{fence}]"


def write_ctest(path, cases, ctx):
    """The add_test and set_tests_properties lines ctest reads (tests/support/python_tests.cmake.in)."""
    command = [PYTHON, os.path.abspath(__file__), "--build-dir", ctx.build_dir, "--cmake", ctx.cmake, "--case"]
    lines = []
    for c in cases:
        lines.append(f"add_test({bracket(c.name)} {' '.join(bracket(a) for a in command)} {bracket(c.name)})")
        skip = f" SKIP_RETURN_CODE {c.skip}" if c.skip else ""
        lines.append(f"set_tests_properties({bracket(c.name)} PROPERTIES LABELS {c.label} TIMEOUT {c.timeout}{skip})")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def run_by_hand(cases, ctx):
    """Every case, four at a time: one line each, with the log of each that failed."""
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for c, (code, log) in zip(cases, pool.map(lambda c: run_case(c, ctx), cases)):
            verdict = "ok" if code == 0 else "skipped" if code == c.skip else "FAIL"
            print(f"{verdict:8}{c.name}")
            if verdict == "FAIL":
                failed += 1
                print("\n".join("        " + line for line in "\n".join(log.lines).split("\n")))
    print(f"{len(cases) - failed} of {len(cases)} passed or skipped")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--list", action="store_true", help="print the cases' names and labels")
    parser.add_argument("--case", metavar="NAME", help="run the case of that name")
    parser.add_argument("--ctest", metavar="FILE", help="write the add_test lines ctest reads")
    parser.add_argument("-k", metavar="TEXT", default="", help="only the cases whose name holds TEXT")
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"), help="the build (default: build/)")
    parser.add_argument("--cmake", default="cmake", help="the CMake a configure case runs")
    ctx = parser.parse_args()
    cases = [c for c in all_cases() if ctx.k in c.name]
    if ctx.ctest:
        write_ctest(ctx.ctest, cases, ctx)
        return 0
    if ctx.list:
        print("\n".join(f"{c.label:8}{c.name}" for c in cases))
        return 0
    if ctx.case is None:
        return run_by_hand(cases, ctx)
    found = [c for c in cases if c.name == ctx.case]
    if not found:
        parser.error(f"no case named {ctx.case!r} (see --list)")
    code, log = run_case(found[0], ctx)
    print("\n".join(log.lines))
    if code != found[0].skip:  # a skip ends on its reason, the line scripts/skip-reasons.sh reports
        print("ok" if code == 0 else f"FAILED: {ctx.case}")
    return code


if __name__ == "__main__":
    sys.exit(main())
