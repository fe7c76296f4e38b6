"""Axes and margins every figure shares: text on ticks always escaped, long sequences thinned."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from txviz.figures.text import plain

MAX_TICKS = 60  # past about this many labels an axis shows every n-th one, so they stay legible
SMALL_TICKS = 40  # past this many labels shown, a smaller font keeps neighbours apart
SMALL_TICK_FONT = 9
TICK_FONT = 12  # plotly's default font size, in px
PROJECTOR_SCALE = 5 / 3  # projector mode draws every font this much larger (txviz/app/projector.py)
CHAR_WIDTH = 0.62  # one character's width in font sizes: a little over plotly's font's average
LINE_HEIGHT = 1.25  # a label's height in font sizes: the room it takes across the axis when upright
TICK_GAP = 2  # px kept free between neighbouring labels
PAGE_WIDTH = 800  # px: a figure's width on a laptop's wide page (the page decides; this is a floor)
UPRIGHT = -90  # rotated a quarter turn: the labels' boxes are the labels, so neighbours stay apart


@dataclass(frozen=True)
class TickPlan:
    """How an axis draws its labels: every ``step``-th one, at ``angle`` degrees."""

    step: int = 1
    angle: int = 0


def label_width(label: str, font_size: float = TICK_FONT) -> float:
    """A label's estimated width in px: its characters at a fixed width each."""
    return CHAR_WIDTH * font_size * len(label)


def tick_plan(
    labels: Sequence[str], length: float, font_size: float = TICK_FONT, vertical: bool = False
) -> TickPlan:
    """The one rule for token axes: keep every label if they fit side by side, else turn them
    upright, else show every k-th (hover still names every token). ``length``: the axis in px;
    ``vertical``: a y axis, whose labels stack and never turn."""
    if not labels or length <= 0:
        return TickPlan()
    slot = length / len(labels)  # px along the axis for each label
    across = LINE_HEIGHT * font_size + TICK_GAP  # room a label needs when stacked or upright
    if vertical:
        return TickPlan(step=max(1, math.ceil(across / slot)))
    widest = max(label_width(label, font_size) for label in labels) + TICK_GAP
    if widest <= slot:
        return TickPlan()
    if across <= slot:
        return TickPlan(angle=UPRIGHT)
    step = math.ceil(across / slot)
    return TickPlan(step=step, angle=0 if widest <= step * slot else UPRIGHT)


def plot_length(total: float, columns: int = 1, reserved: float = 160) -> float:
    """An estimate of one subplot's axis length in px: the figure's ``total`` (width or height) less
    what ``reserved`` keeps for labels, colour bar and margins, shared by ``columns`` subplots."""
    return max(1.0, (total - reserved) / max(1, columns))


def margin(top: int = 50, left: int = 10, right: int = 10, bottom: int = 10) -> dict:
    """Figure margins; automargin on the axes makes room for long tick labels on top of these."""
    return {"l": left, "r": right, "t": top, "b": bottom}


def ticks(
    labels: Sequence[str],
    positions: Sequence[float] | None = None,
    max_ticks: int | None = MAX_TICKS,
    length: float | None = None,
    vertical: bool = False,
    scale: float = 1.0,
) -> dict:
    """Tick settings that put labels (escaped: plotly reads <b>, <a href> in them) at integer
    positions 0, 1, ... (or the given ones), so repeated tokens stay apart; every n-th when long.
    Given the axis ``length`` in px, ``tick_plan`` decides: all, upright, or every k-th, for fonts drawn
    ``scale`` times their size (PROJECTOR_SCALE in projector mode)."""
    positions = list(range(len(labels))) if positions is None else list(positions)
    step = max(1, len(labels) // max_ticks) if max_ticks else 1
    small = len(range(0, len(labels), step)) > SMALL_TICKS
    plan = TickPlan()
    if length is not None:
        font = (SMALL_TICK_FONT if small else TICK_FONT) * scale
        plan = tick_plan([str(label) for label in labels], length, font, vertical)
    shown = range(0, len(labels), max(step, plan.step))
    settings = {
        "tickmode": "array",
        "tickvals": [positions[i] for i in shown],
        "ticktext": [plain(labels[i]) for i in shown],
        "automargin": True,
    }
    if length is not None:
        settings["tickangle"] = plan.angle
    if small:
        settings["tickfont"] = {"size": SMALL_TICK_FONT}
    return settings


def token_axis(
    tokens: Sequence[str],
    title: str = "",
    positions: Sequence[float] | None = None,
    max_ticks: int | None = MAX_TICKS,
    length: float | None = None,
    vertical: bool = False,
    scale: float = 1.0,
) -> dict:
    """A whole axis of tokens for update_layout or update_xaxes/update_yaxes: title, escaped ticks
    (laid out by ``tick_plan`` when the axis ``length`` is given), no grid lines between the cells."""
    settings = ticks(tokens, positions, max_ticks, length, vertical, scale)
    return {"title": plain(title), "showgrid": False, "zeroline": False} | settings
