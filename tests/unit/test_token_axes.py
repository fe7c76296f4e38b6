"""The one rule for token axes: all labels when they fit, else upright, else every k-th; checked
against the arithmetic of a fixed per-character width."""

from __future__ import annotations

import math

import numpy as np
import pytest

from txviz.figures.attention import attention_heatmap, heads_mosaic
from txviz.figures.axes import (
    CHAR_WIDTH,
    LINE_HEIGHT,
    TICK_FONT,
    TICK_GAP,
    UPRIGHT,
    TickPlan,
    label_width,
    tick_plan,
    ticks,
)

WIDE = CHAR_WIDTH * TICK_FONT  # one character, px
ACROSS = LINE_HEIGHT * TICK_FONT + TICK_GAP  # one label stacked or upright, px


def test_a_label_is_as_wide_as_its_characters():
    assert label_width("animal") == pytest.approx(6 * WIDE)
    assert label_width("ab", font_size=20) == pytest.approx(2 * CHAR_WIDTH * 20)


def test_labels_that_fit_side_by_side_stay_level():
    labels = ["cat"] * 10
    length = 10 * (3 * WIDE + TICK_GAP)  # exactly room for each
    assert tick_plan(labels, length) == TickPlan(step=1, angle=0)


def test_labels_too_wide_to_sit_level_turn_upright():
    labels = ["elephant"] * 10
    length = 10 * (8 * WIDE + TICK_GAP) - 1  # a pixel short of level, room to stand
    assert length >= 10 * ACROSS
    assert tick_plan(labels, length) == TickPlan(step=1, angle=UPRIGHT)


def test_labels_too_many_to_stand_show_every_kth():
    labels = ["elephant"] * 40
    length = 300.0  # 7.5 px a label: upright ones need ACROSS each
    plan = tick_plan(labels, length)
    assert plan == TickPlan(step=math.ceil(ACROSS / 7.5), angle=UPRIGHT)
    assert plan.step * 7.5 >= ACROSS > (plan.step - 1) * 7.5  # the smallest step that fits


def test_thinned_short_labels_sit_level_when_they_fit_at_that_step():
    labels = [str(i % 10) for i in range(40)]  # one character each
    plan = tick_plan(labels, 300.0)  # 7.5 px a label: neither level nor upright fits every one
    assert plan.step == math.ceil(ACROSS / 7.5)
    assert plan.angle == 0 and plan.step * 7.5 >= WIDE + TICK_GAP


def test_a_vertical_axis_thins_by_line_height_and_never_turns():
    labels = ["a fairly long label"] * 30
    assert tick_plan(labels, 30 * ACROSS, vertical=True) == TickPlan(step=1, angle=0)
    plan = tick_plan(labels, 300.0, vertical=True)
    assert plan == TickPlan(step=math.ceil(ACROSS / 10), angle=0)


def test_the_longest_label_decides():
    short = ["a"] * 20
    assert tick_plan(short, 20 * (WIDE + TICK_GAP)).angle == 0
    assert tick_plan(short[:-1] + ["a much longer label"], 20 * (WIDE + TICK_GAP)).angle == UPRIGHT


@pytest.mark.parametrize("n", [1, 5, 17, 60, 333])
@pytest.mark.parametrize("length", [90.0, 250.0, 640.0, 1200.0])
@pytest.mark.parametrize("chars", [1, 4, 12])
def test_no_two_shown_labels_overlap_by_the_estimate(n, length, chars):
    plan = tick_plan(["x" * chars] * n, length)
    room = plan.step * length / n  # px between two shown labels
    need = ACROSS if plan.angle == UPRIGHT else chars * WIDE + TICK_GAP
    assert room >= need - 1e-9
    if plan.step > 1:  # a smaller step would not fit, level or upright
        assert (plan.step - 1) * length / n < ACROSS


def test_nothing_to_lay_out():
    assert tick_plan([], 300.0) == TickPlan()


def test_ticks_show_every_kth_label_at_its_position_with_the_angle():
    tokens = [f"token{i}" for i in range(50)]
    settings = ticks(tokens, length=300.0)
    plan = tick_plan(tokens, 300.0)
    assert settings["tickvals"] == list(range(0, 50, plan.step))
    assert settings["ticktext"] == tokens[:: plan.step]
    assert settings["tickangle"] == plan.angle


def test_ticks_measure_the_text_shown_not_its_escape():
    # "<" is one character on screen though plotly is sent "&lt;"
    assert ticks(["<"] * 10, length=10 * (WIDE + TICK_GAP))["tickangle"] == 0


def test_a_long_heatmap_labels_every_kth_token_and_hovers_every_token():
    tokens = tuple(f"word{i}" for i in range(120))
    matrix = np.full((120, 120), 1 / 120, dtype=np.float32)
    layout = attention_heatmap(matrix, tokens, tokens).to_dict()
    x, y = layout["layout"]["xaxis"], layout["layout"]["yaxis"]
    assert 1 < len(x["ticktext"]) < 120 and 1 < len(y["ticktext"]) < 120
    assert x["tickangle"] == UPRIGHT
    hover = layout["data"][0]["text"]
    assert [row[0].split(" → ")[0] for row in hover] == list(tokens)  # every query in the hover


def test_a_short_heatmap_labels_every_token():
    tokens = tuple(["The", "cat", "sat", "on", "the", "mat", "."])
    matrix = np.full((7, 7), 1 / 7, dtype=np.float32)
    layout = attention_heatmap(matrix, tokens, tokens).to_dict()["layout"]
    assert list(layout["xaxis"]["ticktext"]) == list(tokens) == list(layout["yaxis"]["ticktext"])


def test_a_one_row_mosaic_names_its_row():
    weights = np.full((1, 4, 5, 5), 0.2, dtype=np.float32)  # layer 3's heads, as one row
    layout = heads_mosaic(weights, row_label="layer", row_names=["3"]).to_dict()["layout"]
    assert list(layout["yaxis"]["ticktext"]) == ["3"]
    assert layout["yaxis"]["title"]["text"] == "layer"
    assert list(heads_mosaic(np.zeros((2, 2, 3, 3))).to_dict()["layout"]["yaxis"]["ticktext"]) == ["0", "1"]


def test_projector_heatmap_plans_its_labels_for_the_larger_font():
    """Labels that fit side by side at 12 px stand upright or thin out at the projector's size."""
    from txviz.figures import axes

    tokens = tuple(f"word{i:02d}" for i in range(12))
    matrix = np.full((12, 12), 1 / 12)
    plain_axis = attention_heatmap(matrix, tokens, tokens).layout.xaxis
    projected = attention_heatmap(matrix, tokens, tokens, presenting=True).layout.xaxis
    slot = axes.plot_length(axes.PAGE_WIDTH) / 12
    assert axes.label_width("word00") + axes.TICK_GAP <= slot < axes.label_width("word00", 20) + axes.TICK_GAP
    assert plain_axis.tickangle == 0
    assert projected.tickangle == axes.UPRIGHT or len(projected.tickvals) < 12
