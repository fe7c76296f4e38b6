"""Encoder-decoder figures: cross-attention alignment, one step's attention, token probabilities."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.attention import attention_heatmap, heads_mosaic
from txviz.figures.axes import margin, ticks
from txviz.figures.colors import PALETTE, scale
from txviz.figures.text import plain, plain_all
from txviz.seq2seq.decoding import DecodeStep, Seq2SeqTrace
from txviz.seq2seq.parallel import Comparison, OneSource

MARGIN = margin(top=60)
BAR = "#4c78a8"
CHOSEN = "#d62728"
KINDS = {
    "cross": "cross-attention (target → source)",
    "decoder": "decoder masked self-attention (target → earlier target)",
    "encoder": "encoder self-attention (source → source)",
}


def step_labels(trace: Seq2SeqTrace) -> tuple[str, ...]:
    """One label per step: the query token and the token it chose ("<s> → 2")."""
    return tuple(f"{q} → {s.token}" for q, s in zip(trace.target_tokens, trace.steps, strict=True))


def _last_row(trace: Seq2SeqTrace, step: int | None) -> int:
    """Rows 0..step are shown; None shows every step."""
    n = len(trace.steps)
    if step is None:
        return n - 1
    if not 0 <= step < n:
        raise ValueError(f"Step {step} does not exist: this decoding has steps 0 to {n - 1}.")
    return step


def attention_of(trace: Seq2SeqTrace, kind: str, layer: int, head: int, step: int | None = None):
    """(matrix, query labels, key labels, axis titles) of one head, up to a step, for a kind."""
    if kind not in KINDS:
        raise ValueError(f"Unknown attention kind {kind!r}: choose from {sorted(KINDS)}.")
    last = _last_row(trace, step)
    labels = step_labels(trace)
    if kind == "encoder":
        matrix = trace.encoder.weights[layer, head]  # (S, S)
        return matrix, trace.source_tokens, trace.source_tokens, ("source token", "source token")
    if kind == "cross":
        matrix = trace.cross.weights[layer, head, : last + 1]  # (t + 1, S)
        return matrix, labels[: last + 1], trace.source_tokens, ("step (query → chosen)", "source")
    matrix = trace.decoder.weights[layer, head, : last + 1, : last + 1]  # (t + 1, t + 1)
    return (
        matrix,
        labels[: last + 1],
        trace.target_tokens[: last + 1],
        ("step (query → chosen)", "earlier target token"),
    )


def attention_head(
    trace: Seq2SeqTrace, kind: str, layer: int, head: int, step: int | None = None, presenting: bool = False
) -> go.Figure:
    """One head's heatmap of one attention kind; the cross kind is the alignment figure."""
    matrix, queries, keys, axes = attention_of(trace, kind, layer, head, step)
    shown = matrix.astype(np.float32)
    if kind == "decoder":  # the future is masked: blank, not a zero-coloured cell
        shown = np.where(np.tril(np.ones_like(shown, dtype=bool)), shown, np.nan)
    title = f"{KINDS[kind]}, layer {layer}, head {head}"
    figure = attention_heatmap(
        np.nan_to_num(shown), queries, keys, title=title, axis_titles=axes, presenting=presenting
    )
    if kind == "decoder":
        figure.data[0].z = shown
    return figure


def all_heads(trace: Seq2SeqTrace, kind: str, step: int | None = None, presenting: bool = False) -> go.Figure:
    """Every layer and head of one attention kind as a mosaic (rows: layers, columns: heads)."""
    last = _last_row(trace, step)
    if kind == "encoder":
        weights = trace.encoder.weights
    elif kind == "cross":
        weights = trace.cross.weights[:, :, : last + 1]
    elif kind == "decoder":
        weights = trace.decoder.weights[:, :, : last + 1, : last + 1]
    else:
        raise ValueError(f"Unknown attention kind {kind!r}: choose from {sorted(KINDS)}.")
    return heads_mosaic(weights, title=f"Every head: {KINDS[kind]}", presenting=presenting)


def step_attention(trace: Seq2SeqTrace, step: int, layer: int, head: int) -> go.Figure:
    """At one step: where the newest target token looks in the source and in the target so far."""
    last = _last_row(trace, step)
    chosen = trace.steps[last]
    cross = trace.cross.weights[layer, head, last]  # (S,)
    self_row = trace.decoder.weights[layer, head, last, : last + 1]  # (t + 1,)
    figure = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.62, 0.38],
        subplot_titles=("cross-attention to the source", "masked self-attention to the target"),
    )
    for col, row, tokens in ((1, cross, trace.source_tokens), (2, self_row, trace.target_tokens)):
        figure.add_trace(
            go.Bar(
                x=list(range(len(row))),
                y=row.astype(np.float32),
                marker_color=BAR,
                customdata=np.array(plain_all(tokens[: len(row)]), dtype=object),
                hovertemplate="key %{x} %{customdata}: %{y:.4f}<extra></extra>",
                showlegend=False,
            ),
            row=1,
            col=col,
        )
        figure.update_xaxes(
            ticks(tokens[: len(row)]),
            tickangle=-45,
            title="source token" if col == 1 else "target token",
            row=1,
            col=col,
        )
    figure.update_yaxes(title="attention weight", range=[0, 1], row=1, col=1)
    figure.update_yaxes(range=[0, 1], row=1, col=2)
    figure.update_layout(
        title=(
            f"Step {last}: query {plain(trace.target_tokens[last])!s} chooses "
            f"{plain(chosen.token)} (p = {chosen.probability:.3f}); layer {layer}, head {head}"
        ),
        height=380,
        margin=MARGIN,
    )
    return figure


def chosen_probabilities(trace: Seq2SeqTrace, current: int | None = None) -> go.Figure:
    """Probability of the token chosen at every step; the current step outlined."""
    steps = list(range(len(trace.steps)))
    tokens = [s.token for s in trace.steps]
    widths = [3 if i == current else 0 for i in steps]
    figure = go.Figure(
        go.Bar(
            x=steps,
            y=[s.probability for s in trace.steps],
            marker={"color": BAR, "line": {"color": CHOSEN, "width": widths}},
            customdata=np.array(plain_all(tokens), dtype=object),
            hovertemplate="step %{x}: %{customdata} with p = %{y:.4f}<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"Probability of each chosen token ({plain(trace.method)})", height=320, margin=MARGIN
    )
    figure.update_xaxes(title="step (chosen token)", **ticks(tokens))
    figure.update_yaxes(title="probability", range=[0, 1])
    return figure


def step_alternatives(step: DecodeStep) -> go.Figure:
    """The most probable next tokens at one step; the chosen one in red."""
    tokens = list(step.candidates.tokens)
    rows = list(range(len(tokens)))
    colours = [CHOSEN if i == step.token_id else BAR for i in step.candidates.ids]
    figure = go.Figure(
        go.Bar(
            x=step.candidates.model_probs.tolist(),
            y=rows,
            orientation="h",
            marker_color=colours,
            customdata=np.array(plain_all(tokens), dtype=object),
            hovertemplate="%{customdata}: %{x:.4f}<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"Step {step.index}: most probable next tokens (chosen: {plain(step.token)})",
        height=max(240, 36 * len(rows) + 110),
        margin=MARGIN,
    )
    figure.update_xaxes(title="probability", range=[0, 1])
    figure.update_yaxes(
        title="candidate token",
        autorange="reversed",
        **ticks(tokens),
    )
    return figure


def forcing_figure(comparison) -> go.Figure:
    """Step by step, what each regime reads and predicts; green where it matches the reference."""
    steps = comparison.steps
    rows = (
        ("teacher forcing reads", "forced_input", 1),
        ("teacher forcing predicts", "forced_prediction", 0),
        ("reference", "reference", None),
        ("free running predicts", "free_prediction", 0),
        ("free running reads", "free_input", 1),
    )
    z, text = [], []
    for _, field, shift in rows:
        values = [getattr(s, field) for s in steps]
        text.append([plain(v) for v in values])
        if shift is None:
            z.append([0.5] * len(steps))
            continue
        # a prediction at step t is checked against reference t; an input against reference t - 1
        targets = [steps[t - shift].reference if t - shift >= 0 else values[t] for t in range(len(steps))]
        z.append([np.nan if not v else float(v == r) for v, r in zip(values, targets, strict=True)])
    figure = go.Figure(
        go.Heatmap(
            z=z,
            text=text,
            texttemplate="%{text}",
            colorscale=[[0, "#f4a3a3"], [0.5, "#e8e8e8"], [1, "#a8d8a8"]],
            zmin=0,
            zmax=1,
            showscale=False,
            xgap=2,
            ygap=2,
            hovertemplate="step %{x}, %{y}: %{text}<extra></extra>",
        )
    )
    if comparison.divergence is not None:
        figure.add_vline(x=comparison.divergence - 0.5, line_dash="dot", line_color="#d62728")
        figure.add_annotation(
            x=comparison.divergence - 0.5, y=1.08, yref="paper", text="they part here", showarrow=False
        )
    figure.update_layout(
        title="What the decoder reads and predicts at each step (green: as the reference, red: not)",
        height=320,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
        xaxis={"title": "step", "tickmode": "array", "tickvals": list(range(len(steps)))},
        yaxis={"tickmode": "array", "tickvals": list(range(len(rows))), "ticktext": [r[0] for r in rows],
               "autorange": "reversed"},
    )  # fmt: skip
    return figure


def parallel_accuracy_figure(comparison: Comparison) -> go.Figure:
    """Held-out exact match against decoder passes: each parallel refinement, and greedy's one point."""
    fig = go.Figure()
    names = {
        "mask-predict": "Mask-Predict (re-mask the least confident)",
        "jacobi": "Jacobi (re-predict all)",
    }
    for i, (strategy, values) in enumerate(comparison.exact_match.items()):
        fig.add_trace(
            go.Scatter(
                x=list(comparison.passes),
                y=100 * values,
                mode="lines+markers",
                name=plain(names.get(strategy, strategy)),
                line={"color": PALETTE[i]},
                hovertemplate="%{x} passes: %{y:.1f}%<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[comparison.greedy_passes],
            y=[100 * comparison.greedy_exact_match],
            mode="markers",
            marker={"size": 14, "symbol": "diamond", "color": PALETTE[3]},
            name="greedy, left to right (one pass per token)",
            hovertemplate="%{x:.1f} passes: %{y:.1f}%<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Exact match on {comparison.examples} held-out dates against decoder passes",
        xaxis={"title": "decoder passes", "dtick": 1},
        yaxis={"title": "exact match (%)", "range": [-2, 102]},
        margin=MARGIN,
        height=400,
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def refinement_figure(one: OneSource, presenting: bool = False) -> go.Figure:
    """The canvas after each parallel pass: each position's token, coloured by its probability."""
    passes, length = one.confidence.shape
    text = [
        [plain(tok) + ("*" if one.masked[k, t] else "") for t, tok in enumerate(one.canvases[k])]
        for k in range(passes)
    ]
    fig = go.Figure(
        go.Heatmap(
            z=one.confidence,
            text=text,
            texttemplate="%{text}",
            zmin=0,
            zmax=1,
            colorscale=scale("sequential", presenting),
            colorbar={"title": "p"},
            hovertemplate="pass %{y}, position %{x}: %{text}, p = %{z:.3f}<extra></extra>",
            y=list(range(1, passes + 1)),
        )
    )
    fig.update_layout(
        title="Each pass's tokens (* re-predicted in that pass), coloured by the model's probability",
        xaxis={"title": "target position", "dtick": 1},
        yaxis={"title": "pass", "autorange": "reversed", "dtick": 1},
        margin=MARGIN,
        height=120 + 40 * passes,
    )
    return fig
