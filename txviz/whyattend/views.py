"""Why Attend's page body: the edge to explain (text, head, query and key), the score split into
(query part) x (key part) pairs, or into a dictionary's features, the patching check and the composition
with earlier heads."""

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import streamlit as st

from txviz.app import projector, teaching, ui, widgets
from txviz.atlas.build import model_id
from txviz.core.errors import UserError
from txviz.core.running import run
from txviz.features import store
from txviz.features.sae import TopKSAE
from txviz.figures import grids
from txviz.whyattend import check, composition, decompose, features, figures, words

MODES = {"this key": "edge", "this key rather than another": "contrast", "this key against the row": "row"}


@dataclass(frozen=True)
class Edge:
    """One recorded forward pass over the text, and the head and attention edge to explain in it."""

    name: str
    text: str
    ids: object  # the (1, T) token ids on the model's device
    tokens: list[str]
    layer: int
    head: int
    recorded: object  # the run's result: what the decomposition reads
    weights: np.ndarray  # the head's weights, shown as the clickable map
    query: int
    key: int
    mode: str
    other: int | None  # the other key, in "contrast" mode
    expand: bool
    features: bool = False  # also split the score into the features of a dictionary at the block's input


def precision_note() -> None:
    """Why the page ignores the sidebar's precision: the parts must add up to the score."""
    if ui.current_dtype() != "float32":
        st.info(
            f"The sidebar asks for {ui.current_dtype()}; this page loads the model in float32 and decomposes "
            "there, so the parts add up to the score to float32 precision."
        )


def _token_picker(tokens: list[str], label: str, key: str, default: int, where=st) -> int:
    """A token position; a clicked cell sets it in this session, so no value is passed then (it would clash)."""
    if key in st.session_state:
        st.session_state[key] = min(max(int(st.session_state[key]), 0), len(tokens) - 1)
        value = {}
    else:
        value = {"index": ui.link_value(key, default, range(len(tokens)))}
    labels = [f"{n}: {t}" for n, t in enumerate(tokens)]
    return where.selectbox(label, range(len(tokens)), format_func=labels.__getitem__, key=key, **value)


def _pick_edge() -> None:
    picked = figures.picked_edge((st.session_state.get("why_edges") or {}).get("selection"))
    if picked is not None:
        st.session_state["why_query"], st.session_state["why_key"] = picked


def edge(loaded, name: str) -> Edge:
    """The text, the head, one recorded forward, and the query and key (and how) to explain."""
    text = ui.text_input(
        "Text", "The animal didn't cross the street because it was too tired.", key="why_text"
    )
    ids = loaded.tokenizer(text, return_tensors="pt")["input_ids"][:, :128].to(loaded.device)
    tokens = loaded.tokenizer.convert_ids_to_tokens(ids[0].tolist())
    if len(tokens) < 2:
        st.info("Type at least two tokens: an attention score needs a query and a key.")
        st.stop()

    a, b = st.columns(2)
    layer, head = widgets.layer_head_picker(
        loaded.n_layers, loaded.n_heads, ("why_layer", "why_head"), columns=(a, b)
    )
    with ui.user_errors():
        # one recorded forward: what the decomposition reads, and the weights the clickable map shows
        # the model's own scores too: the feature split's sum is checked against them
        settings = replace(decompose.SETTINGS, record=decompose.SETTINGS.record | {"weights", "scores"})
        recorded = run(loaded.model, settings, input_ids=ids)
        weights = recorded["weights", layer, head][0].numpy()
    # it opens on an edge worth explaining: between words, not into [CLS], [SEP] or a sink
    opening = figures.default_edge(weights, tokens, set(loaded.tokenizer.all_special_tokens))
    if st.session_state.get("why_opened_on") != (name, tokens):  # a new text or model: its own opening edge
        for picked in ("why_query", "why_key", "why_other"):
            st.session_state.pop(picked, None)
        st.session_state["why_opened_on"] = (name, tokens)

    c, d, e = st.columns(3)
    query = _token_picker(tokens, "Query token", "why_query", opening[0], c)
    key = _token_picker(tokens, "Key token", "why_key", opening[1], d)
    mode_label = e.radio("Explain", list(MODES), key="why_mode",
                         index=list(MODES).index(ui.link_value("why_mode", "this key", MODES)))  # fmt: skip
    mode = MODES[mode_label]
    other = None
    if mode == "contrast":
        other = _token_picker(tokens, "Rather than key", "why_other", 0)
    expand = st.toggle("One part per head (off: one per attention layer)", True, key="why_expand")
    split = False
    if loaded.kind == "decoder":  # dictionaries are trained on decoders' streams only
        split = st.toggle(
            "Split into features", ui.link_value("why_features", False), key="why_features",
            help="Write the stream entering the block in the features of a dictionary trained there.",
        )  # fmt: skip
    return Edge(
        name, text, ids, tokens, layer, head, recorded, weights, query, key, mode, other, expand, split
    )


def explain(loaded, edge: Edge) -> decompose.Decomposition:
    """The clickable map of the head, then the score split into pairs and the largest of them."""
    tokens, query, key, mode, other = edge.tokens, edge.query, edge.key, edge.mode, edge.other
    with ui.user_errors():
        projector.draw(figures.edge_grid(edge.weights, tokens, (query, key)), "why_edges", on_select=_pick_edge,
                       selection_mode=figures.EDGE)  # fmt: skip
        found = decompose.decompose(
            loaded.model,
            edge.ids,
            edge.layer,
            edge.head,
            query,
            key,
            mode=mode,
            contrast=other,
            expand=edge.expand,
            recorded=edge.recorded,
        )

    what = {
        "edge": "score",
        "contrast": f"score minus the score of key {other}",
        "row": "score minus the row's mean",
    }
    st.subheader(
        f"L{edge.layer}H{edge.head}: {tokens[query]!r} -> {tokens[key]!r}, {what[mode]} = {found.score:+.3f}"
    )
    ui.show_figure(figures.pairs_heatmap(found))
    teaching.notice(
        "a row is one part of the query's input, a column one part of the key's; the cells sum to the score "
        "exactly, so a dark cell is a reason the head attends (or, blue, a reason it does not)."
    )
    st.markdown("**The largest pairs**")
    st.text("\n".join(words.ranked(found, tokens, 8)))

    top = found.parts_q[int(np.argmax(np.abs(found.query_sums)))]
    if top.kind == "head" and loaded.is_causal:  # ablation reads next-token logits: decoders only
        widgets.ablate_head_link(
            edge.name, edge.text, top.layer, top.head, "this text (the query's largest part)"
        )
    if edge.features:
        feature_split(loaded, edge)
    return found


@ui.shared_resource(max_entries=4, spinner="Loading the dictionary...")
def _dictionary(folder: str, weights: str, stamp: float) -> TopKSAE:
    """The dictionary stored in ``folder`` (``stamp``, its file's time: a rebuilt one is read again)."""
    return store.load(Path(folder), weights)[0].sae


def _no_dictionary(edge: Edge, place: str) -> None:
    st.info(
        f"No dictionary of {edge.name}'s features at block {edge.layer}'s input ({place}) is trained yet: "
        "train one, and this split reads it."
    )
    widgets.page_link_to(
        "Features", f"Train a dictionary at block {edge.layer}'s input on the Features page",
        ":material/blur_on:", model=edge.name, place=place,
    )  # fmt: skip


def feature_split(loaded, edge: Edge) -> None:
    """The score split into (query feature) x (key feature) pairs, with the error's share and the sum."""
    st.subheader("Split into features")
    place = features.place_name(edge.layer)
    try:
        features.check_mode(edge.mode)
        weights = model_id(loaded)
        stored = store.find(weights, place)
        if not stored:
            return _no_dictionary(edge, place)
        folder, meta = stored[0]  # the newest
        sae = _dictionary(str(folder), weights, (folder / store.META).stat().st_mtime)
        split = decompose.decompose(loaded.model, edge.ids, edge.layer, edge.head, edge.query, edge.key,
                                    mode=edge.mode, contrast=edge.other, recorded=edge.recorded, features=sae)  # fmt: skip
    except UserError as error:  # the ordinary split above still stands: a note, not a stop
        st.info(str(error))
        return
    _feature_words(split, edge, meta, sae)


def _feature_words(split: decompose.Decomposition, edge: Edge, meta: dict, sae: TopKSAE) -> None:
    """The largest feature pairs, the terms, the sum's check and a link to each feature's page."""
    st.caption(
        f"Dictionary at {meta['place']}: {sae.width:,} features, {sae.k} active per token, trained on "
        f"{meta.get('corpus', 'a corpus')} ({meta.get('tokens', 0):,} tokens)."
    )
    st.markdown("**The largest feature pairs**")
    st.text("\n".join(words.feature_ranked(split, edge.tokens, 8)) or "No feature is active at these tokens.")
    terms = words.terms(split)
    st.markdown(
        f"Feature x feature pairs add {terms.features:+.3g}, pairs with a bias {terms.bias:+.3g}, and pairs "
        f"with the reconstruction error (what the dictionary misses) {terms.error:+.3g}: "
        f"{terms.error_share:.0%} of the pairs' total size."
    )
    own = check.explained(split, edge.recorded["scores", edge.layer, edge.head][0].numpy())
    st.markdown(
        f"Check: the {split.pairs.size:,} pairs sum to {split.score:+.4g}; the model's own score is "
        f"{own:+.4g} (difference {abs(split.score - own):.1e})."
    )
    shown = list(dict.fromkeys(f for pair in words.feature_pairs(split, 8) for f in pair[:2]))
    for n, column in enumerate(st.columns(4) if shown else []):  # each feature of the largest pairs
        with column:
            for feature in shown[n::4]:
                widgets.page_link_to("Features", f"Feature {feature}", ":material/blur_on:", model=edge.name,
                                     place=meta["place"], feature=feature)  # fmt: skip


def patch_check(loaded, edge: Edge, found: decompose.Decomposition) -> None:
    """Remove the largest part from one side's input and rerun: predicted against measured."""
    with st.expander("Check by patching: remove the largest part from one side's input and rerun"):
        side = st.radio("Side", ["query", "key"], horizontal=True, key="why_side")
        if st.button("Run the check", key="why_check"):
            with ui.user_errors():
                result = check.patch_check(loaded.model, edge.ids, found, side)
            st.write(
                f"Removing {result.name} from the {side}'s input: predicted {result.predicted:+.4f} (norm "
                f"frozen), measured {result.measured:+.4f} (norm recomputed). The stream's norm scale went "
                f"from {result.scale_before:.3f} to {result.scale_after:.3f}; the gap is that change, absent "
                "when no norm sits between the stream and the attention (BERT)."
            )


def composition_grid(loaded, edge: Edge) -> None:
    """Q-, K- and V-composition of the head with every earlier head, computed from the weights."""
    layer, head = edge.layer, edge.head
    with st.expander("Composition with earlier heads (Elhage et al. 2021, TransformerLens's definition)"):
        if layer == 0:
            st.info("Block 0 has no earlier heads to compose with.")
        elif st.toggle("Compute from the weights", key="why_comp"):
            with ui.user_errors():
                grid = composition.scores(loaded.model, layer, head)
            kind = st.radio("Composition", ["Q", "K", "V"], horizontal=True, key="why_comp_kind")
            shown = np.where(np.isnan(grid[kind]), np.nan, grid[kind])[:layer]
            chart = grids.head_grid(
                shown, f"{kind}-composition of L{layer}H{head} with earlier heads (click: open that head)"
            )
            widgets.head_grid(chart, "why_comp_grid", ("why_layer", "why_head"))
