"""Why a head attends: one attention score split exactly into what built the query and what built the key."""

import numpy as np
import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.figures import grids
from txviz.whyattend import check, composition, decompose, figures, words

MODES = {"this key": "edge", "this key rather than another": "contrast", "this key against the row": "row"}

ui.setup_page(
    "Why Attend",
    "Where a head looks is one question; why is the next. With each norm's scale frozen at its value in "
    "this run, a head's query and key are linear in the residual stream, and the stream is a sum of the "
    "embeddings, every earlier head's output, every earlier MLP's output and the biases. So the score "
    "q_i . k_j is exactly a sum of (query part) x (key part) pairs, rotary positions included.",
    share=("model", "why_text", "why_layer", "why_head", "why_query", "why_key", "why_mode", "why_other"),
)

name = ui.model_picker(kinds=("encoder", "decoder"))
loaded = ui.load_model(name, kinds=("encoder", "decoder"))
text = ui.text_input("Text", "The animal didn't cross the street because it was too tired.", key="why_text")
ids = loaded.tokenizer(text, return_tensors="pt")["input_ids"][:, :128].to(loaded.device)
tokens = loaded.tokenizer.convert_ids_to_tokens(ids[0].tolist())
if len(tokens) < 2:
    st.info("Type at least two tokens: an attention score needs a query and a key.")
    st.stop()

a, b = st.columns(2)
layer, head = widgets.layer_head_picker(
    loaded.n_layers, loaded.n_heads, ("why_layer", "why_head"), columns=(a, b)
)
labels = [f"{n}: {t}" for n, t in enumerate(tokens)]
c, d, e = st.columns(3)
query = c.selectbox("Query token", range(len(tokens)), format_func=labels.__getitem__, key="why_query",
                    index=ui.link_value("why_query", len(tokens) - 1, range(len(tokens))))  # fmt: skip
key = d.selectbox("Key token", range(len(tokens)), format_func=labels.__getitem__, key="why_key",
                  index=ui.link_value("why_key", 0, range(len(tokens))))  # fmt: skip
mode_label = e.radio("Explain", list(MODES), key="why_mode",
                     index=list(MODES).index(ui.link_value("why_mode", "this key", MODES)))  # fmt: skip
mode = MODES[mode_label]
other = None
if mode == "contrast":
    other = st.selectbox("Rather than key", range(len(tokens)), format_func=labels.__getitem__, key="why_other",
                         index=ui.link_value("why_other", 0, range(len(tokens))))  # fmt: skip
expand = st.toggle("One part per head (off: one per attention layer)", True, key="why_expand")

with ui.user_errors():
    found = decompose.decompose(
        loaded.model, ids, layer, head, query, key, mode=mode, contrast=other, expand=expand
    )

what = {
    "edge": "score",
    "contrast": f"score minus the score of key {other}",
    "row": "score minus the row's mean",
}
st.subheader(f"L{layer}H{head}: {tokens[query]!r} -> {tokens[key]!r}, {what[mode]} = {found.score:+.3f}")
ui.show_figure(figures.pairs_heatmap(found))
teaching.notice(
    "a row is one part of the query's input, a column one part of the key's; the cells sum to the score "
    "exactly, so a dark cell is a reason the head attends (or, blue, a reason it does not)."
)
st.markdown("**The largest pairs**")
st.text("\n".join(words.ranked(found, tokens, 8)))

with st.expander("Check by patching: remove the largest part from one side's input and rerun"):
    side = st.radio("Side", ["query", "key"], horizontal=True, key="why_side")
    if st.button("Run the check", key="why_check"):
        with ui.user_errors():
            result = check.patch_check(loaded.model, ids, found, side)
        st.write(
            f"Removing {result.name} from the {side}'s input: predicted {result.predicted:+.4f} (norm frozen), "
            f"measured {result.measured:+.4f} (norm recomputed). The stream's norm scale went from "
            f"{result.scale_before:.3f} to {result.scale_after:.3f}; the gap is that change, absent when "
            "no norm sits between the stream and the attention (BERT)."
        )

with st.expander("Composition with earlier heads (Elhage et al. 2021, TransformerLens's definition)"):
    if layer == 0:
        st.info("Block 0 has no earlier heads to compose with.")
    elif st.toggle("Compute from the weights", key="why_comp"):
        with ui.user_errors():
            grid = composition.scores(loaded.model, layer, head)
        kind = st.radio("Composition", ["Q", "K", "V"], horizontal=True, key="why_comp_kind")
        shown = np.where(np.isnan(grid[kind]), np.nan, grid[kind])[:layer]
        ui.show_figure(grids.head_grid(shown, f"{kind}-composition of L{layer}H{head} with earlier heads"))
