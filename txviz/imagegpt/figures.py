"""Figures of the pixel model: digits on their grid, the next pixel's distribution, heads on the image."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas  # noqa: F401 - finish plotly's lazy pandas import under this module's lock (see vision.figures)
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.colors import scale
from txviz.imagegpt.data import N_LEVELS, SIDE

GREYS = [[0.0, "black"], [1.0, "white"]]
UNDRAWN = "rgba(120, 160, 220, 0.35)"  # pixels not drawn yet: a pale blue, not black (black is level 0)


def _grid_axes(fig: go.Figure, rows: int, cols: int) -> None:
    for index in range(1, rows * cols + 1):
        suffix = "" if index == 1 else str(index)
        fig.layout[f"xaxis{suffix}"].update(visible=False, constrain="domain")
        fig.layout[f"yaxis{suffix}"].update(
            visible=False, autorange="reversed", scaleanchor=f"x{suffix}", constrain="domain"
        )


def _digit(pixels: np.ndarray, show_scale: bool = False) -> go.Heatmap:
    """One 8x8 image of grey levels; -1 (not drawn yet) left empty."""
    z = np.where(np.asarray(pixels) < 0, np.nan, pixels).astype(float)
    return go.Heatmap(
        z=z,
        zmin=0,
        zmax=N_LEVELS - 1,
        colorscale=GREYS,
        showscale=show_scale,
        hovertemplate="row %{y}, column %{x}<br>grey level %{z}<extra></extra>",
    )


def digits_row(
    images: Sequence[np.ndarray], titles: Sequence[str], title: str = "", height: int = 300
) -> go.Figure:
    """Several digits side by side (the completion figure's layout); titles are our own text."""
    fig = make_subplots(rows=1, cols=len(images), subplot_titles=list(titles), horizontal_spacing=0.03)
    for col, image in enumerate(images, start=1):
        fig.add_trace(_digit(image), row=1, col=col)
        fig.layout[f"xaxis{'' if col == 1 else col}"].update(range=[-0.5, SIDE - 0.5])
    _grid_axes(fig, 1, len(images))
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=70, b=10), plot_bgcolor=UNDRAWN)
    return fig


def canvas_figure(pixels: np.ndarray, current: int | None, title: str) -> go.Figure:
    """The image so far, the pixel being drawn outlined in red."""
    fig = go.Figure(_digit(pixels, show_scale=True))
    if current is not None:
        row, col = divmod(current, SIDE)
        fig.add_shape(
            type="rect",
            x0=col - 0.5,
            x1=col + 0.5,
            y0=row - 0.5,
            y1=row + 0.5,
            line=dict(color="red", width=3),
        )
    fig.update_xaxes(visible=False, range=[-0.5, SIDE - 0.5], constrain="domain")
    fig.update_yaxes(visible=False, autorange="reversed", scaleanchor="x", constrain="domain")
    fig.update_layout(title=title, height=380, margin=dict(l=10, r=10, t=50, b=10), plot_bgcolor=UNDRAWN)
    return fig


def distribution_figure(before: np.ndarray, after: np.ndarray, chosen: int, title: str) -> go.Figure:
    """The model's distribution over the 17 grey levels and the one sampled from, the choice marked."""
    levels = list(range(N_LEVELS))
    fig = go.Figure(
        [
            go.Bar(x=levels, y=before, name="model", marker_color="#9ab"),
            go.Bar(x=levels, y=after, name="sampled from", marker_color="#1f77b4"),
        ]
    )
    fig.add_annotation(
        x=chosen, y=float(max(before[chosen], after[chosen])), text="drawn", showarrow=True, arrowhead=2
    )
    fig.update_layout(
        title=title,
        barmode="group",
        height=380,
        xaxis=dict(title="grey level (0 black, 16 white)", dtick=1),
        yaxis=dict(title="probability", range=[0, 1.05]),
        margin=dict(l=10, r=10, t=50, b=10),
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def heads_on_image(attention: np.ndarray, current: int, title: str, presenting: bool = False) -> go.Figure:
    """Every head's attention from the pixel being drawn to earlier pixels, laid on the 8x8 grid.

    attention: (layer, head, 1 + current), key 0 the class token; the class token's share goes in each
    panel's title because it has no place on the image.
    """
    n_layers, n_heads, _ = attention.shape
    titles = [f"L{a} H{h} · class {attention[a, h, 0]:.2f}" for a in range(n_layers) for h in range(n_heads)]
    fig = make_subplots(
        rows=n_layers, cols=n_heads, subplot_titles=titles, horizontal_spacing=0.02, vertical_spacing=0.06
    )
    row_of, col_of = divmod(current, SIDE)
    # One colour scale for all panels, up to the largest weight on a pixel: diffuse heads stay readable.
    top = float(attention[:, :, 1:].max()) if current else 1.0
    for layer in range(n_layers):
        for head in range(n_heads):
            grid = np.full(SIDE * SIDE, np.nan)
            grid[:current] = attention[layer, head, 1:]
            fig.add_trace(
                go.Heatmap(
                    z=grid.reshape(SIDE, SIDE),
                    zmin=0,
                    zmax=max(top, 1e-6),
                    colorscale=scale("sequential", presenting),
                    showscale=layer == 0 and head == 0,
                    colorbar=dict(title="weight", len=0.5),
                    hovertemplate="row %{y}, column %{x}<br>weight %{z:.3f}<extra></extra>",
                ),
                row=layer + 1,
                col=head + 1,
            )
            fig.add_shape(
                type="rect",
                x0=col_of - 0.5,
                x1=col_of + 0.5,
                y0=row_of - 0.5,
                y1=row_of + 0.5,
                line=dict(color="red", width=2),
                row=layer + 1,
                col=head + 1,
            )
    _grid_axes(fig, n_layers, n_heads)
    for index in range(1, n_layers * n_heads + 1):
        fig.layout[f"xaxis{'' if index == 1 else index}"].update(range=[-0.5, SIDE - 0.5])
    fig.update_annotations(font_size=11)
    fig.update_layout(
        title=title, height=190 * n_layers + 60, margin=dict(l=10, r=10, t=70, b=10), plot_bgcolor=UNDRAWN
    )
    return fig


def bits_figure(meta: dict) -> go.Figure:
    """Held-out bits per pixel: the model against the two baselines measured in the same run."""
    rows = [
        ("each pixel's marginal at its position", meta["baseline_marginal_bits_per_pixel"]),
        ("previous pixel only", meta["baseline_previous_pixel_bits_per_pixel"]),
        ("digits-imagegpt, any digit", meta["heldout_bits_per_pixel"]),
        ("digits-imagegpt, told the digit", meta["heldout_bits_per_pixel_given_class"]),
    ]
    fig = go.Figure(
        go.Bar(
            x=[v for _, v in rows],
            y=[n for n, _ in rows],
            orientation="h",
            text=[f"{v:.3f}" for _, v in rows],
            textposition="auto",
            marker_color=["#bbb", "#bbb", "#1f77b4", "#1f77b4"],
        )
    )
    fig.update_layout(
        title=f"Held-out bits per pixel ({meta.get('heldout_images', '?')} digits never trained on; lower is better)",
        height=280,
        xaxis=dict(title="bits per pixel (log2 of 17 = 4.09 for a uniform guess)"),
        margin=dict(l=10, r=10, t=50, b=10),
    )
    return fig
