"""Axes and margins every figure shares: text on ticks always escaped, long sequences thinned."""

from __future__ import annotations

from collections.abc import Sequence

from txviz.figures.text import plain

MAX_TICKS = 60  # past about this many labels an axis shows every n-th one, so they stay legible
SMALL_TICKS = 40  # past this many labels shown, a smaller font keeps neighbours apart
SMALL_TICK_FONT = 9


def margin(top: int = 50, left: int = 10, right: int = 10, bottom: int = 10) -> dict:
    """Figure margins; automargin on the axes makes room for long tick labels on top of these."""
    return {"l": left, "r": right, "t": top, "b": bottom}


def ticks(
    labels: Sequence[str], positions: Sequence[float] | None = None, max_ticks: int | None = MAX_TICKS
) -> dict:
    """Tick settings that put labels (escaped: plotly reads <b>, <a href> in them) at integer
    positions 0, 1, ... (or the given ones), so repeated tokens stay apart; every n-th when long."""
    positions = list(range(len(labels))) if positions is None else list(positions)
    step = max(1, len(labels) // max_ticks) if max_ticks else 1
    shown = range(0, len(labels), step)
    settings = {
        "tickmode": "array",
        "tickvals": [positions[i] for i in shown],
        "ticktext": [plain(labels[i]) for i in shown],
        "automargin": True,
    }
    if len(shown) > SMALL_TICKS:
        settings["tickfont"] = {"size": SMALL_TICK_FONT}
    return settings


def token_axis(
    tokens: Sequence[str],
    title: str = "",
    positions: Sequence[float] | None = None,
    max_ticks: int | None = MAX_TICKS,
) -> dict:
    """A whole axis of tokens for update_layout or update_xaxes/update_yaxes: title, escaped ticks,
    no grid lines between the cells."""
    return {"title": plain(title), "showgrid": False, "zeroline": False} | ticks(tokens, positions, max_ticks)
