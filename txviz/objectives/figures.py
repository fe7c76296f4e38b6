"""Figures of the two training objectives: a loss term at every position, or at the masked ones only."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from txviz.figures.axes import margin, ticks
from txviz.figures.colors import PALETTE, scale
from txviz.figures.text import plain
from txviz.objectives.causal import NextTokenObjective
from txviz.objectives.encoder_tasks import Reading
from txviz.objectives.masked import MaskedPrediction

LOSS_COLOUR, NO_LOSS_COLOUR = "#d62728", "#c7c7c7"


def _layout(figure: go.Figure, title: str, labels: list[str]) -> go.Figure:
    figure.update_layout(
        title=title,
        height=380,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        yaxis={"title": "p(actual token)", "range": [0, 1.05]},
        xaxis={"tickmode": "array", "tickvals": list(range(len(labels))), "ticktext": labels},
        showlegend=False,
    )
    return figure


def next_token_figure(objective: NextTokenObjective) -> go.Figure:
    """GPT: at each position, the probability the model gave the token that actually came next."""
    n = len(objective.probabilities)
    labels = [f"{plain(objective.tokens[t])} → {plain(objective.tokens[t + 1])}" for t in range(n)]
    hover = [
        f"after {plain(objective.tokens[t])!s}: p({plain(objective.tokens[t + 1])}) = "
        f"{objective.probabilities[t]:.4f}, loss {objective.losses[t]:.3f}; model's best guess "
        f"{plain(objective.predicted[t])}"
        for t in range(n)
    ]
    figure = go.Figure(
        go.Bar(
            x=list(range(n)),
            y=objective.probabilities,
            marker_color=LOSS_COLOUR,
            hovertext=hover,
            hoverinfo="text",
        )
    )
    title = f"GPT (causal): {len(objective.tokens)} tokens processed, {n} loss terms"
    return _layout(figure, title, labels)


def masked_figure(prediction: MaskedPrediction) -> go.Figure:
    """BERT: every token is processed, only the masked ones have a probability and a loss term."""
    n = len(prediction.tokens)
    probability = np.full(n, np.nan)
    probability[list(prediction.masked)] = prediction.true_probability
    labels = [
        f"[MASK]={plain(t)}" if i in prediction.masked else plain(t) for i, t in enumerate(prediction.tokens)
    ]
    hover = []
    for i, token in enumerate(prediction.tokens):
        if i in prediction.masked:
            k = prediction.masked.index(i)
            guesses = ", ".join(f"{plain(w)} {p:.2f}" for w, p in prediction.top[k])
            hover.append(f"p({plain(token)}) = {prediction.true_probability[k]:.4f}; guesses: {guesses}")
        else:
            hover.append(f"{plain(token)}: seen, no loss term")
    figure = go.Figure(
        [
            go.Bar(x=list(range(n)), y=np.where(np.isnan(probability), 0.03, np.nan), marker_color=NO_LOSS_COLOUR,
                   hovertext=hover, hoverinfo="text"),
            go.Bar(x=list(range(n)), y=probability, marker_color=LOSS_COLOUR, hovertext=hover, hoverinfo="text"),
        ]
    )  # fmt: skip
    figure.update_layout(barmode="overlay")
    title = f"BERT (masked): {n} tokens processed, {len(prediction.masked)} loss terms"
    return _layout(figure, title, labels)


def cls_attention_figure(reading: Reading, presenting: bool = False) -> go.Figure:
    """Where <cls> reads from in every layer and head while the classifier decides."""
    layers, heads, _ = reading.cls_attention.shape
    rows = [f"layer {layer}, head {head}" for layer in range(layers) for head in range(heads)]
    fig = go.Figure(
        go.Heatmap(
            z=reading.cls_attention.reshape(layers * heads, -1),
            zmin=0,
            zmax=1,
            colorscale=scale("sequential", presenting),
            colorbar={"title": "weight"},
            hovertemplate="%{y} → token %{x}: %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title="The attention of [CLS] (its query row) in every layer and head",
        xaxis=ticks(reading.tokens),
        yaxis={**ticks(rows), "autorange": "reversed"},
        margin=margin(top=50),
        height=140 + 28 * len(rows),
    )
    return fig


def word_tags_figure(reading: Reading) -> go.Figure:
    """The tagger's probability that each word is the wrong one."""
    words = reading.tokens[1:-1]
    fig = go.Figure(
        go.Bar(
            x=list(range(len(words))),
            y=reading.wrong_probability,
            marker={"color": [PALETTE[1] if p > 0.5 else PALETTE[0] for p in reading.wrong_probability]},
            hovertemplate="%{x}: p(wrong) = %{y:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title="The tagger on each word's output: p(this word is wrong)",
        xaxis=ticks(words),
        yaxis={"title": "p(wrong)", "range": [0, 1]},
        margin=margin(top=50),
        height=320,
    )
    return fig


def mask_or_not_curves(curves: dict[str, list[float]], floor: float, digit_share: float) -> go.Figure:
    """Training loss per step of the decoder with and without its causal mask, and the honest floor."""
    figure = go.Figure()
    names = {"causal": "causal mask", "none": "no mask"}
    for i, (mask, curve) in enumerate(curves.items()):
        figure.add_trace(
            go.Scatter(y=curve, mode="lines", name=names[mask], line={"color": PALETTE[i % len(PALETTE)]})
        )
    figure.add_hline(
        y=floor * digit_share,
        line_dash="dash",
        line_color="grey",
        annotation_text=f"floor without peeking: ln 9 × digits' share = {floor * digit_share:.2f}",
    )
    figure.update_layout(
        title="Training loss of the same decoder, with and without the mask",
        xaxis={"title": "Adam step"},
        yaxis={"title": "next-token loss (nats per token)", "rangemode": "tozero"},
        height=380,
        margin=margin(top=60),
    )
    return figure
