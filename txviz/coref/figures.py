"""Figures for coreference: head grids for a minimal pair, both heatmaps of one head, cross-validation."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.core.trace import AttentionTrace
from txviz.coref.scoring import CrossValidation, coin_flip_band
from txviz.coref.spans import PairAttention, TokenSpans
from txviz.figures.attention import weights_heatmap
from txviz.figures.axes import PAGE_WIDTH, margin, plot_length, token_axis
from txviz.figures.colors import scale
from txviz.figures.grids import head_grid
from txviz.figures.text import plain, plain_all

LEAN_SCALE = scale("diverging")  # red: second candidate, blue: first, white: no preference (any mode)
HIGHLIGHT = "#f59e0b"


def head_grids(
    pa: PairAttention, selected: tuple[int, int] | None = None, presenting: bool = False
) -> list[alt.LayerChart]:
    """Three clickable layers x heads grids: lean in A, lean in B, and A minus B (the word's effect)."""
    first, second = pa.candidates  # altair draws text as text: no escaping (see figures/grids.py)
    # one colour scale for the two sentences, a wider one for their difference
    lean_max = float(max(np.abs(pa.lean_a).max(), np.abs(pa.lean_b).max(), 1e-6))
    diff_max = float(max(np.abs(pa.difference).max(), 1e-6))
    to = (f"to 1: {first}", f"to 2: {second}")  # numbered: the two words may be the same
    panels = (
        (
            pa.lean_a,
            f"Sentence A: {first} − {second}",
            lean_max,
            dict(zip(to, pa.to_candidates_a.transpose(2, 0, 1), strict=True)),
        ),
        (
            pa.lean_b,
            f"Sentence B: {first} − {second}",
            lean_max,
            dict(zip(to, pa.to_candidates_b.transpose(2, 0, 1), strict=True)),
        ),
        (pa.difference, "Difference A − B", diff_max, {"lean in A": pa.lean_a, "lean in B": pa.lean_b}),
    )
    return [
        head_grid(values, title, "lean", selected, presenting, (-bound, bound), diverging=True, extra=extra)
        for values, title, bound, extra in panels
    ]


def _mark_spans(fig: go.Figure, spans: TokenSpans, n_keys: int, col: int) -> None:
    """Outline the pronoun's row(s) and each candidate's columns."""
    rows = spans.pronoun
    fig.add_shape(
        type="rect",
        x0=-0.5,
        x1=n_keys - 0.5,
        y0=min(rows) - 0.5,
        y1=max(rows) + 0.5,
        line={"color": HIGHLIGHT, "width": 2},
        row=1,
        col=col,
    )
    for colour, cand in zip(("#2563eb", "#dc2626"), spans.candidates, strict=True):
        fig.add_shape(
            type="rect",
            x0=min(cand) - 0.5,
            x1=max(cand) + 0.5,
            y0=min(rows) - 0.5,
            y1=max(rows) + 0.5,
            line={"color": colour, "width": 3},
            row=1,
            col=col,
        )


def pair_heatmaps(
    trace_a: AttentionTrace,
    trace_b: AttentionTrace,
    layer: int,
    head: int,
    spans_a: TokenSpans | None = None,
    spans_b: TokenSpans | None = None,
    presenting: bool = False,
) -> go.Figure:
    """One head's full attention in sentence A and in sentence B, side by side."""
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            f"A: layer {layer}, head {head}",
            f"B: layer {layer}, head {head}",
        ),
        horizontal_spacing=0.12,
    )
    n = max(len(trace_a.query_tokens), len(trace_b.query_tokens))
    height = max(380, 22 * n + 160)
    across, down = plot_length(PAGE_WIDTH, columns=2), plot_length(height, reserved=200)
    for col, (trace, spans) in enumerate(((trace_a, spans_a), (trace_b, spans_b)), start=1):
        weights = trace.head(layer, head)  # [query_pos, key_pos]
        n_key = weights.shape[1]
        fig.add_trace(
            weights_heatmap(
                weights,
                presenting,
                showscale=col == 2,
                customdata=[
                    [[q, k] for k in plain_all(trace.key_tokens)] for q in plain_all(trace.query_tokens)
                ],
                hovertemplate="query %{y} %{customdata[0]}<br>key %{x} %{customdata[1]}"
                "<br>weight %{z:.3f}<extra></extra>",
                name="A" if col == 1 else "B",
            ),
            row=1,
            col=col,
        )
        fig.update_xaxes(token_axis(trace.key_tokens, "key (attended to)", length=across), row=1, col=col)
        fig.update_yaxes(
            # one title: no overlap
            token_axis(
                trace.query_tokens, "query (attending)" if col == 1 else "", length=down, vertical=True
            ),
            autorange="reversed",
            row=1,
            col=col,
        )
        if spans is not None:
            _mark_spans(fig, spans, n_key, col)
    fig.update_layout(height=height, margin=margin(left=60, right=20, bottom=90))
    return fig


def cv_chart(cv: CrossValidation, top: int = 12) -> go.Figure:
    """Left: each fold's chosen head on its held-out pairs. Right: the best heads on all pairs."""
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        column_widths=[0.4, 0.6],
        horizontal_spacing=0.05,
        subplot_titles=(
            f"Held out: the head each of {cv.k} folds chose, on its own fold",
            f"All {cv.n_pairs} pairs: best heads (chosen in how many folds)",
        ),
    )
    fold_labels = [f"fold {i + 1}<br>L{h[0]} H{h[1]}" for i, h in enumerate(cv.fold_heads)]
    fig.add_trace(
        go.Bar(
            x=fold_labels,
            y=cv.fold_accuracy,
            name="held-out accuracy of the fold's head",
            marker_color="#2563eb",
            customdata=[2 * len(f) for f in cv.folds],
            hovertemplate="%{x}<br>%{y:.1%} of %{customdata} held-out sentences<extra></extra>",
        ),
        row=1,
        col=1,
    )
    heads = cv.ranked_heads(top)
    counts = dict(cv.choice_counts)
    fig.add_trace(
        go.Bar(
            x=[f"L{layer} H{head}" for layer, head in heads],
            y=[float(cv.accuracy[h]) for h in heads],
            name="accuracy on all pairs (in-sample)",
            marker_color="#94a3b8",
            text=[f"{counts.get(h, 0)}/{cv.k}" for h in heads],
            textposition="outside",
            hovertemplate="%{x}: %{y:.1%} on all pairs, chosen in %{text} folds<extra></extra>",
        ),
        row=1,
        col=2,
    )
    fold_band = coin_flip_band(round(cv.n_sentences / cv.k))
    for col, (low, high) in ((1, fold_band), (2, cv.coin_flip_band)):
        fig.add_hrect(
            y0=low, y1=high, fillcolor="#9ca3af", opacity=0.2, line_width=0, layer="below", row=1, col=col
        )
        fig.add_hline(y=cv.chance, line_dash="dash", line_color="#dc2626", row=1, col=col)
    fig.add_hline(
        y=cv.mean_fold_accuracy,
        line_dash="dot",
        line_color="#2563eb",
        annotation_text=f"mean {cv.mean_fold_accuracy:.0%}",
        annotation_position="top left",
        row=1,
        col=1,
    )
    fig.update_yaxes(title_text="share of sentences: more attention to the right candidate", row=1, col=1)
    fig.update_yaxes(range=[0, 1.08], tickformat=".0%")
    fig.update_layout(
        height=430,
        margin=margin(top=60, left=60, right=20, bottom=60),
        legend={"orientation": "h", "y": -0.22},
        bargap=0.3,
    )
    return fig


def answer_chart(
    candidates: tuple[str, str],
    probabilities: Sequence[tuple[float, float]],
    sentences: Sequence[str],
) -> go.Figure:
    """The model's probability for each candidate, one group of bars per sentence."""
    fig = go.Figure()
    for i, (name, colour) in enumerate(zip(candidates, ("#2563eb", "#dc2626"), strict=True)):
        fig.add_trace(
            go.Bar(
                x=plain_all(sentences),
                y=[float(p[i]) for p in probabilities],
                name=plain(name),
                marker_color=colour,
                text=[f"{p[i]:.0%}" for p in probabilities],
                textposition="auto",
            )
        )
    fig.add_hline(y=0.5, line_dash="dash", line_color="#6b7280")
    fig.update_layout(
        barmode="group",
        yaxis={"title": "probability (of the two)", "range": [0, 1]},
        xaxis={"title": "sentence"},
        height=320,
        margin=margin(top=30, left=60, right=20, bottom=40),
    )
    return fig
