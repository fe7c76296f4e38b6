"""The Head Atlas's figures: heads on two metrics, one head against the model's distribution, a context's
attention row, and two models' heads against each other."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.atlas.atlas import Atlas, Metric
from txviz.figures.axes import PAGE_WIDTH, margin, plot_length, token_axis
from txviz.figures.colors import scale
from txviz.figures.text import plain

PICKED = "#d62728"


def _heads(atlas: Atlas) -> tuple[np.ndarray, np.ndarray]:
    layer, head = np.indices((atlas.layers, atlas.heads)).reshape(2, -1)
    return layer, head


def scatter(atlas: Atlas, x: Metric, y: Metric, picked: tuple[int, int] | None, presenting: bool = False):
    """Every head as a point at its two scores, coloured by layer; a click selects it (customdata)."""
    layer, head = _heads(atlas)
    xs, ys = atlas.scores[x.name].ravel(), atlas.scores[y.name].ravel()
    figure = go.Figure(
        go.Scatter(
            x=xs, y=ys, mode="markers", customdata=np.stack([layer, head], 1),
            marker=dict(color=layer, colorscale=scale("sequential", presenting), size=9,
                        colorbar=dict(title="layer")),
            hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<br>%{x:.3f}, %{y:.3f}<extra></extra>",
            name="heads",
        )
    )  # fmt: skip
    if picked is not None:
        figure.add_trace(go.Scatter(
            x=[atlas.scores[x.name][picked]], y=[atlas.scores[y.name][picked]], mode="markers",
            marker=dict(color="rgba(0,0,0,0)", size=16, line=dict(color=PICKED, width=3)),
            name=f"layer {picked[0]}, head {picked[1]}", hoverinfo="skip",
        ))  # fmt: skip
    figure.update_layout(
        title=plain(f"{atlas.model}: every head (click one to open it)"),
        xaxis_title=plain(x.label), yaxis_title=plain(y.label), showlegend=False, height=460,
        margin=margin(),
    )  # fmt: skip
    return figure


def picked_point(selection) -> tuple[int, int] | None:
    """The (layer, head) of the point a click on the scatter selected, or None."""
    for point in reversed(list((selection or {}).get("points") or [])):
        data = point.get("customdata")
        if isinstance(data, (list, tuple)) and len(data) == 2:
            return int(data[0]), int(data[1])
    return None


def standing(atlas: Atlas, metrics: Sequence[Metric], layer: int, head: int, presenting: bool = False):
    """One row per metric: every head's score as a dot, this head's as a red diamond."""
    figure = make_subplots(rows=len(metrics), cols=1, subplot_titles=[plain(m.label) for m in metrics],
                           vertical_spacing=min(0.5 / max(len(metrics), 1), 0.12))  # fmt: skip
    rng = np.random.default_rng(0)  # the dots' vertical jitter: fixed, so the figure is the same each run
    grey = "#bbbbbb" if not presenting else "#888888"
    for row, metric in enumerate(metrics, start=1):
        values = atlas.scores[metric.name].ravel()
        figure.add_trace(go.Scatter(x=values, y=rng.uniform(-1, 1, len(values)), mode="markers",
                                    marker=dict(color=grey, size=6), hoverinfo="x", showlegend=False),
                         row=row, col=1)  # fmt: skip
        figure.add_trace(go.Scatter(x=[atlas.scores[metric.name][layer, head]], y=[0], mode="markers",
                                    marker=dict(color=PICKED, size=14, symbol="diamond"), hoverinfo="x",
                                    showlegend=False), row=row, col=1)  # fmt: skip
        figure.update_yaxes(visible=False, range=[-1.5, 1.5], row=row, col=1)
    figure.update_layout(
        title=plain(f"Layer {layer}, head {head} (red) among the model's {values.size} heads (grey)"),
        height=110 * len(metrics) + 80, margin=margin(top=70),
    )  # fmt: skip
    return figure


def row_bars(pieces: Sequence[str], weights: np.ndarray, query: int, key: int, title: str):
    """One query's attention over its window's keys; the key the context names in red, the query outlined."""
    colors = ["#1f77b4"] * len(pieces)
    colors[key] = PICKED
    outline = [3 if i == query else 0 for i in range(len(pieces))]
    figure = go.Figure(go.Bar(
        x=list(range(len(pieces))), y=weights, marker=dict(color=colors, line=dict(width=outline, color="black")),
        customdata=[plain(p) for p in pieces], hovertemplate="%{customdata}: %{y:.3f}<extra></extra>",
    ))  # fmt: skip
    figure.update_layout(
        title=plain(title), yaxis_title="attention weight", height=360, margin=margin(),
        xaxis=token_axis(list(pieces), "key token", length=plot_length(PAGE_WIDTH)),
    )  # fmt: skip
    return figure


def pair(a: Atlas, b: Atlas, metric: Metric):
    """Two models' heads head by head (same layers and heads): one point per head, the diagonal dashed."""
    layer, head = _heads(a)
    xs, ys = a.scores[metric.name].ravel(), b.scores[metric.name].ravel()
    finite = np.concatenate([xs[np.isfinite(xs)], ys[np.isfinite(ys)]])
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    figure = go.Figure([
        go.Scatter(x=[low, high], y=[low, high], mode="lines", line=dict(dash="dash", color="#999999"),
                   hoverinfo="skip", showlegend=False),
        go.Scatter(x=xs, y=ys, mode="markers", customdata=np.stack([layer, head], 1), showlegend=False,
                   hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<br>%{x:.3f} vs %{y:.3f}"
                   "<extra></extra>"),
    ])  # fmt: skip
    figure.update_layout(title=plain(f"{metric.label}: the same head in both models"),
                         xaxis_title=plain(a.model), yaxis_title=plain(b.model), height=420, margin=margin())  # fmt: skip
    return figure
