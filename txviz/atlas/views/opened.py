"""Above the Head Atlas's tabs: the corpus, the window, the atlas opened (or built once), the picked head."""

from __future__ import annotations

import streamlit as st

from txviz.app import ui, widgets
from txviz.atlas import corpus as corpora
from txviz.atlas import opening, view_model
from txviz.atlas.atlas import Settings
from txviz.atlas.views import Opened
from txviz.atlas.views import head as head_page
from txviz.atlas.views.corpus import corpus_choice

PICKED = ("layer", "head")


def corpus_slice(whole):
    """How much of the corpus to read: a first slice that builds in seconds, up to all of it."""
    sizes = [n for n in opening.READ_CHARS if n < len(whole.text)]
    if not sizes:
        return whole
    offered = [*sizes, len(whole.text)]
    chars = st.select_slider(
        f"Characters read ({whole.name} has {len(whole.text):,})",
        offered,
        value=ui.link_value("atlas_chars", sizes[0], offered),
        key="atlas_chars",
        format_func=lambda n: "all" if n == len(whole.text) else f"first {n:,}",
        help="The first slice opens in seconds; the whole corpus takes minutes once, then opens from disk.",
    )
    return corpora.first(whole, chars)


@ui.cached(max_entries=4, progress="Building the atlas...")
@ui.heavy
def _atlas(loaded, corpus, settings: Settings, progress):
    return opening.open_or_build(loaded, corpus, settings, progress)


def atlas_of(model, corpus, window: int):
    """The model's atlas over the corpus (opened from disk, or built once with a progress bar)."""
    with ui.user_errors():
        return _atlas(model, corpus, Settings(window=min(window, model.n_ctx or window)))


def open_atlas(loaded, name: str) -> Opened:
    """The corpus and window, and the atlas once the reader opens it; until then what the weights alone
    say, and the page stops there."""
    corpus = corpus_slice(corpus_choice())
    st.caption(f"{corpus.name}: {len(corpus.text):,} characters.")
    if corpus.notice:
        st.warning(corpus.notice)
    left, right = st.columns(2)
    window = left.number_input("Tokens per window", 8, 1024, ui.link_value("atlas_window", 256, range(8, 1025)),
                               key="atlas_window")  # fmt: skip
    window = int(window)
    settings = Settings(window=min(window, loaded.n_ctx or window))
    # A stored atlas, or a corpus small enough to build in seconds, opens by itself; a link naming a head too.
    ready = len(corpus.text) <= opening.SMALL_CORPUS_CHARS or opening.stored(loaded, corpus, settings)
    current, before = [name, corpus.hash, settings.window], st.session_state.get("_atlas_for")
    st.session_state["_atlas_for"] = current
    if before is None:  # this session's first view: a link naming a head opens its atlas, on its page
        st.session_state["_atlas_link_head"] = "layer" in st.query_params
        ready = ready or st.session_state["_atlas_link_head"]
    elif before != current and "atlas_open" in st.session_state:
        st.session_state["atlas_open"] = bool(ready)  # another model or corpus: opened only if quick
    value = {} if "atlas_open" in st.session_state else {"value": ui.link_value("atlas_open", bool(ready))}
    opened = right.toggle(
        "Open the atlas (built once over the corpus, then stored)",
        key="atlas_open",
        help="Building runs the whole corpus through the model; a stored atlas opens at once.",
        **value,
    )
    if not opened:
        st.info(
            "Switch on 'Open the atlas' to build this model's atlas over the corpus (once: it is stored)."
        )
        head_page.weights_only(loaded, name)
        st.stop()
    atlas, notices = atlas_of(loaded, corpus, window)
    for notice in notices:
        st.warning(notice)
    metrics = tuple(view_model.measured(atlas, opening.metrics()))
    if not metrics:
        st.error("No metric could be measured on this corpus: try a longer one.")
        st.stop()
    st.caption(
        f"{atlas.model} over {atlas.corpus}: {atlas.n_tokens:,} tokens in {len(atlas.tokens)} windows of "
        f"{atlas.settings.window}, {atlas.layers} layers x {atlas.heads} heads; built in {atlas.seconds:.1f} s."
    )
    layer, head = widgets.layer_head_picker(atlas.layers, atlas.heads, PICKED, widget="number",
                                            columns=st.columns(2))  # fmt: skip
    return Opened(name, corpus, window, atlas, metrics, layer, head)


def first_tab() -> str | None:
    """The tab the atlas opens on without a tab in its link: a link naming a head opens the head's page."""
    return "Head" if st.session_state.get("_atlas_link_head") else None
