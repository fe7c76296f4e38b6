"""Figures of the entailment page: alignment heatmaps with words on the axes, vectors, probabilities."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from txviz.entailment.model import LABELS
from txviz.figures.axes import PAGE_WIDTH, plot_length, ticks
from txviz.figures.colors import scale
from txviz.figures.text import plain

LABEL_COLORS = {"entailment": "#2ca02c", "neutral": "#7f7f7f", "contradiction": "#d62728"}


def _axis(words: tuple[str, ...], title: str, length: float, vertical: bool = False) -> dict:
    """Positions as values, words as tick text: repeated words stay apart; laid out for ``length`` px."""
    return dict(title=title, **ticks(words, length=length, vertical=vertical))


def word_heatmap(
    matrix: np.ndarray,
    premise: tuple[str, ...],
    hypothesis: tuple[str, ...],
    title: str,
    value_name: str,
    midpoint: bool = False,
    presenting: bool = False,
) -> go.Figure:
    """Premise words down the rows (i), hypothesis words across the columns (j)."""
    hover = [
        [f"a_{i + 1} = {plain(p)}, b_{j + 1} = {plain(h)}" for j, h in enumerate(hypothesis)]
        for i, p in enumerate(premise)
    ]
    heat = go.Heatmap(
        z=matrix,
        text=hover,
        colorscale=scale("diverging") if midpoint else scale("sequential", presenting),
        zmid=0 if midpoint else None,
        colorbar=dict(title=value_name),
        hovertemplate="%{text}<br>" + value_name + " %{z:.3f}<extra></extra>",
    )
    figure = go.Figure(heat)
    height = max(320, 160 + 26 * len(premise))  # a row a word, beside the title and the words under it
    across = plot_length(PAGE_WIDTH / 2)  # the page shows these maps two a row
    figure.update_layout(
        title=plain(title),
        xaxis=_axis(hypothesis, "hypothesis word b_j", across),
        yaxis={
            **_axis(premise, "premise word a_i", plot_length(height, reserved=120), True),
            "autorange": "reversed",
        },
        height=height,
        margin=dict(t=50, l=10, r=10, b=10),
    )
    return figure


def vectors_heatmap(
    vectors: np.ndarray, words: tuple[str, ...], title: str, prefix: str, presenting: bool = False
) -> go.Figure:
    """Compare vectors (one row per word) or the two aggregated sums."""
    figure = go.Figure(
        go.Heatmap(
            z=vectors,
            colorscale=scale("sequential", presenting),
            colorbar=dict(title="value"),
            hovertemplate=prefix + " row %{y}, unit %{x}: %{z:.3f}<extra></extra>",
        )
    )
    height = max(220, 100 + 26 * len(words))  # a row a word, beside the title and the axis under it
    figure.update_layout(
        title=plain(title),
        xaxis_title="hidden unit",
        yaxis={**_axis(words, "", plot_length(height, reserved=100), True), "autorange": "reversed"},
        height=height,
        margin=dict(t=50, l=10, r=10, b=10),
    )
    return figure


def probabilities(rows: dict[str, np.ndarray]) -> go.Figure:
    """Class probabilities of each model, grouped by class."""
    figure = go.Figure(
        [
            go.Bar(
                x=list(LABELS),
                y=values,
                name=name,
                text=[f"{v:.2f}" for v in values],
                textposition="outside",
            )
            for name, values in rows.items()
        ]
    )
    figure.update_layout(
        barmode="group",
        title="y = softmax(h([v_A, v_B])): class probabilities",
        yaxis=dict(range=[0, 1.1], title="probability"),
        height=340,
        margin=dict(t=50, l=10, r=10, b=10),
    )
    return figure


def sums(sum_a: np.ndarray, sum_b: np.ndarray) -> go.Figure:
    """The aggregated vectors v_A and v_B, unit by unit."""
    units = list(range(len(sum_a)))
    figure = go.Figure(
        [go.Bar(x=units, y=sum_a, name="v_A = Σ_i v_A,i"), go.Bar(x=units, y=sum_b, name="v_B = Σ_j v_B,j")]
    )
    figure.update_layout(
        barmode="group",
        title="Aggregated sums",
        xaxis_title="hidden unit",
        height=320,
        margin=dict(t=50, l=10, r=10, b=10),
    )
    return figure
