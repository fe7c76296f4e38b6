"""Figures of self-attention step by step: small annotated matrices, routing, heads, a real query."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.axes import PAGE_WIDTH, label_width, margin, plot_length, ticks
from txviz.figures.colors import TEXT, scale
from txviz.figures.text import plain, plain_all
from txviz.selfattention.toy import HeadResult, MultiHeadResult

ROUTING_FONT = 13  # px: the routing figure's value and output names
MAX_ANNOTATED_CELLS = 400  # past this, numbers in cells stop being readable


def token_labels(n: int, prefix: str = "x") -> list[str]:
    """Names of toy tokens: x₁, x₂, ..."""
    subscripts = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    return [f"{prefix}{str(i + 1).translate(subscripts)}" for i in range(n)]


def matrix_figure(
    matrix: np.ndarray,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    title: str,
    row_title: str = "",
    column_title: str = "",
    kind: str = "diverging",
    zmid: float | None = 0.0,
    height: int | None = None,
    presenting: bool = False,
) -> go.Figure:
    """An annotated heatmap of a small matrix, rows top to bottom as in the maths; ``kind`` is the
    colour kind (diverging around zmid, or sequential)."""
    matrix = np.asarray(matrix, dtype=float)
    rows, columns = matrix.shape
    annotate = rows * columns <= MAX_ANNOTATED_CELLS
    heatmap = go.Heatmap(
        z=matrix,
        x=list(range(columns)),
        y=list(range(rows)),
        colorscale=scale(kind, presenting),
        zmid=zmid,
        text=np.round(matrix, 2) if annotate else None,
        texttemplate="%{text}" if annotate else None,
        hovertemplate="row %{y}, column %{x}: %{z:.4f}<extra></extra>",
        showscale=False,
    )
    figure = go.Figure(heatmap)
    figure.update_layout(title=plain(title), height=height or max(160, 60 + 42 * rows), margin=margin(top=40))
    figure.update_xaxes(title=plain(column_title), side="top", **ticks(column_labels))
    figure.update_yaxes(title=plain(row_title), autorange="reversed", **ticks(row_labels))
    return figure


def weights_figure(
    weights: np.ndarray, tokens: Sequence[str], title: str, presenting: bool = False
) -> go.Figure:
    """Attention weights: rows are queries, columns are keys, each row sums to one."""
    return matrix_figure(
        weights, tokens, tokens, title, "query", "key", "sequential", zmid=None, presenting=presenting
    ).update_traces(zmin=0.0, zmax=1.0)


def routing_figure(result: HeadResult, tokens: Sequence[str]) -> go.Figure:
    """Each output fed by every value, the band's width its attention weight (a Sankey). The names sit
    outside the bands, dark on white: plotly's own node labels fall on the stacked grey bands."""
    n = len(tokens)
    values = [f"v from {t}" for t in plain_all(tokens)]
    outputs = [f"output {t}" for t in plain_all(tokens)]
    sources, targets, widths, names = [], [], [], []
    for query in range(n):
        for key in range(n):
            sources.append(key)
            targets.append(n + query)
            widths.append(float(result.weights[query, key]))
            names.append([values[key], outputs[query]])
    widest = max(label_width(html.unescape(t), ROUTING_FONT) for t in values + outputs) + 16
    side = min(0.35, widest / PAGE_WIDTH)  # of the width, each side, for the names
    figure = go.Figure(
        go.Sankey(
            arrangement="fixed",
            domain={"x": [side, 1 - side]},
            node={
                "label": [""] * (2 * n),
                "customdata": values + outputs,
                "hovertemplate": "%{customdata}<extra></extra>",
                "x": [0.01] * n + [0.99] * n,
                "y": [(i + 0.5) / n for i in range(n)] * 2,
                "pad": 12,
                "color": "#3e4989",
            },
            link={
                "source": sources,
                "target": targets,
                "value": widths,
                "customdata": names,
                "hovertemplate": "%{customdata[0]} → %{customdata[1]}: weight %{value:.3f}<extra></extra>",
            },
        )
    )
    for i in range(n):
        for text, x, anchor in ((values[i], side, "right"), (outputs[i], 1 - side, "left")):
            figure.add_annotation(
                text=text, x=x, xref="paper", xanchor=anchor, xshift=-6 if anchor == "right" else 6,
                y=1 - (i + 0.5) / n, yref="paper", showarrow=False,
                font={"size": ROUTING_FONT, "color": TEXT},
            )  # fmt: skip
    figure.update_layout(
        title="Routing: each output is a weighted sum of every value",
        height=max(220, 70 * n),
        margin=margin(top=40),
        paper_bgcolor="white",
    )
    return figure


def heads_figure(result: MultiHeadResult, tokens: Sequence[str], presenting: bool = False) -> go.Figure:
    """Every head's attention weights side by side (rows queries, columns keys)."""
    n_heads = len(result.heads)
    figure = make_subplots(rows=1, cols=n_heads, subplot_titles=[f"head {h + 1}" for h in range(n_heads)])
    annotate = len(tokens) ** 2 <= MAX_ANNOTATED_CELLS
    height = max(220, 90 + 42 * len(tokens))
    across, down = plot_length(PAGE_WIDTH, columns=n_heads), plot_length(height, reserved=120)
    for h, head in enumerate(result.heads):
        figure.add_trace(
            go.Heatmap(
                z=head.weights,
                x=list(range(len(tokens))),
                y=list(range(len(tokens))),
                zmin=0.0,
                zmax=1.0,
                colorscale=scale("sequential", presenting),
                showscale=False,
                text=np.round(head.weights, 2) if annotate else None,
                texttemplate="%{text}" if annotate else None,
                hovertemplate="query %{y}, key %{x}: %{z:.4f}<extra></extra>",
            ),
            row=1,
            col=h + 1,
        )
        figure.update_xaxes(title="key", row=1, col=h + 1, **ticks(tokens, length=across))
        figure.update_yaxes(
            autorange="reversed", row=1, col=h + 1, **ticks(tokens, length=down, vertical=True)
        )
    figure.update_yaxes(title="query", row=1, col=1)
    figure.update_layout(height=height, margin=margin())
    return figure


def query_steps_figure(
    key_tokens: Sequence[str], scaled_scores: np.ndarray, weights: np.ndarray, title: str
) -> go.Figure:
    """One query's q.k/sqrt(d) per key and the softmax weights they become (masked keys blank)."""
    positions = list(range(len(key_tokens)))
    shown_scores = np.where(np.isfinite(scaled_scores), scaled_scores, np.nan)
    figure = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        subplot_titles=["q · k / √d_head", "softmax → attention weight"],
        vertical_spacing=0.12,
    )
    figure.add_trace(
        go.Bar(x=positions, y=shown_scores, name="scaled score", marker_color="#7f7f7f"),
        row=1,
        col=1,
    )
    figure.add_trace(go.Bar(x=positions, y=weights, name="weight", marker_color="#1f77b4"), row=2, col=1)
    keys = ticks(key_tokens, length=plot_length(PAGE_WIDTH))
    figure.update_xaxes(title="key", row=2, col=1, **keys)
    figure.update_xaxes(row=1, col=1, **keys)
    figure.update_layout(title=plain(title), height=460, showlegend=False, margin=margin(top=60))
    return figure


def equivariance_figure(
    original_permuted: np.ndarray, shuffled: np.ndarray, tokens: Sequence[str]
) -> go.Figure:
    """Sa[X][pi] beside Sa[X[pi]] and their difference: equal when attention ignores order."""
    difference = shuffled - original_permuted
    titles = [
        "outputs in order, then shuffled: Sa[X][π]",
        "outputs of shuffled input: Sa[X[π]]",
        "difference",
    ]
    figure = make_subplots(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.06)
    limit = (
        float(np.percentile(np.abs(original_permuted), 99)) or 1.0
    )  # one outlier dimension would wash out the rest
    labels = list(tokens)  # escaped once, by ticks()
    for col, matrix in enumerate((original_permuted, shuffled, difference), start=1):
        figure.add_trace(
            go.Heatmap(
                z=matrix,
                y=list(range(len(labels))),
                colorscale=scale("diverging"),
                zmin=-limit,
                zmax=limit,
                showscale=col == 3,
                hovertemplate="slot %{y}, dimension %{x}: %{z:.3g}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        figure.update_yaxes(autorange="reversed", row=1, col=col, **ticks(labels))
        figure.update_xaxes(title="dimension", row=1, col=col)
    figure.update_layout(height=max(240, 90 + 24 * len(labels)), margin=margin())
    return figure


def linear_cost_figure(ns: Sequence[int], softmax_s: Sequence[float], linear_s: Sequence[float]) -> go.Figure:
    """Seconds per call against n, log-log: softmax grows like n², linear attention like n."""
    figure = go.Figure()
    for name, seconds in (
        ("softmax attention (n × n matrix)", softmax_s),
        ("linear attention (d × d state)", linear_s),
    ):
        figure.add_trace(
            go.Scatter(x=list(ns), y=[s * 1e3 for s in seconds], mode="lines+markers", name=name)
        )
    figure.update_layout(
        title="Measured on this machine: milliseconds per head",
        xaxis={"title": "tokens n", "type": "log"},
        yaxis={"title": "ms", "type": "log"},
        height=360,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
    )
    return figure


def efficient_error_figure(
    curves: dict[str, tuple[Sequence[int], Sequence[float]]], elu_error: float
) -> go.Figure:
    """Output error against size, one panel each: Linformer over kp (1..n), Performer over m (log)."""
    figure = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("Linformer: projected keys kp", "Performer: random features m"),
        horizontal_spacing=0.1,
    )
    for name, (sizes, errors) in curves.items():
        col = 1 if name.startswith("Linformer") else 2
        figure.add_trace(
            go.Scatter(x=list(sizes), y=list(errors), mode="lines+markers", name=plain(name)), row=1, col=col
        )
    for col in (1, 2):
        figure.add_hline(
            y=elu_error, line_dash="dot", annotation_text="elu + 1, T = 1 (no size to choose)", row=1, col=col
        )
    figure.update_xaxes(title_text="kp (of n keys)", row=1, col=1)
    figure.update_xaxes(title_text="m features", type="log", row=1, col=2)
    figure.update_yaxes(title_text="relative output error", rangemode="tozero", row=1, col=1)
    figure.update_yaxes(rangemode="tozero", row=1, col=2)
    figure.update_layout(
        title="Error against softmax: ‖O − O_soft‖ / ‖O_soft‖",
        height=420,
        legend={"orientation": "h", "y": -0.25},
        margin=margin(top=70),
    )
    return figure


def families_figure(families: Sequence, page_titles: dict[str, str]) -> go.Figure:
    """The families of efficient transformers (probml fig. 15.29) as boxes under one root."""
    figure = go.Figure()
    count = len(families)
    figure.add_annotation(x=(count - 1) / 2, y=1.0, text="<b>Efficient transformers</b>", showarrow=False)
    for i, family in enumerate(families):
        figure.add_shape(type="line", x0=(count - 1) / 2, y0=0.93, x1=i, y1=0.8, line={"color": "grey"})
        where = "<br>".join(f"→ {plain(page_titles[page])}" for page, _ in family.shown)
        if getattr(family, "note", ""):  # the links show a contrast, not the family itself
            where = f"not shown<br>(contrast: {where.removeprefix('→ ')})"
        members = "<br>".join(plain(m.strip()) for m in family.members.split(","))
        figure.add_annotation(
            x=i,
            y=0.75,
            yanchor="top",
            text=f"<b>{plain(family.name)}</b><br><br>{members}<br><br><i>in txviz:</i><br>{where}",
            showarrow=False,
            bordercolor="grey",
            borderpad=6,
            align="left",
        )
    figure.update_layout(
        title="Families of efficient transformers (probml fig. 15.29, after Tay et al. 2020)",
        xaxis={"visible": False, "range": [-0.6, count - 0.4]},
        yaxis={"visible": False, "range": [0.1, 1.05]},
        height=420,
        margin=margin(top=40),
    )
    return figure
