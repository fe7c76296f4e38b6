"""The Features page's views: a dictionary opened (or trained once) above the tabs, one feature's page, and
the map of every feature."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from txviz.app import projector, teaching, ui, widgets
from txviz.atlas.build import model_id
from txviz.atlas.view_model import text_pieces
from txviz.atlas.views.corpus import corpus_choice
from txviz.features import figures, heads, opening, store, unembed
from txviz.features.activations import Place
from txviz.features.opening import Opened
from txviz.features.sae import Settings

NEW = "Train a new dictionary"
SPAN = 8  # tokens either side of a context's peak: 17 cells a row stay readable


@dataclass(frozen=True)
class Shown:
    """What the tabs read: the model's name, the dictionary and its index, and the picked feature."""

    name: str
    opened: Opened
    feature: int


@ui.cached(max_entries=4, spinner="Opening the dictionary...")
@ui.heavy
def _stored(loaded, folder: str) -> Opened:
    return opening.open_stored(loaded, Path(folder))


@ui.cached(max_entries=2, progress="Training the dictionary...")
@ui.heavy
def _built(loaded, corpus, place_name: str, settings: Settings, progress) -> Opened:
    return opening.open_or_build(loaded, corpus, Place.parse(place_name), settings, progress)


def _describe(meta: dict) -> str:
    settings = meta.get("settings", {})
    return (f"{meta.get('corpus', '?')}: {meta.get('tokens', 0):,} tokens, {settings.get('expansion', '?')}x wide, "
            f"k {settings.get('k', '?')}")  # fmt: skip


def _train_form(loaded, place: Place) -> Opened:
    """Corpus and budget, the memory it needs said first; trains when asked (the page stops until then)."""
    corpus = corpus_choice("features_corpus")
    budget = st.select_slider(
        "Training tokens", opening.BUDGETS, value=ui.link_value("features_tokens", opening.BUDGETS[0], opening.BUDGETS),
        key="features_tokens", format_func=lambda n: f"{n:,}",
        help="One pass over this many tokens of the corpus (again from its start when it is shorter).",
    )  # fmt: skip
    settings = Settings(tokens=int(budget))
    with ui.user_errors():
        need = opening.memory(loaded, place, settings)
    st.caption(
        f"A TopK dictionary of {settings.expansion} x the place's width, k = {settings.k} active per token: "
        f"{need}. {settings.held_out:,} tokens are kept apart to measure it; the build can be interrupted "
        "and resumes where it stopped."
    )
    if not need.fits:
        st.error(f"This build needs {need}: choose fewer training tokens.")
        st.stop()
    quick = settings.tokens == opening.BUDGETS[0]  # the smallest budget trains in a minute or so: at once
    # built in this session already: on disk, or kept in memory when the disk refused it
    made = st.session_state.setdefault("_features_made", set())
    key = (loaded.name, corpus.hash, place.name, settings)
    if (
        not quick
        and key not in made
        and not opening.stored(loaded, corpus, place, settings)
        and not st.button("Train the dictionary", type="primary", key="features_train")
    ):
        st.info("Train a dictionary at this place: its features open here after, and stay stored on disk.")
        st.stop()
    with ui.user_errors():
        found = _built(loaded, corpus, place.name, settings)
    made.add(key)
    return found


def open_dictionary(loaded, name: str) -> Shown:
    """The place, a stored dictionary there (or the form that trains one), and the picked feature."""
    names = opening.places(loaded)
    if not names:
        st.error(f"The model map names no place of {loaded.name} to read features from.")
        st.stop()
    default = opening.default_place(loaded)
    left, right = st.columns(2)
    place_name = left.selectbox(
        "Place", names, index=names.index(ui.link_value("place", default, names)), key="place",
        format_func=opening.place_label,
        help="The residual stream entering a block, or a block's heads before their output projection "
        "(so a feature's share per head can be read).",
    )  # fmt: skip
    place = Place.parse(place_name)
    found = store.find(model_id(loaded), place.name)
    choices = [str(folder) for folder, _ in found] + [NEW]
    labels = {str(folder): _describe(meta) for folder, meta in found} | {NEW: NEW}
    choice = right.selectbox("Dictionary", choices, format_func=labels.get, key="features_dictionary")
    with ui.user_errors():
        shown = _train_form(loaded, place) if choice == NEW else _stored(loaded, choice)
    for notice in shown.notices:
        st.warning(notice)
    meta, width = shown.meta, shown.sae.width
    st.caption(
        f"{_describe(meta)}; {width:,} features, trained in {meta.get('seconds', 0):.0f} s after "
        f"{meta.get('collect_seconds', 0):.0f} s of forwards; indexed over {shown.index.tokens:,} tokens."
    )
    best = opening.first_feature(shown.index)
    feature = st.number_input(
        f"Feature (0 to {width - 1:,})", 0, width - 1, ui.link_value("feature", best, range(width)), key="feature"
    )  # fmt: skip
    return Shown(name, shown, int(feature))


def _around(values: np.ndarray, pieces: list[str], peak: int) -> tuple[list[str], np.ndarray]:
    """The tokens within SPAN of the peak, the peak in the middle column (blank cells where the window ends)."""
    text, shade = [""] * (2 * SPAN + 1), np.full(2 * SPAN + 1, np.nan)
    for column in range(2 * SPAN + 1):
        at = peak - SPAN + column
        if 1 <= at < len(pieces):  # position 0 is never read
            text[column], shade[column] = pieces[at], values[at]
    return text, shade


def _top_contexts(loaded, shown: Shown) -> None:
    opened, f = shown.opened, shown.feature
    found = [(w, p, v) for w, p, v in opened.index.contexts(f) if w >= 0]
    if not found:
        st.info(f"Feature {f} never fired on the {opened.index.tokens:,} indexed tokens: a dead latent.")
        return
    texts, values = [], []
    for w, p, _ in found:  # the index keeps every token's activations: no forward to shade a context
        acts = opened.index.activations(f, w)
        pieces, shade = _around(acts, text_pieces(loaded.tokenizer, opened.index.ids[w].tolist()), p)
        texts.append(pieces)
        values.append(shade)
    grid = np.stack(values)
    title = f"{shown.name}, {opening.place_label(opened.place.name)}: feature {f}'s top contexts"
    ui.show_figure(figures.contexts(texts, grid, [v for _, _, v in found], title, ui.presenting()),
                   key="features_contexts")  # fmt: skip
    teaching.notice(
        "each row is a context where the feature fires most; a token's shade is its activation there."
    )


def _bands(loaded, shown: Shown) -> None:
    bands = shown.opened.index.band_contexts(shown.feature)
    rows = []
    for band, drawn in enumerate(bands):
        for w, p, v in drawn:
            pieces = text_pieces(loaded.tokenizer, shown.opened.index.ids[w].tolist())
            text = (
                "".join(pieces[max(p - SPAN, 1) : p])
                + f"[[{pieces[p]}]]"
                + "".join(pieces[p + 1 : p + SPAN + 1])
            )
            rows.append({"band": f"{100 * (1 - band / len(bands)):.0f}% of the peak", "activation": round(v, 3),
                         "context": text})  # fmt: skip
    if rows:
        st.subheader("Below the top: a sample from each decile band")
        st.caption("The token where the feature has that activation is in [[ ]].")
        st.dataframe(rows, hide_index=True, height=260)


def feature_view(loaded, shown: Shown) -> None:
    """One feature: its top contexts shaded, what it does to the logits, its decile samples."""
    opened, f = shown.opened, shown.feature
    index = opened.index
    density = float(index.density[f])
    cols = st.columns(4)
    cols[0].metric("Share of tokens it fires on", f"{100 * density:.3g}%" if density else "never")
    cols[1].metric("Mean activation when firing", f"{index.mean[f]:.3f}")
    cols[2].metric("Largest activation", f"{index.peak[f]:.3f}")
    if opened.place.kind == "head_out":
        shares = heads.head_shares(opened.sae, loaded.n_heads)[f]
        top = int(np.argmax(shares))
        cols[3].metric("Written mostly by", f"head {top} ({100 * shares[top]:.0f}%)")
    _top_contexts(loaded, shown)
    with ui.user_errors():
        up, down = unembed.promoted(loaded, opened.place, opened.sae, f)
    ui.show_figure(figures.logit_effects(up, down, f"Feature {f} through the unembedding (direct effect)"),
                   key="features_logits")  # fmt: skip
    st.caption(
        "The feature's decoder direction carried straight to the logits (through the output projection for a "
        "heads' place, the final norm's gain and the unembedding); later blocks can change what it does."
    )
    _bands(loaded, shown)
    if opened.place.kind == "head_out":
        _heads_of(loaded, shown)


def _heads_of(loaded, shown: Shown) -> None:
    """A heads' feature: each head's share of its direction, and the writing head's page in the Head Atlas."""
    layer, f = shown.opened.place.layer, shown.feature
    shares = heads.head_shares(shown.opened.sae, loaded.n_heads)[f]
    ui.show_figure(figures.head_shares(shares, f"Feature {f}: each head's share of its direction (block {layer})"),
                   key="features_heads")  # fmt: skip
    top = int(np.argmax(shares))
    widgets.page_link_to("Head_Atlas", f"Open layer {layer}, head {top} in the Head Atlas", ":material/travel_explore:",
                         model=shown.name, layer=layer, head=top)  # fmt: skip


def _pick_from_map() -> None:
    picked = figures.picked_feature((st.session_state.get("features_map") or {}).get("selection"))
    if picked is not None:  # the feature's page opens (the Feature tab)
        st.session_state["feature"] = picked
        st.session_state["features_view"] = "Feature"


def map_view(loaded, shown: Shown) -> None:
    """Every feature at its density and mean activation; a click opens it on the Feature tab."""
    index = shown.opened.index
    dead = int((index.density == 0).sum())
    figure = figures.feature_map(index.density, index.mean, shown.feature,
                                 f"{shown.name}: every feature of the dictionary (click one)", ui.presenting())  # fmt: skip
    with projector.on_stage():
        projector.draw(figure, "features_map", on_select=_pick_from_map, selection_mode="points")
        ui.export_menu(figure, "features_map")
    st.caption(
        f"{index.density.size - dead:,} features fired on the {index.tokens:,} indexed tokens; {dead:,} never did "
        "(not drawn). Very dense features are often the dictionary's bias at work; rare ones are the specific ones."
    )
    if shown.opened.place.kind == "head_out":
        shares = heads.head_shares(shown.opened.sae, loaded.n_heads)
        st.subheader("Features by the head that writes them most")
        owner = shares.argmax(1)
        st.dataframe(
            [{"head": h, "features it writes most": int(((owner == h) & (index.density > 0)).sum())}
             for h in range(loaded.n_heads)],
            hide_index=True,
        )  # fmt: skip
    place = shown.opened.place
    if place.kind == "resid_pre":  # Why Attend splits a block's scores with a dictionary of its input stream
        widgets.page_link_to("Why_Attend", f"Split a block {place.layer} head's attention score into these features "
                             "on Why Attend", ":material/join_inner:", model=shown.name, why_layer=place.layer,
                             why_features=True)  # fmt: skip


def written_by_head(loaded, name: str, layer: int, head: int) -> None:
    """For the Head Atlas's head page: the features this head writes most, from a dictionary of its
    block's heads (or a link to train one)."""
    place = Place("head_out", layer)
    found = store.find(model_id(loaded), place.name) if loaded.kind == "decoder" else []
    st.subheader("Features this head writes")
    if not found:
        st.caption(
            f"No dictionary of block {layer}'s heads yet: train one, and its features are listed here."
        )
        widgets.page_link_to("Features", f"Train a dictionary of block {layer}'s heads on the Features page",
                             ":material/blur_on:", model=name, place=place.name)  # fmt: skip
        return
    with ui.user_errors():
        opened = _stored(loaded, str(found[0][0]))
    rows = heads.written_by(opened.index, opened.sae, loaded.n_heads, head)
    if not rows:
        st.caption("No feature of this dictionary is written mostly by this head.")
        return
    st.caption(
        f"{_describe(opened.meta)}. A feature's share of a head: the part of its decoder direction in the head's "
        "slice (squared norms); ranked by share x how often x how strongly it fires."
    )
    for feature, share, _ in rows:
        widgets.page_link_to("Features", f"Feature {feature}: {100 * share:.0f}% written by this head",
                             ":material/blur_on:", model=name, place=place.name, feature=int(feature))  # fmt: skip
