"""Figures of a long document: head summaries as small multiples, pooled and sentence maps, sinks,
and a drill-down's exact rows with token axes. Bytes stay bounded however long the document."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.attention import LOG_FLOOR, scale_values
from txviz.figures.axes import (
    PAGE_WIDTH,
    PROJECTOR_SCALE,
    TICK_FONT,
    label_width,
    margin,
    plot_length,
    tick_plan,
    token_axis,
)
from txviz.figures.colors import scale
from txviz.figures.text import plain, plain_all

SUMMARY_TITLES = {
    "sink": "Weight on the first tokens (sinks)",
    "distance": "Mean distance (tokens)",
    "entropy": "Entropy (nats)",
    "local": "Share within the local window",
}
SPAN_TICKS = 20  # span maps name at most about this many spans on their axes; hover names them all
SPAN_MAP_HEIGHT = 640
SINKS_HEIGHT = 360
SINKS_DATA = 250  # px of the sinks plot the line takes; the named sinks' lanes sit above it
LANE = 24  # px from one lane of sink names to the next
MAX_SHIFT = 160  # px a sink's name may sit beside its point before it takes a lane of its own


def _colorbar(index: int, count: int, title: str) -> dict:
    """A horizontal colour bar under subplot ``index`` of ``count``."""
    return dict(
        title=dict(text=plain(title), side="top"),
        orientation="h",
        x=(index + 0.5) / count,
        len=0.8 / count,
        y=-0.2,
        yanchor="top",
        thickness=10,
    )


def summaries_figure(summaries: dict[str, np.ndarray], presenting: bool = False) -> go.Figure:
    """Each summary as a [layer, head] heatmap, side by side: one glance at every head of the model."""
    names = list(summaries)
    figure = make_subplots(
        rows=1, cols=len(names), subplot_titles=[plain(SUMMARY_TITLES.get(n, n)) for n in names]
    )
    for i, name in enumerate(names):
        figure.add_trace(
            go.Heatmap(
                z=summaries[name],
                colorscale=scale("sequential", presenting),
                colorbar=_colorbar(i, len(names), name),
                hovertemplate="layer %{y}, head %{x}<br>%{z:.3f}<extra>" + plain(name) + "</extra>",
            ),
            row=1,
            col=i + 1,
        )
    n_layers = next(iter(summaries.values())).shape[0]
    figure.update_xaxes(title="head", dtick=1)
    figure.update_yaxes(autorange="reversed", dtick=5)
    figure.update_yaxes(title="layer", row=1, col=1)  # one title: the others would sit on the next map
    figure.update_layout(height=max(380, 14 * n_layers + 240), margin=margin(top=60, bottom=120))
    return figure


def _weights_heatmap(weights: np.ndarray, x, y, hover: str, log_scale: bool, presenting: bool) -> go.Heatmap:
    """Attention weights as a heatmap on a log10 scale floored at LOG_FLOOR, or on a linear one."""
    return go.Heatmap(
        z=scale_values(weights, log_scale, 0.0).astype(np.float32),
        x=x,
        y=y,
        colorscale=scale("sequential", presenting),
        zmin=np.log10(LOG_FLOOR) if log_scale else 0.0,
        zmax=0.0 if log_scale else float(max(weights.max(), 1e-9)),
        colorbar=dict(title="weight (log10)" if log_scale else "weight"),
        hovertemplate=hover,
    )


def pooled_figure(
    pooled: np.ndarray,  # (tiles, tiles)
    tile: int,
    title: str = "",
    log_scale: bool = True,
    presenting: bool = False,
) -> go.Figure:
    """A pooled map on token-position axes: drag a box on it to read that region's exact rows."""
    starts = np.arange(pooled.shape[0]) * tile
    hover = f"queries from %{{y}}, keys from %{{x}} ({tile} x {tile} tokens)<br>%{{z:.3f}}<extra></extra>"
    figure = go.Figure(_weights_heatmap(pooled, starts, starts, hover, log_scale, presenting))
    end = float(starts[-1] + tile) if len(starts) else 1.0
    figure.update_layout(
        title=dict(text=plain(title), y=0.98, yanchor="top"),
        xaxis=dict(title="key position", side="top", range=[-tile / 2, end - tile / 2]),
        yaxis=dict(title="query position", range=[end - tile / 2, -tile / 2]),
        height=640,
        dragmode="select",
        margin=margin(top=120),
    )
    return figure


def span_figure(
    matrix: np.ndarray,  # (S, S)
    labels: Sequence[str],
    title: str = "",
    log_scale: bool = True,
    presenting: bool = False,
) -> go.Figure:
    """Attention between sentences (or paragraphs): each row is the mean of its queries' weights
    summed over each span's keys; hover names both spans."""
    names = plain_all(labels)
    short = [name.split(" · ")[0] for name in names]
    step = max(1, len(names) // SPAN_TICKS)
    hover = "%{y}<br>→ %{x}<br>%{z:.3f}<extra></extra>"
    figure = go.Figure(_weights_heatmap(matrix, names, names, hover, log_scale, presenting))
    # the map shares the page's width with the pooled one
    across = tick_plan(short, plot_length(PAGE_WIDTH / 2))
    down = tick_plan(short, plot_length(SPAN_MAP_HEIGHT, reserved=200), vertical=True)
    figure.update_layout(
        title=dict(text=plain(title), y=0.98, yanchor="top"),
        xaxis=_span_axis(names, short, max(step, across.step), across.angle)
        | {"title": "attended span", "side": "top"},
        yaxis=_span_axis(names, short, max(step, down.step))
        | {"title": "attending span", "autorange": "reversed"},
        height=SPAN_MAP_HEIGHT,
        margin=margin(top=120),
    )
    return figure


def _span_axis(names: Sequence[str], short: Sequence[str], step: int, angle: int = 0) -> dict:
    """A span map's axis: categories by full name, every ``step``-th labelled by its short name."""
    return dict(
        tickmode="array", tickvals=names[::step], ticktext=short[::step], showgrid=False, tickangle=angle
    )


def sinks_figure(
    received: np.ndarray, tokens: Sequence[str], which: str = "", top: int = 5, presenting: bool = False
) -> go.Figure:
    """Mean weight each key gets from the queries that can see it (``which`` head or heads): sinks
    stand out as spikes; the largest are named, in lanes over the line so that neighbours (the last
    keys, seen by few queries) keep apart, each name inside the plot with an arrow to its point."""
    positions = np.arange(len(received))
    values = np.clip(received, LOG_FLOOR, None).astype(np.float32)
    figure = go.Figure(
        go.Scattergl(
            x=positions,
            y=values,
            mode="lines",
            text=plain_all(tokens),
            hovertemplate="%{x}: %{text}<br>%{y:.4f}<extra></extra>",
            line=dict(width=1, color="#3e4989"),
        )
    )
    named = sorted(int(p) for p in np.argsort(received)[::-1][:top])
    places = sink_lanes(named, tokens, len(received), TICK_FONT * (PROJECTOR_SCALE if presenting else 1.0))
    lanes = 1 + max((lane for _, lane in places), default=-1)
    low, high = np.log10(values.min()), np.log10(values.max())
    span = max(high - low, 0.1)
    per_px = 1.1 * span / SINKS_DATA  # log units per px of the plot
    top_of_line = high + 0.05 * span
    for position, (shift, lane) in zip(named, places, strict=True):
        figure.add_annotation(
            x=position, y=float(np.log10(values[position])), text=plain(tokens[position]),
            ax=shift, ay=float(top_of_line + (lane + 0.5) * LANE * per_px), ayref="y",
            arrowcolor="#666", font={"color": "#222"},
        )  # fmt: skip
    figure.update_layout(
        title="Where the sinks are: attention each token receives" + (f", {which}" if which else ""),
        xaxis=dict(title="key position", range=[-0.5, len(received) - 0.5], automargin=True),
        yaxis=dict(
            title="mean weight from the queries that see it",
            type="log",
            automargin=True,
            range=[low - 0.05 * span, top_of_line + lanes * LANE * per_px],
        ),
        height=SINKS_HEIGHT + lanes * LANE,
        margin=margin(top=60),
    )
    return figure


def sink_lanes(
    positions: Sequence[int], tokens: Sequence[str], count: int, font: float = TICK_FONT
) -> list[tuple[float, int]]:
    """For each named position (ascending), its label's shift in px from its point and its lane (0
    nearest the line). Labels are packed from the right, each as near its point as its right-hand
    neighbour allows and inside the plot; one that would move too far starts a new lane."""
    width = plot_length(PAGE_WIDTH)
    lefts: list[float] = []  # each lane's leftmost label edge in px so far
    places = {}
    for position in sorted(positions, reverse=True):
        half = label_width(str(tokens[position]), font) / 2 + 4
        point = (position + 0.5) / max(count, 1) * width
        lane = next(
            (i for i, left in enumerate(lefts) if _fits(_beside(point, half, left), point, half, left)),
            len(lefts),
        )
        if lane == len(lefts):
            lefts.append(width + 4)
        centre = _beside(point, half, lefts[lane])
        lefts[lane] = centre - half
        places[position] = (centre - point, lane)
    return [places[p] for p in positions]


def _beside(point: float, half: float, left: float) -> float:
    """A label's centre nearest its point, left of ``left`` (with a gap) and inside the plot."""
    return max(min(point, left - 4 - half), half)


def _fits(centre: float, point: float, half: float, left: float) -> bool:
    return centre + half <= left - 4 and point - centre <= MAX_SHIFT


def rows_figure(
    rows: np.ndarray,  # (R, K): exact weights of R queries on K keys
    query_positions: Sequence[int],
    key_positions: Sequence[int],
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    query_context: Sequence[str],
    key_context: Sequence[str],
    title: str = "",
    log_scale: bool = False,
    presenting: bool = False,
) -> go.Figure:
    """Exact rows of a region at full resolution: token axes, hover shows the text around both tokens."""
    keys = plain_all(key_context)
    hover = [[f"{q}<br>→ {k}" for k in keys] for q in plain_all(query_context)]
    z = scale_values(rows, log_scale, 0.0)
    figure = go.Figure(
        go.Heatmap(
            z=z.astype(np.float32),
            x=list(key_positions),
            y=list(query_positions),
            customdata=rows.astype(np.float32),
            text=hover,
            hovertemplate="%{text}<br>query %{y}, key %{x}: weight %{customdata:.4f}<extra></extra>",
            colorscale=scale("sequential", presenting),
            zmin=np.log10(LOG_FLOOR) if log_scale else 0.0,
            zmax=0.0 if log_scale else float(max(rows.max(), 1e-9)),
            colorbar=dict(title="weight (log10)" if log_scale else "weight"),
        )
    )
    figure.update_layout(
        title=plain(title),
        xaxis=token_axis(key_tokens, "key", key_positions) | {"side": "top", "tickangle": -60},
        yaxis=token_axis(query_tokens, "query", query_positions) | {"autorange": "reversed"},
        height=max(420, min(900, 16 * len(query_positions) + 220)),
        margin=margin(top=110),
    )
    return figure


def row_profile_figure(profile: np.ndarray, tokens: Sequence[str], start: int, stop: int) -> go.Figure:
    """The chosen queries' mean weight on every key of the document, at full resolution."""
    positions = np.arange(len(profile))
    figure = go.Figure(
        go.Scattergl(
            x=positions,
            y=profile.astype(np.float32),
            mode="lines",
            text=plain_all(tokens),
            hovertemplate="%{x}: %{text}<br>%{y:.4f}<extra></extra>",
            line=dict(width=1, color="#3e4989"),
        )
    )
    figure.add_vrect(x0=start - 0.5, x1=stop - 0.5, fillcolor="#fde725", opacity=0.3, line_width=0)
    figure.update_layout(
        title=f"Queries {start} to {stop - 1} over the whole document (mean of the rows)",
        xaxis=dict(title="key position"),
        yaxis=dict(title="weight"),
        height=320,
        margin=margin(top=60),
    )
    return figure
