"""Figures of soft vs hard attention: side-by-side heatmaps, entropy bars, training curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.attention import weights_heatmap
from txviz.figures.axes import PAGE_WIDTH, margin, plot_length, ticks
from txviz.figures.text import in_template, plain, plain_all

if TYPE_CHECKING:  # figures need no torch at run time
    from txviz.softhard.compare import Comparison

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


@dataclass(frozen=True)
class Panel:
    """One heatmap: weights [query, key] with the labels of its rows and columns."""

    title: str
    weights: np.ndarray
    query_tokens: Sequence[str]
    key_tokens: Sequence[str]


def side_by_side_heatmaps(
    panels: Sequence[Panel], query_title: str = "query", key_title: str = "key", presenting: bool = False
) -> go.Figure:
    """Attention heatmaps in one row on one colour scale (0 to 1); rows queries, columns keys."""
    if not panels:
        raise ValueError("Nothing to plot: no panels.")
    figure = make_subplots(
        rows=1,
        cols=len(panels),
        subplot_titles=[plain(p.title) for p in panels],
        horizontal_spacing=0.1 / len(panels),
        shared_yaxes=True,
    )
    n_rows = max(len(p.query_tokens) for p in panels)
    height = min(900, max(320, 200 + 20 * n_rows))  # a row a label, below: upright key labels
    key_length = plot_length(PAGE_WIDTH, columns=len(panels))  # panels share the width
    query_length = plot_length(height, reserved=200)
    for column, panel in enumerate(panels, start=1):
        weights = np.asarray(panel.weights, dtype=np.float32)
        figure.add_trace(
            weights_heatmap(
                weights,
                presenting,
                showscale=column == len(panels),
                colorbar={"title": "weight"},
                customdata=np.array(
                    [[[q, k] for k in plain_all(panel.key_tokens)] for q in plain_all(panel.query_tokens)],
                    dtype=object,
                ),
                hovertemplate=(
                    "query %{y} %{customdata[0]}<br>key %{x} %{customdata[1]}"
                    "<br>weight %{z:.4f}<extra></extra>"
                ),
                name=plain(panel.title),
            ),
            row=1,
            col=column,
        )
        keys = ticks(panel.key_tokens, length=key_length)
        figure.update_xaxes(title=plain(key_title), row=1, col=column, **keys)
        queries = ticks(panel.query_tokens, length=query_length, vertical=True)
        figure.update_yaxes(autorange="reversed", row=1, col=column, **queries)
    figure.update_yaxes(title=plain(query_title), row=1, col=1)
    figure.update_layout(height=height, margin=margin())
    return figure


def entropy_bars(
    entropy: Mapping[str, np.ndarray],
    layer: int,
    y_title: str = "entropy (nats)",
    title: str = "Mean attention entropy per head",
) -> go.Figure:
    """Grouped bars: one group per head of ``layer``, one bar per normalizer ([layer, head] in)."""
    figure = go.Figure()
    for index, (label, values) in enumerate(entropy.items()):
        row = np.asarray(values)[layer]  # (head,)
        figure.add_bar(
            x=list(range(len(row))),
            y=row.tolist(),
            name=plain(label),
            marker_color=COLORS[index % len(COLORS)],
            hovertemplate=f"{in_template(label)}<br>head %{{x}}: %{{y:.3f}}<extra></extra>",
        )
    figure.update_layout(
        barmode="group",
        title=f"{plain(title)}, layer {layer}",
        xaxis={"title": "head", "tickmode": "linear", "dtick": 1},
        yaxis={"title": plain(y_title), "rangemode": "tozero"},
        height=340,
        margin=margin(),
        legend={"orientation": "h", "y": -0.25},
    )
    return figure


def similarity_bars(similarity: Mapping[str, float]) -> go.Figure:
    """Cosine similarity of each normalizer's sentence embedding to softmax's."""
    labels, values = plain_all(similarity), [float(v) for v in similarity.values()]
    figure = go.Figure(
        go.Bar(
            x=labels,
            y=values,
            marker_color=[COLORS[i % len(COLORS)] for i in range(len(labels))],
            text=[f"{v:.3f}" for v in values],
            textposition="outside",
            cliponaxis=False,  # the label above a bar at the top of the range stays whole
            hovertemplate="%{x}: %{y:.4f}<extra></extra>",
        )
    )
    low = min(values + [1.0])
    figure.update_layout(
        title="Sentence embedding: cosine similarity to the softmax one",
        xaxis={"title": "normalizer"},
        yaxis={"title": "cosine similarity", "range": [min(0.0, low - 0.05), 1.1]},
        height=340,
        margin=margin(top=60),
    )
    return figure


CURVE_TITLES = {
    "accuracy": "held-out accuracy",
    "entropy": "attention entropy (nats)",
    "target_weight": "softmax weight on the right pair",
    "train_loss": "training cross-entropy (nats)",
}


def training_curves(
    curves: Mapping[str, Mapping[str, Sequence[float]]],
    metrics: Sequence[str] = ("accuracy", "entropy"),
    chance: float | None = None,
) -> go.Figure:
    """One panel per metric, one line per run (``curves``: label -> {"step": [...], metric: [...]})."""
    figure = make_subplots(
        rows=1, cols=len(metrics), subplot_titles=[CURVE_TITLES.get(m, m) for m in metrics]
    )
    for index, (label, run) in enumerate(curves.items()):
        for column, metric in enumerate(metrics, start=1):
            figure.add_scatter(
                x=list(run["step"]),
                y=list(run[metric]),
                mode="lines",
                name=plain(label),
                legendgroup=plain(label),
                showlegend=column == 1,
                line={"color": COLORS[index % len(COLORS)]},
                hovertemplate=f"{in_template(label)}<br>step %{{x}}: %{{y:.4f}}<extra></extra>",
                row=1,
                col=column,
            )
    for column, metric in enumerate(metrics, start=1):
        figure.update_xaxes(title="training step", row=1, col=column)
        if metric == "accuracy":
            figure.update_yaxes(range=[0, 1.02], row=1, col=column)
            if chance is not None:
                figure.add_hline(
                    y=chance,
                    line_dash="dot",
                    annotation_text="chance",
                    row=1,
                    col=column,
                )
    figure.update_layout(height=360, margin=margin(), legend={"orientation": "h", "y": -0.3})
    return figure


def heatmaps_of(
    maps: Mapping[str, tuple[np.ndarray, Sequence[str], Sequence[str]]],
    query_title: str = "query",
    key_title: str = "key",
    presenting: bool = False,
) -> go.Figure:
    """Side-by-side heatmaps from title -> (weights [query, key], query tokens, key tokens)."""
    panels = [Panel(title, *m) for title, m in maps.items()]
    return side_by_side_heatmaps(panels, query_title, key_title, presenting)


def normalizer_heatmaps(comparison: Comparison, layer: int, head: int, presenting: bool = False) -> go.Figure:
    """One head of one layer under each normalizer, side by side."""
    maps = {
        comparison.settings.label(name): (t.head(layer, head), t.query_tokens, t.key_tokens)
        for name, t in comparison.traces.items()
    }
    return heatmaps_of(maps, presenting=presenting)
