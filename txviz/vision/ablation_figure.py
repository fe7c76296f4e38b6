"""The class probabilities before and after ablating a head, side by side."""

from __future__ import annotations

import numpy as np
import pandas  # noqa: F401 - finished importing before plotly needs it (see txviz.vision.figures)
import plotly.graph_objects as go

from txviz.figures.axes import ticks
from txviz.figures.colors import PALETTE
from txviz.figures.text import plain
from txviz.vision.ablation import HeadAblation


def ablation_figure(result: HeadAblation, top_k: int = 10) -> go.Figure:
    """Grouped bars of the classes most likely before or after: intact model, head ablated."""
    either = np.maximum(result.before, result.after)
    order = np.argsort(either)[::-1][:top_k]
    fig = go.Figure()
    for name, values, colour in (
        ("intact", result.before, PALETTE[0]),
        (f"layer {result.layer}, head {result.head} ablated", result.after, PALETTE[1]),
    ):
        fig.add_bar(
            x=values[order],
            y=list(range(len(order))),
            orientation="h",
            name=plain(name),
            marker_color=colour,
            text=[f"{values[i]:.1%}" for i in order],
            customdata=[plain(result.labels[i]) for i in order],
            hovertemplate="%{customdata}: %{x:.4f}<extra>" + plain(name) + "</extra>",
        )
    fig.update_layout(
        title=f"Class probabilities with and without layer {result.layer}, head {result.head}",
        barmode="group",
        height=140 + 44 * len(order),
        legend={"orientation": "h", "y": -0.2},
    )
    fig.update_xaxes(title="probability", range=[0, 1])
    fig.update_yaxes(title="class", autorange="reversed", **ticks([result.labels[i] for i in order]))
    return fig
