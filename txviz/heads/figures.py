"""Figures of head scores: layer x head grids, every detector at once, and the per-head table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.colors import scale
from txviz.figures.text import plain
from txviz.heads import compare
from txviz.heads.attribution import TokenComparison
from txviz.heads.qkspace import QKPoints
from txviz.heads.runs import HeadScores

COLOR_BY = ("query / key", "position", "token")
QUERY_KEY_COLORS = ("#3e4989", "#f18f01")  # queries blue, keys orange
TOKEN_COLORS = 10  # the most frequent tokens get a colour each, the rest grey

ROW_GAP_PX = 80  # between small multiples' rows: the head numbers above, the titles below


def all_detectors(scores: HeadScores, presenting: bool = False, columns: int = 3) -> go.Figure:
    """Every detector's grid as small multiples on one colour scale from 0 to 1."""
    dets = scores.detectors
    rows = -(-len(dets) // columns)
    height = rows * max(220, min(420, 8 * scores.shape[0] + 120))
    figure = make_subplots(
        rows=rows,
        cols=columns,
        subplot_titles=[d.label for d in dets],
        horizontal_spacing=0.05,
        # room for a row's head numbers and the next row's titles, in px whatever the height
        vertical_spacing=min(ROW_GAP_PX / max(height - 100, 1), 0.5 / max(rows - 1, 1)),  # 100: margins
    )
    for i, d in enumerate(dets):
        row, col = i // columns + 1, i % columns + 1
        values = scores.scores[d.name]
        figure.add_trace(
            go.Heatmap(
                z=values,
                coloraxis="coloraxis",
                hovertemplate=d.label + "<br>layer %{y}, head %{x}: %{z:.3f}<extra></extra>",
            ),
            row=row,
            col=col,
        )
        if np.isnan(values).all():  # e.g. [SEP] in a model without one, +k in a decoder
            figure.add_annotation(
                text="not measurable on these texts",
                showarrow=False,
                xref="x domain",
                yref="y domain",
                x=0.5,
                y=0.5,
                row=row,
                col=col,
            )
    figure.update_yaxes(autorange="reversed")
    figure.update_layout(
        coloraxis=dict(
            colorscale=scale("sequential", presenting), cmin=0, cmax=1, colorbar=dict(title="score")
        ),
        height=height,
        margin=dict(l=10, r=10, t=90, b=10),
        title="Every detector (rows: layers, columns: heads)",
    )
    return figure


def score_table(scores: HeadScores) -> pd.DataFrame:
    """One row per head: layer, head, every detector's score, entropy and distance; sortable."""
    layers, heads = scores.shape
    layer_idx, head_idx = np.divmod(np.arange(layers * heads), heads)
    columns = {"layer": layer_idx, "head": head_idx}
    for d in scores.detectors:
        columns[d.label] = np.round(scores.scores[d.name].ravel(), 4)
    columns["entropy (nats)"] = np.round(scores.entropy.ravel(), 3)
    columns["distance (tokens)"] = np.round(scores.distance.ravel(), 2)
    return pd.DataFrame(columns)


def top_heads(scores: HeadScores, name: str, k: int = 5) -> list[tuple[int, int, float]]:
    """The k heads with the highest score on one detector: (layer, head, score)."""
    values = np.nan_to_num(scores.scores[name], nan=-1.0)
    order = np.argsort(-values.ravel(), kind="stable")[:k]
    return [(int(i // values.shape[1]), int(i % values.shape[1]), float(values.ravel()[i])) for i in order]


def _hover(points: QKPoints, i: int) -> str:
    kind = "key" if points.is_key[i] else "query"
    where = f"text {points.text_index[i] + 1}, position {points.positions[i]}"
    return f"{kind} of {plain(points.context[i])}<br>{where}"


def qk_scatter(
    points: QKPoints, color_by: str = "query / key", title: str = "", presenting: bool = False
) -> go.Figure:
    """Queries (circles) and keys (diamonds) of one head in 2-D, coloured as asked; hover shows context."""
    figure = go.Figure()
    hover = [_hover(points, i) for i in range(len(points.tokens))]
    groups: list[tuple[str, np.ndarray, dict]] = []
    if color_by == "query / key":
        for name, mask, color in (
            ("queries", ~points.is_key, QUERY_KEY_COLORS[0]),
            ("keys", points.is_key, QUERY_KEY_COLORS[1]),
        ):
            groups.append((name, mask, dict(color=color)))
    elif color_by == "position":
        for name, mask in (("queries", ~points.is_key), ("keys", points.is_key)):
            marker = dict(
                color=points.positions[mask],
                colorscale=scale("sequential", presenting),
                cmin=0,
                cmax=int(points.positions.max()),
                colorbar=dict(title="position") if name == "keys" else None,
            )
            groups.append((name, mask, marker))
    else:
        words, counts = np.unique(np.asarray(points.tokens), return_counts=True)
        common = [w for w, _ in sorted(zip(words, counts, strict=True), key=lambda x: -x[1])[:TOKEN_COLORS]]
        tokens = np.asarray(points.tokens)
        for i, word in enumerate([*common, None]):
            same = tokens == word if word is not None else ~np.isin(tokens, common)
            for kind, mask in (("query", ~points.is_key), ("key", points.is_key)):
                color = "#bbbbbb" if word is None else f"hsl({int(360 * i / TOKEN_COLORS)}, 65%, 45%)"
                groups.append(
                    (f"{kind} {word if word is not None else 'other'}", mask & same, dict(color=color))
                )
    for name, mask, marker in groups:
        symbol = "diamond" if name.startswith("key") else "circle"
        index = np.flatnonzero(mask)
        if not len(index):
            continue
        figure.add_trace(
            go.Scatter(
                x=points.coords[index, 0],
                y=points.coords[index, 1],
                mode="markers",
                name=plain(name),
                marker=dict(
                    size=8, symbol=symbol, opacity=0.8, line=dict(width=0.5, color="white"), **marker
                ),
                text=[hover[i] for i in index],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    figure.update_layout(
        title=plain(title),
        height=620,
        margin=dict(l=10, r=10, t=60, b=10),
        xaxis=dict(title=f"{points.method} 1", zeroline=False),
        yaxis=dict(title=f"{points.method} 2", zeroline=False, scaleanchor="x"),
    )
    return figure


def qk_small_multiples(layer_points: list[QKPoints], title: str = "", columns: int = 4) -> go.Figure:
    """Every head of a layer: queries and keys in 2-D, one panel per head."""
    rows = -(-len(layer_points) // columns)
    figure = make_subplots(
        rows=rows,
        cols=columns,
        subplot_titles=[f"head {h}" for h in range(len(layer_points))],
        horizontal_spacing=0.03,
        vertical_spacing=0.06,
    )
    for h, points in enumerate(layer_points):
        for name, mask, color in (
            ("queries", ~points.is_key, QUERY_KEY_COLORS[0]),
            ("keys", points.is_key, QUERY_KEY_COLORS[1]),
        ):
            figure.add_trace(
                go.Scatter(
                    x=points.coords[mask, 0],
                    y=points.coords[mask, 1],
                    mode="markers",
                    name=plain(name),
                    marker=dict(size=4, color=color, opacity=0.7),
                    showlegend=h == 0,
                    legendgroup=name,
                    text=[plain(c) for c in np.asarray(points.context)[mask]],
                    hovertemplate="%{text}<extra></extra>",
                ),
                row=h // columns + 1,
                col=h % columns + 1,
            )
    figure.update_xaxes(showticklabels=False, zeroline=False)
    figure.update_yaxes(showticklabels=False, zeroline=False)
    figure.update_layout(title=plain(title), height=260 * rows + 80, margin=dict(l=10, r=10, t=70, b=10))
    return figure


def measure_bars(comparison: TokenComparison) -> go.Figure:
    """Each token's share under every measure, side by side; tokens left out of the ranks are marked."""
    positions = list(range(len(comparison.tokens)))
    figure = go.Figure()
    for name, values in comparison.measures.items():
        figure.add_trace(
            go.Bar(x=positions, y=values, name=name, hovertemplate="%{y:.3f}<extra>" + name + "</extra>")
        )
    labels = [
        plain(t) + ("" if keep else " *")
        for t, keep in zip(comparison.tokens, comparison.compared, strict=True)
    ]
    figure.update_layout(
        barmode="group",
        height=420,
        margin=dict(l=10, r=10, t=60, b=10),
        title="Share of each token",
        xaxis=dict(tickmode="array", tickvals=positions, ticktext=labels, tickangle=-45),
        yaxis=dict(title="share (sums to 1)"),
        legend=dict(orientation="h", y=1.12),
    )
    return figure


def correlation_heatmap(comparison: TokenComparison) -> go.Figure:
    """Spearman rank correlation between every pair of measures, written in each cell."""
    names = list(comparison.measures)
    rho = comparison.correlations
    figure = go.Figure(
        go.Heatmap(
            z=rho,
            x=names,
            y=names,
            zmin=-1,
            zmax=1,
            colorscale=scale("diverging"),
            colorbar=dict(title="rho"),
            text=np.vectorize(lambda v: f"{v:.2f}")(rho),
            texttemplate="%{text}",
            hovertemplate="%{y} vs %{x}: %{z:.3f}<extra></extra>",
        )
    )
    figure.update_layout(
        height=420, title="Rank correlation (Spearman) over tokens", margin=dict(l=10, r=10, t=60, b=10)
    )
    figure.update_yaxes(autorange="reversed")
    return figure


def depth_profiles(a: HeadScores, b: HeadScores, quantity: str) -> go.Figure:
    """One quantity per layer for two models against relative depth (0 = first layer, 1 = last)."""
    figure = go.Figure()
    for scores, dash in ((a, "solid"), (b, "dash")):
        x, y = compare.profile(scores, quantity)
        layers = np.arange(len(x))
        figure.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines+markers",
                name=f"{plain(scores.model_name)} ({len(x)} layers)",
                line=dict(dash=dash),
                customdata=layers,
                hovertemplate="layer %{customdata}: %{y:.3f}<extra></extra>",
            )
        )
    figure.update_layout(
        title=compare.quantity_label(a, quantity),
        height=360,
        margin=dict(l=10, r=10, t=60, b=10),
        xaxis=dict(title="relative depth (layer / (layers - 1))", range=[-0.03, 1.03]),
        legend=dict(orientation="h", y=-0.25),
    )
    return figure
