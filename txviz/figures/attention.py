"""Attention figures: one head as a heatmap, many heads as image mosaics, token focus arcs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from txviz.figures.axes import (
    LINE_HEIGHT,
    PAGE_WIDTH,
    PROJECTOR_SCALE,
    TICK_FONT,
    TICK_GAP,
    UPRIGHT,
    label_width,
    margin,
    plot_length,
    token_axis,
)
from txviz.figures.colors import colorize, png_data_uri, scale, scale_name
from txviz.figures.text import plain, plain_all

LOG_FLOOR = 1e-4  # weights below this share the bottom colour on the log scale
TITLE_ROOM = 110  # px over the plot for the title, a top axis' labels and its title (automargin adds more)
HOVER_LABEL_LIMIT = 256  # past this many tokens per axis, hover names positions, not text
HEATMAP_RESERVED = 200  # px of a heatmap's height outside its rows: title, top axis' title, margins
MAX_HEATMAP_HEIGHT = 900  # px (times the projector's scale): past this, labels are thinned instead
THINNED_ROOM = 30  # px under the plot for the line saying which labels are shown


def scale_values(matrix: np.ndarray, log_scale: bool, threshold: float) -> np.ndarray:
    """Values to colour: below-threshold weights cleared, optionally log10."""
    shown = np.where(matrix >= threshold, matrix, 0.0) if threshold > 0 else matrix
    return np.log10(np.clip(shown, LOG_FLOOR, None)) if log_scale else shown


def weights_heatmap(weights: np.ndarray, presenting: bool = False, **kwargs) -> go.Heatmap:
    """Attention weights as a heatmap on the fixed 0-1 scale, rows and columns numbered by position."""
    n_rows, n_columns = weights.shape
    return go.Heatmap(
        z=weights,
        x=list(range(n_columns)),
        y=list(range(n_rows)),
        zmin=0.0,
        zmax=1.0,
        colorscale=scale("sequential", presenting),
        **kwargs,
    )


def above(title: str) -> dict:
    """A figure title at the very top, over a top axis' labels and title (TITLE_ROOM keeps them room)."""
    return {"text": plain(title), "y": 1, "yref": "container", "yanchor": "top", "pad": {"t": 10}}


def attention_heatmap(
    matrix: np.ndarray,  # (Q, K)
    query_tokens: tuple[str, ...],
    key_tokens: tuple[str, ...],
    title: str = "",
    log_scale: bool = False,
    threshold: float = 0.0,
    presenting: bool = False,
    axis_titles: tuple[str, str] = ("query (attending)", "key (attended to)"),
) -> go.Figure:
    """One attention matrix: rows are queries, columns are keys, hover shows both and the weight."""
    z = scale_values(matrix, log_scale, threshold)
    hover = "query %{y}, key %{x}<br>weight %{customdata:.4f}<extra></extra>"
    text = None
    if max(len(query_tokens), len(key_tokens)) <= HOVER_LABEL_LIMIT:
        text = [[f"{plain(q)} → {plain(k)}" for k in key_tokens] for q in query_tokens]
        hover = "%{text}<br>query %{y}, key %{x}<br>weight %{customdata:.4f}<extra></extra>"
    colorbar = dict(title="weight")
    if log_scale:
        ticks = np.arange(np.log10(LOG_FLOOR), 1)
        colorbar.update(title="weight (log)", tickvals=ticks, ticktext=[f"1e{int(t)}" for t in ticks])
    figure = go.Figure(
        go.Heatmap(
            z=z,
            customdata=matrix,
            text=text,
            hovertemplate=hover,
            colorscale=scale("sequential", presenting),
            colorbar=colorbar,
            zmin=np.log10(LOG_FLOOR) if log_scale else 0.0,
            zmax=0.0 if log_scale else float(max(matrix.max(), 1e-9)),
        )
    )
    grow = PROJECTOR_SCALE if presenting else 1.0  # the projector draws the labels larger
    keys = token_axis(key_tokens, axis_titles[1], length=plot_length(PAGE_WIDTH), scale=grow)
    # A row a label: the map grows until every query label has its line, upright key labels included.
    font = TICK_FONT * grow
    reserved = HEATMAP_RESERVED + (
        max((label_width(t, font) for t in keys["ticktext"]), default=0)
        if keys["tickangle"] == UPRIGHT
        else 0
    )
    wanted = int(len(query_tokens) * (LINE_HEIGHT * font + TICK_GAP) + reserved + 1)
    size = max(420, min(int(MAX_HEATMAP_HEIGHT * grow), wanted))
    queries = token_axis(
        query_tokens, axis_titles[0], length=plot_length(size, reserved=reserved), vertical=True, scale=grow
    )
    thinned = thinning_note(("query", queries, len(query_tokens)), ("key", keys, len(key_tokens)))
    figure.update_layout(
        title=above(title),
        height=size + (THINNED_ROOM if thinned else 0),
        xaxis=keys | {"side": "top"},
        yaxis=queries | {"autorange": "reversed"},
        margin=margin(top=TITLE_ROOM, bottom=THINNED_ROOM if thinned else 10),
    )
    if thinned:
        figure.add_annotation(
            text=thinned, x=0, xref="paper", xanchor="left", y=0, yref="paper", yanchor="top",
            yshift=-6, showarrow=False, font={"size": TICK_FONT, "color": "#444"},
        )  # fmt: skip
    return figure


def thinning_note(*axes: tuple[str, dict, int]) -> str:
    """A line for the figure when an axis shows only every k-th label: which, and that hover names all.
    ``axes``: (name, its tick settings, how many tokens it has)."""
    said = []
    for name, settings, count in axes:
        shown = settings["tickvals"]
        if len(shown) < count:
            step = -(-count // max(1, len(shown)))
            said.append(f"every {_ordinal(step)} {name} label")
    if not said:
        return ""
    return "Shown: " + " and ".join(said) + " (too many to fit); hover names every token."


def _ordinal(n: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def pool(matrices: np.ndarray, size: int) -> np.ndarray:
    """Block-mean the last two axes (Q, K) down to at most size x size, for thumbnails."""
    q, k = matrices.shape[-2:]
    fq, fk = -(-q // size), -(-k // size)
    if fq == 1 and fk == 1:
        return matrices
    starts_q, starts_k = np.arange(0, q, fq), np.arange(0, k, fk)
    # reduceat sums each block without copying the (possibly ~300 MB) input
    total = np.add.reduceat(np.add.reduceat(matrices, starts_q, axis=-2), starts_k, axis=-1)
    counts = np.diff(np.append(starts_q, q))[:, None] * np.diff(np.append(starts_k, k))[None, :]
    return total / counts  # edge blocks are averaged over their real cells only


def mosaic(tiles: np.ndarray, tile_size: int, gap: int = 2) -> np.ndarray:
    """[rows, cols, Q, K] -> one 2-D array of pooled tiles separated by NaN gaps."""
    rows, cols = tiles.shape[:2]
    pooled = pool(tiles, tile_size)  # (rows, cols, th, tw)
    th, tw = pooled.shape[-2:]
    out = np.full((rows, th + gap, cols, tw + gap), np.nan, dtype=np.float32)
    out[:, :th, :, :tw] = pooled.transpose(0, 2, 1, 3)
    return out.reshape(rows * (th + gap), cols * (tw + gap))[:-gap, :-gap]


def heads_mosaic(
    weights: np.ndarray,  # [rows, cols, Q, K], e.g. [layer, head, Q, K]
    row_label: str = "layer",
    col_label: str = "head",
    tile_size: int = 64,
    log_scale: bool = False,
    threshold: float = 0.0,
    presenting: bool = False,
    title: str = "",
    row_names: Sequence[str] | None = None,
) -> go.Figure:
    """Many heads at once as one PNG image (bounded bytes however long the text); ``row_names`` label
    the rows (default 0, 1, ...), e.g. the layer a one-row mosaic shows."""
    rows, cols = weights.shape[:2]
    values = scale_values(mosaic(weights, tile_size), log_scale, threshold)
    vmin, vmax = (np.log10(LOG_FLOOR), 0.0) if log_scale else (0.0, float(np.nanmax(values)) or 1.0)
    rgb = colorize(values, vmin, vmax, scale_name("sequential", presenting))
    height, width = rgb.shape[:2]
    th, tw = (height + 2) / rows, (width + 2) / cols
    figure = go.Figure(go.Image(source=png_data_uri(rgb), hoverinfo="skip"))
    names = [str(r) for r in range(rows)] if row_names is None else list(row_names)
    figure.update_layout(
        title=above(title),
        xaxis=token_axis(
            [str(c) for c in range(cols)], col_label, [(c + 0.5) * tw for c in range(cols)], None
        )
        | {"side": "top"},
        yaxis=token_axis(names, row_label, [(r + 0.5) * th for r in range(rows)], None),
        height=min(1600, max(260, int(90 + 720 * height / max(width, 1)))),
        margin=margin(top=TITLE_ROOM),
    )
    return figure


def token_focus_arcs(
    weights: np.ndarray,  # (Q, K) one head or a head mean
    tokens: tuple[str, ...],
    focus: int,
    min_weight: float = 0.02,
) -> go.Figure:
    """Lines from the focus token to the keys it attends to (left) and from the queries attending to it
    (right), line strength = weight, like BertViz's head view."""
    n = len(tokens)
    figure = go.Figure()
    panels = (("attends to", 0.0, weights[focus], True), ("attended by", 3.0, weights[:, focus], False))
    for label, x0, row, outgoing in panels:
        edges = (min_weight, 0.1, 0.3, 0.6, 1.01)  # a few width buckets instead of one trace per line
        for lower, upper in zip(edges[:-1], edges[1:], strict=True):
            xs, ys = [], []
            for i in np.flatnonzero((row >= lower) & (row < upper)):
                a, b = (focus, i) if outgoing else (i, focus)
                xs += [x0, x0 + 1, None]
                ys += [a, b, None]
            if xs:
                figure.add_trace(
                    go.Scatter(
                        x=xs,
                        y=ys,
                        mode="lines",
                        line=dict(width=1 + 8 * min(upper, 1.0), color="#3e4989"),
                        opacity=min(1.0, 0.25 + upper),
                        hoverinfo="skip",
                        showlegend=False,
                    )
                )
        for side in (0, 1):
            figure.add_trace(
                go.Scatter(
                    x=[x0 + side] * n,
                    y=list(range(n)),
                    mode="text",
                    text=plain_all(tokens),
                    showlegend=False,
                    textposition="middle left" if side == 0 else "middle right",
                    customdata=row,
                    hovertemplate="%{text}: %{customdata:.3f}<extra></extra>",
                    textfont=dict(color=["#d62728" if i == focus else "#222" for i in range(n)]),
                )
            )
        figure.add_annotation(x=x0 + 0.5, y=-1.5, text=label, showarrow=False)
    figure.update_layout(
        xaxis=dict(visible=False, range=[-1.2, 5.2]),
        yaxis=dict(visible=False, autorange="reversed"),
        height=max(300, 22 * n + 80),
        margin=margin(top=30),
    )
    return figure
