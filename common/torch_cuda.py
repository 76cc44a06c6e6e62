"""torch_cuda.py: what the chapter scripts ask of CUDA through PyTorch, written once.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    from torch_cuda import cuda_device_problem, use_cuda_device, time_on_stream
    device = use_cuda_device("pytorch_matmul", args.device)     # after require("torch"); made current
    ms = time_on_stream(lambda: y.add_(x, alpha=0.5), warmup=3, timed=20)   # one time per repeat, in ms

cuda_device_problem answers as the C++ programs do: without a usable GPU, one line saying why and
exit code 77; a --device index that does not exist, one line naming how many there are and exit 2.
use_cuda_device is the usual start of a script: that check, the script ending with its code when it
fails, and otherwise the device made current (torch.cuda.set_device, as cudaSetDevice).

time_on_stream is common/event_timer.h's: every repeat is queued between its own pair of events on
the current stream, then one wait for all of them. The times are the GPU's, and a repeat that the
host queues more slowly than the GPU runs it shows the host's pace (the GPU waits between events).
"""
import sys

from workbook_needs import needs

torch = needs("torch")


def cuda_device_problem(script, index):
    """None when GPU `index` can be used; otherwise prints the one line and returns the exit code."""
    if not torch.cuda.is_available():
        print(f"{script} needs a CUDA GPU: torch.cuda.is_available() is False", file=sys.stderr)
        return 77
    if not 0 <= index < torch.cuda.device_count():
        print(f"error: --device {index}: CUDA error: invalid device ordinal; this machine has "
              f"{torch.cuda.device_count()} device(s)", file=sys.stderr)
        return 2
    return None


def use_cuda_device(script, index):
    """torch.device("cuda", index), made current; ends the script (SystemExit) with
    cuda_device_problem's code when that GPU cannot be used."""
    code = cuda_device_problem(script, index)
    if code is not None:
        raise SystemExit(code)
    device = torch.device("cuda", index)
    torch.cuda.set_device(device)
    return device


def time_on_stream(work, warmup, timed):
    for _ in range(warmup):
        work()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(timed)]
    for start, stop in events:
        start.record()
        work()
        stop.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(stop) for start, stop in events]


def sleep_cycles_per_ms():
    """torch.cuda._sleep counts GPU clock cycles: how many make a millisecond on this GPU now."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    start.record()
    torch.cuda._sleep(10_000_000)
    stop.record()
    stop.synchronize()
    return 10_000_000 / start.elapsed_time(stop)


if __name__ == "__main__":
    print("error: common/torch_cuda.py is a module the workbook's scripts import, not a program", file=sys.stderr)
    sys.exit(2)
