"""torch_events.py: CUDA events around each repeat of some work, as common/event_timer.h's time_on_stream.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    from torch_events import time_on_stream
    ms = time_on_stream(lambda: y.add_(x, alpha=0.5), warmup=3, timed=20)   # one time per repeat, in ms

Every repeat is queued between its own pair of events on the current stream, then one wait for
all of them: the times are the GPU's, and a repeat that the host queues more slowly than the GPU
runs it shows the host's pace (the GPU waits between the events).
"""
from workbook_needs import needs

torch = needs("torch")


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
