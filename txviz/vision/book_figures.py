"""Figures of ViT-Base's input as the books draw it: the cut photograph, one patch flattened and
projected, and z0. They take no user text: the labels are fixed and the photo is a shipped one."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.axes import margin, ticks
from txviz.vision.book import Embedded
from txviz.vision.figures import outline_patch, patch_grid_figure

CHANNELS = (("R", "#d62728"), ("G", "#2ca02c"), ("B", "#1f77b4"))


def cut_figure(embedded: Embedded, chosen: int) -> go.Figure:
    """The 224 px photo with its 14 x 14 grid of 16 px patches and the chosen patch outlined."""
    grid = embedded.grid
    fig = patch_grid_figure(embedded.image, grid, label_patches=False)
    outline_patch(fig, grid, chosen, "yellow")
    fig.update_layout(
        title=f"{grid.image_height} x {grid.image_width} px: {grid.rows} x {grid.cols} = {grid.n_patches} "
        f"patches of {grid.patch_height} x {grid.patch_width} px; patch {chosen} outlined"
    )
    return fig


def patch_figure(embedded: Embedded, chosen: int) -> go.Figure:
    """The chosen patch, enlarged: 16 x 16 pixels of 3 colours each."""
    grid = embedded.grid
    row, col = grid.position(chosen)
    ph, pw = grid.patch_height, grid.patch_width
    tile = embedded.image[row * ph : (row + 1) * ph, col * pw : (col + 1) * pw]
    fig = go.Figure(go.Image(z=tile, hovertemplate="pixel row %{y}, column %{x}<extra></extra>"))
    fig.update_layout(
        title=f"Patch {chosen} (row {row}, column {col}): {ph} x {pw} px x 3 colours",
        height=420,
        margin=margin(),
    )
    fig.update_xaxes(showgrid=False, zeroline=False, title="pixel column")
    fig.update_yaxes(showgrid=False, zeroline=False, title="pixel row", scaleanchor="x")
    return fig


def flatten_figure(embedded: Embedded, chosen: int) -> go.Figure:
    """The chosen patch's 768 numbers, x_p E, its position embedding and the z0 row they sum to."""
    pixels = embedded.pixels[chosen]
    token = chosen + 1  # [CLASS] is position 0
    d = embedded.projected.shape[1]
    fig = make_subplots(
        rows=3,
        cols=1,
        vertical_spacing=0.2,
        subplot_titles=(
            f"x_p: the patch flattened, {len(pixels)} = 16 x 16 x 3 values, row by row, R G B per pixel",
            f"x_p E: projected to D = {d} (E random, seed {embedded.seed}: not ViT-Base's trained E)",
            f"+ E_pos of position {token} (sinusoid) = row {token} of z0",
        ),
    )
    index = np.arange(len(pixels))
    pixel, channel = np.divmod(index, 3)
    for c, (name, colour) in enumerate(CHANNELS):
        picked = channel == c
        fig.add_trace(
            go.Scattergl(
                x=index[picked],
                y=pixels[picked],
                mode="markers",
                marker={"size": 3, "color": colour},
                name=f"{name} channel",
                customdata=np.stack(np.divmod(pixel[picked], 16), axis=1),
                hovertemplate="value %{x}: pixel (%{customdata[0]}, %{customdata[1]}), "
                + name
                + " = %{y:.2f}<extra></extra>",
            ),
            row=1,
            col=1,
        )
    dims = np.arange(d)
    fig.add_trace(
        go.Scattergl(x=dims, y=embedded.projected[chosen], mode="lines", name="x_p E"), row=2, col=1
    )
    fig.add_trace(
        go.Scattergl(x=dims, y=embedded.positions[token], mode="lines", name="E_pos", line={"color": "grey"}),
        row=3,
        col=1,
    )
    fig.add_trace(
        go.Scattergl(x=dims, y=embedded.z0[token], mode="lines", name="z0 row", line={"color": "black"}),
        row=3,
        col=1,
    )
    fig.update_xaxes(title_text="index in the flattened patch (0 to 767)", row=1, col=1)
    fig.update_xaxes(title_text="dimension of D", row=2, col=1)
    fig.update_xaxes(title_text="dimension of D", row=3, col=1)
    fig.update_yaxes(title_text="pixel in [-1, 1]", row=1, col=1)
    fig.update_layout(height=720, margin=margin(top=60), legend={"orientation": "h", "y": -0.12})
    return fig


def sequence_figure(embedded: Embedded) -> go.Figure:
    """z0 as a heatmap: [CLASS] then the 196 patch tokens, one row each, D columns."""
    labels = list(embedded.grid.token_labels())
    fig = go.Figure(
        go.Heatmap(
            z=embedded.z0,
            colorscale="RdBu",
            zmid=0,
            hovertemplate="token %{y}, dimension %{x}: %{z:.2f}<extra></extra>",
            colorbar={"title": "value"},
        )
    )
    n, d = embedded.z0.shape
    fig.update_layout(
        title=f"z0, the encoder's input: {n} tokens ([CLASS] + {n - 1} patches) x D = {d}",
        height=520,
        margin=margin(top=50),
    )
    fig.update_yaxes(autorange="reversed", title="token", **ticks(labels, max_ticks=20))
    fig.update_xaxes(title="dimension of D")
    return fig
