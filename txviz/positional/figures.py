"""Figures of positional encodings: matrices, basis curves, rotation, similarity, RoPE."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.axes import margin, ticks
from txviz.figures.colors import scale
from txviz.figures.text import plain
from txviz.positional.encodings import (
    AddedVsConcatenated,
    EncodingSummary,
    PrincipalComponents,
    RopeOffsetCheck,
    ShiftCheck,
)

MARGIN = margin()
LARGE = 50_000  # cells past which float32 halves what the browser receives, at no visible cost


def _compact(matrix: np.ndarray) -> np.ndarray:
    """float32 for large matrices, unchanged for small ones."""
    return matrix.astype(np.float32) if matrix.size > LARGE else matrix


def encoding_heatmap(
    encoding: np.ndarray, title: str, column_title: str = "encoding dimension j"
) -> go.Figure:
    """A position x dimension matrix; position 0 on top, colours clipped at the 99th percentile."""
    magnitude = np.abs(encoding)
    limit = float(np.quantile(magnitude, 0.99)) if encoding.size else 1.0
    peak = float(magnitude.max()) if encoding.size else 1.0
    # A few large entries (MiniLM's position 0) would wash out the rest: clip the colours, not the data.
    clipped = limit < 0.8 * peak
    limit = (limit if clipped else peak) or 1.0
    figure = go.Figure(
        go.Heatmap(
            z=_compact(encoding),
            x=list(range(encoding.shape[1])),
            y=list(range(encoding.shape[0])),
            colorscale=scale("diverging"),  # signed values: diverging in presentation mode too
            zmin=-limit,
            zmax=limit,
            colorbar={"title": {"text": "clipped at 99%" if clipped else ""}},
            hovertemplate="position %{y}, dimension %{x}: %{z:.4f}<extra></extra>",
        )
    )
    figure.update_layout(title=plain(title), height=420, margin=MARGIN)
    figure.update_xaxes(title=plain(column_title))
    figure.update_yaxes(title="position i", autorange="reversed")
    return figure


def basis_curves(encoding: np.ndarray, columns: Sequence[int], title: str) -> go.Figure:
    """Chosen columns of the encoding as curves over the position (the textbook's Col 6 to 9)."""
    positions = np.arange(encoding.shape[0])
    figure = go.Figure()
    for j in columns:
        kind = "sin" if j % 2 == 0 else "cos"
        figure.add_trace(go.Scatter(x=positions, y=encoding[:, j], mode="lines", name=f"col {j} ({kind})"))
    figure.update_layout(title=plain(title), height=320, margin=MARGIN)
    figure.update_xaxes(title="position i")
    figure.update_yaxes(title="value", range=[-1.05, 1.05])
    return figure


def binary_table_figure(table: np.ndarray, labels: Sequence[str], presenting: bool = False) -> go.Figure:
    """Positions in binary, one bit per column, with the number written on each row.

    The most significant bit is drawn on the left, so each row's cells read as its label does.
    """
    n, d = table.shape
    drawn = table[:, ::-1]  # columns d-1 .. 0 of the table, left to right
    figure = go.Figure(
        go.Heatmap(
            z=drawn,
            x=list(range(d)),
            y=list(range(n)),
            colorscale=scale("sequential", presenting),
            zmin=0,
            zmax=1,
            showscale=False,
            text=drawn,
            texttemplate="%{text}",
            customdata=np.broadcast_to(np.arange(d)[::-1], (n, d)),
            hovertemplate="position %{y}, bit %{customdata}: %{z}<extra></extra>",
        )
    )
    figure.update_layout(title="Binary positions", height=80 + 32 * n, margin=MARGIN)
    figure.update_xaxes(
        title="bit j (value 2^j), most significant on the left",
        tickmode="array",
        tickvals=list(range(d)),
        ticktext=[f"bit {j} ({2**j})" for j in range(d - 1, -1, -1)],
    )
    figure.update_yaxes(
        title="position",
        autorange="reversed",
        **ticks([f"{i} = {s}" for i, s in enumerate(labels)], max_ticks=None),
    )
    return figure


def shift_figure(check: ShiftCheck) -> go.Figure:
    """p_(t+phi) by the formula and R(phi) p_t, dimension by dimension, and their difference."""
    dims = np.arange(check.direct.shape[0])
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.7, 0.3])
    figure.add_trace(
        go.Scatter(
            x=dims,
            y=check.direct,
            mode="markers",
            name=f"p_{check.t + check.phi}",
            marker={"size": 11, "symbol": "circle-open"},
        ),
        row=1,
        col=1,
    )
    figure.add_trace(
        go.Scatter(
            x=dims,
            y=check.rotated,
            mode="markers",
            name=f"R({check.phi}) p_{check.t}",
            marker={"size": 5},
        ),
        row=1,
        col=1,
    )
    gap = "float rounding" if check.only_rounding else "difference"
    # Noise of 1e-16 drawn in the palette's red reads as an error: rounding is drawn grey.
    colour = {"marker_color": "grey"} if check.only_rounding else {}
    figure.add_trace(go.Bar(x=dims, y=check.rotated - check.direct, name=gap, **colour), row=2, col=1)
    verdict = "equal up to float rounding" if check.only_rounding else "largest difference"
    figure.update_layout(
        title=f"Shift by φ = {check.phi}: {verdict} ({check.max_abs_difference:.1e})",
        height=420,
        margin=MARGIN,
    )
    figure.update_xaxes(title="encoding dimension", row=2, col=1)
    figure.update_yaxes(title="value", row=1, col=1)
    figure.update_yaxes(title=gap, row=2, col=1)
    return figure


def rotation_figure(rotation: np.ndarray, phi: int) -> go.Figure:
    """The block-diagonal rotation matrix R(phi)."""
    figure = encoding_heatmap(rotation, f"R({phi}): one 2 x 2 rotation per frequency", "column")
    figure.update_yaxes(title="row")
    return figure


def similarity_heatmap(similarity: np.ndarray, title: str, presenting: bool = False) -> go.Figure:
    """Position x position similarity; rows and columns are positions."""
    figure = go.Figure(
        go.Heatmap(
            z=_compact(similarity),
            x=list(range(similarity.shape[1])),
            y=list(range(similarity.shape[0])),
            colorscale=scale("sequential", presenting),
            hovertemplate="positions %{y} and %{x}: %{z:.3f}<extra></extra>",
        )
    )
    figure.update_layout(title=plain(title), height=420, margin=MARGIN)
    figure.update_xaxes(title="position")
    figure.update_yaxes(title="position", autorange="reversed", scaleanchor="x")
    return figure


def offset_curves(curves: Mapping[str, np.ndarray], title: str, y_title: str) -> go.Figure:
    """Similarity as a function of the distance between positions, one curve per encoding."""
    figure = go.Figure()
    for name, values in curves.items():
        figure.add_trace(go.Scatter(x=np.arange(len(values)), y=values, mode="lines", name=plain(name)))
    figure.update_layout(title=plain(title), height=320, margin=MARGIN)
    figure.update_xaxes(title="distance |i − k|")
    figure.update_yaxes(title=plain(y_title))
    return figure


def pca_figure(components: PrincipalComponents, title: str, presenting: bool = False) -> go.Figure:
    """Each position projected on the first two principal components, coloured by position."""
    positions = np.arange(components.scores.shape[0])
    ratio = components.explained_ratio
    figure = go.Figure(
        go.Scatter(
            x=components.scores[:, 0],
            y=components.scores[:, 1],
            mode="markers+lines",
            line={"width": 0.5, "color": "#cccccc"},
            marker={
                "color": positions,
                "colorscale": scale("sequential", presenting),
                "size": 5,
                "colorbar": {"title": "position"},
            },
            text=[f"position {i}" for i in positions],
            hovertemplate="%{text}<extra></extra>",
        )
    )
    figure.update_layout(title=plain(title), height=420, margin=MARGIN)
    figure.update_xaxes(title=f"PC 1 ({ratio[0]:.0%} of variance)")
    figure.update_yaxes(title=f"PC 2 ({ratio[1]:.0%} of variance)" if len(ratio) > 1 else "PC 2")
    return figure


def rope_frequencies_figure(frequency_sets: Mapping[str, np.ndarray]) -> go.Figure:
    """Angular frequency of each rotating pair, log scale."""
    figure = go.Figure()
    for name, values in frequency_sets.items():
        figure.add_trace(
            go.Scatter(x=np.arange(len(values)), y=values, mode="lines+markers", name=plain(name))
        )
    figure.update_layout(title="Frequencies θ^(−2j/d) of each rotating pair", height=320, margin=MARGIN)
    figure.update_xaxes(title="pair j")
    figure.update_yaxes(title="radians per position", type="log")
    return figure


def rope_offset_figure(check: RopeOffsetCheck) -> go.Figure:
    """q_m · k_n for every query and key position: constant along each diagonal."""
    figure = similarity_heatmap(check.scores, "Rotary q_m · k_n: constant along diagonals")
    figure.update_traces(colorscale=scale("diverging"), zmid=0.0)
    figure.update_xaxes(title="key position n")
    figure.update_yaxes(title="query position m")
    return figure


def added_vs_concatenated_figure(parts: AddedVsConcatenated, tokens: Sequence[str]) -> go.Figure:
    """The token-by-token similarity split into content, position and the cross terms."""
    titles = ["content X Xᵀ", "position P Pᵀ", "cross X Pᵀ + P Xᵀ (added only)"]
    figure = make_subplots(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.06)
    for col, matrix in enumerate([parts.content, parts.position, parts.cross], start=1):
        limit = float(np.abs(matrix).max()) or 1.0
        figure.add_trace(
            go.Heatmap(
                z=matrix,
                x=list(range(len(tokens))),
                y=list(range(len(tokens))),
                colorscale=scale("diverging"),
                zmin=-limit,
                zmax=limit,
                showscale=False,
                hovertemplate="query %{y}, key %{x}: %{z:.3f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        figure.update_xaxes(title="token", row=1, col=col, **ticks(tokens))
        figure.update_yaxes(autorange="reversed", row=1, col=col, **ticks(tokens))
    figure.update_yaxes(title="token", row=1, col=1)
    figure.update_layout(height=380, margin=MARGIN)
    return figure


def summary_figures(summary: EncodingSummary, presenting: bool = False) -> list[go.Figure]:
    """The matrix, its cosine similarity and its first two principal components."""
    n, d = summary.matrix.shape
    name = summary.name  # each builder escapes it (a model name the user may have typed)
    return [
        encoding_heatmap(summary.matrix, f"{name} ({n} x {d})"),
        similarity_heatmap(summary.cosine, f"{name}: cosine similarity", presenting),
        pca_figure(summary.components, f"{name}: first two principal components", presenting),
    ]


def shaw_offset_figure(offsets: np.ndarray, by_offset: np.ndarray, clip: int) -> go.Figure:
    """Shaw's bias against the offset j - i: flat past ±k, where every offset shares one vector."""
    figure = go.Figure(go.Scatter(x=offsets, y=by_offset, mode="lines+markers", name="q · a_clip(j−i) / √d"))
    for edge in (-clip, clip):
        figure.add_vline(x=edge, line_dash="dot", line_color="#888")
    figure.update_layout(
        title=f"Bias by offset j − i (clipped at ±{clip})",
        xaxis_title="offset j − i",
        yaxis_title="bias",
        height=360,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
    )
    return figure
