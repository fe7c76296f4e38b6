"""Table 15.1 rebuilt from measurements, each cell beside the book's entry."""

from __future__ import annotations

from txviz.why import cost, paths
from txviz.why.cost import Sweep, ThreadTimes

ROWS = (
    ("conv", "conv"),
    ("dilated", "conv"),
    ("rnn", "rnn"),
    ("attention", "attention"),
)  # (path kind, cost kind)
LABELS = {**paths.LABELS, "rnn": "RNN (paths: GRU; cost: nn.RNN)"}
# The book gives the convolution's path length twice: Table 15.1 (after Vaswani et al. 2017) says
# O(log_k n) for a convolutional layer, while the text beside it says a stack of contiguous
# (non-dilated) kernels needs O(n/k) layers and only dilated kernels reach O(log_k n).
BOOK_TABLE_PATH = {"conv": "O(log_k n)", "dilated": "O(log_k n)", "rnn": "O(n)", "attention": "O(1)"}
BOOK_TEXT_PATH = {
    "conv": "O(n/k): contiguous kernels",
    "dilated": "O(log_k n): dilated kernels",
    "rnn": "O(n), as the table",
    "attention": "O(1), as the table",
}


def rebuilt_table(
    by_n: Sweep, by_d: Sweep, threads: ThreadTimes, depths: dict[str, int], n: int, k: int
) -> list[dict]:
    """One row per layer type: the book's complexity, sequential operations and path length, then ours."""
    rows = []
    for path_kind, cost_kind in ROWS:
        complexity, sequential, _ = cost.BOOK[cost_kind]
        p_n, p_d = (
            cost.slope(by_n.sizes, by_n.flops[cost_kind]),
            cost.slope(by_d.sizes, by_d.flops[cost_kind]),
        )
        t_n = cost.slope(by_n.sizes, by_n.seconds[cost_kind])
        speedup = threads.speedup(cost_kind) if cost_kind in threads.one else float("nan")
        rows.append(
            {
                "layer": LABELS[path_kind],
                "complexity per layer (book)": complexity,
                "FLOPs measured: grow as": f"n^{p_n:.2f} · d^{p_d:.2f}",
                "time measured: grows as": f"n^{t_n:.2f}",
                "sequential operations (book)": sequential,
                "measured: speed-up on 2 threads": f"{speedup:.2f}x",
                "maximum path length (book, Table 15.1)": BOOK_TABLE_PATH[path_kind],
                "maximum path length (book, its text)": BOOK_TEXT_PATH[path_kind],
                f"measured at n = {n}, k = {k}": _count(depths[path_kind], paths.DEPTH_NAMES[path_kind]),
                "formula": f"{paths.formula_depth(path_kind, n, k)}",
            }
        )
    return rows


def _count(value: int, noun: str) -> str:
    return f"{value} {noun}{'s' * (value != 1)}"
