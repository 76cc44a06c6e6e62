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

Every bad value ends the script with ONE line on stderr and exit code 2, before torch, numpy or
matplotlib is imported (workbook_needs.py imports them later):

    error: --sizes: '1,,2' has an empty item (use e.g. 1,2,4) (see pytorch_fused.py --help)

The rules, as cli.h: a size is digits with an optional K, M or G suffix (either case: 1e3, 1e6, 1e9);
no sign, decimal point, exponent, space or other suffix. A list is comma-separated, with no empty item
("1,,2", ",1", "1,") and every item checked. --device is N, cuda (device 0) or cuda:N (and cpu
where a script allows it).

The type= helpers raise UsageError, which Parser.parse_args turns into the one line; argparse's own
errors (an unknown flag, a missing value) go through the same line.
"""
import argparse
import json
import math
import sys

_SCALE = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}
_INT64_MAX = (1 << 63) - 1
_SIZE_HINT = "use digits with an optional K, M or G: 5000, 50K, 5M"


class UsageError(Exception):
    """A bad flag value; the message names the flag and reads as one line."""


class Parser(argparse.ArgumentParser):
    """argparse, with every usage error as one line on stderr and exit code 2 (--help still exits 0)."""

    def error(self, message):
        self.fail(message)

    def fail(self, message):
        """Ends the script: `error: <message> (see <script> --help)` on stderr, exit code 2."""
        first_line = " ".join(str(message).split())  # one line, whatever the message held
        sys.stderr.write(f"error: {first_line} (see {self.prog} --help)\n")
        sys.exit(2)

    def parse_known_args(self, args=None, namespace=None):
        try:
            return super().parse_known_args(args, namespace)
        except UsageError as e:  # from a type= helper below (argparse passes other exceptions through)
            self.fail(str(e))

    # Range checks after parsing (a --quick default, or a check that needs two flags): each ends the
    # script through fail() with a message a reader can use.
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


# ------------------------------------------------------------------------------ checks


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


# ------------------------------------------------------------------------------ parsing


def parse_size(text):
    """"5000", "50K", "5M", "2G" (K, M, G in either case) as an int; None for anything else (empty, a
    sign, a decimal point, "5e6", spaces, another suffix) and above the int64 range."""
    digits = text[:-1] if text[-1:].lower() in _SCALE else text
    if not digits or not all("0" <= c <= "9" for c in digits):  # str.isdigit would take "²" and "٥"
        return None
    value = int(digits) * _SCALE.get(text[-1:].lower(), 1)
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


def parse_size_list(flag, text, minimum, maximum):
    """A list of sizes ("500,5K,5M"), each within [minimum, maximum]."""
    values = []
    for item in list_items(flag, text, "500,5K,5M"):
        value = size_value(flag, item)
        require_at_least(flag, value, minimum)
        require_at_most(flag, value, maximum)
        values.append(value)
    return values


def parse_int_list(flag, text, minimum, maximum):
    """A list of plain whole numbers ("1,2,4": no suffix), each within [minimum, maximum]."""
    values = []
    for item in list_items(flag, text):
        value = parse_size(item) if all("0" <= c <= "9" for c in item) else None
        if value is None:
            raise UsageError(f"{flag}: '{item}' is not a whole number (use e.g. 1,2,4)")
        require_at_least(flag, value, minimum)
        require_at_most(flag, value, maximum)
        values.append(value)
    return values


def parse_name_list(flag, text, names):
    """A list of names from `names` ("eager,graph")."""
    items = list_items(flag, text, ",".join(names[:2]))
    for item in items:
        if item not in names:
            raise UsageError(f"{flag}: '{item}' is not one of {', '.join(names)}")
    return items


def parse_integer(flag, text):
    """A whole number, with an optional minus sign (the range check says what is allowed)."""
    digits = text[1:] if text.startswith("-") else text
    if not digits or not all("0" <= c <= "9" for c in digits):
        raise UsageError(f"{flag}: '{text}' is not a whole number")
    return int(text)


def parse_number(flag, text):
    """A real number ("0.01", "1e-3"); the range check says what is allowed."""
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{flag}: '{text}' is not a number") from None


def parse_device(text, cpu=False, flag="--device"):
    """--device as torch.device spells it: "N" or "cuda:N" -> "cuda:N", "cuda" -> "cuda", and with
    cpu=True also "cpu". Anything else (a sign, spaces, "gpu", "cuda:") is refused. Whether device
    N exists is asked later, of torch."""
    if text in ("cuda", "cpu" if cpu else "cuda"):
        return text
    index = text[len("cuda:"):] if text.startswith("cuda:") else text
    if not (index and len(index) <= 9 and all("0" <= c <= "9" for c in index)):
        raise UsageError(f"{flag} must be {'cpu, ' if cpu else ''}N, cuda or cuda:N (e.g. 0 or cuda:1), got '{text}'")
    return f"cuda:{int(index)}"


# ------------------------------------------------------------------------------ type= helpers
# argparse calls these with the flag's text (and with a default given as a string).


def size(flag):
    return lambda text: size_value(flag, text)


def size_list(flag, minimum, maximum):
    return lambda text: parse_size_list(flag, text, minimum, maximum)


def int_list(flag, minimum, maximum):
    return lambda text: parse_int_list(flag, text, minimum, maximum)


def name_list(flag, names):
    return lambda text: parse_name_list(flag, text, names)


def integer(flag):
    return lambda text: parse_integer(flag, text)


def number(flag):
    return lambda text: parse_number(flag, text)


def device_index(text):
    """type= for a CUDA-only --device: N, cuda or cuda:N, as the index N (an int)."""
    name = parse_device(text)
    return 0 if name == "cuda" else int(name[len("cuda:"):])


def device_name(text):
    """type= for a --device that also takes cpu: the string for torch.device ("cpu", "cuda", "cuda:N")."""
    return parse_device(text, cpu=True)


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


def write_json(target, result):
    """--json [FILE] as the C++ programs take it: the results to FILE, or to stdout for "-" (the
    script then prints its report on stderr, so that stdout is the JSON alone)."""
    text = json.dumps(result, indent=2) + "\n"
    if target == "-":
        sys.__stdout__.write(text)
        sys.__stdout__.flush()
    else:
        with open(target, "w") as f:
            f.write(text)
