"""Figures of why a token was chosen: per-token measures, their rank agreement, the step's lens,
step scores along a generation, and a decoding step's source attribution beside cross-attention."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.explain.scores import SCORES, StepScores
from txviz.explain.seq2seq import SourceAttribution
from txviz.explain.step import StepLens
from txviz.figures.axes import margin, ticks, token_axis
from txviz.figures.colors import scale
from txviz.figures.counts import rank_axis
from txviz.figures.text import plain, plain_all

MARGIN = margin()
CURRENT = "#d62728"
STRIP_TITLE_FONT = 13  # px: the step-score rows' names


def _signed_share(values: np.ndarray) -> np.ndarray:
    """Each value over the sum of magnitudes: rows of different units side by side, signs kept."""
    values = np.asarray(values, dtype=np.float64)
    total = np.abs(values).sum()
    return values / total if total > 0 else values


def measures_heatmap(
    tokens: Sequence[str], measures: dict[str, np.ndarray], title: str, presenting: bool = False
) -> go.Figure:
    """One row per measure (attributions and attention) over the tokens read, each as a signed share."""
    names = list(measures)
    shares = np.stack([_signed_share(measures[n]) for n in names])  # (M, T)
    raw = np.stack([np.asarray(measures[n], dtype=np.float64) for n in names])
    bound = float(np.abs(shares).max()) or 1.0
    labels = np.array([plain_all(tokens)] * len(names), dtype=object)
    figure = go.Figure(
        go.Heatmap(
            z=shares,
            x=list(range(len(tokens))),
            y=list(range(len(names))),
            zmin=-bound,
            zmax=bound,
            colorscale=scale("diverging", presenting),
            colorbar={"title": "share"},
            customdata=np.dstack([labels, raw]),
            hovertemplate="%{customdata[0]}: share %{z:.3f}, value %{customdata[1]:.4g}<extra></extra>",
        )
    )
    figure.update_layout(title=plain(title), height=max(260, 34 * len(names) + 170), margin=MARGIN)
    figure.update_xaxes(**token_axis(tokens, "token read (prompt and earlier generated tokens)"))
    figure.update_yaxes(autorange="reversed", **ticks(names))
    return figure


def correlation_heatmap(names: Sequence[str], rho: np.ndarray, presenting: bool = False) -> go.Figure:
    """Spearman rank correlation between every pair of measures (magnitudes over the tokens)."""
    figure = go.Figure(
        go.Heatmap(
            z=rho,
            x=list(range(len(names))),
            y=list(range(len(names))),
            zmin=-1,
            zmax=1,
            colorscale=scale("diverging", presenting),
            colorbar={"title": "Spearman ρ"},
            text=np.round(rho, 2),
            texttemplate="%{text}",
            hovertemplate="ρ = %{z:.3f}<extra></extra>",
        )
    )
    figure.update_layout(title="Do they rank the tokens alike?", height=420, margin=MARGIN)
    figure.update_xaxes(**ticks(names))
    figure.update_yaxes(autorange="reversed", **ticks(names))
    return figure


def lens_figure(lens: StepLens, chosen_token: str) -> go.Figure:
    """Rank (log axis) and probability of the chosen token after every layer; hover: the top token."""
    layers = list(range(len(lens.rank)))
    tops = np.array(plain_all(lens.top_tokens), dtype=object)
    figure = make_subplots(specs=[[{"secondary_y": True}]])
    figure.add_trace(
        go.Scatter(
            x=layers,
            y=lens.rank + 1,
            name="rank of the chosen token",
            mode="lines+markers",
            customdata=np.stack([tops, lens.top_probs.astype(np.float64)], axis=-1),
            hovertemplate="after layer %{x}: rank %{y}<br>top token %{customdata[0]} "
            "(p = %{customdata[1]:.3f})<extra></extra>",
        ),
        secondary_y=False,
    )
    figure.add_trace(
        go.Scatter(
            x=layers,
            y=lens.probability,
            name="its probability",
            mode="lines",
            line={"dash": "dot"},
            hovertemplate="after layer %{x}: p = %{y:.4f}<extra></extra>",
        ),
        secondary_y=True,
    )
    figure.update_layout(
        title=f"Logit lens: when did {plain(repr(chosen_token))} become the choice?",
        height=380,
        margin=MARGIN,
        legend={"orientation": "h", "y": -0.25},
    )
    figure.update_xaxes(title="layer (0 = the embeddings)")
    figure.update_yaxes(**rank_axis(int(lens.rank.max()) + 1), secondary_y=False)
    # Its own ticks: an overlaying axis otherwise syncs them to the rank ticks (0.934, 0.715, ...).
    figure.update_yaxes(
        title="probability",
        range=[0, 1],
        tickmode="linear",
        tick0=0,
        dtick=0.2,
        showgrid=False,
        secondary_y=True,
    )
    return figure


def step_scores_strip(scores: StepScores, tokens: Sequence[str], current: int | None = None) -> go.Figure:
    """The four step scores along the generation, one row each, the generated tokens on the x axis."""
    # Each row named above it, left, at a readable size: upright y titles did not fit a row's height.
    figure = make_subplots(
        rows=len(SCORES),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.09,
        subplot_titles=list(SCORES.values()),
    )
    figure.update_annotations(x=0, xanchor="left", font={"size": STRIP_TITLE_FONT})
    steps = list(range(len(scores)))
    labels = np.array(plain_all(tokens), dtype=object)
    for row, (name, values) in enumerate(scores.items(), start=1):
        figure.add_trace(
            go.Scatter(
                x=steps,
                y=values,
                mode="lines+markers",
                name=SCORES[name],
                customdata=labels,
                hovertemplate=f"step %{{x}} %{{customdata}}: {SCORES[name]} %{{y:.3f}}<extra></extra>",
            ),
            row=row,
            col=1,
        )
        if current is not None:
            figure.add_vline(x=current, line_color=CURRENT, row=row, col=1)
    figure.update_layout(
        title="How sure the model was at every step", height=520, margin=MARGIN, showlegend=False
    )
    figure.update_xaxes(**ticks(tokens), row=len(SCORES), col=1)
    figure.update_xaxes(title="generated token (step)", row=len(SCORES), col=1)
    figure.update_yaxes(automargin=True, nticks=4)  # room for the tick labels; a few per short row
    return figure


def source_attribution_figure(attribution: SourceAttribution, method_label: str) -> go.Figure:
    """Attribution to each source token (share of magnitudes, signed) beside the step's cross-attention."""
    tokens = attribution.source_tokens
    x = list(range(len(tokens)))
    labels = np.array(plain_all(tokens), dtype=object)
    figure = go.Figure()
    for name, values, colour in (
        (method_label, _signed_share(attribution.attribution), "#4c78a8"),
        ("cross-attention, last layer mean", attribution.cross_attention, "#f2a541"),
    ):
        figure.add_trace(
            go.Bar(
                x=x,
                y=values,
                name=plain(name),
                marker_color=colour,
                customdata=labels,
                hovertemplate="%{customdata}: %{y:.3f}<extra></extra>",
            )  # fmt: skip
        )
    figure.update_layout(
        title=f"Step {attribution.step}: why {plain(attribution.target)}? Source tokens",
        barmode="group",
        height=380,
        margin=MARGIN,
        legend={"orientation": "h", "y": -0.3},
    )
    figure.update_xaxes(**token_axis(tokens, "source token"))
    figure.update_yaxes(title="share (attribution) / weight (attention)")
    return figure
