"""Axes of whole numbers: counts from 0 and ranks from 1, never a tick between two of them."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

MOST_TICKS = 8  # past this many ticks a count axis steps by 2, 5, 10, ...
LINEAR_RANKS = 10  # ranks up to this are drawn one by one; beyond, on a log axis at 1, 2, 5, 10, ...
SPARSE_DECADES = 2  # a rank axis over more decades than this is ticked at powers of ten alone


def _steps() -> Iterator[int]:
    """1, 2, 5, 10, 20, 50, ...: the whole steps a reader counts in."""
    scale = 1
    while True:
        for mantissa in (1, 2, 5):
            yield mantissa * scale
        scale *= 10


def count_axis(highest: float, most: int = MOST_TICKS) -> dict:
    """Axis settings for counts 0..highest: ticks at a whole step (plotly's own pick halves small ranges)."""
    top = max(1, math.ceil(highest))
    step = next(s for s in _steps() if top / s <= most)
    return {"range": [0, top * 1.05], "tickmode": "linear", "tick0": 0, "dtick": step, "tickformat": "d"}


def rank_axis(highest: int, title: str = "rank (1 = top)") -> dict:
    """Axis settings for ranks 1..highest with 1 at the top: whole ranks only, log past LINEAR_RANKS."""
    highest = max(1, int(highest))
    if highest <= LINEAR_RANKS:
        values = list(range(1, highest + 1))
        return {
            "title": title,
            "type": "linear",
            "range": [highest + 0.5, 0.5],
            "tickmode": "array",
            "tickvals": values,
            "ticktext": [str(v) for v in values],
        }
    values = list(itertools.takewhile(lambda step: step <= highest, _steps()))
    if highest > 10**SPARSE_DECADES:  # 1, 2, 5 in every decade would crowd the labels: powers of ten only
        values = [v for v in values if str(v).startswith("1")]
    # A log axis's range is in powers of ten; a little past each end keeps the end markers whole.
    return {
        "title": title,
        "type": "log",
        "range": [math.log10(highest) + 0.1, -0.1],
        "tickmode": "array",
        "tickvals": values,
        "ticktext": [f"{v:,}" for v in values],
    }
