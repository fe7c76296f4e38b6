"""Figures of interventions: patching grids, ablation sweeps, before/after bars, attention change."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.axes import PAGE_WIDTH, margin, plot_length, token_axis
from txviz.figures.colors import PALETTE, scale
from txviz.figures.text import plain, plain_all


def _symmetric(values: np.ndarray, at_least: float = 0.0) -> float:
    """Half-range of a diverging scale centred on 0 (at least ``at_least``, never 0)."""
    finite = np.abs(values[np.isfinite(values)])
    return float(max(finite.max() if finite.size else 0.0, at_least, 1e-6))


def layer_position_grid(
    values: np.ndarray,  # (rows, T)
    tokens: Sequence[str],
    title: str,
    unit: str = "recovered",
    row_names: Sequence[str] | None = None,
    presenting: bool = False,
) -> go.Figure:
    """A [layer, position] grid (residual patching): rows are layers, columns are tokens."""
    rows = list(row_names) if row_names is not None else [str(i) for i in range(values.shape[0])]
    text = [[f"{plain(r)}, {plain(t)}" for t in tokens] for r in rows]
    half = _symmetric(values, 1.0 if unit == "recovered" else 0.0)
    figure = go.Figure(
        go.Heatmap(
            z=values,
            text=text,
            zmin=-half,
            zmax=half,
            colorscale=scale("diverging", presenting),
            colorbar=dict(title=plain(unit)),
            hovertemplate="%{text}<br>" + plain(unit) + " %{z:.3f}<extra></extra>",
        )
    )
    figure.update_layout(
        title=plain(title),
        xaxis=token_axis(tokens, "position (token)", length=plot_length(PAGE_WIDTH)),
        yaxis=dict(
            title="residual stream after layer", autorange="reversed", tickmode="array",
            tickvals=list(range(len(rows))), ticktext=plain_all(rows),
        ),
        height=max(360, min(900, 18 * values.shape[0] + 200)),
        margin=margin(top=60),
    )  # fmt: skip
    return figure


def layer_bars(values: np.ndarray, title: str, unit: str = "recovered") -> go.Figure:
    """One bar per layer (MLP patching or ablation)."""
    figure = go.Figure(
        go.Bar(
            x=list(range(len(values))),
            y=values,
            marker_color=PALETTE[0],
            hovertemplate="layer %{x}<br>" + plain(unit) + " %{y:.3f}<extra></extra>",
        )
    )
    figure.update_layout(
        title=plain(title),
        xaxis=dict(title="layer (MLP)", dtick=1 if len(values) <= 40 else None),
        yaxis=dict(title=plain(unit)),
        height=320,
        margin=margin(top=60),
    )
    return figure


def exact_vs_estimate(
    exact: np.ndarray, estimate: np.ndarray, labels: Sequence[str], title: str
) -> go.Figure:
    """Scatter of the exact patching effect against the attribution estimate, one dot per cell."""
    exact, estimate = np.ravel(exact), np.ravel(estimate)
    low = float(np.nanmin([exact.min(), estimate.min()]))
    high = float(np.nanmax([exact.max(), estimate.max()]))
    figure = go.Figure(
        [
            go.Scatter(x=[low, high], y=[low, high], mode="lines", name="equal", line=dict(dash="dot", color="#888888")),
            go.Scatter(
                x=exact,
                y=estimate,
                mode="markers",
                name="cells",
                text=plain_all(labels),
                marker=dict(color=PALETTE[4], size=6, opacity=0.7),
                hovertemplate="%{text}<br>exact %{x:.3f}<br>estimate %{y:.3f}<extra></extra>",
            ),
        ]
    )  # fmt: skip
    figure.update_layout(
        title=plain(title),
        xaxis=dict(title="exact patching (recovered)"),
        yaxis=dict(title="attribution estimate"),
        height=420,
        margin=margin(top=60),
    )
    return figure


def before_after_bars(
    tokens: Sequence[str], before: Sequence[float], after: Sequence[float], title: str
) -> go.Figure:
    """The likeliest next tokens' probabilities before and after an intervention, side by side."""
    labels = [f"{i + 1}. {plain(t)}" for i, t in enumerate(tokens)]  # ranks keep repeated texts apart
    figure = go.Figure(
        [
            go.Bar(name="before", x=labels, y=list(before), marker_color=PALETTE[0]),
            go.Bar(name="after", x=labels, y=list(after), marker_color=PALETTE[1]),
        ]
    )
    figure.update_traces(hovertemplate="%{x}<br>probability %{y:.4f}<extra></extra>")
    figure.update_layout(
        title=plain(title),
        barmode="group",
        xaxis=dict(title="next token", tickangle=-45, automargin=True),
        yaxis=dict(title="probability", rangemode="tozero"),
        height=380,
        margin=margin(top=60),
    )
    return figure


def attention_change(
    before: np.ndarray,  # (Q, K)
    after: np.ndarray,  # (Q, K)
    tokens: Sequence[str],
    title: str,
    presenting: bool = False,
) -> go.Figure:
    """One head's attention before, after and their difference (after - before)."""
    figure = make_subplots(
        rows=1, cols=3, subplot_titles=("before", "after", "after - before"), horizontal_spacing=0.08
    )
    change = after - before
    half = _symmetric(change)
    hover = "query %{y}, key %{x}<br>%{z:.4f}<extra></extra>"
    height = max(380, min(700, 14 * len(tokens) + 200))
    across, down = plot_length(PAGE_WIDTH, columns=3), plot_length(height, reserved=200)
    for col, (z, kind, low, high) in enumerate(
        ((before, "sequential", 0.0, 1.0), (after, "sequential", 0.0, 1.0), (change, "diverging", -half, half)),
        start=1,
    ):  # fmt: skip
        figure.add_trace(
            go.Heatmap(
                z=z, zmin=low, zmax=high, colorscale=scale(kind, presenting), hovertemplate=hover,
                showscale=col == 3, colorbar=dict(title="change"),
            ),
            row=1, col=col,
        )  # fmt: skip
        figure.update_xaxes(token_axis(tokens, length=across), row=1, col=col)
        figure.update_yaxes(
            token_axis(tokens, length=down, vertical=True) | {"autorange": "reversed"}, row=1, col=col
        )
    figure.update_layout(title=plain(title), height=height, margin=margin(top=80))
    return figure
