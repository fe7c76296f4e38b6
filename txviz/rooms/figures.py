"""The room's tally as a bar chart, the true answer marked: what the projector shows at reveal."""

from __future__ import annotations

import plotly.graph_objects as go

from txviz.figures.text import plain

TRUE_COLOR, OTHER_COLOR = "#2a9d8f", "#9aa5b1"


def tally_chart(tally: dict[str, int], truth: str = "", title: str = "") -> go.Figure:
    """One bar per answer given (the truth's bar coloured, and shown even when nobody gave it)."""
    counts = dict(tally)
    if truth and truth not in counts:
        counts[truth] = 0
    answers = list(counts)
    colors = [TRUE_COLOR if truth and a == truth else OTHER_COLOR for a in answers]
    labels = [plain(a) + (" ✓" if truth and a == truth else "") for a in answers]
    figure = go.Figure(
        go.Bar(
            x=[counts[a] for a in answers],
            y=labels,
            orientation="h",
            marker_color=colors,
            text=[str(counts[a]) for a in answers],
            textposition="auto",
            hovertemplate="%{y}: %{x}<extra></extra>",
        )
    )
    figure.update_layout(
        title=plain(title),
        xaxis_title="students",
        yaxis={"autorange": "reversed", "type": "category"},
        height=max(220, 60 + 40 * len(answers)),
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    return figure
