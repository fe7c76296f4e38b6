"""The attention explorer's view options and tabs: one head, every head, one token's focus, and the
heads combined (mean, rollout) beside each head's entropy and distance."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.core.tokens import unknown_note
from txviz.core.trace import AttentionTrace
from txviz.explorer import view_model as explorer
from txviz.figures import attention as figures
from txviz.figures import grids


@dataclass(frozen=True)
class Settings:
    """The sidebar's view options."""

    hide_special: bool
    whole_words: bool
    log_scale: bool
    threshold: float


@dataclass(frozen=True)
class Shown:
    """The text's trace as the options shape it, the chosen head, and the heatmaps' style."""

    name: str
    trace: AttentionTrace
    layer: int
    head: int
    style: dict


def sidebar() -> Settings:
    """Special tokens, whole words, the colour scale and the threshold, in the sidebar."""
    with st.sidebar:
        st.subheader("View options")
        hide_special = widgets.linked_toggle(
            "Hide special tokens and renormalise",
            "hide_special",
            help="[CLS], [SEP] and similar often soak up attention (attention sinks).",
        )
        whole_words = widgets.linked_toggle("Whole words (merge sub-word pieces)", "whole_words")
        log_scale = widgets.linked_toggle("Log colour scale", "log_scale")
        threshold = widgets.linked_slider("Hide weights below", "threshold", 0.0, 0.01, high=0.5)
    return Settings(hide_special, whole_words, log_scale, threshold)


def traced(name: str, loaded, text: str, settings: Settings) -> Shown:
    """The text traced and shaped by the options, its notices, and the layer and head to show."""
    with ui.user_errors():
        trace = explorer.view(
            loaded, text, ui.cached_trace(loaded, text), settings.hide_special, settings.whole_words
        )
    if trace.notice:
        st.warning(trace.notice)
    if unknown := unknown_note(loaded.tokenizer, text, trace.raw_tokens):
        st.info(unknown)

    layer, head = widgets.layer_head_picker(trace.n_layers, trace.n_heads, default=explorer.DEFAULT_HEAD)
    style = dict(log_scale=settings.log_scale, threshold=settings.threshold, presenting=ui.presenting())
    return Shown(name, trace, layer, head, style)


def one_head(shown: Shown) -> None:
    """One head's heatmap."""
    trace, layer, head, style = shown.trace, shown.layer, shown.head, shown.style
    ui.show_figure(
        figures.attention_heatmap(
            trace.head(layer, head),
            trace.query_tokens,
            trace.key_tokens,
            f"{shown.name}: layer {layer}, head {head}",
            **style,
        )
    )
    teaching.notice(
        "each row is one token's attention. In MiniLM's layer 3, head 1 the row of \"it\" puts most of "
        'its weight on "animal", the word it refers to; open Token focus to follow one token through '
        "every layer."
    )


def all_heads(shown: Shown) -> None:
    """The chosen layer's heads large, then every layer's heads small."""
    trace, layer, style = shown.trace, shown.layer, shown.style
    ui.show_figure(
        figures.heads_mosaic(
            trace.weights[layer][None],
            row_label="layer",
            row_names=[str(layer)],
            tile_size=160,
            title=f"Layer {layer}: every head",
            **style,
        )
    )
    ui.show_figure(
        figures.heads_mosaic(
            trace.weights,
            tile_size=48,
            title="Every layer and head (pick one above, or click a cell of the Aggregates tab's grids)",
            **style,
        )
    )


def token_focus(shown: Shown) -> None:
    """One token's attention as arcs, then what it attends to and what attends to it, layer by layer."""
    trace, layer, head, style = shown.trace, shown.layer, shown.head, shown.style
    options = [f"{i}: {t}" for i, t in enumerate(trace.query_tokens)]
    token = options.index(
        st.selectbox(
            "Token",
            options,
            index=ui.link_index("focus_token", options, explorer.focus_default(trace.query_tokens)),
            key="focus_token",
        )
    )
    mean_heads = widgets.linked_toggle("Mean over heads instead of the chosen head", "focus_mean")

    matrix = explorer.aggregated(trace, "mean over heads")[layer] if mean_heads else trace.head(layer, head)
    ui.show_figure(figures.token_focus_arcs(matrix, trace.query_tokens, token))
    attends, attended = explorer.focus_across_layers(trace, token)
    layers = tuple(f"layer {i}" for i in range(trace.n_layers))
    widgets.side_by_side(
        [
            figures.attention_heatmap(
                attends,
                layers,
                trace.key_tokens,
                "What it attends to, per layer (mean of heads)",
                axis_titles=("layer", "key"),
                **style,
            ),
            figures.attention_heatmap(
                attended,
                layers,
                trace.query_tokens,
                "What attends to it, per layer (mean of heads)",
                axis_titles=("layer", "query"),
                **style,
            ),
        ]
    )


def aggregates(shown: Shown) -> None:
    """The heads combined (a mean, rollout), then each head's entropy and distance; a click picks a head."""
    trace, layer, head, style = shown.trace, shown.layer, shown.head, shown.style
    how = st.radio(
        "Combine heads by",
        explorer.AGGREGATES,
        horizontal=True,
        key="aggregate",
        help=teaching.help_for("rollout"),
        index=explorer.AGGREGATES.index(
            ui.link_value("aggregate", explorer.AGGREGATES[0], explorer.AGGREGATES)
        ),
    )
    st.caption(
        "Rollout (Abnar & Zuidema 2020) multiplies the layers' head means, each mixed half and "
        "half with the identity for the residual stream and renormalised, up to the chosen layer."
    )
    ui.show_figure(
        figures.attention_heatmap(
            explorer.aggregated(trace, how)[layer],
            trace.query_tokens,
            trace.key_tokens,
            f"{how}, layer {layer}",
            **style,
        )
    )
    st.caption("Click a head in either grid to pick it.")
    a, b = st.columns(2)
    for column, values, title, unit in (
        (a, explorer.entropy(trace), "Entropy per head", "nats"),
        (b, explorer.distance(trace), "Mean attention distance", "tokens"),
    ):
        with column:
            chart = grids.head_grid(values, title, unit, (layer, head), ui.presenting())
            widgets.head_grid(chart, key=f"grid_{unit}")
