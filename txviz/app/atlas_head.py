"""The Head Atlas page's pieces that read the model itself: the heads' circuits from the weights, and a
context's one-click links into the Explorer, Why Attend and Interventions."""

from __future__ import annotations

import numpy as np
import streamlit as st

from txviz.app import ui, widgets
from txviz.atlas import circuits, opening
from txviz.core.errors import UserError
from txviz.figures import grids

WHY_TOKENS = 128  # Why Attend reads the first 128 tokens of its text
CIRCUITS_NOTE = (
    "OV copying: sum(eig)/sum(|eig|) of W_E W_V W_O W_U (Elhage et al. 2021), near 1 when a head raises the "
    "logits of the tokens it attends to. QK copying: the same score of W_E W_Q W_K^T W_E^T, near 1 when a "
    "token attends to keys of the same token (positions left out). Both read from d_head x d_head matrices "
    "with the same nonzero eigenvalues; norm gains folded in, their scale left out. "
)


@ui.cached(max_entries=4, spinner="Reading the heads' circuits from the weights...")
@ui.heavy
def _circuits(loaded) -> circuits.Circuits:
    return circuits.circuits(loaded.model)


def _found(loaded) -> circuits.Circuits | None:
    """The model's circuits, or None with the reason shown (a model the map cannot place)."""
    try:
        return _circuits(loaded)
    except UserError as error:  # the atlas's attention metrics still work: a note, not a stop
        st.info(str(error))
        return None


def weights_only(loaded, name: str) -> None:
    """Before an atlas: what the weights alone say, every head's copying scores as grids."""
    found = _found(loaded)
    if found is None:
        return
    shown = [(label, values) for label, values in (("OV copying", found.ov_copying), ("QK copying", found.qk_copying))
             if np.isfinite(values).any()]  # fmt: skip
    st.subheader("From the weights alone, before any corpus")
    widgets.side_by_side([grids.head_grid(values, f"{name}: {label} score", "score", None, ui.presenting(),
                                          (-1, 1), diverging=True) for label, values in shown],
                         keys=[f"weights_{label}" for label, _ in shown])  # fmt: skip
    st.caption(CIRCUITS_NOTE + found.notice)


def summary(loaded, layer: int, head: int) -> None:
    """One head's OV and QK copying scores, as numbers."""
    st.subheader("Circuits, from the weights")
    found = _found(loaded)
    if found is None:
        return
    for column, label, values in zip(
        st.columns(3),
        ("OV copying score", "OV positive share", "QK copying score"),
        (found.ov_copying, found.ov_positive, found.qk_copying),
        strict=True,
    ):
        value = values[layer, head]
        column.metric(label, "no unembedding" if np.isnan(value) else f"{value:.3f}")
    st.caption(CIRCUITS_NOTE + "Positive share: sum(max(Re eig, 0))/sum(|eig|). " + found.notice)


def links(loaded, name: str, ids: list[int], layer: int, head: int, query: int, key: int) -> None:
    """One click to the Explorer, Why Attend and Interventions on this head and this context."""
    text = loaded.tokenizer.decode(ids, skip_special_tokens=True)
    widgets.explorer_head_link(
        name, text, layer, head, f"Open this context in the Attention Explorer at layer {layer}, head {head}"
    )
    where = opening.positions_in(loaded, ids, text)
    picks = {}
    if where(query) is not None and where(key) is not None and max(where(query), where(key)) < WHY_TOKENS:
        picks = dict(why_query=where(query), why_key=where(key))
    widgets.why_attend_link(name, text, layer, head, **picks)
    if loaded.kind == "decoder":  # ablation reads next-token logits: decoders only
        before = loaded.tokenizer.decode(ids[: query + 1], skip_special_tokens=True)
        widgets.ablate_head_link(name, before, layer, head, "this context up to its query")
