"""Figures of mask patterns: grids, a gallery, pairs kept, cost against n, Swin windows."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.attention import attention_heatmap
from txviz.figures.axes import margin, token_axis
from txviz.figures.colors import scale
from txviz.figures.text import plain, plain_all

ALLOWED, FORBIDDEN = "#2a6f97", "#f1f1f1"
MASK_SCALE = [[0.0, FORBIDDEN], [1.0, ALLOWED]]  # two categories: the same in presentation mode
MAX_GRID_CELLS = 256  # past this many tokens per axis a mask is drawn from position ticks only


def _positions_axis(labels: Sequence[str] | None, n: int, title: str) -> dict:
    """Integer positions, with token text (escaped) on the ticks when labels are given."""
    return token_axis(labels if labels is not None else [str(i) for i in range(n)], title)


def _mask_trace(mask: np.ndarray, show_scale: bool = False) -> go.Heatmap:
    return go.Heatmap(
        z=mask.astype(np.uint8),
        zmin=0,
        zmax=1,
        colorscale=MASK_SCALE,
        showscale=show_scale,
        xgap=1 if max(mask.shape) <= 64 else 0,
        ygap=1 if max(mask.shape) <= 64 else 0,
        hovertemplate="query %{y}, key %{x}: %{z}<extra>1 = allowed</extra>",
    )


def mask_grid(
    mask: np.ndarray,  # bool (query_pos, key_pos)
    title: str = "",
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
) -> go.Figure:
    """One mask: rows are queries, columns are keys, blue where attention is allowed."""
    n_query, n_key = mask.shape
    figure = go.Figure(_mask_trace(mask))
    # The key axis sits on top, so its ticks and title share the top margin with the figure title:
    # pin the title to the top edge of the figure and leave room for all three below it.
    figure.update_layout(
        title=dict(text=plain(title), y=1, yref="container", yanchor="top", pad=dict(t=12)),
        height=max(340, min(660, 14 * n_query + 170)),
        xaxis=_positions_axis(key_labels, n_key, "key (attended to)") | {"side": "top"},
        yaxis=_positions_axis(query_labels, n_query, "query (attending)")
        | {"autorange": "reversed", "scaleanchor": "x"},
        margin=margin(top=110),
    )
    return figure


def mask_gallery(items: Sequence[tuple[str, np.ndarray]], columns: int = 4) -> go.Figure:
    """Several masks side by side, each with its caption (e.g. the textbook's eight)."""
    rows = -(-len(items) // columns)
    figure = make_subplots(
        rows=rows,
        cols=columns,
        subplot_titles=[plain(caption) for caption, _ in items],
        horizontal_spacing=0.03,
        vertical_spacing=0.08,
    )
    for index, (_, mask) in enumerate(items):
        row, col = divmod(index, columns)
        figure.add_trace(_mask_trace(mask), row=row + 1, col=col + 1)
        suffix = "" if index == 0 else str(index + 1)
        figure.update_yaxes(autorange="reversed", scaleanchor=f"x{suffix}", row=row + 1, col=col + 1)
    figure.update_xaxes(showticklabels=False, title_text="key", title_standoff=2)
    figure.update_yaxes(showticklabels=False, title_text="query", title_standoff=2)
    figure.update_layout(height=300 * rows + 60, margin=margin(top=60))
    return figure


def fraction_kept_bars(labels: Sequence[str], fractions: Sequence[float], n: int) -> go.Figure:
    """Share of (query, key) pairs each pattern keeps at n tokens."""
    figure = go.Figure(
        go.Bar(
            x=list(fractions),
            y=plain_all(labels),
            orientation="h",
            marker_color=ALLOWED,
            text=[f"{f:.1%}" for f in fractions],
            textposition="auto",
            hovertemplate="%{y}: %{x:.2%} of pairs<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"Pairs kept at n = {n:,}",
        xaxis=dict(title="fraction of (query, key) pairs computed", range=[0, 1], tickformat=".0%"),
        yaxis=dict(autorange="reversed"),
        height=max(260, 28 * len(labels) + 120),
        margin=margin(top=60),
    )
    return figure


def pairs_vs_n(ns: Sequence[int], series: dict[str, Sequence[int]]) -> go.Figure:
    """Pairs computed as n grows, log-log, against the n² of full attention."""
    figure = go.Figure(
        go.Scatter(
            x=list(ns),
            y=[n * n for n in ns],
            name="full: n²",
            line=dict(dash="dash", color="grey"),
        )
    )
    for label, pairs in series.items():
        figure.add_trace(go.Scatter(x=list(ns), y=list(pairs), name=plain(label), mode="lines+markers"))
    figure.update_layout(
        title="Pairs computed as the text grows",
        xaxis=dict(title="tokens n", type="log"),
        yaxis=dict(title="(query, key) pairs", type="log"),
        height=420,
        margin=margin(top=60),
    )
    return figure


def cost_curves(
    ns: Sequence[int],
    dense: Sequence[float],
    sparse: Sequence[float],
    keys_per_query: Sequence[float],
    unit: str = "seconds",
    title: str = "",
) -> go.Figure:
    """Measured dense and block-sparse cost against c n² and c n w, both fitted at the largest n."""
    ns = np.asarray(ns, dtype=float)
    w = np.asarray(keys_per_query, dtype=float)
    dense, sparse = np.asarray(dense, dtype=float), np.asarray(sparse, dtype=float)
    # Anchor each reference curve at the largest n, where fixed overheads matter least.
    quadratic = dense[-1] * (ns / ns[-1]) ** 2
    linear = sparse[-1] * (ns * w) / (ns[-1] * w[-1])
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=ns, y=dense, name="dense SDPA (measured)", mode="lines+markers", line=dict(color="#1f3b73")
        )
    )
    figure.add_trace(
        go.Scatter(
            x=ns,
            y=sparse,
            name="FlexAttention block-sparse (measured)",
            mode="lines+markers",
            line=dict(color="#2a9d8f"),
        )
    )
    figure.add_trace(
        go.Scatter(
            x=ns,
            y=quadratic,
            name="O(n²), through the last dense point",
            line=dict(dash="dash", color="grey"),
        )
    )
    figure.add_trace(
        go.Scatter(
            x=ns,
            y=linear,
            name="O(n·w), through the last sparse point",
            line=dict(dash="dot", color="#e76f51"),
        )
    )
    figure.update_layout(
        title=plain(title),
        xaxis=dict(title="tokens n", type="log"),
        yaxis=dict(title=plain(unit), type="log"),
        height=420,
        margin=margin(top=60),
    )
    return figure


def before_after(
    before: np.ndarray, after: np.ndarray, tokens: Sequence[str], title: str, presenting: bool = False
) -> go.Figure:
    """One head's attention without and with the mask, on the same colour scale."""
    figure = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=["Before: the model's own mask", "After: with the pattern"],
        horizontal_spacing=0.08,
    )
    zmax = float(max(before.max(), after.max(), 1e-9))
    for col, matrix in ((1, before), (2, after)):
        heat = attention_heatmap(matrix, tuple(tokens), tuple(tokens), presenting=presenting).data[0]
        heat.update(zmin=0.0, zmax=zmax, colorscale=scale("sequential", presenting), showscale=col == 2)
        figure.add_trace(heat, row=1, col=col)
        axis = _positions_axis(list(tokens), len(tokens), "")
        figure.update_xaxes(axis | {"title": "key"}, row=1, col=col)
        figure.update_yaxes(axis | {"title": "query", "autorange": "reversed"}, row=1, col=col)
    figure.update_layout(
        title=plain(title), height=max(420, min(760, 14 * len(tokens) + 200)), margin=margin(top=90)
    )
    return figure


def token_similarity_bars(tokens: Sequence[str], cosine: np.ndarray) -> go.Figure:
    """Cosine similarity of each token's masked output to its unmasked one."""
    figure = go.Figure(
        go.Bar(
            x=list(range(len(tokens))),
            y=cosine,
            marker_color=ALLOWED,
            hovertext=plain_all(tokens),
            hovertemplate="%{x}: %{hovertext}<br>cosine %{y:.3f}<extra></extra>",
        )
    )
    figure.update_layout(
        title="Each token's last hidden state: cosine to the unmasked one",
        xaxis=_positions_axis(list(tokens), len(tokens), "token"),
        yaxis=dict(title="cosine similarity", range=[min(0.0, float(cosine.min())), 1.0]),
        height=320,
        margin=margin(top=60),
    )
    return figure


def swin_figure(regions: np.ndarray, shifted_regions: np.ndarray, window: int) -> go.Figure:
    """Patch grid coloured by window, regular and shifted, with the two attention masks below."""
    height, width = regions.shape
    regular_mask = regions.ravel()[:, None] == regions.ravel()[None, :]
    shifted_mask = shifted_regions.ravel()[:, None] == shifted_regions.ravel()[None, :]
    figure = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=[
            f"Windows of {window}×{window} patches",
            f"Shifted by {window // 2}",
            "Mask (patches in row-major order)",
            "Shifted mask",
        ],
        vertical_spacing=0.1,
    )
    for col, grid in ((1, regions), (2, shifted_regions)):
        n_windows = int(grid.max()) + 1  # windows are numbered 0, 1, ...: one colour each
        figure.add_trace(
            go.Heatmap(
                z=grid,
                colorscale=scale("categorical", categories=n_windows),
                zmin=-0.5,
                zmax=n_windows - 0.5,
                showscale=False,
                hovertemplate="row %{y}, column %{x}: window %{z}<extra></extra>",
                xgap=1,
                ygap=1,
            ),
            row=1,
            col=col,
        )
    for col, mask in ((1, regular_mask), (2, shifted_mask)):
        figure.add_trace(_mask_trace(mask), row=2, col=col)
    for index in range(1, 5):
        row, col = (index - 1) // 2 + 1, (index - 1) % 2 + 1
        suffix = "" if index == 1 else str(index)
        figure.update_yaxes(autorange="reversed", scaleanchor=f"x{suffix}", row=row, col=col)
    figure.update_xaxes(title_text="patch column", row=1)
    figure.update_yaxes(title_text="patch row", row=1)
    figure.update_xaxes(title_text="key patch", row=2)
    figure.update_yaxes(title_text="query patch", row=2)
    figure.update_layout(height=860, margin=margin(top=60))
    return figure


def merge_stages_figure(stages: Sequence) -> go.Figure:
    """Each Swin stage's patch grid coloured by window: 2 x 2 merges until one window is left."""
    titles = [
        f"stage {i + 1}: {s.rows}×{s.columns}, {s.channels} ch, {s.n_windows} window{'s' * (s.n_windows > 1)}"
        for i, s in enumerate(stages)
    ]
    figure = make_subplots(rows=1, cols=len(stages), subplot_titles=titles, horizontal_spacing=0.04)
    for i, stage in enumerate(stages, start=1):
        figure.add_trace(
            go.Heatmap(
                z=stage.regions,
                colorscale=scale("categorical", categories=stage.n_windows),
                zmin=-0.5,
                zmax=stage.n_windows - 0.5,
                showscale=False,
                xgap=1,
                ygap=1,
                hovertemplate=(
                    f"row %{{y}}, column %{{x}}: window %{{z}}; one patch = {stage.patch_span}×"
                    f"{stage.patch_span} first-stage patches<extra></extra>"
                ),
            ),
            row=1,
            col=i,
        )
        suffix = "" if i == 1 else str(i)
        figure.update_yaxes(autorange="reversed", scaleanchor=f"x{suffix}", row=1, col=i)
    figure.update_layout(height=360, margin=dict(l=10, r=10, t=60, b=10))
    return figure
