"""regression_torch.py: the article's PyTorch regression, shared by chapter 04's and chapter 05's scripts.

The same data as the C++ programs (X = i * 2e-6 in float32, y = 0.7 X + 0.3, first 80% train), a
timer (CUDA events on a GPU, the host clock on the CPU) and chapter 04's eager training loop
(nn.Linear(1, 1) from w = 0.83, b = 0.7645, nn.MSELoss, torch.optim.SGD), optionally timing each
step of every epoch as linear_regression_bench does.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    import regression_torch
    data = regression_torch.make_data(5_000_000, 0.0, 42, torch.device("cuda"))
    result = regression_torch.train(args, data, device, time_steps=True)  # args: epochs, lr, print_every
"""
import math
import time

from workbook_cli import timing
from workbook_needs import needs

torch = needs("torch")
nn = needs("torch.nn")

MASK64 = (1 << 64) - 1


def batch_order(batches, shuffle, seed, epoch):
    """The order of the mini-batches of one epoch, as batch_order in 04_linear_regression/minibatch.cu:
    0, 1, ... unshuffled; else a Fisher-Yates shuffle driven by splitmix64 seeded from (seed, epoch)."""
    order = list(range(batches))
    if not shuffle:
        return order
    state = (seed ^ ((0x5851F42D4C957F2D * (epoch + 1)) & MASK64)) & MASK64
    for i in range(batches - 1, 0, -1):
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        j = (z ^ (z >> 31)) % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


DIVERGENCE_FACTOR = 1e10  # as regression.h: the loss is not finite or > 1e10 x the first loss


def make_data(points, noise, seed, device):
    # Two float32 roundings per y (a product, then a sum), as the C++ data kernel does.
    x = torch.arange(points, dtype=torch.float32, device=device) * 2e-6
    y = x * 0.7 + 0.3
    if noise > 0:  # torch's own generator: the same distribution, not the same numbers as cuRAND
        g = torch.Generator(device=device).manual_seed(seed)
        y = y + noise * torch.randn(points, generator=g, device=device)
    train = points // 5 * 4 + points % 5 * 4 // 5
    return x[:train, None], y[:train, None], x[train:, None], y[train:, None]


def article_model(device):
    """The article's model: nn.Linear(1, 1) with its starting w = 0.83 and b = 0.7645."""
    model = nn.Linear(1, 1).to(device)
    with torch.no_grad():
        model.weight.fill_(0.83)
        model.bias.fill_(0.7645)
    return model


class Timer:
    """CUDA events on a GPU, the host clock on the CPU."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"
        if self.cuda:
            torch.cuda.synchronize()

    def mark(self):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def ms(self, a, b):
        if self.cuda:
            b.synchronize()
            return a.elapsed_time(b)
        return (b - a) * 1e3


def train(args, data, device, log=None, time_steps=False):
    x_train, y_train, x_test, y_test = data
    model = article_model(device)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    timer = Timer(device)
    steps = {"forward": [], "loss": [], "backward": [], "step": []}
    losses, diverged_at, first = [], None, None
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = timer.mark()
    for epoch in range(args.epochs):
        t0 = timer.mark() if time_steps else None
        y_pred = model(x_train)
        t1 = timer.mark() if time_steps else None
        loss = loss_fn(y_pred, y_train)
        t2 = timer.mark() if time_steps else None
        optimizer.zero_grad()
        loss.backward()
        t3 = timer.mark() if time_steps else None
        optimizer.step()
        if time_steps:
            t4 = timer.mark()
            for name, (a, b) in zip(steps, ((t0, t1), (t1, t2), (t2, t3), (t3, t4))):
                steps[name].append((a, b))
        if epoch % args.print_every == 0:
            value = loss.item()  # the loop's only synchronization, as in the C++ version
            first = value if first is None else first
            if not math.isfinite(value) or value > DIVERGENCE_FACTOR * first:
                diverged_at = epoch
                break
            losses.append({"epoch": epoch, "loss": value})
            if log is not None:
                print(f"  epoch {epoch:4d}  loss {value:.7g}", file=log, flush=True)
    stop = timer.mark()
    if device.type == "cuda":
        torch.cuda.synchronize()
    result = {"training_ms": timer.ms(start, stop), "losses": losses, "diverged_at": diverged_at}
    if diverged_at is None:
        with torch.no_grad():
            result["test_mse"] = loss_fn(model(x_test), y_test).item()
        result["w"] = model.weight.item()
        result["b"] = model.bias.item()
    if time_steps:  # the rows linear_regression_bench writes: one per step, then each epoch's total
        per_epoch = {name: [timer.ms(a, b) for a, b in marks] for name, marks in steps.items()}
        result["steps"] = [{"step": name, "time_ms": timing(ms)} for name, ms in per_epoch.items()]
        result["steps"].append({"step": "total", "time_ms": timing([sum(t) for t in zip(*per_epoch.values())])})
    return result


if __name__ == "__main__":
    import sys

    print("error: common/regression_torch.py is a module the workbook's scripts import, not a program", file=sys.stderr)
    sys.exit(2)
