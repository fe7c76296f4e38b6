"""The query-key space page: its controls, one head's 2-D map, every head of a layer, and what a map
keeps and loses."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.explorer.view_model import read_only
from txviz.heads import corpus, figures, qkspace


@dataclass(frozen=True)
class Settings:
    """The traces of the texts and how to draw them: which head, projection, colours and cleaning."""

    name: str
    traces: tuple
    layer: int
    head: int
    method: str
    color_by: str
    translate: bool
    skip_first: bool

    def project(self, head: int, method: str) -> qkspace.QKPoints:
        """One head of the chosen layer in 2-D, cleaned as the toggles say."""
        return qkspace.project_head(self.traces, self.layer, head, method, self.translate, self.skip_first)


@ui.cached(max_entries=4, spinner="Recording queries and keys...")
@ui.heavy
def traces_of(loaded, texts: tuple[str, ...]) -> list:
    return [read_only(t) for t in qkspace.trace_texts(loaded, texts)]


def controls(name: str, loaded) -> Settings:
    """The texts (traced), then the head, projection and colouring, then the two clean-ups."""
    texts = widgets.corpus_input("qk", corpus.DEFAULT_TEXTS[1], upload=False)
    if texts.notice:
        st.warning(texts.notice)
    with ui.user_errors():
        traces = traces_of(loaded, texts.texts)

    a, b, c, d = st.columns(4)
    layer, head = widgets.layer_head_picker(
        loaded.n_layers, loaded.n_heads, ("qk_layer", "qk_head"), columns=(a, b)
    )
    method = c.radio(
        "Projection",
        qkspace.METHODS,
        horizontal=True,
        key="qk_method",
        index=qkspace.METHODS.index(ui.link_value("qk_method", "PCA", qkspace.METHODS)),
    )
    color_by = d.radio(
        "Colour by",
        figures.COLOR_BY,
        key="qk_color",
        index=figures.COLOR_BY.index(ui.link_value("qk_color", "query / key", figures.COLOR_BY)),
    )
    left, right = st.columns(2)
    translate = widgets.linked_toggle(
        "Key translation and norm balance (AttentionViz)",
        "qk_translate",
        True,
        where=left,
        help="Off: raw queries and keys, which often sit in two separate clouds.",
    )
    skip_first = widgets.linked_toggle(
        "Leave out each text's first token",
        "qk_skip_first",
        where=right,
        help="The first token is often an attention sink whose key lies far from every other point.",
    )
    return Settings(name, tuple(traces), layer, head, method, color_by, translate, skip_first)


def one_head(loaded, settings: Settings) -> None:
    """One head's queries and keys in one map, and how faithful the map is."""
    with ui.user_errors():
        points = settings.project(settings.head, settings.method)
        rho = qkspace.distance_agreement(points, settings.traces, settings.layer, settings.head)
        ui.show_figure(
            figures.qk_scatter(
                points,
                settings.color_by,
                f"{settings.name}: layer {settings.layer}, head {settings.head}, {points.method}",
                ui.presenting(),
            ),
            key="qk_scatter",
        )
        teaching.notice(
            "a query lands near the keys its head attends to most when the map keeps the geometry (rho below "
            "says how well); the first token, often an attention sink, tends to sit apart."
        )
        m1, m2, m3 = st.columns(3)
        shown = len(points.tokens) // 2
        m1.metric("Points", f"{2 * shown:,}", help=f"{shown} queries and {shown} keys")
        kept = "-" if points.variance_kept is None else f"{points.variance_kept:.0%}"
        m2.metric("Variance kept by the 2-D map", kept, help="PCA only; t-SNE keeps no variance share")
        m3.metric(
            "Does 2-D closeness rank keys like attention?",
            f"rho = {rho:.2f}",
            help="Mean over queries of the Spearman correlation between nearness in this map and "
            "the head's attention weights over the keys the query can see.",
        )


def every_head(loaded, settings: Settings) -> None:
    """Every head of the layer, one PCA map each."""
    with ui.user_errors():
        panels = [settings.project(h, "PCA") for h in range(loaded.n_heads)]
        ui.show_figure(
            figures.qk_small_multiples(panels, f"{settings.name}: layer {settings.layer}, every head (PCA)"),
            key="qk_multiples",
        )


def what_the_map_keeps() -> None:
    """Why the translation and balance change no attention, and what PCA and t-SNE lose."""
    st.markdown(
        "**What the map keeps and what it loses.** The key translation adds one vector to every key: each "
        "query's scores all shift by the same constant, which softmax ignores, so attention is unchanged; the "
        "norm balance multiplies queries and divides keys by one number, so every q . k is unchanged. PCA "
        "keeps the two directions along which these vectors vary most (the share above) and straight-line "
        "distances along them; everything in the other dimensions is lost, so two points that overlap here "
        "can be far apart in the head's space. Distance is not the dot product either: |q - k|^2 = |q|^2 + "
        "|k|^2 - 2 q . k, so for one query, near means a high score only among keys of similar length. "
        "t-SNE keeps who is near whom and loses global distances, cluster sizes and orientation; its map "
        "changes with its settings. UMAP is not offered: it needs numba, and its first run compiles for "
        "tens of seconds."
    )
