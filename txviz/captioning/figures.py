"""Figures of the captioners: the canvas with its patch grid, and per word where soft and hard attention look."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas  # noqa: F401 - finish plotly's lazy pandas import under this module's lock (see vision.figures)
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.captioning.canvas import GRID, PATCH, SIZE
from txviz.figures.text import plain

GREYS = [[0.0, "black"], [1.0, "white"]]
ATTENTION = [[0.0, "rgba(255, 80, 0, 0)"], [1.0, "rgba(255, 80, 0, 0.85)"]]  # transparent to orange


def _canvas(pixels: np.ndarray) -> go.Heatmap:
    return go.Heatmap(
        z=pixels,
        zmin=0,
        zmax=16,
        colorscale=GREYS,
        showscale=False,
        hovertemplate="x %{x}, y %{y}<br>grey %{z:.0f}<extra></extra>",
    )


def _overlay(weights: np.ndarray) -> go.Heatmap:
    top = float(weights.max()) or 1.0
    return go.Heatmap(
        z=weights.reshape(GRID, GRID),
        x0=(PATCH - 1) / 2,
        dx=PATCH,
        y0=(PATCH - 1) / 2,
        dy=PATCH,
        zmin=0,
        zmax=top,
        colorscale=ATTENTION,
        showscale=False,
        hovertemplate="patch row %{y:.0f}, column %{x:.0f}<br>weight %{z:.3f}<extra></extra>",
    )


def _square(fig: go.Figure, rows: int, cols: int) -> None:
    for index in range(1, rows * cols + 1):
        suffix = "" if index == 1 else str(index)
        fig.layout[f"xaxis{suffix}"].update(visible=False, range=[-0.5, SIZE - 0.5], constrain="domain")
        fig.layout[f"yaxis{suffix}"].update(
            visible=False, range=[SIZE - 0.5, -0.5], scaleanchor=f"x{suffix}", constrain="domain"
        )


def canvas_figure(pixels: np.ndarray, title: str) -> go.Figure:
    """The 32 x 32 canvas with the 8 x 8 grid of 4 x 4 patches the captioners attend over."""
    fig = go.Figure(_canvas(pixels))
    for i in range(GRID + 1):
        edge = i * PATCH - 0.5
        fig.add_shape(
            type="line",
            x0=edge,
            x1=edge,
            y0=-0.5,
            y1=SIZE - 0.5,
            line=dict(color="rgba(0,200,255,0.35)", width=1),
        )
        fig.add_shape(
            type="line",
            y0=edge,
            y1=edge,
            x0=-0.5,
            x1=SIZE - 0.5,
            line=dict(color="rgba(0,200,255,0.35)", width=1),
        )
    _square(fig, 1, 1)
    fig.update_layout(title=title, height=360, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def word_attention_figure(
    pixels: np.ndarray,
    rows: Sequence[tuple[str, Sequence[str], np.ndarray, np.ndarray | None]],
    title: str,
) -> go.Figure:
    """One row per model, one panel per word written: the canvas with the attention while writing it.

    rows: (model name, words, weights (T, 64), chosen patch per word or None); a chosen patch is outlined.
    """
    n_cols = max(len(words) for _, words, _, _ in rows)
    titles = []
    for name, words, _, _ in rows:
        titles += [f"{name}: {plain(w)}" for w in words] + [""] * (n_cols - len(words))
    fig = make_subplots(
        rows=len(rows), cols=n_cols, subplot_titles=titles, horizontal_spacing=0.02, vertical_spacing=0.1
    )
    for r, (_, words, weights, chosen) in enumerate(rows, start=1):
        for c in range(1, len(words) + 1):
            fig.add_trace(_canvas(pixels), row=r, col=c)
            fig.add_trace(_overlay(weights[c - 1]), row=r, col=c)
            if chosen is not None:
                top, left = divmod(int(chosen[c - 1]), GRID)
                fig.add_shape(
                    type="rect",
                    x0=left * PATCH - 0.5,
                    x1=left * PATCH + PATCH - 0.5,
                    y0=top * PATCH - 0.5,
                    y1=top * PATCH + PATCH - 0.5,
                    line=dict(color="red", width=2),
                    row=r,
                    col=c,
                )
    _square(fig, len(rows), n_cols)
    fig.update_annotations(font_size=13)
    fig.update_layout(title=title, height=250 * len(rows) + 70, margin=dict(l=10, r=10, t=80, b=10))
    return fig


def scores_figure(runs: dict) -> go.Figure:
    """Held-out exact captions, words and localisation for each captioner, as grouped bars."""
    measures = [
        ("exact_caption_accuracy", "exact caption"),
        ("word_accuracy", "words"),
        ("localisation", "localisation"),
    ]
    fig = go.Figure(
        [
            go.Bar(
                name=name,
                x=[label for _, label in measures],
                y=[run[key] for key, _ in measures],
                text=[f"{run[key]:.1%}" for key, _ in measures],
                textposition="auto",
            )
            for name, run in runs.items()
        ]
    )
    fig.update_layout(
        title="Held-out canvases: how often each captioner is right, and looks at the right digit",
        barmode="group",
        height=320,
        yaxis=dict(range=[0, 1.05], tickformat=".0%"),
        margin=dict(l=10, r=10, t=50, b=10),
    )
    return fig
