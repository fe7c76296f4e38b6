"""Figures for vision transformers: patch grid, patch sequence, attention overlays, head stats."""

from __future__ import annotations

import numpy as np

# plotly imports pandas lazily from whichever script thread first needs it; a rerun thread can
# then meet a half-imported pandas ("has no attribute 'Series'"). Importing it here, under the
# import lock of this module, finishes it before any figure is built.
import pandas  # noqa: F401
import plotly.colors as px_colors
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.axes import TICK_FONT, margin, ticks
from txviz.figures.colors import PALETTE, TEXT, scale, text_on
from txviz.figures.text import plain, plain_all
from txviz.vision.curves import Curves
from txviz.vision.patches import PatchGrid, threshold_mask

MAX_SEQUENCE_PATCHES = 1024  # a longer strip is shown up to here, with a note in the title
SEQUENCE_PER_LINE = 50  # tokens per line of the sequence strip before it wraps
BAR_COLOUR = "#3e4989"  # white text on it: 9.3:1
INSIDE_LABEL = 0.2  # a probability bar this long or longer holds its label
HEAD_COLOURS = px_colors.qualitative.Dark24  # one colour per head, the same in both panels


def _image_layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    """Square pixels, y downwards, no zoom margin."""
    fig.update_layout(title=plain(title), height=height, margin=margin())
    fig.update_xaxes(showgrid=False, zeroline=False, visible=False)
    fig.update_yaxes(showgrid=False, zeroline=False, visible=False, scaleanchor="x")
    return fig


def _index_heatmap(grid: PatchGrid, opacity: float = 0.0) -> go.Heatmap:
    """An invisible heatmap of patch indices, one cell per patch, so hovering names the patch."""
    index = np.arange(grid.n_patches).reshape(grid.rows, grid.cols)  # (rows, cols)
    rows, cols = np.divmod(index, grid.cols)
    return go.Heatmap(
        z=index,
        x0=(grid.patch_width - 1) / 2,
        dx=grid.patch_width,
        y0=(grid.patch_height - 1) / 2,
        dy=grid.patch_height,
        customdata=np.stack([rows, cols], axis=-1),
        hovertemplate="patch %{z}<br>row %{customdata[0]}, column %{customdata[1]}<extra></extra>",
        showscale=False,
        opacity=opacity,
        colorscale=[[0, "rgba(0,0,0,0)"], [1, "rgba(0,0,0,0)"]],
        name="patches",
    )


def patch_grid_figure(image: np.ndarray, grid: PatchGrid, label_patches: bool = True) -> go.Figure:
    """The model's input image (H, W, 3) uint8 with the patch grid drawn and patches numbered."""
    fig = go.Figure(go.Image(z=image, hoverinfo="skip", name="image"))
    fig.add_trace(_index_heatmap(grid))
    height, width = grid.rows * grid.patch_height, grid.cols * grid.patch_width
    for row in range(grid.rows + 1):
        y = row * grid.patch_height - 0.5
        fig.add_shape(type="line", x0=-0.5, x1=width - 0.5, y0=y, y1=y, line=dict(color="cyan"))
    for col in range(grid.cols + 1):
        x = col * grid.patch_width - 0.5
        fig.add_shape(type="line", x0=x, x1=x, y0=-0.5, y1=height - 0.5, line=dict(color="cyan"))
    if label_patches and grid.n_patches <= 256:
        centres = grid.patch_centres() - 0.5  # pixel centres sit on integer coordinates
        fig.add_trace(
            go.Scatter(
                x=centres[:, 1],
                y=centres[:, 0],
                mode="text",
                text=[str(k) for k in range(grid.n_patches)],
                # black or white by each patch's own colour: one colour was unreadable on light patches
                textfont=dict(color=patch_text_colours(image, grid), size=10 if grid.n_patches <= 100 else 7),
                hoverinfo="skip",
                name="patch index",
            )
        )
    title = (
        f"{grid.rows} x {grid.cols} patches of {grid.patch_height} x {grid.patch_width} px "
        f"on the {grid.image_height} x {grid.image_width} px input"
    )
    return _image_layout(fig, title)


def patch_tiles(image: np.ndarray, grid: PatchGrid) -> np.ndarray:
    """(n_patches, patch_h, patch_w, 3) crops of image (H, W, 3) in raster order."""
    ph, pw = grid.patch_height, grid.patch_width
    cropped = image[: grid.rows * ph, : grid.cols * pw]
    tiles = cropped.reshape(grid.rows, ph, grid.cols, pw, -1).swapaxes(1, 2)
    return tiles.reshape(grid.n_patches, ph, pw, -1)


def patch_sequence_figure(image: np.ndarray, grid: PatchGrid, per_line: int = SEQUENCE_PER_LINE) -> go.Figure:
    """The patches as the 1-D sequence the model reads: prefix tokens ([CLS]) first, raster order.

    Long sequences wrap every ``per_line`` tokens, like text, so tiles stay visible.
    """
    tiles = patch_tiles(image, grid)[:MAX_SEQUENCE_PATCHES]  # (P, ph, pw, 3)
    ph, pw = grid.patch_height, grid.patch_width
    gap = max(1, pw // 4)
    n_slots = grid.n_prefix + len(tiles)
    n_lines = -(-n_slots // per_line)
    width = min(n_slots, per_line) * (pw + gap)
    strip = np.full((n_lines * (ph + 2 * gap), width, 3), 255, dtype=np.uint8)
    prefix_tile = np.full((ph, pw, 3), 90, dtype=np.uint8)  # learned tokens: no pixels of their own
    line, column = np.divmod(np.arange(n_slots), per_line)
    for slot in range(n_slots):
        x, y = column[slot] * (pw + gap), line[slot] * (ph + 2 * gap)
        tile = prefix_tile if slot < grid.n_prefix else tiles[slot - grid.n_prefix]
        strip[y : y + ph, x : x + pw] = tile
    x_centres = column * (pw + gap) + (pw - 1) / 2
    y_centres = line * (ph + 2 * gap) + (ph - 1) / 2
    labels = list(grid.prefix_tokens) + [str(k) for k in range(len(tiles))]  # escaped by ticks()
    fig = go.Figure(go.Image(z=strip, hoverinfo="skip", name="sequence"))
    fig.add_trace(
        go.Scatter(
            x=x_centres,
            y=y_centres,
            mode="markers",
            marker=dict(size=max(6, pw), opacity=0),
            text=[f"position {i}: {label}" for i, label in enumerate(plain_all(labels))],
            hoverinfo="text",
            name="tokens",
        )
    )
    shown = "" if len(tiles) == grid.n_patches else f" (first {len(tiles)} of {grid.n_patches})"
    wrapped = f", wrapped every {per_line}" if n_lines > 1 else ""
    fig.update_layout(
        title=f"The sequence the model reads: {n_slots} tokens in raster order{shown}{wrapped}",
        height=160 + 60 * n_lines,
        margin=margin(bottom=40),
    )
    first_line = list(range(min(n_slots, per_line)))
    step = max(1, len(first_line) // 20) if n_lines > 1 else 1
    shown = first_line[::step]
    fig.update_xaxes(
        title="sequence position" + (" (first line)" if n_lines > 1 else ""),
        showgrid=False,
        zeroline=False,
        **ticks([labels[i] for i in shown], [x_centres[i] for i in shown], max_ticks=None),
    )
    fig.update_yaxes(
        visible=n_lines > 1,
        showgrid=False,
        zeroline=False,
        scaleanchor="x",
        **ticks(
            [f"from {i * per_line}" for i in range(n_lines)],
            [y_centres[i * per_line] for i in range(n_lines)],
        ),
    )
    return fig


def attention_overlay_figure(
    image: np.ndarray,
    grid_values: np.ndarray,
    grid: PatchGrid,
    opacity: float = 0.6,
    threshold: float = 0.0,
    title: str = "Attention on the image",
    marked_patch: int | None = None,
    presenting: bool = False,
) -> go.Figure:
    """Image (H, W, 3) under a per-patch heatmap (rows, cols); cells under threshold x max hidden."""
    shown = threshold_mask(np.asarray(grid_values, dtype=np.float64), threshold)
    rows, cols = np.divmod(np.arange(grid.n_patches).reshape(grid.rows, grid.cols), grid.cols)
    fig = go.Figure(go.Image(z=image, hoverinfo="skip", name="image"))
    fig.add_trace(
        go.Heatmap(
            z=shown,
            x0=(grid.patch_width - 1) / 2,
            dx=grid.patch_width,
            y0=(grid.patch_height - 1) / 2,
            dy=grid.patch_height,
            customdata=np.stack([rows * grid.cols + cols, rows, cols], axis=-1),
            hovertemplate=(
                "patch %{customdata[0]} (row %{customdata[1]}, column %{customdata[2]})"
                "<br>weight %{z:.4f}<extra></extra>"
            ),
            colorscale=scale("sequential", presenting),
            zmin=0,
            zmax=float(np.nanmax(grid_values)) if np.size(grid_values) else 1.0,
            opacity=opacity,
            colorbar=dict(title="weight"),
            name="attention",
        )
    )
    if marked_patch is not None:
        outline_patch(fig, grid, marked_patch, "cyan")
    return _image_layout(fig, title)


def patch_text_colours(image: np.ndarray, grid: PatchGrid) -> list[str]:
    """For each patch, black or white, whichever contrasts more with the patch's mean colour (WCAG)."""
    tiles = patch_tiles(image[..., :3] if image.ndim == 3 else np.repeat(image[..., None], 3, -1), grid)
    means = tiles.reshape(grid.n_patches, -1, tiles.shape[-1]).mean(1)
    return [text_on(tuple(int(round(c)) for c in mean[:3])) for mean in means]


def probability_bars_figure(labels: list[str], probabilities: np.ndarray, top_k: int = 10) -> go.Figure:
    """Horizontal bars of the top_k class probabilities, most likely on top."""
    order = np.argsort(probabilities)[::-1][:top_k]
    fig = go.Figure(
        go.Bar(
            x=probabilities[order],
            y=list(range(len(order))),
            orientation="h",
            text=[f"{probabilities[i]:.1%}" for i in order],
            # a short bar's label goes beside it (inside it plotly shrank or dropped it), dark on white
            textposition=["inside" if probabilities[i] >= INSIDE_LABEL else "outside" for i in order],
            insidetextanchor="end",
            constraintext="none",  # the label keeps its size inside a thin bar
            insidetextfont={"color": "#ffffff"},
            outsidetextfont={"color": TEXT},
            textfont={"size": TICK_FONT},
            cliponaxis=False,
            marker={"color": BAR_COLOUR},
            hovertemplate="%{customdata}: %{x:.4f}<extra></extra>",
            customdata=[plain(labels[i]) for i in order],
            name="probability",
        )
    )
    fig.update_layout(title="Class probabilities", height=120 + 28 * len(order))
    fig.update_xaxes(title="probability", range=[0, 1])
    fig.update_yaxes(title="class", autorange="reversed", **ticks([labels[i] for i in order]))
    return fig


def head_statistics_figure(entropy: np.ndarray, distance: np.ndarray) -> go.Figure:
    """Per-head mean attention distance (px) and entropy (nats) against layer: (L, H) each."""
    n_layers, n_heads = entropy.shape
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("Mean attention distance (pixels)", "Attention entropy (nats)"),
    )
    for head in range(n_heads):
        layers = np.arange(n_layers)
        hover = [f"layer {layer}, head {head}" for layer in layers]
        for col, values, unit in ((1, distance, "px"), (2, entropy, "nats")):
            fig.add_trace(
                go.Scatter(
                    x=layers,
                    y=values[:, head],
                    mode="markers",
                    marker=dict(color=HEAD_COLOURS[head % len(HEAD_COLOURS)], size=9),
                    name=f"head {head}",
                    legendgroup=f"head {head}",
                    showlegend=col == 1,
                    text=hover,
                    hovertemplate=f"%{{text}}: %{{y:.2f}} {unit}<extra></extra>",
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(title="layer", tickvals=list(range(n_layers)))
    fig.update_yaxes(title="pixels", row=1, col=1)
    fig.update_yaxes(title="nats", row=1, col=2)
    fig.update_layout(height=380, title="Heads that look locally (small) or globally (large)")
    return fig


def learning_curves_figure(curves: Curves) -> go.Figure:
    """Held-out accuracy against training images (log axis): each model, then the baselines, dashed.

    The accuracy axis is zoomed to the lines drawn; the most-common-digit baseline (about 10%) would
    flatten them, so it is written under the title instead of drawn.
    """
    fig = go.Figure()
    lines = [(name, values, "solid") for name, values in curves.accuracy.items()]
    names = {"pixel_logistic_regression": "logistic regression on the 8x8 pixels"}
    drawn = {name: values for name, values in curves.baselines.items() if name != "majority"}
    lines += [(names.get(name, name), values, "dash") for name, values in drawn.items()]
    for i, (name, values, dash) in enumerate(lines):
        fig.add_trace(
            go.Scatter(
                x=list(curves.sizes),
                y=100 * np.asarray(values),
                name=plain(name),
                mode="lines+markers",
                line={"dash": dash, "color": PALETTE[i % len(PALETTE)]},
                hovertemplate="%{x} images: %{y:.1f}%<extra>" + plain(name) + "</extra>",
            )
        )
    shown = 100 * np.concatenate([np.asarray(values, dtype=float) for _, values, _ in lines])
    low, high = max(0.0, 5 * np.floor(shown.min() / 5 - 0.2)), min(100.0, 5 * np.ceil(shown.max() / 5 + 0.2))
    title = f"Held-out accuracy ({curves.heldout_images} images) against the training images used"
    if "majority" in curves.baselines:
        majority = 100 * max(curves.baselines["majority"])
        title += f"<br><sup>most common digit: at most {majority:.0f}%, below the axis</sup>"
    fig.update_layout(
        title=title,
        xaxis={"type": "log", "title": "training images", "tickvals": list(curves.sizes)},
        yaxis={"title": "held-out accuracy (%)", "range": [low, high]},
        margin=margin(top=60),
        height=420,
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def outline_patch(fig: go.Figure, grid, patch: int, colour: str) -> None:
    """A rectangle around one patch of the grid, in the image's pixel coordinates."""
    row, col = grid.position(patch)
    fig.add_shape(
        type="rect",
        x0=col * grid.patch_width - 0.5,
        x1=(col + 1) * grid.patch_width - 0.5,
        y0=row * grid.patch_height - 0.5,
        y1=(row + 1) * grid.patch_height - 0.5,
        line={"color": colour, "width": 3},
    )
