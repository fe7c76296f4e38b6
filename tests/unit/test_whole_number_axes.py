"""Axes of whole numbers: the lecture tally counts in whole answers, the logit lens ranks from 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from txviz.explain.figures import lens_figure
from txviz.explain.step import StepLens
from txviz.figures.counts import count_axis, rank_axis
from txviz.lecture.figures import tally_figure


def count_ticks(axis) -> list[float]:
    """The ticks a linear axis with tick0 and dtick draws inside its range."""
    assert axis.tickmode == "linear" and axis.range[0] == 0
    n = math.floor(axis.range[1] / axis.dtick)
    return [axis.tick0 + i * axis.dtick for i in range(n + 1)]


@pytest.mark.parametrize("counts", [{"keys": 1, "values": 0}, {"a": 0, "b": 0}, {"a": 3, "b": 1, "c": 2}])
def test_a_small_tally_counts_in_whole_answers(counts):
    axis = tally_figure(counts, "keys").layout.xaxis
    ticks = count_ticks(axis)
    assert ticks[:2] == [0, 1] and all(float(t).is_integer() for t in ticks)  # no 0.5
    assert axis.range[1] >= max(counts.values()) and axis.tickformat == "d"


def test_a_large_tally_steps_in_whole_numbers_that_fit():
    axis = tally_figure({"a": 287, "b": 13}).layout.xaxis
    ticks = count_ticks(axis)
    assert axis.dtick == 50 and len(ticks) <= 8 and ticks[-1] >= 250


def lens(ranks) -> StepLens:
    n = len(ranks)
    probabilities = np.linspace(0.1, 0.9, n, dtype=np.float32)
    return StepLens(1, np.array(ranks), probabilities, np.zeros(n, np.int64), probabilities, ("x",) * n)


@pytest.mark.parametrize("ranks", [[4, 3, 2, 0, 0], [0, 0], [30000, 5000, 120, 9, 0], [40, 12, 3, 0]])
def test_the_logit_lens_ranks_from_one_at_the_top_in_whole_numbers(ranks):
    figure = lens_figure(lens(ranks), "x")
    axis, shown = figure.layout.yaxis, np.array(ranks) + 1
    assert axis.title.text == "rank (1 = top)" and axis.tickmode == "array"
    assert axis.tickvals[0] == 1 and all(type(v) is int and v >= 1 for v in axis.tickvals)
    assert list(axis.ticktext) == [f"{v:,}" for v in axis.tickvals]
    low, high = (10 ** np.array(axis.range)) if axis.type == "log" else np.array(axis.range)
    assert 0 < high < 1 and low > shown.max()  # reversed: rank 1 near the top, never a rank 0
    assert axis.tickvals[-1] <= shown.max()
    probability = figure.layout.yaxis2
    assert probability.tickmode == "linear" and probability.range == (0, 1)  # not synced to the rank ticks


def test_rank_ticks_thin_out_over_many_decades():
    assert rank_axis(7)["tickvals"] == [1, 2, 3, 4, 5, 6, 7]
    assert rank_axis(60)["tickvals"] == [1, 2, 5, 10, 20, 50]
    assert rank_axis(49_152)["tickvals"] == [1, 10, 100, 1_000, 10_000]
    assert count_axis(0)["dtick"] == 1 and count_axis(9)["dtick"] == 2


@pytest.mark.parametrize("ranks", [[4, 3, 2, 0, 0], [30000, 5000, 120, 9, 0]])
def test_the_blocks_logit_lens_ranks_from_one_in_whole_numbers(ranks):
    from txviz.block.figures import lens_position
    from txviz.block.lens import Lens

    n = len(ranks)
    column = np.array(ranks).reshape(n, 1)
    probabilities = np.linspace(0.1, 0.9, n, dtype=np.float32).reshape(n, 1)
    lens = Lens(("x",), np.zeros((n, 1), np.int64), probabilities, (("x",),) * n, column, probabilities)
    axis = lens_position(lens, 0, "x").layout.yaxis2
    assert axis.tickmode == "array" and axis.tickvals[0] == 1
    assert all(type(v) is int and v >= 1 for v in axis.tickvals)  # never 0, never 2.58
    low, high = (10 ** np.array(axis.range)) if axis.type == "log" else np.array(axis.range)
    assert 0 < high < 1 and low > column.max() + 1  # rank 1 at the top
