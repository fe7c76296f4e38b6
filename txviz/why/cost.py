"""Cost per layer, measured: FLOPs counted by torch's FlopCounterMode and wall time, as n and d grow."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from txviz.core.threads import torch_threads

LAYERS = ("conv", "rnn", "gru", "attention", "attention+proj")
LABELS = {
    "conv": "CNN (Conv1d, kernel k)",
    "rnn": "RNN (nn.RNN, tanh)",
    "gru": "GRU (nn.GRU)",
    "attention": "self-attention (Q = K = V = X)",
    "attention+proj": "self-attention with Q, K, V and output projections",
}
BOOK = {  # Table 15.1 of the book, per layer type
    "conv": ("O(k n d²)", "O(1)", "O(log_k n)"),
    "rnn": ("O(n d²)", "O(n)", "O(n)"),
    "attention": ("O(n² d)", "O(1)", "O(1)"),
}


def formula_flops(kind: str, n: int, d: int, k: int = 3) -> int:
    """The textbook count, 2 FLOPs per multiply-add, biases and nonlinearities left out."""
    if kind == "conv":
        return 2 * k * n * d * d  # each of n outputs: a (d x k d) matrix times a k d window
    if kind == "rnn":
        return 4 * n * d * d  # per step W_xh x_t and W_hh h_{t-1}
    if kind == "gru":
        return 12 * n * d * d  # three gates, each with both matrices
    if kind == "attention":
        return 4 * n * n * d  # Q K^T (n x d by d x n) and A V (n x n by n x d)
    return 8 * n * d * d + 4 * n * n * d  # four d x d projections on top


def make_layer(kind: str, d: int, k: int = 3, seed: int = 0) -> Callable[[torch.Tensor], torch.Tensor]:
    """One real torch layer mapping x (1, n, d) to y (1, n, d)."""
    torch.manual_seed(seed)
    if kind == "conv":
        conv = nn.Conv1d(d, d, k, bias=False)  # causal, as in the path-length stacks: pad the past only
        return lambda x: conv(nn.functional.pad(x.transpose(1, 2), (k - 1, 0))).transpose(1, 2)
    if kind in ("rnn", "gru"):
        rnn = (nn.RNN if kind == "rnn" else nn.GRU)(d, d, batch_first=True, bias=False)
        return lambda x: rnn(x)[0]
    if kind == "attention":
        return lambda x: nn.functional.scaled_dot_product_attention(x, x, x)
    # Written out rather than nn.MultiheadAttention, whose fused inference path FlopCounterMode only half counts.
    qkv, out = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
    return lambda x: out(nn.functional.scaled_dot_product_attention(*qkv(x).chunk(3, dim=-1)))


def count_flops(kind: str, n: int, d: int, k: int = 3) -> int:
    """FLOPs of one forward pass as torch.utils.flop_counter.FlopCounterMode counts them."""
    layer, x = make_layer(kind, d, k), torch.randn(1, n, d)
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        layer(x)
    return int(counter.get_total_flops())


def time_layer(kind: str, n: int, d: int, k: int = 3, budget_s: float = 0.2, repeats: int = 15) -> float:
    """Median seconds of one forward pass: at least 3 runs, more while the time budget lasts."""
    layer, x = make_layer(kind, d, k), torch.randn(1, n, d)
    times: list[float] = []
    with torch.inference_mode():
        layer(x)  # warm-up: first calls allocate
        start = time.perf_counter()
        while len(times) < 3 or (len(times) < repeats and time.perf_counter() - start < budget_s):
            t0 = time.perf_counter()
            layer(x)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


@dataclass(frozen=True)
class Sweep:
    """Measured cost of each layer type at each size along one axis (n or d)."""

    axis: str  # "n" or "d"
    sizes: tuple[int, ...]
    fixed: int  # the other dimension, held constant
    k: int
    threads: int
    flops: dict[str, tuple[int, ...]]
    seconds: dict[str, tuple[float, ...]]

    def formula(self, kind: str) -> tuple[int, ...]:
        return tuple(formula_flops(kind, *self.shape(s), self.k) for s in self.sizes)

    def shape(self, size: int) -> tuple[int, int]:
        """(n, d) at one size of the sweep."""
        return (size, self.fixed) if self.axis == "n" else (self.fixed, size)


def sweep(
    axis: str,
    sizes: tuple[int, ...],
    fixed: int,
    k: int = 3,
    kinds=LAYERS,
    threads: int = 1,
    budget_s: float = 4.0,
) -> Sweep:
    """Count and time every layer type at every size; the whole sweep keeps within about budget_s."""
    per_point = budget_s / max(1, len(sizes) * len(kinds))
    flops: dict[str, list[int]] = {kind: [] for kind in kinds}
    seconds: dict[str, list[float]] = {kind: [] for kind in kinds}
    with torch_threads(threads):
        for size in sizes:
            n, d = (size, fixed) if axis == "n" else (fixed, size)
            for kind in kinds:
                flops[kind].append(count_flops(kind, n, d, k))
                seconds[kind].append(time_layer(kind, n, d, k, budget_s=per_point))
    return Sweep(
        axis, tuple(sizes), fixed, k, threads,
        {kind: tuple(v) for kind, v in flops.items()}, {kind: tuple(v) for kind, v in seconds.items()},
    )  # fmt: skip


def slope(sizes, values) -> float:
    """Exponent p of values ~ size^p, fitted on log-log axes (least squares)."""
    x, y = np.log(np.asarray(sizes, float)), np.log(np.asarray(values, float))
    return float(np.polyfit(x, y, 1)[0])


def crossing(sizes, a, b) -> float | None:
    """Where a stops being below b (or starts), interpolated on log axes; None if they never cross."""
    x = np.log(np.asarray(sizes, float))
    diff = np.log(np.asarray(a, float)) - np.log(np.asarray(b, float))
    for i in range(len(x) - 1):
        if diff[i] == 0:
            return float(sizes[i])
        if diff[i] * diff[i + 1] < 0:
            t = diff[i] / (diff[i] - diff[i + 1])
            return float(math.exp(x[i] + t * (x[i + 1] - x[i])))
    return None


@dataclass(frozen=True)
class ThreadTimes:
    """Seconds of one forward pass on 1 and on 2 threads (fastest run), per layer type at one size."""

    n: int
    d: int
    one: dict[str, float]
    two: dict[str, float]

    def speedup(self, kind: str) -> float:
        return self.one[kind] / self.two[kind]


def thread_times(
    n: int, d: int, k: int = 3, kinds=("conv", "rnn", "attention"), budget_s: float = 3.0, rounds: int = 15
) -> ThreadTimes:
    """Each layer timed with torch.set_num_threads(1) and (2) in alternation, so both see the same load.

    The fastest of blocks of 3 runs, at least 3 blocks: on a shared machine a second thread often waits
    for a busy core, which the median shows and the fastest run leaves out. The setting is restored.
    """
    per_kind = budget_s / len(kinds)
    one: dict[str, float] = {}
    two: dict[str, float] = {}
    for kind in kinds:
        layer, x = make_layer(kind, d, k), torch.randn(1, n, d)
        times: dict[int, list[float]] = {1: [], 2: []}
        start = time.perf_counter()
        with torch.inference_mode():
            while len(times[1]) < 3 or (len(times[1]) < rounds and time.perf_counter() - start < per_kind):
                for count in (1, 2):
                    with torch_threads(count):
                        layer(x)  # a warm-up: the first call after a change starts the thread pool
                        for _ in range(3):  # a short block, so switching costs stay out of the times
                            t0 = time.perf_counter()
                            layer(x)
                            times[count].append(time.perf_counter() - t0)
        one[kind], two[kind] = min(times[1]), min(times[2])
    return ThreadTimes(n, d, one, two)
