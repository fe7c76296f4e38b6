"""Figures of generation: the candidates of a step, the newest token's attention, the KV cache."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from txviz.figures.attention import weights_heatmap
from txviz.figures.axes import PAGE_WIDTH, margin, plot_length, ticks
from txviz.figures.colors import scale
from txviz.figures.text import in_template, plain, plain_all
from txviz.generation.loop import GenerationStep, sequence_attention

MARGIN = margin()
STAGE_COLOURS = ("#9aa5b1", "#f2a541", "#7fb069", "#4c78a8", "#b279a2")
CHOSEN_COLOUR = "#d62728"


def _tokens(tokens: Sequence[str]) -> np.ndarray:
    """Escaped tokens as an object array, for customdata read by hover templates."""
    return np.array(plain_all(tokens), dtype=object)


def candidate_bars(step: GenerationStep) -> go.Figure:
    """Probability of the top candidates at each stage (model, then each filter); chosen marked."""
    candidates = step.candidates
    labels = [f"▶ {token}" if i == step.chosen_rank else token for i, token in enumerate(candidates.tokens)]
    rows = list(range(len(labels)))
    figure = go.Figure()
    for s, name in enumerate(candidates.stages):
        widths = [3 if i == step.chosen_rank else 0 for i in rows]
        figure.add_trace(
            go.Bar(
                x=candidates.probs[s],
                y=rows,
                orientation="h",
                name=plain(name),
                marker={
                    "color": STAGE_COLOURS[s % len(STAGE_COLOURS)],
                    "line": {"color": CHOSEN_COLOUR, "width": widths},
                },
                customdata=_tokens(candidates.tokens),
                hovertemplate=f"{in_template(name)}<br>%{{customdata}}: %{{x:.4f}}<extra></extra>",
            )
        )
    figure.update_layout(
        title=f"Step {step.index}: candidates for position {step.position} "
        f"(chosen: {plain(repr(step.token))}, outlined)",
        barmode="group",
        height=max(320, 34 * len(labels) + 120),
        margin=MARGIN,
        legend={"title": "distribution"},
    )
    figure.update_xaxes(title="probability", range=[0, 1])
    figure.update_yaxes(title="candidate token", autorange="reversed", **ticks(labels))
    return figure


def newest_attention_head(step: GenerationStep, tokens: Sequence[str], layer: int, head: int) -> go.Figure:
    """One head's attention from the newest token to every earlier token (and itself)."""
    row = step.attention[layer, head].astype(np.float32)  # (K,)
    keys = list(range(len(row)))
    figure = go.Figure(
        go.Bar(
            x=keys,
            y=row,
            marker_color="#4c78a8",
            customdata=_tokens(tokens[: len(row)]),
            hovertemplate="key %{x} %{customdata}: %{y:.4f}<extra></extra>",
        )
    )
    query = tokens[step.query_position]
    figure.update_layout(
        title=f"Layer {layer}, head {head}: attention of {plain(repr(query))} (position "
        f"{step.query_position}) while choosing {plain(repr(step.token))}",
        height=340,
        margin=MARGIN,
    )
    across = plot_length(PAGE_WIDTH)
    figure.update_xaxes(title="key token (earlier positions)", **ticks(tokens[: len(row)], length=across))
    figure.update_yaxes(title="attention weight", range=[0, 1])
    return figure


def newest_attention_all_heads(
    step: GenerationStep, tokens: Sequence[str], layer: int, presenting: bool = False
) -> go.Figure:
    """Every head of one layer: rows are heads, columns the keys of the newest token's query."""
    matrix = step.attention[layer].astype(np.float32)  # (H, K)
    n_heads, n_keys = matrix.shape
    figure = go.Figure(
        weights_heatmap(
            matrix,
            presenting,
            colorbar={"title": "weight"},
            customdata=np.array([plain_all(tokens[:n_keys])] * n_heads, dtype=object),
            hovertemplate="head %{y}, key %{x} %{customdata}: %{z:.4f}<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"Layer {layer}, all heads: attention of {plain(repr(tokens[step.query_position]))} "
        f"(position {step.query_position})",
        height=max(260, 26 * n_heads + 140),
        margin=MARGIN,
    )
    # drawn in half the page while the tokens stream, so the labels are laid out for that width
    figure.update_xaxes(title="key token", **ticks(tokens[:n_keys], length=plot_length(PAGE_WIDTH / 2)))
    figure.update_yaxes(title="head", autorange="reversed", dtick=1)
    return figure


def sequence_heatmap(
    steps: list[GenerationStep], tokens: Sequence[str], layer: int, head: int, presenting: bool = False
) -> go.Figure:
    """Causal attention of the generation: a row per step's query, blank above the diagonal."""
    matrix = sequence_attention(steps, layer, head)  # (step, K)
    n_rows, n_keys = matrix.shape
    first = steps[0].query_position if steps else 0
    queries = list(range(first, first + n_rows))
    allowed = np.arange(n_keys)[None, :] <= np.array(queries)[:, None]
    shown = np.where(allowed, matrix, np.nan)  # masked keys stay blank, not zero-coloured
    figure = go.Figure(
        go.Heatmap(
            z=shown,
            x=list(range(n_keys)),
            y=queries,
            zmin=0.0,
            zmax=1.0,
            colorscale=scale("sequential", presenting),
            colorbar={"title": "weight"},
            hovertemplate="query %{y}, key %{x}: %{z:.4f}<extra></extra>",
        )
    )
    height = max(360, min(900, 20 * n_rows + 200))  # a row a label
    figure.update_layout(
        title=f"Layer {layer}, head {head}: the newest token's attention at every step "
        "(rows: queries, blank: masked)",
        height=height,
        margin=MARGIN,
    )
    figure.update_xaxes(title="key token", **ticks(tokens[:n_keys], length=plot_length(PAGE_WIDTH)))
    down = plot_length(height, reserved=200)
    figure.update_yaxes(
        title="query token (newest at that step)",
        autorange="reversed",
        **ticks([tokens[q] for q in queries], positions=queries, length=down, vertical=True),
    )
    return figure


def kv_cache_growth(steps: list[GenerationStep], current: int | None = None) -> go.Figure:
    """Bytes held by the KV cache after each step, all layers together; hover gives tokens."""
    x = [s.index for s in steps]
    megabytes = [sum(s.kv_bytes) / 1e6 for s in steps]
    tokens = [s.kv_tokens[0] if s.kv_tokens else 0 for s in steps]
    figure = go.Figure(
        go.Scatter(
            x=x,
            y=megabytes,
            mode="lines+markers",
            customdata=tokens,
            hovertemplate="step %{x}: %{y:.3f} MB, %{customdata} tokens per layer<extra></extra>",
            name="KV cache",
        )
    )
    if current is not None:
        figure.add_vline(x=current, line_color=CHOSEN_COLOUR)
    n_layers = len(steps[0].kv_bytes) if steps else 0
    figure.update_layout(
        title=f"KV cache of {n_layers} layers: one key and one value per token per layer",
        height=320,
        margin=MARGIN,
    )
    figure.update_xaxes(title="step")
    figure.update_yaxes(title="MB held", rangemode="tozero")
    return figure


def kv_cache_per_layer(step: GenerationStep) -> go.Figure:
    """Tokens and bytes each layer's cache holds after one step."""
    layers = list(range(len(step.kv_bytes)))
    figure = go.Figure(
        go.Bar(
            x=layers,
            y=[b / 1e3 for b in step.kv_bytes],
            customdata=list(step.kv_tokens),
            marker_color="#7fb069",
            hovertemplate="layer %{x}: %{y:.1f} kB, %{customdata} tokens<extra></extra>",
        )
    )
    figure.update_layout(title=f"KV cache per layer after step {step.index}", height=300, margin=MARGIN)
    figure.update_xaxes(title="layer", dtick=1 if len(layers) <= 32 else None)
    figure.update_yaxes(title="kB held", rangemode="tozero")
    return figure
