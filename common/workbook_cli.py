"""workbook_cli.py: the flag rules of the C++ programs (common/cli.h), for the Python scripts.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    from workbook_cli import Parser, device_index, integer, size, size_list
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("--device", type=device_index, default="0")          # N, cuda or cuda:N -> N
    p.add_argument("--points", type=size("--points"), default="5M")     # 5000, 50K, 5M or 2G
    p.add_argument("--sizes", type=size_list("--sizes", 2, 2_000_000_000), default="500,5K")
    p.add_argument("--epochs", type=integer("--epochs"), default=200)
    args = p.parse_args()
    p.require_at_least("--epochs", args.epochs, 1)   # "--epochs must be at least 1, got 0"

Parser is argparse with every usage error as ONE line on stderr and exit code 2, before torch, numpy
or matplotlib is imported (workbook_needs.py imports them later):

    error: --sizes: '1,,2' has an empty item (use e.g. 1,2,4) (see pytorch_fused.py --help)

What argparse does not do, and this module adds: the values as cli.h reads them (a size is digits with
an optional K, M or G; a list is comma-separated with no empty item; numbers in decimal; --device is N,
cuda or cuda:N), an empty value refused rather than read as "not given", the output files of --json,
--csv and --profile checked before any work, and the files a plot or comparison reads checked by their
content (the program that wrote them, the fields read) before any import or work:

    cpp, torch_run = p.input_jsons((args.cpp, "tensor_transfer_bench", SHAPE), (args.torch, "pytorch_transfer", SHAPE))
    p.output_file(args.png, PLOT_FORMATS)
    run(main)   # an OSError after the checks (a disk full): one line, exit 1, not a traceback
"""
import argparse
import csv
import json
import math
import os
import re
import sys

MAX_EPOCHS = 1_000_000  # regression_problem.h's kMaxEpochs
INT_MAX = 2**31 - 1  # a C++ int: what the programs' count flags hold (CLI11: "out of range" above)
_SCALE = {"K": 1_000, "M": 1_000_000, "G": 1_000_000_000}
_INT64_MAX = (1 << 63) - 1
_SIZE_HINT = "use digits with an optional K, M or G: 5000, 50K, 5M"
# A decimal number as the C++ programs read one: no "0x10", "1_000", "inf" or "nan" (float() takes them).
_DECIMAL = re.compile(r"[+-]?(0|[1-9][0-9]*)?(\.[0-9]*)?([eE][+-]?[0-9]+)?")
# "1K", "5M": a size, which only the size flags take (parse_size); elsewhere the refusal says so.
_SIZE_SHAPED = re.compile(r"[0-9]*\.?[0-9]+[KMG]")
SIZES_ONLY = "K, M and G are for sizes, such as --points 5M"


class UsageError(Exception):
    """A bad flag value; the message names the flag and reads as one line. The type= helpers raise it
    (argparse would put "argument --x: " before a message of its own kind), Parser turns it into the line."""


# ------------------------------------------------------------------------------ values, as cli.h reads them


def require_at_least(flag, value, minimum):
    if not value >= minimum:
        raise UsageError(f"{flag} must be at least {minimum}, got {value}")


def require_at_most(flag, value, maximum):
    if not value <= maximum:
        raise UsageError(f"{flag} must be at most {maximum}, got {value}")


def require_positive(flag, value):
    """Finite and greater than zero (a learning rate, a time)."""
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{flag} must be a finite number greater than 0, got {value}")


def _decimal_digits(text):
    """Digits only, and no leading zero ("010" is refused, as cli.cpp refuses it: CLI11 reads it as
    octal). str.isdigit would take "²" and "٥"."""
    return bool(text) and all("0" <= c <= "9" for c in text) and (text == "0" or text[0] != "0")


def parse_size(text):
    """"5000", "50K", "5M", "2G" (K, M, G: capitals, as cli.h) as an int; None for anything else
    (empty, a sign, a leading zero, a decimal point, "5e6", spaces, "5m", another suffix) and above
    the int64 range."""
    digits = text[:-1] if text[-1:] in _SCALE else text
    if not _decimal_digits(digits):
        return None
    value = int(digits) * _SCALE.get(text[-1:], 1)
    return value if value <= _INT64_MAX else None


def size_value(flag, text):
    value = parse_size(text)
    if value is None:
        raise UsageError(f"{flag}: '{text}' is not a size ({_SIZE_HINT})")
    return value


def list_items(flag, text, example="1,2,4"):
    """The items of a comma list; an empty list or an empty item ("1,,2", ",1", "1,") is refused."""
    if text == "":
        raise UsageError(f"{flag} needs at least one value")
    items = text.split(",")
    if any(item == "" for item in items):
        raise UsageError(f"{flag}: '{text}' has an empty item (use e.g. {example})")
    return items


def _number_list(flag, text, minimum, maximum, read, example):
    """The items of a comma list, each read by `read` and within [minimum, maximum], none twice."""
    values = []
    for item in list_items(flag, text, example):
        value = read(item)
        require_at_least(flag, value, minimum)
        require_at_most(flag, value, maximum)
        if value in values:
            raise UsageError(f"{flag}: '{text}' lists {item} twice")
        values.append(value)
    return values


def parse_size_list(flag, text, minimum, maximum):
    """A list of sizes ("500,5K,5M")."""
    return _number_list(flag, text, minimum, maximum, lambda item: size_value(flag, item), "500,5K,5M")


def parse_int_list(flag, text, minimum, maximum):
    """A list of plain whole numbers ("1,2,4": no suffix)."""
    def whole(item):
        value = parse_size(item) if all("0" <= c <= "9" for c in item) else None
        if value is None:
            raise UsageError(f"{flag}: '{item}' is not a whole number (use e.g. 1,2,4)")
        return value
    return _number_list(flag, text, minimum, maximum, whole, "1,2,4")


def parse_name_list(flag, text, names):
    """A list of names from `names` ("eager,graph")."""
    items = list_items(flag, text, ",".join(names[:2]))
    for item in items:
        if item not in names:
            raise UsageError(f"{flag}: '{item}' is not one of {', '.join(names)}")
    return items


def parse_integer(flag, text, maximum=INT_MAX):
    """A whole number, with an optional minus sign, that fits the C++ program's type (an int unless
    `maximum` says otherwise): the range check after parsing says what is allowed."""
    if _SIZE_SHAPED.fullmatch(text):
        raise UsageError(f"{flag}: '{text}' is not a number here ({SIZES_ONLY})")
    if not _decimal_digits(text[1:] if text.startswith(("-", "+")) else text):
        raise UsageError(f"{flag}: '{text}' is not a whole number (decimal, without leading zeros)")
    if not -maximum - 1 <= int(text) <= maximum:
        raise UsageError(f"{flag}: {text} is out of range")
    return int(text)


def parse_number(flag, text):
    """A real number ("0.01", "1e-3"); the range check says what is allowed."""
    if _SIZE_SHAPED.fullmatch(text):
        raise UsageError(f"{flag}: '{text}' is not a number here ({SIZES_ONLY})")
    if not _DECIMAL.fullmatch(text) or not any(c.isdigit() for c in text.split("e")[0].split("E")[0]):
        raise UsageError(f"{flag}: '{text}' is not a decimal number")
    return float(text)


def parse_device(text, cpu=False, flag="--device"):
    """--device as torch.device spells it: "N" or "cuda:N" -> "cuda:N", "cuda" -> "cuda", and with
    cpu=True also "cpu". Anything else (a sign, spaces, "gpu", "cuda:") is refused. Whether device
    N exists is asked later, of torch."""
    if text in ("cuda", "cpu" if cpu else "cuda"):
        return text
    index = text[len("cuda:"):] if text.startswith("cuda:") else text
    if not (len(index) <= 9 and _decimal_digits(index)):  # decimal: no "01", as cli.cpp
        raise UsageError(f"{flag} must be {'cpu, ' if cpu else ''}N, cuda or cuda:N (e.g. 0 or cuda:1), got '{text}'")
    return f"cuda:{int(index)}"


# type= helpers: argparse calls them with the flag's text (and with a default given as a string).

def size(flag):
    return lambda text: size_value(flag, text)


def size_list(flag, minimum, maximum):
    return lambda text: parse_size_list(flag, text, minimum, maximum)


def int_list(flag, minimum, maximum):
    return lambda text: parse_int_list(flag, text, minimum, maximum)


def name_list(flag, names):
    return lambda text: parse_name_list(flag, text, names)


def integer(flag, maximum=INT_MAX):
    return lambda text: parse_integer(flag, text, maximum)


def number(flag):
    return lambda text: parse_number(flag, text)


def device_index(text):
    """A CUDA-only --device: N, cuda or cuda:N, as the index N (an int)."""
    name = parse_device(text)
    return 0 if name == "cuda" else int(name[len("cuda:"):])


def device_name(text):
    """A --device that also takes cpu: the string for torch.device ("cpu", "cuda", "cuda:N")."""
    return parse_device(text, cpu=True)


# ------------------------------------------------------------------------------ files
# A shape is what a script reads of a JSON value: a dict of key -> shape ("key?" when the key may be
# absent, "*" for every key present), a one-item list [shape] for a non-empty list of such items, or
# one of the names below. The check runs before any work, so that the work itself needs no guards.

def _real(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_LEAVES = {
    "text": ("text", lambda v: isinstance(v, str)),
    "number": ("a number", _real),
    "whole": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "duration": ("a finite number of 0 or more", lambda v: _real(v) and math.isfinite(v) and v >= 0),  # a bar's length
    "positive": ("a number above 0", lambda v: _real(v) and math.isfinite(v) and v > 0),  # a divisor, a log axis
}

# The figure formats the scripts write: those whose metadata keeps the provenance line as text
# (save_figure), so that a rerun can prove the file is its own (written_by_the_workbook). Named here
# so that a bad name is refused before matplotlib is imported (and where it is missing); a test
# checks that the installed matplotlib writes every one.
PLOT_FORMATS = ("png", "pdf", "svg")


def shape_error(value, shape, where="the top level"):
    """None when `value` has `shape`, else what differs, named by its place ("bandwidth[3].gbps")."""
    def at(key):
        return key if where == "the top level" else f"{where}.{key}"
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{where} is not a JSON object"
        for key, inner in shape.items():
            for k in value.keys() if key == "*" else [key.rstrip("?")]:
                if k not in value and not key.endswith("?"):
                    return f"{at(k)} is missing"
                error = shape_error(value[k], inner, at(k)) if k in value else None
                if error:
                    return error
        return None
    if isinstance(shape, list):
        if not isinstance(value, list) or not value:
            return f"{where} is not a non-empty list"
        return next(filter(None, (shape_error(item, shape[0], f"{where}[{i}]") for i, item in enumerate(value))), None)
    name, test = _LEAVES[shape]
    return None if test(value) else f"{where} is not {name} (it is {json.dumps(value)[:40]})"


def written_by_the_workbook(path, extension):
    """Whether an existing file is one a rerun may replace, as the C++ programs decide: proven by the
    provenance the workbook writes into every file, never guessed from its shape. A JSON object with
    a "provenance" record, a CSV whose first line is the provenance line, a figure whose metadata
    holds it (save_figure: PNG and SVG "Description", PDF "Subject"); a format without metadata
    (.jpg, ...) is never replaced."""
    try:
        if extension in (".csv", ".json"):
            with open(path, encoding="utf-8") as f:
                if extension == ".csv":
                    return f.readline().startswith("# provenance: commit ")
                j = json.load(f)
            return isinstance(j, dict) and isinstance(j.get("provenance"), dict) and "commit" in j["provenance"]
        # The metadata, stored as text: PNG and SVG near the start, PDF's Info dictionary near the
        # end, in UTF-16 when the line holds a character beyond ASCII.
        mark = "provenance: commit "
        with open(path, "rb") as f:
            head = f.read(1 << 20)
            f.seek(max(0, os.path.getsize(path) - (1 << 20)))
            text = head + f.read()
        return mark.encode() in text or mark.encode("utf-16-be") in text
    except (OSError, UnicodeDecodeError, ValueError):
        return False


def output_file_problem(path, extension):
    """Why an output file a flag names cannot be written, or None: as the C++ programs'
    require_output_file, a name ending in `extension` (a slip such as `--json README.md` cannot
    overwrite a source), not a folder, in a folder that exists, not a file of the reader's, and
    writable."""
    if os.path.isdir(path):
        return f"is a folder; name the file to write (e.g. {os.path.join(path, 'out' + extension)})"
    if os.path.splitext(path)[1] != extension:
        return f"name a {extension} file (it is overwritten)"
    folder = os.path.dirname(path)
    if folder and not os.path.isdir(folder):
        return f"the folder '{folder}' does not exist"
    if os.path.exists(path) and os.path.getsize(path) > 0 and not written_by_the_workbook(path, extension):
        return "is there and is not a file the workbook wrote; name another (it would be overwritten)"
    return None if can_write(path) else "cannot be written"


def can_write(path):
    """Whether `path` can be opened for writing, tried without truncating a file that is there; a
    file the try created is removed again."""
    existed = os.path.exists(path)
    try:
        with open(path, "a"):
            pass
    except OSError:
        return False
    finally:
        if not existed and os.path.exists(path):
            os.remove(path)
    return True


# ------------------------------------------------------------------------------ the parser


class Parser(argparse.ArgumentParser):
    """argparse, with every usage error as one line on stderr and exit code 2 (--help still exits 0),
    flags written in full (argparse's allow_abbrev=False: it would read --stro as --strong), and the
    checks of the files a script reads and writes, each ending the script through fail()."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        """Ends the script: `error: <message> (see <script> --help)` on stderr, exit code 2."""
        if message.startswith("the following arguments are required"):  # the usage too, on the same line
            message += "; usage: " + self.format_usage().strip()[len("usage: "):]
        first_line = " ".join(str(message).split())  # one line, whatever the message held
        sys.stderr.write(f"error: {first_line} (see {self.prog} --help)\n")
        sys.exit(2)

    fail = error  # the scripts' own refusals

    def parse_known_args(self, args=None, namespace=None):
        given = sys.argv[1:] if args is None else list(args)
        # `--json ''` or `--json=`: an empty value (a shell variable never set) is refused, as the
        # C++ programs refuse it, rather than read as "not given".
        for before, arg in zip([""] + given[:-1], given):
            if arg == "" and before.startswith("--") and "=" not in before:
                self.fail(f"{before} needs a value, and '' is none")
            if arg.startswith("--") and arg.endswith("=") and len(arg) > 3:
                self.fail(f"{arg[:-1]} needs a value, and '' is none")
        # A missing positional is named by parse_args, after argparse has named an unknown flag (the
        # likelier slip of the two); argparse itself would name the positional first.
        positionals = [a for a in self._actions if not a.option_strings and a.required]
        for action in positionals:
            action.required = False
        try:
            return super().parse_known_args(given, namespace)
        except UsageError as e:  # from a type= helper (argparse passes other exceptions through)
            self.fail(str(e))
        finally:
            for action in positionals:
                action.required = True

    def parse_args(self, args=None, namespace=None):
        parsed = super().parse_args(args, namespace)  # an unknown flag ends the script here
        missing = [a.metavar or a.dest for a in self._actions
                   if not a.option_strings and a.required and getattr(parsed, a.dest) is None]
        if missing:
            self.error(f"the following arguments are required: {', '.join(missing)}")
        # Every script's output files (--json, --csv, --profile), checked before any work and before
        # torch is looked for (the same rule and words as the C++ programs' require_output_file).
        for name, extension in (("json", ".json"), ("csv", ".csv"), ("profile", ".json")):
            path = getattr(parsed, name, None) if f"--{name}" in self._option_string_actions else None
            problem = output_file_problem(path, extension) if isinstance(path, str) and path not in ("", "-") else None
            if problem:
                self.fail(f"--{name} {path}: {problem}")
        return parsed

    # Range checks after parsing (a --quick default, or a check that needs two flags).
    def check(self, function, *args):
        """Returns function(*args), or fails with its UsageError's message (parse a flag later)."""
        try:
            return function(*args)
        except UsageError as e:
            self.fail(str(e))

    def require_at_least(self, flag, value, minimum):
        self.check(require_at_least, flag, value, minimum)

    def require_at_most(self, flag, value, maximum):
        self.check(require_at_most, flag, value, maximum)

    def require_positive(self, flag, value):
        self.check(require_positive, flag, value)

    def require_epochs(self, epochs):
        """--epochs within the C++ programs' bounds (regression_problem.h's kMaxEpochs): a typo such as
        2147483648 is refused now, not run for days."""
        self.require_at_least("--epochs", epochs, 1)
        self.require_at_most("--epochs", epochs, MAX_EPOCHS)

    # The files a script reads: missing, a folder, unreadable, not JSON (or CSV), written by another
    # program than the one named (every program's --json has a "program" field), or without a field
    # the script reads.
    def _read(self, path, parse):
        """parse(open file) for a file that exists."""
        if not path:
            self.fail("an input file needs a name, and '' is none")
        if os.path.isdir(path):
            self.fail(f"{path}: is a folder, not a file")
        if not os.path.exists(path):
            self.fail(f"{path}: no such file")
        try:
            with open(path, newline="") as f:
                return parse(f)
        except OSError as e:
            self.fail(f"{path}: cannot read it ({e.strerror})")

    def _load_json(self, path):
        def parse(f):
            try:
                return json.load(f)
            except json.JSONDecodeError as e:
                self.fail(f"{path}: not JSON ({e.msg} at line {e.lineno})")
            except UnicodeDecodeError:  # a PNG, say
                self.fail(f"{path}: not JSON (not UTF-8 text)")
        value = self._read(path, parse)
        if not isinstance(value, dict):
            self.fail(f"{path}: not a JSON object")
        return value

    def input_jsons(self, *specs):
        """The JSON objects of files given as (path, program, shape) tuples (program None: any, as a
        Chrome trace, which has no "program" field), checked in that order. Two files given in each
        other's place are named as swapped (by their "program" fields), not as two wrong files."""
        values = [self._load_json(path) for path, _, _ in specs]
        found = [v.get("program") if isinstance(v.get("program"), str) else None for v in values]
        wanted = [program for _, program, _ in specs]
        if None not in wanted and found != wanted and sorted(map(str, found)) == sorted(wanted):
            self.fail("the files are in the wrong order: " + ", ".join(
                f"{path} is {program}'s" for (path, _, _), program in zip(specs, found)) +
                f" (give {', then '.join(wanted)})")
        for (path, program, shape), value, by in zip(specs, values, found):
            if program and by != program:
                self.fail(f"{path}: written by {by}, not by {program}" if by else
                          f"{path}: not {program}'s JSON (it has no \"program\" field)")
            self.check_shape(path, value, shape)
        return values

    def input_json(self, path, program, shape=None):
        return self.input_jsons((path, program, shape))[0]

    def check_shape(self, path, value, shape, where="the top level"):
        error = shape_error(value, shape, where) if shape is not None else None
        if error:
            self.fail(f"{path}: {error}")

    def input_csv(self, path, numbers, texts=()):
        """The rows of CSV file `path` as dicts, each column of `numbers` as a float; the header must
        hold every column named, and each such cell a number."""
        def parse(f):
            try:
                reader = csv.DictReader(line for line in f if not line.startswith("# provenance: "))
                return reader.fieldnames or [], list(reader)
            except csv.Error as e:  # a NUL byte
                self.fail(f"{path}: not CSV ({e})")
            except UnicodeDecodeError:
                self.fail(f"{path}: not CSV (not UTF-8 text)")
        header, rows = self._read(path, parse)
        missing = [c for c in (*numbers, *texts) if c not in header]
        if missing:
            self.fail(f"{path}: not the expected CSV (no column {', '.join(missing)} in its first line)")
        for line, row in enumerate(rows, start=2):
            for column in numbers:
                try:
                    value = float(row[column])
                except (TypeError, ValueError):  # TypeError: a short row's missing cell (None)
                    value = math.nan
                if not math.isfinite(value):
                    self.fail(f"{path}: line {line}: {column} is not a number ({row[column]!r})")
                row[column] = value
        return rows

    def input_folder(self, path, flag=""):
        named = f"{flag} " if flag else ""
        if not path:
            self.fail(f"{named}needs a folder name, and '' is none")
        if not os.path.isdir(path):
            self.fail(f"{named}{path}: {'is a file, not a folder' if os.path.exists(path) else 'no such folder'}")

    # The files a script writes: not a folder, in a folder that exists, of a kind it can write, and
    # not a file of the reader's (written_by_the_workbook).
    def output_file(self, path, formats):
        """A file the script will write, with an extension from `formats` (e.g. PLOT_FORMATS)."""
        if not path:
            self.fail(f"the output file needs a name, and '' is none (e.g. out.{formats[0]})")
        folder = os.path.dirname(path) or "."
        extension = os.path.splitext(path)[1][1:].lower()
        if os.path.isdir(path):
            self.fail(f"{path}: is a folder; name the file to write (e.g. {os.path.join(path, 'out.' + formats[0])})")
        if not os.path.isdir(folder):
            self.fail(f"{path}: there is no folder {folder} to write it in")
        if extension not in formats:
            what = f"cannot write a .{extension} file" if extension else "has no extension"
            self.fail(f"{path}: {what} (use {', '.join('.' + f for f in formats[:3])}{' ...' if len(formats) > 3 else ''})")
        if extension in ("csv", "json"):
            problem = output_file_problem(path, "." + extension)
            if problem:
                self.fail(f"{path}: {problem}")
        elif os.path.exists(path) and os.path.getsize(path) > 0 and not written_by_the_workbook(path, "." + extension):
            self.fail(f"{path}: is there and is not a figure the workbook drew; name another (it would be overwritten)")
        elif not can_write(path):
            self.fail(f"{path}: cannot be written")

    def output_folder(self, path, names, flag="--out"):
        """A folder the script writes `names` into (from `flag`, or build/plots/<chapter>/, made
        here, where the flag is not given)."""
        if path == getattr(self, "default_out", None):
            os.makedirs(path, exist_ok=True)  # build/plots/<chapter>/, where nothing of the reader's lives
        self.input_folder(path, flag)
        for name in names:
            target = os.path.join(path, name)
            if os.path.isdir(target):
                self.fail(f"{target}: is a folder, where this script writes a file")
            if os.path.exists(target) and os.path.getsize(target) > 0 and \
                    not written_by_the_workbook(target, os.path.splitext(name)[1]):
                self.fail(f"{target}: is there and is not a file the workbook wrote; name another --out (it would be overwritten)")


def results_folder_arguments(description, outputs):
    """The command line of a plot that reads benchmark.sh's RESULTS_DIR and writes `outputs` into
    --out DIR, by default build/plots/<chapter>/ (made when needed): a reader's plot never rewrites
    the committed results/ (benchmark.sh and scripts/regenerate.sh name it with --out). Returns the
    parser, the folder (checked) and where to write. The caller reads its inputs first, then checks
    the outputs with parser.output_folder(out, outputs)."""
    parser = Parser(description=description)
    parser.add_argument("results", metavar="RESULTS_DIR", help="benchmark.sh's output folder")
    chapter = os.path.basename(os.path.dirname(os.path.abspath(sys.argv[0])))
    default_out = os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "plots", chapter))
    parser.add_argument("--out", metavar="DIR", help=f"where to write {', '.join(outputs)} (default: {default_out}, made if needed)")
    args = parser.parse_args()
    parser.input_folder(args.results, "RESULTS_DIR")
    if args.out is None:
        parser.default_out = default_out
    return parser, args.results, default_out if args.out is None else args.out


# ------------------------------------------------------------------------------ reports


def median_of(count, one, many):
    """ "median of 5 runs", or "one run" where there is only one to take the median of (format.h's)."""
    return f"one {one}" if count == 1 else f"median of {count} {many}"


def report_stream(json_target):
    """Where a script prints its report: stderr when `--json -` keeps stdout for the JSON object."""
    return sys.stderr if json_target == "-" else sys.stdout


def finish(report, failures, json_target):
    """How every script ends, as the C++ programs do: `passed` and `failures` added to the report,
    the report written where --json says (nowhere without it), then PASS or the first failure on
    the report stream, and the exit code: 0 PASS, 1 FAIL."""
    report.update(passed=not failures, failures=failures)
    if json_target:
        write_json(json_target, report)
    more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""  # as report.cpp
    print("PASS" if not failures else f"FAIL: {failures[0]}{more}", file=report_stream(json_target))
    return 0 if not failures else 1


def timing(samples):
    """A measured time in the one shape every JSON of the workbook uses (common/table.h timing()):
    {"median", "min", "max", "runs"}, in the unit the key ends with (_ms, _us). The median of an
    even count is the mean of the two middle samples, as common/stats.cpp."""
    ordered = sorted(samples)
    if not ordered:
        raise ValueError("timing: no samples")
    n = len(ordered)
    median = ordered[n // 2] if n % 2 else 0.5 * (ordered[n // 2 - 1] + ordered[n // 2])
    return {"median": median, "min": ordered[0], "max": ordered[-1], "runs": n}


def write_json(target, result):
    """--json [FILE] as the C++ programs take it: the results to FILE, or to stdout for "-" (the
    script then prints its report on stderr, so that stdout is the JSON alone). The object gains
    "provenance" (common/provenance.py), as every --json of the C++ programs does."""
    from provenance import record  # beside this file, on the path of every script that imports it
    result.setdefault("provenance", record())
    text = json.dumps(result, indent=2) + "\n"
    if target == "-":
        sys.__stdout__.write(text)
        sys.__stdout__.flush()
    else:
        with open(target, "w") as f:
            f.write(text)


def run(main):
    """sys.exit(main()), with an OSError after the checks (a full disk, a file removed meanwhile) as
    one line and exit 1 (a run-time failure), not a traceback."""
    try:
        code = main()
    except OSError as e:
        print(f"error: {f'{e.filename}: ' if e.filename else ''}{e.strerror or e}", file=sys.stderr)
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    print("error: common/workbook_cli.py is a module the workbook's scripts import, not a program", file=sys.stderr)
    sys.exit(2)
