"""The Head Atlas's Head tab: one head's standing among the others, its top contexts drawn, its circuits
from the weights, and a context's one-click links into the Explorer, Why Attend and Interventions."""

from __future__ import annotations

import numpy as np
import streamlit as st

from txviz.app import ui, widgets
from txviz.atlas import circuits, figures, opening, view_model
from txviz.atlas.views import Opened
from txviz.core.errors import UserError
from txviz.core.tokens import readable_tokens
from txviz.features import views as features_views
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


@ui.cached(max_entries=32, spinner="Running the context's window...")
@ui.heavy
def _row(loaded, ids: tuple[int, ...], layer: int, head: int, query: int) -> np.ndarray:
    return opening.attention_row(loaded, ids, layer, head, query)


def head_view(loaded, shown: Opened) -> None:
    """The picked head's page: its scores among all heads, its top contexts, one context's attention."""
    atlas, metrics, layer, head = shown.atlas, shown.metrics, shown.layer, shown.head
    st.subheader(f"Layer {layer}, head {head}")
    finite = [m for m in metrics if np.isfinite(atlas.scores[m.name][layer, head])]
    ui.show_figure(
        figures.standing(atlas, finite or metrics, layer, head, ui.presenting()), key="atlas_standing"
    )
    st.dataframe(
        [{"metric": m.label, "score": atlas.score(m.name, layer, head),
          "percentile among heads": round(view_model.percentile(atlas, m.name, layer, head), 1)} for m in metrics],
        hide_index=True,
    )  # fmt: skip
    criteria = list(atlas.contexts)
    criterion = st.selectbox("Top contexts by", criteria, key="criterion",
                             index=ui.link_index("criterion", criteria),
                             format_func=lambda c: {"attention": "largest attention weight to a non-sink key",
                                                    "output": "largest head output norm"}.get(c, c))  # fmt: skip

    def pieces(ids: list[int]) -> list[str]:
        return view_model.text_pieces(loaded.tokenizer, ids)

    table = view_model.context_table(atlas, criterion, layer, head, pieces)
    if table.empty:
        st.info("This head has no stored context.")
    else:
        st.caption("The key in [[ ]], the query in << >>.")
        st.dataframe(table, hide_index=True, height=300)
        ranks = table["rank"].tolist()
        rank = st.selectbox("Draw the attention of context", ranks, key="context",
                            index=ui.link_index("context", ranks))  # fmt: skip
        row = table[table["rank"] == rank].iloc[0]
        ids = view_model.window_ids(atlas, int(row["window"]))
        query, key = int(row["query"]), int(row["key"])
        with ui.user_errors():
            weights = _row(loaded, tuple(ids), layer, head, query)
        labels, _ = readable_tokens(loaded.tokenizer, ids)
        ui.show_figure(figures.row_bars(labels, weights, query, key,
                                        f"Layer {layer}, head {head}: the query's attention (key in red)"),
                       key="atlas_row")  # fmt: skip
        st.text(row["text"])
        links(loaded, shown.name, ids, layer, head, query, key)
    bands = view_model.band_table(atlas, criterion, layer, head, pieces)
    if not bands.empty:
        st.subheader("Below the top: a sample from each decile band")
        st.dataframe(bands, hide_index=True, height=260)
    summary(loaded, layer, head)
    if loaded.kind == "decoder":
        features_views.written_by_head(loaded, shown.name, layer, head)
