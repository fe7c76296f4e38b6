"""The course map drawn: self-attention, its four additions, the transformer summary, and the items the
pages keep in later tabs, each box naming the page and tab that shows it."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from txviz.coursemap.parts import ADDED, ADDITIONS, BURIED, CORE, SUMMARY, Part
from txviz.figures.axes import margin
from txviz.figures.colors import TEXT
from txviz.figures.text import plain

ROWS = (  # (y, label, parts): the chain, what wraps it, what the pages bury (two rows of three), the
    # demos added since (rows of three)
    (3.0, "Self-attention and CS60010's four additions", (CORE, *ADDITIONS)),
    (2.0, "The transformer summary", SUMMARY),
    (1.0, "Found here: items the pages keep in later tabs", BURIED[:3]),
    (0.25, "", BURIED[3:]),
    (-0.65, "Demos added since the map was first drawn", ADDED[:3]),
    (-1.4, "", ADDED[3:6]),
    (-2.15, "", ADDED[6:]),
)
HIGHLIGHT = "#d62728"
LABEL_FONT = 14  # px: a row's heading
NAME_FONT = 13  # px: a box's part
WHERE_FONT = 12  # px: the pages and tabs in a box (was 10: too small to read)


def where(part: Part) -> str:
    """Each link of a part as its page, then '› tab' on the next line (the page alone without tabs)."""
    lines = []
    for link in part.links:
        page = link.page.replace("_", " ")
        lines.append(plain(page) + (f"<br>› {plain(link.tab)}" if link.tab else ""))
    return "<br>".join(lines)


def _positions(count: int, width: float) -> Sequence[float]:
    """count box centres spread evenly over [0, width]."""
    return [width * (i + 0.5) / count for i in range(count)]


def course_map_figure(
    highlight: str | None = None, width: float = 6.0, rows: slice = slice(None)
) -> go.Figure:
    """Boxes per row, arrows along the chain and down to the summary; the part ``highlight`` in red.
    ``rows`` draws some of the rows alone (a projector shows the chain and the summary first), as tall
    as they need."""
    figure = go.Figure()
    drawn = ROWS[rows]
    for y, label, parts in drawn:
        if label:
            figure.add_annotation(
                x=0,
                y=y + 0.45,
                text=f"<b>{plain(label)}</b>",
                showarrow=False,
                xanchor="left",
                font={"size": LABEL_FONT, "color": TEXT},
            )
        xs = _positions(len(parts), width)
        for x, part in zip(xs, parts, strict=True):
            chosen = part.key == highlight
            figure.add_annotation(
                x=x,
                y=y,
                text=f"<b>{plain(part.name)}</b><br><span style='font-size:{WHERE_FONT}px'>{where(part)}</span>",
                hovertext=plain(part.adds),
                showarrow=False,
                bordercolor=HIGHLIGHT if chosen else "grey",
                borderwidth=3 if chosen else 1,
                borderpad=5,
                bgcolor="#fff5f5" if chosen else "white",
                font={"size": NAME_FONT, "color": TEXT},
            )
        if y == 3.0:  # the chain: each addition grows the one before
            for left, right in zip(xs, xs[1:], strict=False):
                figure.add_annotation(
                    x=right - 0.5, y=y, ax=left + 0.5, ay=y, xref="x", yref="y", axref="x", ayref="y",
                    text="", showarrow=True, arrowhead=2, arrowcolor="grey",
                )  # fmt: skip
    if {3.0, 2.0} <= {y for y, _, _ in drawn}:  # down from the multi-head box to the summary
        figure.add_annotation(
            x=width / 2, y=2.3, ax=width / 2, ay=2.7, xref="x", yref="y", axref="x", ayref="y",
            text="", showarrow=True, arrowhead=2, arrowcolor="grey",
        )  # fmt: skip
    top, bottom = drawn[0][0] + 0.55, drawn[-1][0] - 0.35  # the whole map: 3.55 to -2.5, 1,084 px
    figure.update_layout(
        title="From self-attention to the transformer: each box names the page and tab that shows it"
        if drawn[0] == ROWS[0]
        else None,
        xaxis={"visible": False, "range": [-0.1, width + 0.1]},
        yaxis={"visible": False, "range": [bottom, top]},
        height=round(950 * (top - bottom) / 5.3),
        plot_bgcolor="white",
        margin=margin(top=50),
        showlegend=False,
    )
    return figure
