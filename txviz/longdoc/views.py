"""Long Documents' page body: the layer and how to draw it, the whole-document overview (computed
before the tabs, both read it), and the Overview and Detail tabs."""

from dataclasses import dataclass

import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.longdoc import drill, view_model
from txviz.longdoc import overview as longdoc


@ui.cached(
    max_entries=4,
    spinner="Reading the document: every layer's summaries, and this layer's maps block by block...",
)
@ui.heavy
def _overview(loaded, text: str, max_tokens: int, layer: int) -> longdoc.Overview:
    return longdoc.overview(loaded, text, max_tokens, layer)


@ui.cached(max_entries=16, spinner="Computing this layer's exact rows...")
@ui.heavy
def _rows(loaded, text: str, max_tokens: int, layer: int, start: int, stop: int) -> drill.Rows:
    return drill.drill_down(loaded, text, max_tokens, layer, start, stop)


def _select_region() -> None:
    """A box dragged on the pooled map becomes the drill-down's queries and keys."""
    boxes = st.session_state["pooled_map"].selection.get("box") or []
    n, tile = st.session_state.get("_longdoc_shape", (0, 1))
    if not boxes or not n:
        return
    x0, x1 = sorted(boxes[0]["x"])
    y0, y1 = sorted(boxes[0]["y"])
    inside = lambda v: int(min(max(v, 0), n))  # noqa: E731
    st.session_state["queries"] = (min(inside(y0), n - 1), max(inside(y1 + tile), inside(y0) + 1))
    st.session_state["keys"] = (min(inside(x0), n - 1), max(inside(x1 + tile), inside(x0) + 1))
    st.session_state["view"] = "Detail"


def _select_sentence() -> None:
    sentence = st.session_state.get("sentence")
    spans = st.session_state.get("_longdoc_spans")
    if sentence is None or spans is None:
        return
    start, stop = spans.tokens_of(spans.labels.index(sentence))
    st.session_state["queries"] = (start, stop)
    st.session_state["keys"] = (max(0, stop - view_model.MAX_KEYS), stop)


def longest_input(loaded) -> int:
    """The length the document is cut at, with a note on what a length costs."""
    choices = longdoc.lengths(loaded)
    default = min(4096, max(choices))
    max_tokens = st.selectbox(
        "Longest input (tokens)",
        choices,
        index=choices.index(ui.link_value("max_tokens", default, choices)),
        key="max_tokens",
        help="Longer documents are cut here with a notice. Short models (MiniLM: 512) keep their own limit.",
    )
    st.caption(
        "About 1.5 times a plain forward of the model: on two CPU cores SmolLM2 reads 1,024 tokens "
        "in a few seconds and 4,096 in under half a minute; the attention part grows with the square "
        "of the length. Another layer's maps take one more pass; memory stays near the model's own "
        "(a few hundred queries at a time, never a whole map)."
    )
    return max_tokens


def _linked_radio(where, label: str, options: tuple[str, ...], key: str, default: str) -> str:
    """A horizontal radio whose choice the page's link keeps."""
    index = options.index(ui.link_value(key, default, options))
    return where.radio(label, options, index=index, horizontal=True, key=key)


@dataclass(frozen=True)
class Reading:
    """The document read at one layer, and how both tabs draw it."""

    text: str
    max_tokens: int
    layer: int
    head: int | None  # None: the mean over heads
    view: longdoc.Overview
    stat: str
    level: str
    log_scale: bool


def read(loaded, text: str, max_tokens: int) -> Reading:
    """The layer and head, the document's overview at that layer with what it reduced, and the style."""
    c1, c2, c3 = st.columns(3)
    layer, head = widgets.layer_head_picker(
        loaded.n_layers,
        loaded.n_heads,
        default=(loaded.n_layers - 1, 0),
        columns=(c1, c2),
        helps=(
            "Summaries cover every layer; the maps are this layer's (another layer takes one more pass).",
            None,
        ),
    )
    with ui.user_errors():
        view = _overview(loaded, text, max_tokens, layer)
    if view.notice:
        st.warning(view.notice)
    n = view.n_tokens
    st.session_state["_longdoc_shape"] = (n, view.tile)
    st.session_state["_longdoc_spans"] = view.spans
    cells = view.n_layers * view.n_heads * n * n
    st.caption(
        f"{n:,} tokens, {view.n_layers} layers x {view.n_heads} heads: {cells / 1e6:,.0f} million weights "
        f"({cells * 4 / 1e9:.2f} GB as float32) reduced to per-head summaries, and layer {layer}'s to "
        f"{view.tile} x {view.tile}-token tiles, {view.spans.n} sentences and "
        f"{len(view.spans.paragraph_labels)} paragraphs."
    )
    heads_mean = widgets.linked_toggle("Mean over heads", "heads_mean", True, where=c3)
    d1, d2, d3 = st.columns(3)
    stat = _linked_radio(d1, "Tiles show", view_model.TILE_STATS, "tile_stat", "mean")
    level = _linked_radio(d2, "Aggregate to", view_model.LEVELS, "level", "sentences")
    log_scale = widgets.linked_toggle("Log colour scale", "log_scale", True, where=d3)
    return Reading(text, max_tokens, layer, None if heads_mean else head, view, stat, level, log_scale)


def overview(loaded, reading: Reading) -> None:
    """Every head's summaries, the pooled map (drag a box for Detail), sentence maps and sinks."""
    shown = view_model.first_view(
        reading.view,
        reading.layer,
        reading.head,
        reading.stat,
        reading.level,
        log_scale=reading.log_scale,
        presenting=ui.presenting(),
    )
    st.caption(
        "Every head at a glance: weight on the first tokens (attention sinks), how far it looks, "
        f"how spread out it is, and how much stays within {longdoc.LOCAL_WINDOW} tokens."
    )
    ui.show_figure(shown["summaries"])
    teaching.notice(
        "many heads put a large share of their weight on the first tokens (attention sinks) however long "
        "the document is, while others look only a few tokens back."
    )
    a, b = st.columns(2)
    with a:
        ui.show_figure(shown["pooled"], key="pooled_map", on_select=_select_region)
        st.caption("Drag a box on the map: the Detail tab shows its exact rows.")
    with b:
        ui.show_figure(shown["spans"])
    ui.show_figure(shown["sinks"])


def detail(loaded, reading: Reading) -> None:
    """Exact rows for a sentence, a dragged box or typed ranges, and their attention profile."""
    view, n = reading.view, reading.view.n_tokens
    st.selectbox(
        "A sentence's queries",
        view.spans.labels,
        index=None,
        placeholder="Pick a sentence, drag a box on the pooled map, or set the ranges below",
        key="sentence",
        on_change=_select_sentence,
    )
    last = (max(0, n - 32), n)
    q0, q1 = widgets.range_picker("Queries", n, "queries", last)
    k0, k1 = widgets.range_picker(
        f"Keys shown (at most {view_model.MAX_KEYS})", n, "keys", (max(0, n - 256), n)
    )
    with ui.user_errors():
        rows = _rows(loaded, reading.text, reading.max_tokens, reading.layer, q0, q1)
    if rows.notice:
        st.info(rows.notice)
    shown = view_model.detail(
        view,
        reading.text,
        rows,
        reading.head,
        (k0, k1),
        log_scale=reading.log_scale,
        presenting=ui.presenting(),
    )
    ui.show_figure(shown["rows"])
    ui.show_figure(shown["profile"])
